"""Bundles the customer already made: must-gather.sh output and troubleshoot support bundles,
read through the format v1 interface; what they lack is skipped, never passed."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from layouts_kit import DUMP, XID, bug_report, must_gather_files, tar, troubleshoot_files, write

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.results.models import Report
from bundle import Limits, open_bundle
from gpu_triage.cli import cli
from samples import foreign_layouts

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
INCIDENT = SAMPLES / "incident-toolkit-disabled"


def report_of(path: Path) -> Report:
    with open_bundle(path) as opened:
        return analyze(opened, discover().rules)


def statuses(report: Report) -> dict[str, tuple[str, str | None]]:
    return {r.rule_id: (r.status.value, r.reason) for r in report.rules}


# -- must-gather -----------------------------------------------------------------------


def test_must_gather_maps_objects_logs_and_bug_report(tmp_path: Path) -> None:
    root = write(tmp_path / "nvidia-gpu-operator_20261120_0930", must_gather_files())
    with open_bundle(root) as opened:
        assert opened.layout == "nvidia must-gather"
        assert opened.manifest.operator_namespace == "gpu-operator"
        nodes = {n.name: n for n in opened.cluster.nodes}
        assert sorted(nodes) == ["gpu-a", "gpu-b"]
        a = nodes["gpu-a"]
        assert (a.status.capacity["nvidia.com/gpu"], a.status.allocatable["nvidia.com/gpu"]) \
            == ("8", "7")
        assert [(t.key, t.value, t.effect) for t in a.spec.taints] == [
            ("nvidia.com/gpu", "present", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", None, "NoSchedule")]
        assert a.spec.unschedulable is True
        ready = [c for c in a.status.conditions if c.type == "Ready"][0]
        assert (ready.status, ready.reason, ready.last_transition_time, ready.message) == (
            "True", "KubeletReady", "2026-11-20T08:25:16Z", "kubelet is posting ready status")
        assert a.status.node_info.container_runtime_version == "containerd://1.7.28"
        assert a.labels["nvidia.com/gpu.present"] == "true"
        assert a.metadata.annotations == {"node.alpha.kubernetes.io/ttl": "0"}
        pods = sorted(p.name for p in opened.cluster.pods)
        assert pods == ["gpu-operator-7d9f-abcde", "nvidia-device-plugin-daemonset-x7k2p"]
        assert [p.metadata.name for p in opened.cluster.clusterpolicies] == ["cluster-policy"]
        assert [d.metadata.name for d in opened.cluster.daemonsets] == [
            "nvidia-device-plugin-daemonset"]
        plugin = "logs/gpu-operator/nvidia-device-plugin-daemonset-x7k2p"
        assert opened.read_text(f"{plugin}/toolkit-validation.log") == (
            "2026-11-20T09:28:00Z waiting for nvidia container stack to be setup\n")
        assert opened.read_text(f"{plugin}/nvidia-device-plugin.log").count("\n") == 2
        assert opened.has("logs/gpu-operator/gpu-operator-7d9f-abcde/gpu-operator.log")
        assert not any(p.endswith(".previous.log") for p in opened.paths)  # empty ones
        assert XID in (opened.read_text("nodes/gpu-a/dmesg.txt") or "")
        assert opened.read_text("nodes/gpu-a/host/cmdline") == (
            "BOOT_IMAGE=/vmlinuz root=/dev/sda1 quiet\n")
        assert opened.read_text("nodes/gpu-a/host/modules.txt") == (
            "nvidia_uvm 2076672 0 - Live 0x0 (PO)\nnvidia 9756672 1 nvidia_uvm, Live 0x0 (PO)\n")
        assert (opened.read_text("nodes/gpu-a/host/uname.txt") or "").startswith("Linux gpu-a")
        assert not opened.has("nodes/gpu-a/host/os-release")  # the driver container's /etc
        assert opened.has("original/gpu_nodes.status") and opened.has("original/must-gather.log")
        assert not any(p.startswith("nodes/gpu-b/") for p in opened.paths)
        assert opened.problems == ()


def test_must_gather_report_names_layout_and_skips_what_it_lacks(tmp_path: Path) -> None:
    report = report_of(write(tmp_path / "mg", must_gather_files()))
    assert report.bundle.layout == "nvidia must-gather"
    status = statuses(report)
    for rule_id in ("RT001", "RT005", "CFG004"):
        assert status[rule_id] == ("skipped", "no node collected containerd/config-dump.toml")
    for rule_id in ("RT002", "RT003"):
        assert status[rule_id] == ("skipped", "no node collected containerd/files/*")
    assert status["RT004"] == ("skipped", "no node collected journal/containerd.jsonl")
    assert status["RT007"] == ("skipped", "cluster/runtimeclasses.json is not in the bundle")
    assert status["HELM001"][0] == "skipped"
    # the kernel log came from the bug report: the Xid 79 of gpu-a is read
    assert status["DRV002"][0] == "failed"
    assert "DRV002:gpu-a/0000:3b:00.0" in {f.id for f in report.findings}
    assert not any(f.rule_id.startswith("RT") for f in report.findings)


def test_a_tarball_of_the_must_gather_directory_reads_the_same(tmp_path: Path) -> None:
    path = tar(tmp_path / "mg.tgz", "nvidia-gpu-operator_20261120_0930", must_gather_files())
    with open_bundle(path) as opened:
        assert opened.layout == "nvidia must-gather"
        assert sorted(n.name for n in opened.cluster.nodes) == ["gpu-a", "gpu-b"]
        assert opened.has("nodes/gpu-a/dmesg.txt")


def test_cluster_policy_missing_is_an_empty_list_not_an_absent_file(tmp_path: Path) -> None:
    files = must_gather_files()
    del files["cluster_policy.yaml"]
    files["cluster_policy.missing"] = ""
    with open_bundle(write(tmp_path / "mg", files)) as opened:
        assert opened.has("cluster/clusterpolicies.json")
        assert opened.cluster.clusterpolicies == []


def test_yaml_bomb_and_broken_yaml_become_problems_and_skips(tmp_path: Path) -> None:
    files = must_gather_files()
    files["gpu_operand_pods.yaml"] = ("a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a]"
                                      "\nc: &c [*b, *b, *b, *b, *b]\nitems: [*c, *c, *c]\n")
    del files["gpu_operator_pod.yaml"]
    files["gpu_operand_ds.yaml"] = "items:\n  - kind: DaemonSet\n   bad: indent\n"
    with open_bundle(write(tmp_path / "mg", files)) as opened:
        assert not opened.has("cluster/pods.json")
        assert not opened.has("cluster/daemonsets.json")
        problems = {p.path: p for p in opened.problems}
        assert "aliases" in problems["gpu_operand_pods.yaml"].message
        assert problems["gpu_operand_ds.yaml"].message.startswith("invalid YAML")
        assert problems["gpu_operand_ds.yaml"].where is not None
        report = analyze(opened, discover().rules)
    assert any(r.reason == "cluster/pods.json is not in the bundle" for r in report.rules)


def test_bug_report_over_the_member_cap_is_refused(tmp_path: Path) -> None:
    files = must_gather_files()
    files["nvidia-bug-report_gpu-a.log.gz"] = gzip.compress(b"\0" * (3 << 20), mtime=0)
    root = write(tmp_path / "mg", files)
    with open_bundle(root, Limits(max_member_bytes=1 << 20)) as opened:
        assert not opened.has("nodes/gpu-a/dmesg.txt")
        refused = [p for p in opened.problems if p.path == "nvidia-bug-report_gpu-a.log.gz"]
        assert refused and refused[0].kind == "refused" and "cap" in refused[0].message


def test_names_that_are_not_kubernetes_names_are_not_mapped(tmp_path: Path) -> None:
    files = must_gather_files()
    files["nvidia-bug-report_..%2fetc.log.gz"] = bug_report()
    files["gpu_operand_pod_Evil_Pod.log"] = "[pod/Evil_Pod/x] hello\n"
    with open_bundle(write(tmp_path / "mg", files)) as opened:
        assert not any("Evil" in p and p.startswith("logs/") for p in opened.paths)
        assert opened.has("original/gpu_operand_pod_Evil_Pod.log")
        assert all(p.split("/")[1] in ("gpu-a",) for p in opened.paths if p.startswith("nodes/"))


def test_analyze_cli_states_the_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    root = write(tmp_path / "mg", must_gather_files())
    result = CliRunner().invoke(cli, ["analyze", str(root), "-f", "text"])
    assert result.exit_code in (0, 1)
    assert "layout: nvidia must-gather" in result.stdout
    said = " ".join(result.stdout.split())  # the rule list may wrap
    assert re.search(r"\bRT001\b[^()]*\(skipped: no node collected containerd/config-dump\.toml\)",
                     said), result.stdout
    result = CliRunner().invoke(cli, ["analyze", str(root), "-f", "json"])
    assert json.loads(result.stdout)["bundle"]["layout"] == "nvidia must-gather"
    assert result.stderr == ""


# -- troubleshoot ----------------------------------------------------------------------


def test_troubleshoot_maps_lists_logs_helm_hosts_and_gaps(tmp_path: Path) -> None:
    path = tar(tmp_path / "support-bundle.tar.gz", "support-bundle-2026-11-20T09_30_00",
               troubleshoot_files())
    with open_bundle(path) as opened:
        assert opened.layout == "replicated troubleshoot"
        assert opened.manifest.cluster.server_version == "v1.37.1"
        assert opened.manifest.operator_namespace == "gpu-operator"
        assert [n.name for n in opened.cluster.nodes] == ["gpu-a"]
        assert sorted(p.name for p in opened.cluster.pods) == [
            "gpu-operator-7d9f-abcde", "nvidia-device-plugin-daemonset-x7k2p"]
        assert [e.reason for e in opened.cluster.events] == ["Started"]
        assert [p.metadata.name for p in opened.cluster.clusterpolicies] == ["cluster-policy"]
        assert [r.revision for r in opened.cluster.helm["gpu-operator"]] == [1, 2]
        assert opened.cluster.helm["gpu-operator"][1].chart == "gpu-operator-v26.3.3"
        logs = "logs/gpu-operator/nvidia-device-plugin-daemonset-x7k2p"
        assert opened.has(f"{logs}/nvidia-device-plugin.log")
        assert opened.has(f"{logs}/nvidia-device-plugin.previous.log")
        assert opened.read_text("nodes/gpu-a/containerd/config-dump.toml") == DUMP
        assert [e.message for e in opened.node("gpu-a").journal("containerd")] == [
            "starting containerd"]
        assert opened.has("original/host-collectors/gpu-a/run-host/free.txt")
        assert not opened.has("cluster/deployments.json")
        gaps = [(i.path, i.error) for i in opened.manifest.failed_items]
        assert gaps == [("cluster/deployments.json",
                         'deployments.apps is forbidden: User "support" cannot list resource')]


def test_troubleshoot_report_runs_rt001_and_quotes_the_gap(tmp_path: Path) -> None:
    report = report_of(write(tmp_path / "sb", troubleshoot_files()))
    assert report.bundle.layout == "replicated troubleshoot"
    assert [f.id for f in report.findings if f.rule_id == "RT001"] == ["RT001:gpu-a"]
    status = statuses(report)
    assert status["CFG001"] == (
        "skipped", "cluster/deployments.json was not collected: "
        'deployments.apps is forbidden: User "support" cannot list resource')
    assert status["BND001"] == ("skipped", "manifest.json is not in the bundle")
    assert [(g.path, g.error[:22]) for g in report.collection_gaps] == [
        ("cluster/deployments.json", "deployments.apps is fo")]


# -- the samples, written out in the foreign layouts -------------------------------------


def test_incident_sample_as_troubleshoot_bundle_finds_the_same_root_cause(
        tmp_path: Path) -> None:
    foreign_layouts.troubleshoot(INCIDENT, tmp_path / "sb")
    report = report_of(tmp_path / "sb")
    native = report_of(INCIDENT)
    wanted = sorted(f.id for f in native.findings if f.rule_id in ("RT001", "CFG004", "OP001"))
    assert sorted(f.id for f in report.findings if f.rule_id in ("RT001", "CFG004", "OP001")) \
        == wanted
    assert report.bundle.gpu_nodes == native.bundle.gpu_nodes == 4


def test_incident_sample_as_must_gather_skips_runtime_rules(tmp_path: Path) -> None:
    foreign_layouts.must_gather(INCIDENT, tmp_path / "mg")
    report = report_of(tmp_path / "mg")
    assert report.bundle.layout == "nvidia must-gather"
    assert report.bundle.gpu_nodes == 4
    status = statuses(report)
    assert {r for r in ("RT001", "RT002", "RT003", "RT004", "RT005", "RT007")
            if status[r][0] == "skipped"} == {"RT001", "RT002", "RT003", "RT004", "RT005",
                                              "RT007"}
    assert sorted(f.id for f in report.findings if f.rule_id == "OP001") == [
        "OP001:gpu-a", "OP001:gpu-b", "OP001:gpu-c", "OP001:gpu-d"]
