"""Three log signatures matched in linear time on hostile lines.

Each pattern ran every start of its literal to the end of a run without spaces (and one
of them tried a 600-character window for every shorter tag), so one line of a pod log or
an event made of the literal repeated cost minutes:

- ``runtime-binary-missing`` (RT011): ``fork/exec /`` and ``nvidia`` 8,000 times, 4 s
  (quadratic: a megabyte, half an hour);
- ``driver-kernel-headers-unavailable`` (OP015): ``/lib/modules/`` 8,000 times, 4 s;
- ``driver-image-tag-not-found`` (OP010): ``/driver:`` 1,000 times (8 KB), 104 s.

No timing is asserted: before the change the large cases here did not end in a test
run. What is asserted is the outcome, on the hostile lines and on real ones: every real
example and negative of these signatures in ``signatures.toml`` still passes
(tests/test_signatures.py); the lines below are more of the same shapes. Sources:
NVIDIA/gpu-operator#97 (driver tag not found), NVIDIA/gpu-operator#1110 (fork/exec of a
missing runtime binary), the OP015 examples of signatures.toml (dnf and the kernel build
directory).
"""

from __future__ import annotations

import re

from hostile_kit import HOSTILE
from hypothesis import given
from hypothesis import strategies as st

from analyzers.knowledge import signatures

FORK_BEFORE = re.compile(r"fork/exec (/\S*nvidia\S*?): no such file or directory", re.I)


def _hits(signature: str, text: str) -> list[tuple[int, str]]:
    """The lines (number, text) that hold the signature."""
    found = signatures.match(text, "event", signatures=[signatures.get(signature)])
    return sorted({(m.line, m.text) for m in found})


def test_runtime_binary_on_hostile_and_real_lines() -> None:
    assert _hits("runtime-binary-missing", "fork/exec /" + "nvidia" * 170_000) == []
    assert _hits("runtime-binary-missing", "fork/exec " * 100_000) == []
    long_path = "/" + "a/" * 200_000 + "nvidia-container-runtime"
    line = f"OCI runtime create failed: fork/exec {long_path}: no such file or directory: unknown"
    assert _hits("runtime-binary-missing", line) == [(1, line)]
    found = signatures.get("runtime-binary-missing").regex.search(line)
    assert found is not None and found[1] == long_path


@HOSTILE
@given(st.lists(st.sampled_from(["fork/exec ", "/", "nvidia", "a", ":", " ", "\n",
                                 ": no such file or directory"]), max_size=14))
def test_runtime_binary_reads_the_same_paths_as_before(parts: list[str]) -> None:
    text = "".join(parts)
    pattern = signatures.get("runtime-binary-missing").regex
    assert [m[1] for m in pattern.finditer(text) if m[1] is not None] == \
        [m[1] for m in FORK_BEFORE.finditer(text)]


def test_kernel_build_directory_on_hostile_and_real_lines() -> None:
    line = "make[1]: *** /lib/modules/5.15.0-1057-azure/build: No such file or directory.  Stop."
    found = signatures.match(line, "log", container="nvidia-driver-ctr",
                             signatures=[signatures.get("driver-kernel-headers-unavailable")])
    assert [m.text for m in found] == [line]
    hostile = "/lib/modules/" * 80_000
    assert signatures.match(hostile, "log", container="nvidia-driver-ctr", signatures=[
        signatures.get("driver-kernel-headers-unavailable")]) == []


def test_driver_tag_on_hostile_and_real_lines() -> None:
    for hostile in ("/driver:" * 130_000, "/driver:" + "a" * 1_000_000,
                    "/driver:a:" * 100_000, ("/driver:x" + " " * 599) * 1_600):
        assert _hits("driver-image-tag-not-found", hostile) == []
    tag = "nvcr.io/nvidia/driver:535-5.15.0-100-generic-ubuntu22.04"
    for line in (f'Failed to pull image "{tag}": rpc error: code = NotFound desc = failed to '
                 f'pull and unpack image "{tag}": failed to resolve reference "{tag}": {tag}: '
                 "not found",
                 f"{tag}: not found",
                 f"manifest for {tag} not found: manifest unknown: manifest unknown",
                 # a digest after the tag, then the reason
                 f"{tag}@sha256:{'ab' * 32}: not found",
                 # the image named again far along the line: the nearest one counts
                 f"{tag} {'x' * 700} {tag}: not found"):
        assert _hits("driver-image-tag-not-found", line) == [(1, line)], line
    assert _hits("driver-image-tag-not-found", f"{tag} {'x' * 700}: not found") == []
