"""A bounded cache of parsed node files, so memory does not follow the files' size.

A node's journals are its largest files (about 1 MB of JSON lines per node is common)
and parse into several times their size in Python objects: keeping every node's
parsed journals for the whole run holds gigabytes on a 2,000-node bundle. The bundle
keeps them in a :class:`NodeCache` instead: the most recently used only, up to a
budget in bytes of the files behind them; the least recently used is dropped once the
budget is exceeded, and parsed again (from the archive's spool) if asked for again.
Readers that walk every node should go through one shared pass
(``analyzers/facts/journals.py``) rather than each parse every journal again.

Re-parsing is safe: parsing is deterministic, and the problem log ignores a problem it
has already recorded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_BUDGET = 64 << 20
"""Bytes of source files whose parsed form may be held at once."""


class NodeCache(Generic[T]):
    """Least-recently-used cache of parsed objects, bounded by the size of their sources.

    ``make(key)`` parses one object; ``weigh(key)`` says how many bytes of collected
    files stand behind it. The most recently used object is always kept, so an object
    heavier than the whole budget still works (it is simply not shared).
    """

    def __init__(self, make: Callable[[str], T], weigh: Callable[[str], int],
                 budget: int | None = None) -> None:
        self._make = make
        self._weigh = weigh
        self._budget = DEFAULT_BUDGET if budget is None else budget
        self._entries: OrderedDict[str, tuple[T, int]] = OrderedDict()
        self._total = 0
        self.built = 0     # objects made (first reads plus re-reads after eviction)
        self.evicted = 0

    def get(self, key: str) -> T:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            return entry[0]
        value = self._make(key)
        weight = max(self._weigh(key), 1)
        self._entries[key] = (value, weight)
        self._total += weight
        self.built += 1
        while self._total > self._budget and len(self._entries) > 1:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._total -= dropped
            self.evicted += 1
        return value

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def weight(self) -> int:
        return self._total
