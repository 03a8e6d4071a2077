"""A compact, read-only copy of a parsed XML element, for documents kept all run long.

Every node's ``nvidia-smi -q -x`` stays parsed while the rules run. As an
``xml.etree`` tree it costs about 190 bytes per element (the element object, its text
and its tail): 1,800 elements and 350 KB for an 8-GPU node, 700 MB for 2,000 nodes.
GPUs of one model print the same elements in the same order, so here the structure
(tags and nesting) is kept once per distinct structure (:class:`_Shape`, shared by all
GPUs and nodes that have it) and each element keeps only its text, interned so that
"N/A", "Disabled" or "0" exist once, and its attributes: about 3 KB per GPU.

:class:`FlatElement` offers the part of ElementTree's ``Element`` API that readers of
nvidia-smi use, with the same answers: ``tag``, ``text``, ``get``, iteration over the
children, and ``find``/``findall``/``findtext`` with plain child paths (``fabric/state``;
the first match is the first in document order). Other ElementPath syntax is refused
with :class:`ValueError` rather than answered differently. Tails are not kept.
"""

from __future__ import annotations

import functools
import re
import sys
import weakref
import xml.etree.ElementTree as ET
from bisect import bisect_right
from collections.abc import Iterator

__all__ = ["FlatElement", "flatten"]

REMEMBERED_PATHS = 1024
"""Paths remembered per shape; beyond that (paths made from document text) not kept."""

_TAG = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_shapes: weakref.WeakValueDictionary[tuple[tuple[str, ...], tuple[int, ...]], _Shape] = (
    weakref.WeakValueDictionary())
"""The shapes in use, for sharing; a shape no element holds any more is dropped."""


class _Index:
    """Where each element sits, computed once per shape from the preorder.

    ``ends[i]``: the subtree of element ``i`` is ``range(i, ends[i])``. Paths are
    numbered as a trie: ``path_of[i]`` is the number of element ``i``'s tag path from
    the top, ``steps[(p, tag)]`` the number of path ``p`` extended by a child ``tag``,
    and ``members[p]`` the elements with path ``p`` in document order. Nothing grows
    with depth, so deeply nested input costs no more than flat input.
    """

    __slots__ = ("_from_top", "ends", "members", "path_of", "steps")

    def __init__(self, tags: tuple[str, ...], counts: tuple[int, ...]) -> None:
        size = len(tags)
        self.ends = [size] * size
        self.path_of = [0] * size
        self.steps: dict[tuple[int, str], int] = {}
        self.members: list[list[int]] = [[0]]
        self._from_top: dict[str, list[int]] = {}
        open_elements: list[list[int]] = []  # [element, children still to come]
        for index in range(size):
            if open_elements:
                parent = open_elements[-1]
                parent[1] -= 1
                key = (self.path_of[parent[0]], tags[index])
                path = self.steps.get(key)
                if path is None:
                    path = self.steps[key] = len(self.members)
                    self.members.append([])
                self.members[path].append(index)
                self.path_of[index] = path
            open_elements.append([index, counts[index]])
            while open_elements and open_elements[-1][1] == 0:
                self.ends[open_elements.pop()[0]] = index + 1

    def members_at(self, at: int, path: str) -> list[int]:
        """Elements whose tag path is element ``at``'s extended by ``path``: those below
        ``at``, and those below other elements that share ``at``'s path."""
        current = self.path_of[at]
        for segment in _segments(path):
            following = self.steps.get((current, segment))
            if following is None:
                return []
            current = following
        return self.members[current]

    def members_from_top(self, path: str) -> list[int]:
        """``members_at(0, path)``, remembered: every GPU of a shape is asked the same
        few dozen paths."""
        found = self._from_top.get(path)
        if found is None:
            found = self.members_at(0, path)
            if len(self._from_top) < REMEMBERED_PATHS:
                self._from_top[path] = found
        return found


class _Shape:
    """The structure of a subtree: tags and child counts in preorder."""

    __slots__ = ("__weakref__", "_index", "counts", "tags")

    def __init__(self, tags: tuple[str, ...], counts: tuple[int, ...]) -> None:
        self.tags = tags
        self.counts = counts
        self._index: _Index | None = None

    def __reduce__(self) -> tuple[object, tuple[tuple[str, ...], tuple[int, ...]]]:
        # Unpickled (from a worker process) through the registry, so it stays shared.
        return _shape, (self.tags, self.counts)

    @property
    def index(self) -> _Index:
        if self._index is None:
            self._index = _Index(self.tags, self.counts)
        return self._index


def _shape(tags: tuple[str, ...], counts: tuple[int, ...]) -> _Shape:
    key = (tags, counts)
    shape = _shapes.get(key)
    if shape is None:
        shape = _shapes[key] = _Shape(tags, counts)
    return shape


@functools.lru_cache(maxsize=256)
def _segments(path: str) -> tuple[str, ...]:
    segments = tuple(path.split("/"))
    if not all(_TAG.fullmatch(segment) for segment in segments):
        raise ValueError(f"only plain child paths such as 'a/b' are supported, not {path!r}")
    return segments


class FlatElement:
    """One element of a flattened subtree (see the module docstring)."""

    __slots__ = ("_at", "_attributes", "_shape", "_texts")

    def __init__(self, shape: _Shape, texts: tuple[str | None, ...],
                 attributes: dict[int, dict[str, str]] | None, at: int) -> None:
        self._shape = shape
        self._texts = texts
        self._attributes = attributes
        self._at = at

    def __repr__(self) -> str:
        return f"<FlatElement {self.tag!r}>"

    @property
    def tag(self) -> str:
        return self._shape.tags[self._at]

    @property
    def text(self) -> str | None:
        return self._texts[self._at]

    @property
    def attrib(self) -> dict[str, str]:
        """A copy of the attributes (changing it changes nothing)."""
        found = self._attributes.get(self._at) if self._attributes else None
        return dict(found) if found else {}

    def get(self, key: str, default: str | None = None) -> str | None:
        found = self._attributes.get(self._at) if self._attributes else None
        return found.get(key, default) if found else default

    def __iter__(self) -> Iterator[FlatElement]:
        ends = self._shape.index.ends
        child = self._at + 1
        end = ends[self._at]
        while child < end:
            yield self._view(child)
            child = ends[child]

    def find(self, path: str) -> FlatElement | None:
        """The first element at ``path`` below this one, in document order."""
        found = self._matches(path)
        return self._view(found[0]) if found else None

    def findall(self, path: str) -> list[FlatElement]:
        return [self._view(index) for index in self._matches(path)]

    def findtext(self, path: str, default: str | None = None) -> str | None:
        """Like ``Element.findtext``: the text ('' when it has none), else ``default``."""
        found = self._matches(path)
        return (self._texts[found[0]] or "") if found else default

    def _matches(self, path: str) -> list[int]:
        index = self._shape.index
        if self._at == 0:
            return index.members_from_top(path)
        members = index.members_at(self._at, path)
        start = bisect_right(members, self._at)
        stop = bisect_right(members, index.ends[self._at] - 1, start)
        return members[start:stop]

    def _view(self, at: int) -> FlatElement:
        return FlatElement(self._shape, self._texts, self._attributes, at)


def flatten(element: ET.Element) -> FlatElement:
    """A :class:`FlatElement` holding ``element`` and everything below it."""
    elements = list(element.iter())
    shape = _shape(tuple([e.tag for e in elements]), tuple(map(len, elements)))
    intern = sys.intern
    texts = tuple([None if (text := e.text) is None else intern(text) for e in elements])
    attributes = {index: dict(items) for index, e in enumerate(elements)
                  if (items := e.items())}
    return FlatElement(shape, texts, attributes or None, 0)
