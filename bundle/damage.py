"""The damaged files of a bundle, indexed once, so that asking which of them one rule
input names costs that input's files, not every damaged file.

A hostile archive can hold hundreds of thousands of refused members (symbolic links,
say): each is a damaged file. A rule skipped for a missing input names the damaged
files matching that input's pattern, and every skipped rule asks, so a scan per
question multiplied the bundle's refusals by the rules (490,000 refused links: over
120 s).
"""

from __future__ import annotations

import bisect
import fnmatch
from collections import defaultdict

from bundle import specs
from bundle.problems import Problem

_GLOB = frozenset("*?[")
_EACH_NODE = specs.EACH_NODE


class DamageIndex:
    """``by_path`` (each damaged file → the problem that speaks for it), indexed by path
    order, and files under ``nodes/<node>/`` also by their node-relative path's first
    and last components (the shapes rule inputs are written in)."""

    def __init__(self, version: int, by_path: dict[str, Problem]) -> None:
        self.version = version
        self.by_path = by_path
        self._sorted = sorted(by_path)
        self._by_first: dict[str, list[str]] = defaultdict(list)
        self._by_last: dict[str, list[str]] = defaultdict(list)
        for path in self._sorted:
            parts = path.split("/", 2)
            if parts[0] == "nodes" and len(parts) == 3:
                relative = parts[2]
                self._by_first[relative.split("/", 1)[0]].append(path)
                self._by_last[relative.rsplit("/", 1)[-1]].append(path)

    def matching(self, pattern: str) -> list[tuple[str, Problem]]:
        """The damaged files that ``pattern`` (``fnmatch``, as rule inputs are written)
        names, by path. A ``nodes/*/`` pattern reads its star as one node's name, as
        the rules do: a file deeper under a node is that node's, never another's."""
        if _GLOB.isdisjoint(pattern):
            found = self.by_path.get(pattern)
            return [] if found is None else [(pattern, found)]
        candidates: list[str]
        if pattern.startswith(_EACH_NODE):
            relative = pattern[len(_EACH_NODE):]
            first, last = relative.split("/", 1)[0], relative.rsplit("/", 1)[-1]
            if _GLOB.isdisjoint(last):
                candidates = self._by_last.get(last, [])
            elif "/" in relative and _GLOB.isdisjoint(first):
                candidates = self._by_first.get(first, [])
            else:
                candidates = self._under(specs.NODES_DIR)
        else:
            head = pattern[: min(pattern.find(c) for c in _GLOB if c in pattern)]
            candidates = self._under(head)
        return [(path, self.by_path[path]) for path in candidates
                if fnmatch.fnmatchcase(path, pattern)]

    def _under(self, head: str) -> list[str]:
        start = bisect.bisect_left(self._sorted, head)
        end = bisect.bisect_left(self._sorted, head + "\U0010ffff")
        return self._sorted[start:end]
