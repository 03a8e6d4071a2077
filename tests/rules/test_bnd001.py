"""BND001 (collection gaps): one finding per kind of gap, with what to do about it."""

from __future__ import annotations

from pathlib import Path

from drv_kit import gpu_node, of
from scenario import analyze_files, lists

GAPS = [
    {"path": "cluster/events.json",
     "error": 'Error from server (Forbidden): events is forbidden: User "x" cannot list'},
    {"path": "nodes/gpu-a/host/nvidia-ctk.txt", "error": "sh: 1: nvidia-ctk: not found"},
    {"path": "nodes/gpu-b/host/nvidia-ctk.txt", "error": "sh: 1: nvidia-ctk: not found"},
    {"path": "logs/gpu-operator/nvidia-driver-daemonset-x1/nvidia-driver-ctr.log",
     "error": 'container "nvidia-driver-ctr" in pod "nvidia-driver-daemonset-x1" is '
              "waiting to start: PodInitializing"},
    {"path": "nodes/gpu-b/dmesg.txt", "error": "step timed out after 60 s"},
]


def test_each_kind_of_gap_is_one_finding_with_its_own_first_step(tmp_path: Path) -> None:
    files = lists(nodes=[gpu_node("gpu-a"), gpu_node("gpu-b")], pods=[], events=[])
    report = analyze_files(tmp_path, files, GAPS)
    found = of(report, "BND001")
    assert sorted(found) == ["BND001:forbidden", "BND001:missing-command",
                             "BND001:not-started", "BND001:timeout"]
    forbidden = found["BND001:forbidden"]
    assert forbidden.severity.value == "medium"  # a cluster file: every node is blind
    assert [e.excerpt.split(":")[0] for e in forbidden.evidence] == ["cluster/events.json"]
    assert forbidden.remediation.startswith("kubectl auth can-i list events")
    missing = found["BND001:missing-command"]
    assert (missing.severity.value, missing.nodes) == ("low", ["gpu-a", "gpu-b"])
    assert "Rules left without these inputs: CFG004." in missing.summary
    assert missing.remediation.startswith("# the command or file does not exist on the node")
    started = found["BND001:not-started"]
    assert started.severity.value == "info" and "Rules left" not in started.summary
    assert started.remediation.startswith("kubectl get pods -A --field-selector")
    timeout = found["BND001:timeout"]
    assert timeout.nodes == ["gpu-b"]
    assert timeout.remediation.startswith("gpu-triage collect --step-timeout")


def test_other_failures_keep_the_rules_general_advice(tmp_path: Path) -> None:
    files = lists(nodes=[gpu_node("gpu-a")], pods=[], events=[])
    report = analyze_files(tmp_path, files, [{"path": "nodes/gpu-a/host/uname.txt",
                                              "error": "exit status 3"}])
    (finding,) = of(report, "BND001").values()
    assert finding.id == "BND001:other"
    assert finding.remediation.splitlines()[-2:] == [
        "  kubectl auth can-i list events --all-namespaces",
        "  gpu-triage collect --nodes <node> --node-mode ssh"]


def test_a_complete_collection_is_quiet(tmp_path: Path) -> None:
    files = lists(nodes=[gpu_node("gpu-a")], pods=[], events=[])
    report = analyze_files(tmp_path, files)
    assert of(report, "BND001") == {}
    assert {r.rule_id: r.status.value for r in report.rules}["BND001"] == "passed"
