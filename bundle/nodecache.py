"""A bounded cache of per-node artifacts, so memory does not grow with the bundle.

Every :class:`~bundle.reader.NodeArtifacts` keeps what it parsed (journals, nvidia-smi
XML, config dumps) for as long as it lives. Keeping one per node for the whole run
holds every node's parsed journals at once: gigabytes on a 2,000-node bundle. This
cache keeps the most recently used nodes only, up to a budget in bytes of collected
files (a node weighs what its ``nodes/<name>/`` files weigh); the least recently used
node is dropped, with everything it parsed, once the budget is exceeded. A dropped
node is read again, from the archive's spool, the next time it is asked for.

Re-reading is safe: parsing is deterministic, and the problem log ignores a problem it
has already recorded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_BUDGET = 64 << 20
"""Bytes of collected node files whose parsed artifacts may be held at once."""


class NodeCache(Generic[T]):
    """Least-recently-used cache of one object per node, bounded by node weight.

    ``make(name)`` builds a node's object; ``weigh(name)`` says how many bytes of
    collected files stand behind it. The most recently used node is always kept, so a
    node heavier than the whole budget still works (it is simply not shared).
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

    def get(self, name: str) -> T:
        entry = self._entries.get(name)
        if entry is not None:
            self._entries.move_to_end(name)
            return entry[0]
        value = self._make(name)
        weight = max(self._weigh(name), 1)
        self._entries[name] = (value, weight)
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
