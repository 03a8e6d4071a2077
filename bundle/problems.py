"""Problems found while reading a bundle: recorded, never raised past the package."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

# Characters a terminal acts on (C0/C1 controls, bidi overrides); shown escaped instead.
_ACTIVE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class BundleError(Exception):
    """The bundle cannot be read at all (not an archive, no manifest, unknown format)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing in the bundle that could not be read as expected.

    ``kind`` is ``parse`` (a file did not parse), ``refused`` (an archive member
    was rejected for safety or size, or reading stopped at a cap), ``truncated``
    (the archive ended early or broke off), ``corrupt`` (its checksum failed) or
    ``trailing`` (data after the archive's end was not read).
    ``where`` locates the problem inside the file: ``line 12``, ``/items/3``, ...
    ``lost`` says that nothing of the file could be used (it was refused, or did not
    parse at all); otherwise the rest of the file was read.
    """

    path: str
    message: str
    kind: str = "parse"
    where: str | None = None
    lost: bool = False

    def describe(self) -> str:
        at = f" ({self.where})" if self.where else ""
        return f"{self.path}{at}: {self.message}"


class ProblemMark(NamedTuple):
    """A point in a :class:`ProblemLog`: problems kept, counts of those not kept, and
    how many times a damaged file's speaker had been set (tracked past ``keep`` too)."""

    kept: int
    unkept: dict[str, int]
    spoken: int = 0


class ProblemLog:
    """Collects problems; shared by the archive reader and every parser.

    Problems are listed by file and place, whatever order they were found in (which
    depends on the rules and worker processes that read each file first). A hostile
    bundle can hold a problem per member or per line: the first ``limit`` in that
    order are listed and the others counted per kind, reported as one closing problem
    each. Up to ``keep`` distinct problems are held to choose from; past that, new ones
    are only counted.
    """

    def __init__(self, limit: int = 1000, keep: int = 100_000) -> None:
        self._items: list[Problem] = []
        self._seen: set[Problem] = set()
        self._limit = limit
        self._keep = keep
        self._unkept: dict[str, int] = {}
        # Each file with a problem → the problem that speaks for it (the first that lost
        # the whole file, else the first), kept even past ``keep``: which files are
        # damaged decides which rules could judge (analyzers.engine).
        self._damaged: dict[str, Problem] = {}
        # Every change of speaker, in order: what ``since`` hands on of the damaged files,
        # independent of the cap on problems held (a worker past ``keep`` still says
        # which files it could not read).
        self._spoken: list[Problem] = []
        self.version = 0  # changes whenever ``damaged`` would answer differently

    def add(self, path: str, message: str, *, kind: str = "parse",
            where: str | None = None, lost: bool = False) -> None:
        problem = Problem(path=path, message=_clip(message), kind=kind,
                          where=_clip(where) if where is not None else None, lost=lost)
        self._speak_for(problem)
        if problem in self._seen:
            return
        if len(self._items) >= self._keep:
            self._unkept[kind] = self._unkept.get(kind, 0) + 1
            return
        self._seen.add(problem)
        self._items.append(problem)

    def _speak_for(self, problem: Problem) -> None:
        speaker = self._damaged.get(problem.path)
        if speaker is None or (problem.lost and not speaker.lost):
            self._damaged[problem.path] = problem
            self._spoken.append(problem)
            self.version += 1

    def damaged(self) -> dict[str, Problem]:
        """Each file with a recorded problem → the problem that speaks for it: one that
        lost the whole file (``lost``) if there is one, else the first."""
        return dict(self._damaged)

    def held(self, kind: str) -> list[Problem]:
        """Every problem of ``kind`` held, also those past the listing limit."""
        return [p for p in self._items if p.kind == kind]

    def withdraw(self, paths: set[str], kind: str) -> list[Problem]:
        """Take back the problems of ``kind`` held for ``paths`` and return them (one
        pass over the log): for a reader that learns later that what it refused was
        expected (a layout's own symbolic links), so it is no problem to act on."""
        taken = [p for p in self._items if p.kind == kind and p.path in paths]
        if not taken:
            return []
        gone = set(taken)
        self._items = [p for p in self._items if p not in gone]
        self._seen.difference_update(gone)
        touched = {p.path for p in taken}
        self.version += 1
        for path in touched:
            self._damaged.pop(path, None)
        for problem in self._items:
            if problem.path in touched:
                self._speak_for(problem)
        return taken

    def mark(self) -> ProblemMark:
        return ProblemMark(len(self._items), dict(self._unkept), len(self._spoken))

    def since(self, mark: ProblemMark) -> ProblemLog:
        """A log of what was recorded after ``mark``: the problems held, the counts of
        those not held, and every file damaged since, held or not."""
        later = ProblemLog(self._limit, self._keep)
        later._items = self._items[mark.kept:]
        later._seen = set(later._items)
        later._spoken = self._spoken[mark.spoken:]
        later._damaged = {p.path: speaker for p in later._spoken
                          if (speaker := self._damaged.get(p.path)) is not None}
        later._unkept = {kind: count - mark.unkept.get(kind, 0)
                         for kind, count in self._unkept.items()
                         if count > mark.unkept.get(kind, 0)}
        return later

    def absorb(self, other: ProblemLog) -> None:
        """Add another log's problems (and its counts of unkept ones) to this one."""
        for problem in other._items:
            self.add(problem.path, problem.message, kind=problem.kind, where=problem.where,
                     lost=problem.lost)
        for problem in other._damaged.values():
            self._speak_for(problem)
        for kind, count in other._unkept.items():
            self._unkept[kind] = self._unkept.get(kind, 0) + count

    @property
    def items(self) -> tuple[Problem, ...]:
        ordered = sorted(self._items, key=_order)
        unlisted = dict(self._unkept)
        for problem in ordered[self._limit:]:
            unlisted[problem.kind] = unlisted.get(problem.kind, 0) + 1
        closing = tuple(Problem(path="(more)", kind=kind,
                                message=f"{count} more {kind} problem(s) were not listed")
                        for kind, count in sorted(unlisted.items()))
        return tuple(ordered[:self._limit]) + closing


_DIGITS = re.compile(r"(\d+)")


def _order(problem: Problem) -> tuple[object, ...]:
    """By file, then place in it (``line 9`` before ``line 10``): the order they were
    found in depends on which rule or worker process read the file first."""
    where = _DIGITS.split(problem.where or "")
    place = tuple((1, int(part), "") if index % 2 else (0, 0, part)
                  for index, part in enumerate(where))
    return (problem.path, place, problem.kind, problem.message)


def _clip(text: str, limit: int = 300) -> str:
    """One line, at most ``limit`` characters, with bundle text's control characters
    escaped: messages quote keys and values from the bundle."""
    text = _ACTIVE.sub(lambda m: ascii(m[0])[1:-1], " ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"
