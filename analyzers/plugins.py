"""Rule discovery through the ``gpu_triage.rules`` entry-point group.

Built-in families register there exactly as a third-party package would. Discovery
runs in three steps, each plugin in its own try block: find the entry points, load
each one, and check what it provided. A broken plugin is reported and skipped.

When :func:`analyzers.entrypoints.builtin_only` can tell that :mod:`importlib.metadata`
would return exactly :data:`BUILTIN` (no third-party plugin is installed), those are
loaded directly, with the same origins and order, without asking it (8 of 9 ms).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from analyzers import entrypoints
from analyzers.rule import RULE_ID, Rule

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

GROUP = "gpu_triage.rules"
BUILTIN_ORIGIN = "built-in"
# The built-in families as pyproject.toml registers them (tests/test_entrypoints.py
# checks that the two agree).
BUILTIN = (
    ("builtin-bnd", "analyzers.rules.bnd:RULES"),
    ("builtin-cfg", "analyzers.rules.cfg:RULES"),
    ("builtin-drv", "analyzers.rules.drv:RULES"),
    ("builtin-helm", "analyzers.rules.helm:RULES"),
    ("builtin-op", "analyzers.rules.op:RULES"),
    ("builtin-rt", "analyzers.rules.rt:RULES"),
    ("builtin-sc", "analyzers.rules.sc:RULES"),
)


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
class _Point:
    """An entry point to load: its origin, name, value and loader."""

    origin: str
    name: str
    value: str
    load: Callable[[], object]


def _origin(ep: EntryPoint) -> str:
    dist = ep.dist.name if ep.dist is not None else "unknown"
    return BUILTIN_ORIGIN if dist == entrypoints.OWN_NAME else f"{dist} ({ep.name})"


def _load(value: str) -> object:
    """What ``EntryPoint(value=...).load()`` returns for a ``module:attr`` value."""
    module, _, attrs = value.partition(":")
    return functools.reduce(getattr, attrs.split("."), importlib.import_module(module))


def _entry_points(group: str) -> list[_Point]:
    """The entry points of ``group``, built-in ones first, each run by name."""
    if group == GROUP and entrypoints.builtin_only(group, BUILTIN):
        return [_Point(BUILTIN_ORIGIN, name, value, functools.partial(_load, value))
                for name, value in BUILTIN]
    from importlib import metadata

    points = [_Point(_origin(ep), ep.name, ep.value, ep.load)
              for ep in metadata.entry_points(group=group)]
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
    for point in _entry_points(group):
        try:
            loaded = point.load()
        except Exception as exc:  # noqa: BLE001 - a plugin may fail in any way
            discovery.errors.append(f"{point.origin}: cannot load {point.value}: "
                                    f"{type(exc).__name__}: {exc}")
            continue
        add_rules(discovery, _provided(loaded), point.origin)
    discovery.rules.sort(key=lambda loaded: loaded.rule.id)
    return discovery
