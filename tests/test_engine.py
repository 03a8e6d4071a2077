"""The engine: isolation, skip reasons, causal links; plugin discovery; layering."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from pathlib import Path

import pytest
from kit.bundles import kube_list, write_dir

from analyzers import refs
from analyzers.engine import analyze, link
from analyzers.engine.plugins import Discovery, LoadedRule, add_rules, discover
from analyzers.results.models import Finding, RuleStatus, Severity
from analyzers.rule import SECTIONS, CannotJudge, Context, Rule, cluster, node, parse_docstring
from bundle import open_bundle

ROOT = Path(__file__).resolve().parent.parent


class Boom(Rule):
    """Always raises.

    Why it matters:
    Tests isolation.

    Remediation:
    None.
    """

    id = "TST001"
    slug = "boom"
    severity = Severity.LOW

    def check(self, ctx: Context) -> Iterable[Finding]:
        raise KeyError("status")


class NeedsPods(Rule):
    """Needs pods and a node file.

    Why it matters:
    Tests skipping.

    Remediation:
    None.
    """

    id = "TST002"
    slug = "needs"
    severity = Severity.LOW
    inputs = (cluster("pods.json"), node("dmesg.txt"))

    def check(self, ctx: Context) -> Iterable[Finding]:
        yield self.finding("x", "found")


class Root(Rule):
    """A root cause.

    Why it matters:
    x

    Remediation:
    y
    """

    id = "TST003"
    slug = "root"
    severity = Severity.HIGH

    def check(self, ctx: Context) -> Iterable[Finding]:
        yield self.finding("a", "root", causes=["TST004:a", refs.link("RT001", "z")])


class Symptom(Rule):
    """A symptom.

    Why it matters:
    x

    Remediation:
    y
    """

    id = "TST004"
    slug = "symptom"
    severity = Severity.CRITICAL

    def check(self, ctx: Context) -> Iterable[Finding]:
        yield self.finding("a", "symptom", caused_by=["TST003:a", refs.link("OP001", "q")])


class Unsure(Rule):
    """Cannot judge this bundle.

    Why it matters:
    Tests run-time skipping.

    Remediation:
    None.
    """

    id = "TST005"
    slug = "unsure"
    severity = Severity.LOW

    def check(self, ctx: Context) -> Iterable[Finding]:
        raise CannotJudge("no node collected the thing")


def test_cannot_judge_is_a_skip_with_its_reason(tmp_path: Path) -> None:
    report = _run(tmp_path, [Unsure])
    assert (report.rules[0].status, report.rules[0].reason) == (
        RuleStatus.SKIPPED, "no node collected the thing")


def _run(tmp_path: Path, rules: list[type[Rule]], files: dict | None = None):  # type: ignore[type-arg]
    path = write_dir(tmp_path / "b", files or {"cluster/nodes.json": kube_list()})
    with open_bundle(path) as bundle:
        return analyze(bundle, [LoadedRule(r, "test") for r in rules])


def test_a_raising_rule_is_an_error_and_the_run_goes_on(tmp_path: Path) -> None:
    report = _run(tmp_path, [Boom, Root, Symptom])
    statuses = {r.rule_id: (r.status, r.reason) for r in report.rules}
    assert statuses["TST001"] == (RuleStatus.ERROR, "KeyError: 'status' (see --verbose)")
    assert statuses["TST003"][0] is RuleStatus.FAILED
    assert [f.id for f in report.findings] == ["TST004:a", "TST003:a"]


def test_missing_inputs_skip_with_the_reason(tmp_path: Path) -> None:
    report = _run(tmp_path, [NeedsPods], {"cluster/pods.json": kube_list()})
    result = report.rules[0]
    assert (result.status, result.reason) == (RuleStatus.SKIPPED, "no node collected dmesg.txt")
    report = _run(tmp_path / "2", [NeedsPods])
    assert report.rules[0].reason == "cluster/pods.json is not in the bundle"


def test_skip_reason_quotes_the_collection_error(tmp_path: Path) -> None:
    path = write_dir(tmp_path / "b", {"nodes/gpu-a/dmesg.txt": "x"},
                     failed=[{"path": "cluster/pods.json", "error": "pods is forbidden"}])
    with open_bundle(path) as bundle:
        report = analyze(bundle, [LoadedRule(NeedsPods, "test")])
    assert report.rules[0].reason == "cluster/pods.json was not collected: pods is forbidden"


def test_links_are_symmetric_and_dangling_ones_dropped(tmp_path: Path) -> None:
    report = _run(tmp_path, [Root, Symptom])
    by_id = report.by_id()
    assert by_id["TST003:a"].causes == ["TST004:a"]
    assert by_id["TST003:a"].caused_by == []
    assert by_id["TST004:a"].caused_by == ["TST003:a"]


def test_link_accepts_one_sided_declarations() -> None:
    a = Root.finding("a", "root")
    b = Symptom.finding("a", "symptom", caused_by=["TST003:a"])
    linked = {f.id: f for f in link([a, b])}
    assert linked["TST003:a"].causes == ["TST004:a"]


def test_builtin_rules_are_discovered_through_entry_points() -> None:
    discovery = discover()
    assert discovery.errors == []
    origins = {loaded.rule.id: loaded.origin for loaded in discovery.rules}
    for rule_id in ("BND001", "BND002", "RT001", "CFG004"):
        assert origins[rule_id] == "built-in"


def test_bad_plugins_are_reported_not_loaded() -> None:
    discovery = Discovery()
    add_rules(discovery, [Root, object(), Root], "acme-rules (acme)")
    assert [loaded.rule.id for loaded in discovery.rules] == ["TST003"]
    assert "is not a Rule subclass" in discovery.errors[0]
    assert "already provided" in discovery.errors[1]


@pytest.mark.parametrize("loaded", discover().rules, ids=lambda lr: lr.rule.id)
def test_every_rule_is_documented_and_well_formed(loaded: LoadedRule) -> None:
    rule = loaded.rule
    docs = parse_docstring(rule.__doc__ or "")
    assert docs.title, f"{rule.id} has no title line"
    for section in SECTIONS:
        assert f"{section}:" in (rule.__doc__ or ""), f"{rule.id} lacks '{section}:'"
    assert docs.why and docs.remediation
    assert rule.slug and rule.slug == rule.slug.lower()
    assert isinstance(rule.severity, Severity)


def test_rule_ids_are_unique() -> None:
    ids = [loaded.rule.id for loaded in discover().rules]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("package", ["bundle", "analyzers", "collectors", "reports", "gpu_triage"])
def test_top_level_packages_resolve_inside_this_repository(package: str) -> None:
    module = importlib.import_module(package)
    assert Path(module.__file__ or "").resolve().is_relative_to(ROOT / package)


# Which package may import which: tests/test_layering.py.
