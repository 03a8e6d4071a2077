"""OP001: the operand matrix per GPU node and the first failing stage."""

from __future__ import annotations

from pathlib import Path

import pytest
from kit import analyse, paths
from kit import findings as of_rule
from kit.cluster import VALIDATOR_INITS, Cluster, event, operand_pod
from kit.objects import DUMP_WITHOUT_NVIDIA, SANDBOX

from analyzers.results.models import Severity

SANDBOX_APPS = ("nvidia-operator-validator", "nvidia-device-plugin-daemonset",
                "gpu-feature-discovery", "nvidia-dcgm-exporter")


def _sandbox_cluster() -> Cluster:
    """gpu-a: containerd lost its nvidia runtime; every nvidia-runtime pod is Init:0/N."""
    cluster = Cluster()
    cluster.files["nodes/gpu-a/containerd/config-dump.toml"] = DUMP_WITHOUT_NVIDIA
    for app in SANDBOX_APPS:
        pod = operand_pod(app, "gpu-a", inits={
            name: "waiting:PodInitializing"
            for name in (VALIDATOR_INITS if app == "nvidia-operator-validator"
                         else ("toolkit-validation",))})
        cluster.put(pod)
        cluster.events.append(event(pod["metadata"]["name"], "FailedCreatePodSandBox",
                                    SANDBOX))
    return cluster


def test_sandbox_errors_put_the_node_at_the_toolkit_stage_caused_by_rt001(
        tmp_path: Path) -> None:
    report = analyse(_sandbox_cluster(), tmp=tmp_path)
    found = of_rule(report, "OP001")
    assert sorted(found) == ["OP001:gpu-a"]
    op = found["OP001:gpu-a"]
    assert op.nodes == ["gpu-a"]
    assert "RT001:gpu-a" in report.by_id()
    assert op.caused_by == ["RT001:gpu-a"]
    assert "stops at the toolkit stage" in op.summary
    assert "4 pod(s) cannot create their sandbox" in op.summary
    assert "validator Init:0/4" in op.summary and "driver Running" in op.summary
    pointers = [(e.path, e.pointer) for e in op.evidence]
    assert ("cluster/events.json", "/items/0/message") in pointers
    pods = [e.excerpt for e in op.evidence if e.path == "cluster/pods.json"]
    assert any("nvidia-operator-validator-gpu-a: Init:0/4" in p for p in pods)
    assert "--field-selector spec.nodeName=gpu-a" in op.remediation
    assert "OP001:gpu-a" in report.by_id()["RT001:gpu-a"].causes


def test_driver_stage_is_named_first_with_its_log_lines(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-driver-daemonset", "gpu-b",
                            mains={"nvidia-driver-ctr": "waiting:CrashLoopBackOff"},
                            restarts=9))
    cluster.put(operand_pod("nvidia-container-toolkit-daemonset", "gpu-b",
                            inits={"driver-validation": "running"}))
    cluster.put(operand_pod("nvidia-operator-validator", "gpu-b",
                            inits={"driver-validation": "running",
                                   "toolkit-validation": "new", "cuda-validation": "new",
                                   "plugin-validation": "new"}))
    cluster.put(operand_pod("nvidia-device-plugin-daemonset", "gpu-b",
                            inits={"toolkit-validation": "running"}))
    validation = cluster.log("nvidia-operator-validator", "gpu-b", "driver-validation", [
        'time="2026-11-29T13:00:00Z" level=info msg="Attempting to validate a driver '
        'container installation"',
        'time="2026-11-29T13:00:05Z" level=warning msg="failed to validate the driver, '
        'retrying after 5 seconds\\n"',
    ])
    driver = cluster.log("nvidia-driver-daemonset", "gpu-b", "nvidia-driver-ctr", [
        "Compiling NVIDIA driver kernel modules...",
        "ERROR: Installation has failed.  Please see the file "
        "'/var/log/nvidia-installer.log' for details.",
    ], previous=True)
    cluster.log("nvidia-device-plugin-daemonset", "gpu-b", "toolkit-validation",
                ["waiting for nvidia container stack to be setup"] * 3)
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP001")
    assert sorted(found) == ["OP001:gpu-b"]
    op = found["OP001:gpu-b"]
    assert "stops at the driver stage" in op.summary
    assert "nvidia-driver-daemonset-gpu-b is CrashLoopBackOff" in op.summary
    assert "nvidia-operator-validator-gpu-b is Init:0/4 in init container driver-validation" \
        in op.summary
    assert "nvidia-device-plugin-daemonset-gpu-b" in op.summary  # waits, named once
    assert (validation, 2) in paths(op)
    assert (driver, 2) in paths(op)
    assert op.caused_by == ["OP010:gpu-b"]
    assert op.severity is Severity.HIGH
    assert "logs nvidia-operator-validator-gpu-b -c driver-validation" in op.remediation
    assert "-c nvidia-driver-ctr --previous" in op.remediation


def test_toolkit_stage_quotes_the_toolkit_log(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-container-toolkit-daemonset", "gpu-a",
                            mains={"nvidia-container-toolkit-ctr": "waiting:CrashLoopBackOff"}))
    cluster.put(operand_pod("nvidia-operator-validator", "gpu-a",
                            inits={"toolkit-validation": "waiting:CrashLoopBackOff",
                                   "cuda-validation": "new", "plugin-validation": "new"}))
    log = cluster.log("nvidia-container-toolkit-daemonset", "gpu-a",
                      "nvidia-container-toolkit-ctr", [
                          'time="2026-11-29T13:00:01Z" level=info msg="Starting \'setup\' for '
                          'containerd"',
                          'time="2026-11-29T13:00:02Z" level=error msg="error running '
                          'nvidia-ctk-installer: unable to setup runtime: unable to load config: '
                          'unable to load containerd config: failed to load config: exit status '
                          '1"'])
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-a"]
    assert "stops at the toolkit stage" in op.summary
    assert (log, 2) in paths(op)
    # the toolkit's own crash loop, as Kubernetes records it; the validator's failing
    # toolkit-validation only follows from it
    assert op.caused_by == ["CMP007:gpu-operator/nvidia-container-toolkit-daemonset"]


def test_operands_without_dependants_are_medium(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("gpu-feature-discovery", "gpu-a",
                            mains={"gpu-feature-discovery": "waiting:CrashLoopBackOff"}))
    log = cluster.log("gpu-feature-discovery", "gpu-a", "gpu-feature-discovery",
                      ["I1129 13:00:00.000000 1 main.go:1] Starting OS watcher.",
                       "E1129 13:00:01.000000 1 main.go:2] error creating labelers: boom"],
                      previous=True)
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-a"]
    assert op.severity is Severity.MEDIUM
    assert "stops at the other operands stage" in op.summary
    assert (log, 2) in paths(op)  # no known signature: the last lines are quoted


def test_pending_daemonset_pod_without_node_name_counts_for_its_node(tmp_path: Path) -> None:
    cluster = Cluster()
    pod = operand_pod("nvidia-device-plugin-daemonset", "gpu-a", bound=False, phase="Pending",
                      inits={"toolkit-validation": "new"}, mains={"nvidia-device-plugin": "new"})
    cluster.put(pod)
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-a"]
    assert "nvidia-device-plugin-daemonset-gpu-a" in op.summary
    assert "device-plugin Pending" in op.summary
    assert "not scheduled to the node yet" in op.summary


@pytest.mark.parametrize("reason", ["CrashLoopBackOff", "ImagePullBackOff", "RunContainerError",
                                    "CreateContainerConfigError"])
def test_every_failing_state_is_reported(tmp_path: Path, reason: str) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-device-plugin-daemonset", "gpu-b",
                            mains={"nvidia-device-plugin": f"waiting:{reason}"}))
    found = of_rule(analyse(cluster, tmp=tmp_path), "OP001")
    assert sorted(found) == ["OP001:gpu-b"]
    op = found["OP001:gpu-b"]
    assert f"nvidia-device-plugin-daemonset-gpu-b is {reason} (nvidia-device-plugin)" in op.summary
    assert "stops at the plugin stage" in op.summary
    assert op.caused_by == ["OP008:gpu-b"]


def test_an_evicted_pod_beside_its_running_replacement_is_history(tmp_path: Path) -> None:
    cluster = Cluster()
    evicted = operand_pod("nvidia-device-plugin-daemonset", "gpu-a", phase="Failed",
                          mains={"nvidia-device-plugin": "error"})
    evicted["metadata"]["name"] += "-old"
    evicted["status"]["reason"] = "Evicted"
    cluster.put(evicted)
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP001") == {}
    assert of_rule(report, "OP008") == {}
