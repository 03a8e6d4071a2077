"""Checks of contributed known-issue entries against the packaged base.

``gpu-triage rules test --known-issues PATH`` runs these on the files a contributor
wrote: each file is first loaded strictly (:func:`known_issues.load_file`: its examples
match, its negative does not), then every entry is judged against the packaged base
(``analyzers/data/known_issues/``) and the other files tested with it: its ID must be
new (or the entry identical to the packaged one of that ID), must not be retired in
``ids.txt``, no other entry may match its negative, and it must not match another
entry's negative. A tested file replaces the packaged file at the same path, so an
entry being edited in place is not compared with its own old version.

Pure apart from reading the files it is given; nothing here prints.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from analyzers.knowledge.known_issues import DATA_DIR, Issue, KnownIssueError, load_file

__all__ = ["IDS_TXT", "Located", "Verdict", "check", "find", "issue_paths", "located",
           "retired_ids"]

IDS_TXT: Final = DATA_DIR / "ids.txt"


@dataclass(frozen=True, slots=True)
class Located:
    """An entry and the file it was read from."""

    issue: Issue
    path: Path
    packaged: bool

    @property
    def label(self) -> str:
        return f"{self.issue.id} ({'packaged ' if self.packaged else ''}{self.path.name})"


@dataclass(slots=True)
class Verdict:
    """What the checks found about one tested entry: problems fail it, notes do not."""

    entry: Located
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems


def issue_paths(path: Path) -> list[Path]:
    """The known-issue files ``path`` names: the file itself, or the ``*.toml`` of
    ``path/known_issues/`` when that directory exists, else those of ``path``."""
    if path.is_file():
        return [path]
    inner = path / "known_issues"
    directory = inner if inner.is_dir() else path
    found = sorted(directory.glob("*.toml"))
    if not found:
        raise KnownIssueError(f"{path}: no known-issue files (*.toml) in {directory}")
    return found


def located(paths: Sequence[Path], *, packaged: bool = False) -> list[Located]:
    """Every entry of ``paths``, loaded strictly, with its file."""
    return [Located(issue, path, packaged) for path in paths
            for issue in load_file(path).issue]


@functools.cache
def _packaged_base() -> tuple[Located, ...]:
    return tuple(located(sorted(DATA_DIR.glob("*.toml")), packaged=True))


def find(ident: str, extra: Sequence[Located] = ()) -> Located | None:
    """The entry with this ID (any case) among ``extra`` first, then in the packaged
    base; None when there is none."""
    wanted = ident.upper()
    for entry in (*extra, *_packaged_base()):
        if entry.issue.id == wanted:
            return entry
    return None


def retired_ids(text: str) -> frozenset[str]:
    """The IDs ``ids.txt`` marks retired (never to be issued again)."""
    retired = set()
    for line in text.splitlines():
        ident, _, flag = line.strip().partition(" ")
        if ident and not ident.startswith("#") and flag.strip() == "retired":
            retired.add(ident)
    return frozenset(retired)


def _issued(text: str) -> frozenset[str]:
    return frozenset(line.split()[0] for line in text.splitlines()
                     if line.strip() and not line.startswith("#"))


def check(tested: Sequence[Located], base: Sequence[Located] | None = None,
          ids_txt: str | None = None) -> list[Verdict]:
    """Judge each tested entry against ``base`` (default: the packaged base, less the
    files tested in place) and against the other tested entries."""
    if base is None:
        base = _packaged_base()
    if ids_txt is None:
        ids_txt = IDS_TXT.read_text(encoding="utf-8")
    in_place = {entry.path.resolve() for entry in tested}
    base = [entry for entry in base if entry.path.resolve() not in in_place]
    by_id = {entry.issue.id: entry for entry in base}
    # An entry identical to the packaged one of its ID is that entry: not a collision,
    # and not compared with itself below.
    same = {entry.issue.id for entry in tested
            if entry.issue.id in by_id and by_id[entry.issue.id].issue == entry.issue}
    others = [entry for entry in base if entry.issue.id not in same]
    retired, issued = retired_ids(ids_txt), _issued(ids_txt)
    verdicts = []
    for entry in tested:
        verdict = Verdict(entry)
        issue = entry.issue
        taken = by_id.get(issue.id)
        if taken is not None and issue.id not in same:
            verdict.problems.append(f"{issue.id} is already taken by {taken.label}; use the "
                                    f"next free number of KI-{issue.prefix}- in ids.txt")
        twice = [e.path.name for e in tested if e is not entry and e.issue.id == issue.id]
        if twice:
            verdict.problems.append(f"{issue.id} is also defined in {', '.join(twice)}")
        if issue.id in retired:
            verdict.problems.append(f"{issue.id} is retired in ids.txt and never reused")
        for other in (*others, *tested):
            if other is entry or other.issue.id == issue.id:
                continue
            if any(other.issue.matches(line) for line in issue.examples):
                verdict.notes.append(f"{other.label} also matches its example (on one "
                                     "line KI001 reports the more specific entry first)")
            if other.issue.matches(issue.negative):
                verdict.problems.append(f"{other.label} matches its negative: "
                                        f"{issue.negative!r}")
            if issue.matches(other.issue.negative):
                verdict.problems.append(f"it matches the negative of {other.label}: "
                                        f"{other.issue.negative!r}")
        if issue.id not in issued:
            verdict.notes.append(f"not yet in ids.txt: append {issue.id} there")
        verdicts.append(verdict)
    return verdicts
