"""Which loaded rules run: ``--only`` and ``--skip``.

An entry is a rule id (``RT004``) or a family (``RT``: every ``RT###`` rule). A rule
left out is still listed in the report's coverage, ``skipped`` with the reason, so a
deselected rule is never mistaken for a passed one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_ENTRY = re.compile(r"^[A-Z]{2,5}([0-9]{3})?$")
SKIPPED = "deselected with --skip"
NOT_SELECTED = "not selected with --only"


class SelectionError(ValueError):
    """An entry that is not a rule id or family, or names no loaded rule."""


def _family(rule_id: str) -> str:
    return rule_id.rstrip("0123456789")


@dataclass(frozen=True, slots=True)
class Selection:
    only: frozenset[str] = frozenset()
    skip: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, only: Iterable[str] = (), skip: Iterable[str] = ()) -> Selection:
        """From option values, each a comma-separated list (repeatable)."""
        return cls(only=_entries(only), skip=_entries(skip))

    @staticmethod
    def _matches(entry: str, rule_id: str) -> bool:
        return entry == rule_id or entry == _family(rule_id)

    def reason(self, rule_id: str) -> str | None:
        """Why ``rule_id`` does not run, or None when it runs."""
        if any(self._matches(entry, rule_id) for entry in self.skip):
            return SKIPPED
        if self.only and not any(self._matches(entry, rule_id) for entry in self.only):
            return NOT_SELECTED
        return None

    def check(self, known: Iterable[str]) -> None:
        """SelectionError when an entry names no loaded rule."""
        ids = set(known)
        families = {_family(rule_id) for rule_id in ids}
        unknown = sorted(e for e in self.only | self.skip if e not in ids and e not in families)
        if unknown:
            raise SelectionError(f"no installed rule or rule family {', '.join(unknown)}; "
                                 f"installed: {', '.join(sorted(ids))}")

    def __bool__(self) -> bool:
        return bool(self.only or self.skip)


def _entries(values: Iterable[str]) -> frozenset[str]:
    found = set()
    for value in values:
        for raw in value.split(","):
            entry = raw.strip().upper()
            if not entry:
                continue
            if not _ENTRY.match(entry):
                raise SelectionError(f"{raw.strip()!r} is not a rule id (RT004) or family (RT)")
            found.add(entry)
    return frozenset(found)
