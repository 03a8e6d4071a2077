"""``gpu-triage diff``: findings resolved, new, changed, unverified; facts that moved; the
four outputs; exit codes."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from kit.bundles import kube_list, write_dir
from kit.cli import invoke as _run
from kit.objects import DUMP_WITH_NVIDIA, node

from analyzers.engine import analyze
from analyzers.engine.diff import compare, finding_changes, number_changes, numbers, rule_changes
from analyzers.engine.plugins import discover
from analyzers.facts import Facts
from analyzers.results.diff_models import DiffReport
from analyzers.results.models import (
    Evidence,
    Finding,
    Report,
    RuleResult,
    RuleStatus,
    Severity,
)
from bundle import open_bundle
from reports.diff import render

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
INCIDENT = SAMPLES / "incident-toolkit-disabled"
HEALTHY = SAMPLES / "healthy-toolkit-enabled"
HOSTILE = "<script>alert(1)</script> \x1b[31mred\x1b[0m | `tick` [link](http://x)"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _diff(before: Path, after: Path) -> DiffReport:
    rules = discover().rules
    with open_bundle(before) as first, open_bundle(after) as second:
        return compare(analyze(first, rules), analyze(second, rules), Facts(first),
                       Facts(second))


@pytest.fixture(scope="module")
def fixed() -> DiffReport:
    return _diff(INCIDENT, HEALTHY)


def test_incident_then_healthy_resolves_every_rt001_and_cfg004(fixed: DiffReport) -> None:
    resolved = [f.id for f in fixed.resolved]
    assert sorted(i for i in resolved if i.startswith(("RT001:", "CFG004:"))) == [
        "CFG004:cluster-policy", "RT001:gpu-a", "RT001:gpu-b", "RT001:gpu-c", "RT001:gpu-d"]
    after_ids = {f.id for f in fixed.new} | {f.id for f in fixed.unchanged}
    assert not any(i.startswith(("RT001:", "CFG004:")) for i in after_ids)
    assert fixed.unverified == []
    assert fixed.same_cluster is True
    assert fixed.summary.resolved == len(fixed.resolved)


def test_facts_that_moved_name_the_fix(fixed: DiffReport) -> None:
    moved = {(f.subject, f.fact): (f.before, f.after) for f in fixed.facts}
    assert moved[("cluster", "clusterpolicy toolkit.enabled")] == ("false", "true")
    assert moved[("cluster", "helm gpu-operator revision")] == ("1", "2")
    assert moved[("gpu-a", "nvidia runtime loaded")] == ("false", "true")
    assert moved[("gpu-b", "operand toolkit")] == (None, "Running")
    assert moved[("gpu-c", "nvidia.com/gpu allocatable")] == (None, "1")
    assert ("cluster", "kubernetes") not in moved  # the same in both: not listed


def test_reverse_direction_makes_them_new_and_exits_one() -> None:
    code, out, err = _run(["diff", str(HEALTHY), str(INCIDENT), "-f", "json"])
    assert code == 1
    data = json.loads(out)
    assert data["kind"] == "gpu-triage-diff"
    new = {f["id"] for f in data["new"]}
    assert {"CFG004:cluster-policy", "RT001:gpu-a", "RT001:gpu-d"} <= new
    # HEALTHY was collected after INCIDENT: the one line on stderr says they look swapped
    assert err == ("warning: BEFORE was collected after AFTER (2026-11-20T11:05:00Z > "
                   "2026-11-20T09:30:00Z): are the two bundles swapped?\n")


def test_fixed_cluster_exits_zero_and_text_lists_resolved(tmp_path: Path) -> None:
    code, out, err = _run(["diff", str(INCIDENT), str(HEALTHY)])
    assert code == 0  # only low RT004 findings are new
    assert "RESOLVED" in out and "RT001:gpu-a" in out
    assert re.search(r"^\s+gpu-a\s+nvidia runtime loaded\s+false → true$", out, re.M)
    assert err == ""
    code, _, _ = _run(["diff", str(INCIDENT), str(HEALTHY), "--fail-on", "low"])
    assert code == 1


def test_unreadable_bundle_exits_three(tmp_path: Path) -> None:
    code, out, err = _run(["diff", str(INCIDENT), str(tmp_path / "missing.tgz")])
    assert (code, out) == (3, "")
    assert "cannot read bundle" in err


def _finding(summary: str, severity: Severity = Severity.MEDIUM, nodes: tuple[str, ...] = (),
             evidence: int = 1, finding_id: str = "DRV003:gpu-a") -> Finding:
    return Finding(id=finding_id, rule_id=finding_id.partition(":")[0], title="Xid errors",
                   severity=severity, summary=summary, nodes=list(nodes),
                   evidence=[Evidence(path="nodes/gpu-a/dmesg.txt", line=n, excerpt="Xid")
                             for n in range(1, evidence + 1)])


def test_changed_means_numbers_severity_nodes_or_evidence() -> None:
    before = _finding("On gpu-a, 7 Xid 79 events on GPU 0000:3b:00.0.")
    after = _finding("On gpu-a, 8 Xid 79 events on GPU 0000:3b:00.0.", Severity.HIGH,
                     ("gpu-a",), evidence=2)
    changes = {c.field: (c.before, c.after) for c in finding_changes(before, after)}
    assert changes == {"severity": ("medium", "high"), "numbers": ("7", "8"),
                       "nodes": ("none", "gpu-a"), "evidence": ("1", "2")}
    renamed = _finding("On gpu-a, 7 Xid 79 events on GPU 0000:3b:00.0 (pod x-abcde).")
    assert finding_changes(before, renamed) == []  # wording alone is not a change
    spelled = _finding("On gpu-a, 7 Xid 79 events on NVIDIA-GeForce-RTX-4070 0000:3b:00.0.")
    assert finding_changes(_finding("On gpu-a, 7 Xid 79 events on RTX 4070 0000:3b:00.0."),
                           spelled) == []
    assert number_changes("allocatable went 7 of 8 (x5)", "allocatable went 8 of 8 (x6)") == [
        ("7", "8"), ("5", "6")]
    assert numbers("allocatable 7 of 8 on gpu-1, 0.5 used.") == ["7", "8", "0.5"]
    assert numbers("at 2026-11-20 09:32:05 on 0000:3b:00.0, containerd 1.7.2") == []


def _report(findings: list[Finding], rules: list[RuleResult], path: str) -> Report:
    with open_bundle(INCIDENT) as opened:
        base = analyze(opened, [])
    return base.model_copy(update={"findings": findings, "rules": rules,
                                   "bundle": base.bundle.model_copy(update={"path": path})})


def test_gone_because_the_rule_did_not_run_is_not_resolved() -> None:
    xid = _finding("On gpu-a, 7 Xid 79 events.")
    before = _report([xid], [RuleResult(rule_id="DRV003", status=RuleStatus.FAILED)], "b")
    skipped = RuleResult(rule_id="DRV003", status=RuleStatus.SKIPPED,
                         reason="no node collected dmesg.txt")
    after = _report([], [skipped], "a")
    with open_bundle(INCIDENT) as opened:
        facts = Facts(opened)
        result = compare(before, after, facts, facts)
    assert result.resolved == []
    assert [(u.finding.id, u.reason) for u in result.unverified] == [
        ("DRV003:gpu-a", "DRV003 skipped in AFTER: no node collected dmesg.txt")]
    assert [(c.rule_id, c.before, c.after) for c in rule_changes(before, after)] == [
        ("DRV003", RuleStatus.FAILED, RuleStatus.SKIPPED)]


def _allocatable_bundle(root: Path, allocatable: int, smi_gpus: int) -> Path:
    gpu = node("gpu-a", gpus=8)
    gpu["status"]["allocatable"]["nvidia.com/gpu"] = str(allocatable)
    return write_dir(root, {
        "cluster/nodes.json": kube_list(gpu),
        "cluster/pods.json": kube_list(),
        "nodes/gpu-a/containerd/config-dump.toml": DUMP_WITH_NVIDIA,
        "nodes/gpu-a/containerd/version.txt": f"containerd 1.7.{smi_gpus}\n",
    })


def test_gpu_numbers_and_versions_per_node_move(tmp_path: Path) -> None:
    result = _diff(_allocatable_bundle(tmp_path / "one", 7, 1),
                   _allocatable_bundle(tmp_path / "two", 8, 2))
    moved = {(f.subject, f.fact): (f.before, f.after) for f in result.facts}
    assert moved[("gpu-a", "nvidia.com/gpu allocatable")] == ("7", "8")
    assert moved[("gpu-a", "containerd")] == ("containerd 1.7.1", "containerd 1.7.2")
    assert ("gpu-a", "nvidia.com/gpu capacity") not in moved


def _hostile_diff() -> DiffReport:
    evil = _finding(HOSTILE, finding_id="DRV003:gpu-a")
    evil = evil.model_copy(update={"title": HOSTILE})
    before = _report([], [RuleResult(rule_id="DRV003", status=RuleStatus.PASSED)], HOSTILE)
    after = _report([evil], [RuleResult(rule_id="DRV003", status=RuleStatus.FAILED)], "a")
    with open_bundle(INCIDENT) as opened:
        facts = Facts(opened)
        result = compare(before, after, facts, facts)
    return result.model_copy(update={"facts": [
        *result.facts, *[f.model_copy(update={"subject": HOSTILE, "after": HOSTILE})
                         for f in _diff(INCIDENT, HEALTHY).facts[:1]]]})


def test_html_is_self_contained_and_escaped() -> None:
    page = render(_hostile_diff(), "html")
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\x1b" not in page
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    policy = html.unescape(csp[1])
    assert "default-src 'none'" in policy and "script-src 'none'" in policy
    assert "<script" not in page and "http://" not in page.replace("http://x", "")
    assert re.search(r"<link|src=|@import", page) is None


def test_text_and_markdown_escape_bundle_text() -> None:
    diff = _hostile_diff()
    text = render(diff, "text")
    assert "\x1b" not in text
    markdown = render(diff, "md")
    assert "<script>" not in markdown and "\\<script\\>" in markdown
    assert "[link](http" not in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| info")
               or "DRV003:gpu-a" in line)
    assert row.count(" | ") == len(row.split(" | ")) - 1  # no cell broke the table


def test_json_and_md_and_html_to_files_by_suffix(tmp_path: Path) -> None:
    for name, marker in (("d.json", '"kind": "gpu-triage-diff"'), ("d.md", "### gpu-triage diff"),
                         ("d.html", "<!DOCTYPE html>")):
        code, out, err = _run(["diff", str(INCIDENT), str(HEALTHY), "-o", name])
        assert (code, out) == (0, "")
        assert marker in (tmp_path / name).read_text(encoding="utf-8")
        assert name in err
