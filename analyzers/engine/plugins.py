"""Rule discovery through the ``gpu_triage.rules`` entry-point group.

Built-in families register there exactly as a third-party package would
(``pyproject.toml``). Discovery runs in three steps, each plugin in its own try block:
find the entry points (:mod:`importlib.metadata`), load each one, and check what it
provided. A broken plugin is reported and skipped.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata

from analyzers.rule import RULE_ID, Rule

GROUP = "gpu_triage.rules"
BUILTIN_ORIGIN = "built-in"
OWN_NAME = "gpu-triage"  # the distribution's name: its entry points are the built-in ones


@dataclass(frozen=True, slots=True)
class LoadedRule:
    rule: type[Rule]
    origin: str


@dataclass(slots=True)
class Discovery:
    rules: list[LoadedRule] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def by_id(self) -> dict[str, LoadedRule]:
        return {loaded.rule.id: loaded for loaded in self.rules}


@dataclass(frozen=True, slots=True)
class Point:
    """An entry point to load: its origin, name, value and loader."""

    origin: str
    name: str
    value: str
    load: Callable[[], object]


def _origin(ep: metadata.EntryPoint, names: dict[int, str]) -> str:
    """Who provides ``ep``. A distribution's name is read from its whole ``METADATA``
    (the README included) on every ask, so it is asked once per distribution:
    ``names`` holds the answers by distribution object."""
    if ep.dist is None:
        dist = "unknown"
    else:
        if id(ep.dist) not in names:
            names[id(ep.dist)] = ep.dist.name
        dist = names[id(ep.dist)]
    return BUILTIN_ORIGIN if dist == OWN_NAME else f"{dist} ({ep.name})"


def entry_points(group: str = GROUP) -> list[Point]:
    """The entry points of ``group``, built-in ones first, each run by name."""
    found = metadata.entry_points(group=group)
    names: dict[int, str] = {}
    points = [Point(_origin(ep, names), ep.name, ep.value, ep.load) for ep in found]
    return sorted(points, key=lambda p: (p.origin != BUILTIN_ORIGIN, p.name))


def _provided(obj: object) -> list[object]:
    if inspect.isclass(obj):
        return [obj]
    if isinstance(obj, Iterable) and not isinstance(obj, (str, bytes)):
        return list(obj)
    return [obj]


def check_rule(candidate: object) -> str | None:
    """Why ``candidate`` is not a usable rule class, or None when it is."""
    if not (inspect.isclass(candidate) and issubclass(candidate, Rule)):
        return f"{candidate!r} is not a Rule subclass"
    rule_id = getattr(candidate, "id", None)
    if not isinstance(rule_id, str) or not RULE_ID.match(rule_id):
        return f"{candidate.__name__} has an invalid id {rule_id!r} (expected e.g. RT001)"
    for attribute in ("slug", "severity"):
        if not hasattr(candidate, attribute):
            return f"{rule_id} lacks the class attribute {attribute!r}"
    return None


def add_rules(discovery: Discovery, provided: Iterable[object], origin: str) -> None:
    seen = {loaded.rule.id for loaded in discovery.rules}
    for candidate in provided:
        problem = check_rule(candidate)
        if problem is not None:
            discovery.errors.append(f"{origin}: {problem}")
            continue
        assert inspect.isclass(candidate) and issubclass(candidate, Rule)
        if candidate.id in seen:
            discovery.errors.append(f"{origin}: rule {candidate.id} is already provided; "
                                    "the first one was kept")
            continue
        seen.add(candidate.id)
        discovery.rules.append(LoadedRule(candidate, origin))


def discover(group: str = GROUP) -> Discovery:
    discovery = Discovery()
    for point in entry_points(group):
        try:
            loaded = point.load()
        except Exception as exc:  # noqa: BLE001 - a plugin may fail in any way
            discovery.errors.append(f"{point.origin}: cannot load {point.value}: "
                                    f"{type(exc).__name__}: {exc}")
            continue
        add_rules(discovery, _provided(loaded), point.origin)
    discovery.rules.sort(key=lambda loaded: loaded.rule.id)
    return discovery
