"""RT001 (no nvidia runtime loaded) and CFG004 (toolkit disabled), with their link."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse
from kit.objects import (
    DUMP_WITH_NVIDIA,
    DUMP_WITHOUT_NVIDIA,
    NVIDIA_DROPIN,
    SANDBOX,
    cluster_policy,
    event,
    lists,
    node,
    pod,
    runtime_class,
)

from analyzers.results.models import RuleStatus


def _cluster(toolkit: bool | None, *, toolkit_pods: bool = False) -> dict[str, Any]:
    pods = [
        pod("nvidia-device-plugin-daemonset-aaaaa", "gpu-a", app="nvidia-device-plugin-daemonset",
            runtime_class="nvidia", phase="Pending", init=1),
        pod("nvidia-device-plugin-daemonset-bbbbb", "gpu-b", app="nvidia-device-plugin-daemonset",
            runtime_class="nvidia"),
    ]
    if toolkit_pods:
        pods.append(pod("nvidia-container-toolkit-daemonset-bbbbb", "gpu-b",
                        app="nvidia-container-toolkit-daemonset"))
    files: dict[str, Any] = lists(
        nodes=[node("cp-1", gpu_label=False), node("gpu-a"), node("gpu-b", gpus=1)],
        pods=pods,
        events=[event("nvidia-device-plugin-daemonset-aaaaa", "FailedCreatePodSandBox",
                      SANDBOX)],
        runtimeclasses=[runtime_class("nvidia"), runtime_class("nvidia-cdi")],
        clusterpolicies=[cluster_policy(toolkit)],
    )
    files["nodes/gpu-a/containerd/config-dump.toml"] = DUMP_WITHOUT_NVIDIA
    files["nodes/gpu-a/host/nvidia-ctk.txt"] = (
        "/usr/bin/nvidia-ctk\nNVIDIA Container Toolkit CLI version 1.17.8\n")
    files["nodes/gpu-b/containerd/config-dump.toml"] = DUMP_WITH_NVIDIA
    return files


def test_toolkit_disabled_explains_the_missing_runtime(tmp_path: Path) -> None:
    report = analyse(_cluster(toolkit=False), tmp=tmp_path)
    found = report.by_id()
    assert sorted(i for i in found if i.startswith(("RT001", "CFG004"))) == [
        "CFG004:cluster-policy", "RT001:gpu-a"]
    rt = found["RT001:gpu-a"]
    assert rt.nodes == ["gpu-a"]
    assert rt.caused_by == ["CFG004:cluster-policy"]
    assert "disables the Container Toolkit" in rt.summary
    paths = [(e.path, e.pointer) for e in rt.evidence]
    assert ("nodes/gpu-a/containerd/config-dump.toml", None) in paths
    assert ("cluster/events.json", "/items/0/message") in paths
    assert ("cluster/pods.json", "/items/0/spec/runtimeClassName") in paths
    cfg = found["CFG004:cluster-policy"]
    assert cfg.nodes == ["gpu-a"]
    assert cfg.causes == ["RT001:gpu-a", "RT007:handler/nvidia-cdi"]
    assert cfg.evidence[0].pointer == "/items/0/spec/toolkit/enabled"
    assert any(e.path == "nodes/gpu-a/host/nvidia-ctk.txt" and e.line == 1 for e in cfg.evidence)
    assert "--reuse-values --set toolkit.enabled=true" in cfg.remediation


def test_toolkit_enabled_but_not_running_is_named_without_cfg004(tmp_path: Path) -> None:
    report = analyse(_cluster(toolkit=True), tmp=tmp_path)
    found = report.by_id()
    assert "CFG004:cluster-policy" not in found
    rt = found["RT001:gpu-a"]
    assert rt.caused_by == []
    assert "Container Toolkit pod is not running" in rt.summary
    statuses = {r.rule_id: r.status for r in report.rules}
    assert statuses["CFG004"] is RuleStatus.PASSED


def test_dropin_present_but_not_imported_points_at_rt003(tmp_path: Path) -> None:
    files = _cluster(toolkit=True)
    files["nodes/gpu-a/containerd/files/etc/containerd/config.toml"] = "version = 2\n"
    files["nodes/gpu-a/containerd/files/etc/containerd/conf.d/99-nvidia.toml"] = NVIDIA_DROPIN
    rt = analyse(files, tmp=tmp_path).by_id()["RT001:gpu-a"]
    assert "does not import it (see RT003)" in rt.summary


def test_loaded_runtime_present_everywhere_is_quiet(tmp_path: Path) -> None:
    files = _cluster(toolkit=False)
    files["nodes/gpu-a/containerd/config-dump.toml"] = DUMP_WITH_NVIDIA
    report = analyse(files, tmp=tmp_path)
    assert not [f.id for f in report.findings if f.rule_id in ("RT001", "CFG004")]
    statuses = {r.rule_id: r.status for r in report.rules}
    assert statuses["RT001"] is RuleStatus.PASSED
    assert statuses["CFG004"] is RuleStatus.PASSED


def test_non_gpu_nodes_are_never_judged(tmp_path: Path) -> None:
    files = _cluster(toolkit=False)
    files["nodes/cp-1/containerd/config-dump.toml"] = DUMP_WITHOUT_NVIDIA
    found = analyse(files, tmp=tmp_path).by_id()
    assert "RT001:cp-1" not in found
    assert found["CFG004:cluster-policy"].nodes == ["gpu-a"]


def test_without_config_dumps_both_rules_are_skipped(tmp_path: Path) -> None:
    files = {k: v for k, v in _cluster(toolkit=False).items() if not k.startswith("nodes/")}
    report = analyse(files, tmp=tmp_path)
    statuses = {r.rule_id: (r.status, r.reason) for r in report.rules}
    assert statuses["RT001"] == (RuleStatus.SKIPPED,
                                 "no node collected containerd/config-dump.toml")
    assert statuses["CFG004"][0] is RuleStatus.SKIPPED
