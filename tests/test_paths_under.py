"""``Bundle.paths_under`` finds both ends of a prefix's range by bisection; it must
give exactly the paths that start with the prefix, whatever characters they hold."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bundle import Bundle
from bundle.manifest import Manifest
from bundle.problems import ProblemLog


class _Paths:
    """A source that only lists paths (paths_under reads nothing)."""

    display = "paths"

    def __init__(self, paths: list[str]) -> None:
        self._paths = sorted(set(paths))

    def paths(self) -> list[str]:
        return self._paths

    def size(self, path: str) -> int | None:
        return 0

    def read(self, path: str) -> bytes | None:
        return b""

    def close(self) -> None:
        return None


def _bundle(paths: list[str]) -> Bundle:
    return Bundle(_Paths(paths), ProblemLog(), "paths", manifest=Manifest())


# Few distinct characters, so that prefixes share heads and ranges touch; the largest
# code point and its neighbour are in, for the prefix the bisection cannot raise.
_CHARS = st.sampled_from(["a", "b", "/", "\x00", "\U0010fffe", "\U0010ffff", "\udcff"])
_PATH = st.text(_CHARS, max_size=6)


@given(st.lists(_PATH, max_size=30), _PATH)
def test_paths_under_is_the_paths_that_start_with_the_prefix(paths: list[str],
                                                             prefix: str) -> None:
    bundle = _bundle(paths)
    assert bundle.paths_under(prefix) == [p for p in sorted(set(paths)) if p.startswith(prefix)]


def test_a_node_directory_is_not_its_longer_named_neighbour() -> None:
    bundle = _bundle(["logs/a/x.log", "nodes/gpu-1/dmesg.txt", "nodes/gpu-1/host/uname.txt",
                      "nodes/gpu-10/dmesg.txt", "nodes/gpu-1x", "nodes/gpu-2/dmesg.txt"])
    assert bundle.paths_under("nodes/gpu-1/") == ["nodes/gpu-1/dmesg.txt",
                                                  "nodes/gpu-1/host/uname.txt"]
    assert bundle.paths_under("nodes/gpu-1") == ["nodes/gpu-1/dmesg.txt",
                                                 "nodes/gpu-1/host/uname.txt",
                                                 "nodes/gpu-10/dmesg.txt", "nodes/gpu-1x"]
    assert bundle.paths_under("nodes/gpu-3/") == []
    assert bundle.paths_under("") == bundle.paths
