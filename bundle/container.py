"""What the readers of a bundle's files share: the Source they present, the caps they
apply, safe names, the format v1 root, and refusals recorded under bundle paths.

An archive (:mod:`bundle.archive`) and a directory (:mod:`bundle.directory`) are read
under the same caps and refuse the same members; the layout adapters
(:mod:`bundle.layouts`) wrap a Source and find their own roots.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bundle import specs
from bundle.problems import ProblemLog

MANIFEST = specs.MANIFEST
_UNSAFE_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps applied while reading untrusted archives (raise them with CLI flags)."""

    max_member_bytes: int = 512 << 20
    max_total_bytes: int = 16 << 30
    max_members: int = 500_000
    # Decompressed over compressed size, checked once 64 MiB came out: bundles compress
    # about 10-20 times, gzip'd zeros about 1000 times.
    max_ratio: int = 200
    # Nodes (scalars, lists, mappings) of one YAML file of a foreign layout: PyYAML
    # spends about 5 us and 450 bytes on each; kubectl -o yaml writes one per ~15 bytes.
    max_yaml_nodes: int = 1_000_000
    # Node directories (nodes/<name>/) read: twice the 5,000 nodes Kubernetes supports in
    # one cluster. Each costs the node-file parsers and every per-node rule a turn.
    max_nodes: int = 10_000


class Source(Protocol):
    """What the rest of the package needs from a bundle container."""

    display: str

    def paths(self) -> list[str]: ...

    def size(self, path: str) -> int | None: ...

    def read(self, path: str) -> bytes | None: ...

    def close(self) -> None: ...


def clean_name(name: str) -> str | None:
    """Return the normalised relative name, or None when the name is unsafe."""
    if not name or name.startswith("/") or _UNSAFE_CHARS.search(name):
        return None
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def printable(name: str) -> str:
    """A name safe to show: undecodable bytes and control characters escaped."""
    return "".join(c if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF
                   else f"\\x{ord(c) & 0xFF:02x}" for c in name)


RootFinder = Callable[[list[str]], str | None]


def manifest_root(names: list[str]) -> str | None:
    """The bundle root is the directory holding manifest.json, at the top or one down."""
    if MANIFEST in names:
        return ""
    candidates = sorted(n for n in names if n.count("/") == 1 and n.endswith("/" + MANIFEST))
    return candidates[0][: -len(MANIFEST)] if candidates else None


class NodeCap:
    """Admits the files of the first ``limit`` node directories (``nodes/<name>/`` at the
    top or one directory down, where a bundle's root may be); the files of later ones
    are not read, and one refusal counts them. A directory itself is asked about as its
    name with a trailing slash."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._admitted: set[str] = set()
        self._first_over: str | None = None
        self._over: set[str] = set()

    def admits(self, name: str) -> bool:
        parts = name.split("/", 3)
        if parts[0] == "nodes" and len(parts) >= 3:
            node = specs.NODES_DIR + parts[1]
        elif len(parts) >= 4 and parts[1] == "nodes":
            node = f"{parts[0]}/nodes/{parts[2]}"
        else:
            return True
        if node in self._admitted:
            return True
        if len(self._admitted) < self._limit:
            self._admitted.add(node)
            return True
        if self._first_over is None:
            self._first_over = node + "/"
        self._over.add(node)
        return False

    def refusal(self) -> tuple[str, str] | None:
        """The one refusal to record (the first directory not read, and why), or None."""
        if self._first_over is None:
            return None
        return self._first_over, (
            f"more than {self._limit:,} node directories: {len(self._over):,} more were not "
            "read, from this one on (raise the cap with --max-nodes)")


class Refusals:
    """Refusals are noted under stored names and recorded once the root is known,
    so that problems name bundle-relative paths like every other problem."""

    _problems: ProblemLog
    _pending: list[tuple[str, str]]

    def _refuse(self, name: str, message: str) -> None:
        self._pending.append((name, message))

    def _rebase(self, names: list[str], root: str) -> dict[str, str]:
        """Map bundle-relative names to stored names; record members outside the root."""
        mapped: dict[str, str] = {}
        for name in names:
            if name.startswith(root):
                mapped[name[len(root) :]] = name
            else:
                self._problems.add(name, "outside the bundle root; ignored", kind="refused")
        for name, message in self._pending:
            shown = name[len(root) :] if root and name.startswith(root) else name
            self._problems.add(shown, message, kind="refused")
        self._pending.clear()
        return mapped


def not_a_bundle(names: list[str]) -> str:
    """Why a file set is no bundle, with a few of its names so the user sees what it is."""
    files = sorted(name for name in names if not name.endswith("/"))
    shown = ", ".join(name if len(name) <= 120 else name[:117] + "..." for name in files[:3])
    shown += f" and {len(files) - 3} more" if len(files) > 3 else ""
    held = f"it holds {len(files)} file(s): {shown}" if files else "it holds no file"
    return (f"no {MANIFEST} at the top or one directory down, and none of the other layouts "
            f"gpu-triage reads (troubleshoot's cluster-resources/, must-gather's "
            f"gpu_operand_pods.yaml); {held}")
