"""Problems found while reading a bundle: recorded, never raised past the package."""

from __future__ import annotations

from dataclasses import dataclass


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
    was rejected for safety) or ``truncated`` (the archive ended early).
    ``where`` locates the problem inside the file: ``line 12``, ``/items/3``, ...
    """

    path: str
    message: str
    kind: str = "parse"
    where: str | None = None

    def describe(self) -> str:
        at = f" ({self.where})" if self.where else ""
        return f"{self.path}{at}: {self.message}"


class ProblemLog:
    """Collects problems; shared by the archive reader and every parser."""

    def __init__(self) -> None:
        self._items: list[Problem] = []
        self._seen: set[Problem] = set()

    def add(self, path: str, message: str, *, kind: str = "parse", where: str | None = None) -> None:
        problem = Problem(path=path, message=_clip(message), kind=kind, where=where)
        if problem not in self._seen:
            self._seen.add(problem)
            self._items.append(problem)

    @property
    def items(self) -> tuple[Problem, ...]:
        return tuple(self._items)


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
