"""A rule that requires no single input judges its optional inputs together: skipped when
none of them is in the bundle or every one was lost, partial when one was damaged
(analyzers/engine/analysis.py, analyzers/engine/coverage.py). And a rule that judges nothing but
container logs requires them."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kit import analyse, status
from kit.bundles import kube_list, write_dir
from kit.cluster import Cluster

from analyzers.engine import analyze
from analyzers.engine.plugins import LoadedRule
from analyzers.results.models import Finding, Report, RuleStatus, Severity
from analyzers.rule import Context, Rule, cluster, node
from bundle import open_bundle


class Either(Rule):
    """Test rule that reads pods or node dmesg, whichever the bundle has.

    Why it matters:
    It is a test.

    Remediation:
    None.
    """

    id = "TST101"
    slug = "either"
    severity = Severity.LOW
    inputs = (cluster("pods.json", optional=True), node("dmesg.txt", optional=True))

    def check(self, ctx: Context) -> Iterable[Finding]:
        return []


def _either(tmp_path: Path, files: dict[str, Any],
            failed: list[dict[str, Any]] | None = None) -> tuple[RuleStatus, str | None]:
    files = {"cluster/nodes.json": kube_list(), **files}
    path = write_dir(tmp_path / "b", files, failed)
    with open_bundle(path) as bundle:
        result = analyze(bundle, [LoadedRule(Either, "test")]).rules[0]
    return result.status, result.reason


def test_none_of_its_inputs_in_the_bundle_skips_it(tmp_path: Path) -> None:
    assert _either(tmp_path, {}) == (
        RuleStatus.SKIPPED,
        "none of its inputs could be read: cluster/pods.json is not in the bundle; "
        "no node collected dmesg.txt")


def test_one_readable_alternative_is_enough(tmp_path: Path) -> None:
    assert _either(tmp_path, {"nodes/gpu-a/dmesg.txt": "[    1.0] hello\n"}) == (
        RuleStatus.PASSED, None)


def test_the_only_alternative_held_but_unreadable_skips_it(tmp_path: Path) -> None:
    state, reason = _either(tmp_path, {"cluster/pods.json": "{not json"})
    assert state is RuleStatus.SKIPPED
    assert reason is not None and reason.startswith("cannot judge: cluster/pods.json: ")


def test_a_damaged_alternative_beside_a_readable_one_is_partial(tmp_path: Path) -> None:
    state, reason = _either(tmp_path, {"cluster/pods.json": "{not json",
                                       "nodes/gpu-a/dmesg.txt": "[    1.0] hello\n"})
    assert state is RuleStatus.PARTIAL
    assert reason is not None and reason.startswith("read in part: cluster/pods.json: ")


def test_an_alternative_refused_by_rbac_counts_as_lost(tmp_path: Path) -> None:
    state, reason = _either(
        tmp_path, {}, failed=[{"path": "cluster/pods.json",
                               "error": 'pods is forbidden: User "x" cannot list resource'}])
    assert state is RuleStatus.SKIPPED
    assert reason == ("none of its inputs could be read: cluster/pods.json was not "
                      'collected: pods is forbidden: User "x" cannot list resource; '
                      "no node collected dmesg.txt")


def test_log_only_rules_are_skipped_without_logs(tmp_path: Path) -> None:
    """OP014 and OP015 find their cause only in container logs: with none collected,
    "passed" would claim a check that never happened."""
    report: Report = analyse(Cluster(), tmp=tmp_path)
    assert not any(path.startswith("logs/") for path in Cluster().bundle_files())
    for rule_id in ("OP014", "OP015"):
        result = next(r for r in report.rules if r.rule_id == rule_id)
        assert (result.status, result.reason) == (RuleStatus.SKIPPED,
                                                  "logs/* is not in the bundle")


def test_log_only_rules_run_when_any_log_is_there(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.log("nvidia-device-plugin-daemonset", "gpu-a", "nvidia-device-plugin",
                ["I1129 13:00:00.000000       1 main.go:1] Starting"])
    report = analyse(cluster, tmp=tmp_path)
    assert status(report, "OP014") is RuleStatus.PASSED
    assert status(report, "OP015") is RuleStatus.PASSED


class Halfway(Rule):
    """Test rule that judges one node and cannot judge another.

    Why it matters:
    It is a test.

    Remediation:
    None.
    """

    id = "TST102"
    slug = "halfway"
    severity = Severity.LOW
    inputs = (cluster("nodes.json"),)
    found = False

    def check(self, ctx: Context) -> Iterable[Finding]:
        self.unjudged("no dmesg for gpu-b")
        if self.found:
            yield self.finding("gpu-a", "something on gpu-a", nodes=["gpu-a"])


class HalfwayFinding(Halfway):
    id = "TST103"
    found = True


def test_a_rule_that_says_what_it_could_not_judge_is_partial(tmp_path: Path) -> None:
    path = write_dir(tmp_path / "b", {"cluster/nodes.json": kube_list()})
    with open_bundle(path) as bundle:
        report = analyze(bundle, [LoadedRule(Halfway, "test"), LoadedRule(HalfwayFinding,
                                                                          "test")])
    statuses = {r.rule_id: (r.status, r.reason) for r in report.rules}
    assert statuses == {
        "TST102": (RuleStatus.PARTIAL, "judged in part: no dmesg for gpu-b"),
        "TST103": (RuleStatus.FAILED, "judged in part: no dmesg for gpu-b")}
    assert [f.id for f in report.findings] == ["TST103:gpu-a"]
