"""Rule.prepares: cluster-only facts a rule reads are made while workers parse node
files, only for rules that will run, each once, and the report does not change."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from analyzers.engine import analysis
from analyzers.engine.plugins import LoadedRule, discover
from analyzers.engine.selection import Selection
from analyzers.facts import Facts
from analyzers.facts.known_issue_lines import cluster_sightings
from analyzers.facts.preconditions import Need
from analyzers.results.models import Finding, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.speed import Preload, prefetch
from bundle import open_bundle, specs

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "incident-toolkit-disabled"


def _first(facts: Facts) -> object:
    return facts.pods_by_node


def _second(facts: Facts) -> object:
    return facts.operator_pods


class _Base(Rule):
    slug = "t"
    severity = Severity.LOW
    inputs = (cluster(specs.PODS),)

    def check(self, ctx: Context) -> Iterable[Finding]:
        return []


class Runs(_Base):
    id = "TST001"
    prepares = (_first, _second)


class AlsoRuns(_Base):
    id = "TST002"
    prepares = (_first,)


class LacksInput(_Base):
    id = "TST003"
    inputs = (cluster("cluster/nothing-here.json"),)
    prepares = (lambda facts: facts.inventory,)


class MayBeSkipped(_Base):
    id = "TST004"
    needs = (next(iter(Need)),)
    prepares = (lambda facts: facts.accounting,)


def _loaded(*rules: type[Rule]) -> list[LoadedRule]:
    return [LoadedRule(rule, "test") for rule in rules]


def test_only_rules_that_will_run_prepare_and_each_fact_once() -> None:
    with open_bundle(SAMPLE) as opened:
        facts = Facts(opened)
        rules = _loaded(Runs, AlsoRuns, LacksInput, MayBeSkipped)
        made = analysis._prepared(opened, facts, rules, None)
        assert [(call.func, call.args) for call in made] == [  # type: ignore[attr-defined]
            (_first, (facts,)), (_second, (facts,))]
        skipping = Selection.parse(skip=["TST001"])
        assert [call.func for call in analysis._prepared(  # type: ignore[attr-defined]
            opened, facts, rules, skipping)] == [_first]
        assert analysis._prepared(opened, facts, rules, Selection.parse(only=["TST003"])) == []


def test_the_known_issue_rule_prepares_its_cluster_sightings() -> None:
    with open_bundle(SAMPLE) as opened:
        facts = Facts(opened)
        builtin = discover().rules
        assert cluster_sightings in [call.func for call in  # type: ignore[attr-defined]
                                     analysis._prepared(opened, facts, builtin, None)]
        assert [call.func for call in analysis._prepared(  # type: ignore[attr-defined]
            opened, facts, builtin, Selection.parse(only=["RT"]))] == []


def test_prepared_facts_change_no_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers for the small sample too: its cluster-only facts are made meanwhile, and
    the report is the one a single process gives."""
    monkeypatch.setattr(prefetch, "MIN_NODES", 1)
    monkeypatch.setattr(prefetch, "CHUNK", 1)
    made: list[str] = []
    real = analysis._prepared

    def counting(*args: object) -> list[object]:
        calls = real(*args)  # type: ignore[arg-type]
        made.extend(call.func.__name__ for call in calls)  # type: ignore[attr-defined]
        return calls  # type: ignore[return-value]

    monkeypatch.setattr(analysis, "_prepared", counting)
    with open_bundle(SAMPLE) as opened:
        alone = analysis.analyze(opened, discover().rules)
    with Preload(3) as preload, open_bundle(SAMPLE) as opened:
        shared = analysis.analyze(opened, discover().rules, preload=preload)
    assert {"cluster_sightings", "prepare_inventory", "prepare_accounting"} <= set(made)
    assert shared.model_dump(exclude={"generated_at"}) == alone.model_dump(
        exclude={"generated_at"})
