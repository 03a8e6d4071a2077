"""Rule discovery through the ``gpu_triage.rules`` entry-point group.

Built-in families register there exactly as a third-party package would. Discovery
runs in three steps, each plugin in its own try block: find the entry points, load
each one, and check what it provided. A broken plugin is reported and skipped.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points

from analyzers.rule import RULE_ID, Rule

GROUP = "gpu_triage.rules"


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


def _origin(ep: EntryPoint) -> str:
    dist = ep.dist.name if ep.dist is not None else "unknown"
    return "built-in" if dist == "gpu-triage" else f"{dist} ({ep.name})"


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
    points = sorted(entry_points(group=group), key=lambda ep: (_origin(ep) != "built-in",
                                                                ep.name))
    for ep in points:
        origin = _origin(ep)
        try:
            loaded = ep.load()
        except Exception as exc:  # noqa: BLE001 - a plugin may fail in any way
            discovery.errors.append(f"{origin}: cannot load {ep.value}: "
                                    f"{type(exc).__name__}: {exc}")
            continue
        add_rules(discovery, _provided(loaded), origin)
    discovery.rules.sort(key=lambda loaded: loaded.rule.id)
    return discovery
