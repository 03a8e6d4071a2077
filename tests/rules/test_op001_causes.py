"""OP001 corrections of catalog 2: the stage from the pods' own state when there are no
events, never the driver stage for pods without a sandbox, and every stage either linked
to the finding that explains it or said plainly to be unexplained."""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of_rule
from kit.cluster import VALIDATOR_INITS, Cluster, operand_pod
from kit.objects import DUMP_WITHOUT_NVIDIA

SANDBOX_APPS = ("nvidia-operator-validator", "nvidia-device-plugin-daemonset",
                "gpu-feature-discovery", "nvidia-dcgm-exporter")


def _never_started(cluster: Cluster, node: str) -> None:
    """Every nvidia-runtime operand on ``node`` bound but never started, and no events:
    what `kubectl get pods -o json` shows once the FailedCreatePodSandBox events expired
    (the pods of https://github.com/NVIDIA/gpu-operator/issues/413 and #1292,
    `Init:0/4` / `Init:0/1` with every container waiting in PodInitializing)."""
    for app in SANDBOX_APPS:
        inits = VALIDATOR_INITS if app == "nvidia-operator-validator" else ("toolkit-validation",)
        cluster.put(operand_pod(app, node, inits={n: "waiting:PodInitializing" for n in inits}))


def test_without_events_pods_without_a_sandbox_stop_at_the_toolkit_not_the_driver(
        tmp_path: Path) -> None:
    cluster = Cluster()
    _never_started(cluster, "gpu-a")
    cluster.files["nodes/gpu-a/containerd/config-dump.toml"] = DUMP_WITHOUT_NVIDIA
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP001")
    assert sorted(found) == ["OP001:gpu-a"]
    op = found["OP001:gpu-a"]
    assert "stops at the toolkit stage" in op.summary
    assert "driver stage" not in op.summary
    assert "4 pod(s) never got a pod sandbox" in op.summary
    assert op.caused_by == ["RT001:gpu-a"]
    assert "see RT001" in op.summary
    excerpts = [e.excerpt for e in op.evidence if e.path == "cluster/pods.json"]
    assert any("nvidia-operator-validator-gpu-a: Init:0/4 (it never got a pod sandbox"
               in e for e in excerpts)
    # The device plugin's finding says the same and hangs under OP001.
    plugin = of_rule(report, "OP008")["OP008:gpu-a"]
    assert "it never got a pod sandbox" in plugin.summary
    assert "stop at the toolkit stage" in plugin.summary
    assert plugin.caused_by == ["OP001:gpu-a"]


def test_a_pod_without_sandbox_and_runtime_class_is_at_the_sandbox_stage(
        tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-driver-daemonset", "gpu-b",
                            inits={"k8s-driver-manager": "waiting:PodInitializing"}))
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-b"]
    assert "stops at the pod sandbox stage" in op.summary
    assert "driver stage" not in op.summary
    assert op.caused_by == []
    # No event and no log: what to ask for is the pod's events.
    assert ("The bundle does not say why the pod sandbox stage fails: "
            "nvidia-driver-daemonset-gpu-b: its container k8s-driver-manager never started, so "
            "it has no log, and the bundle holds no event about the pod, where Kubernetes says "
            "why it is not created. Ask next for the output of: kubectl -n gpu-operator "
            "describe pod nvidia-driver-daemonset-gpu-b") in op.summary
    assert "No rule identified" not in op.summary


def test_the_kubelet_condition_decides_when_present(tmp_path: Path) -> None:
    cluster = Cluster()
    pod = operand_pod("nvidia-operator-validator", "gpu-a",
                      inits={n: "waiting:PodInitializing" for n in VALIDATOR_INITS})
    # The sandbox exists (kubelet says so): the validator really waits in driver-validation.
    pod["status"]["conditions"] = [{"type": "PodReadyToStartContainers", "status": "True"}]
    cluster.put(pod)
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-a"]
    assert "stops at the driver stage" in op.summary
    assert "never got a pod sandbox" not in op.summary


def test_a_started_init_container_keeps_the_driver_stage(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-operator-validator", "gpu-a",
                            inits={"driver-validation": "running",
                                   "toolkit-validation": "waiting:PodInitializing"}))
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-a"]
    assert "stops at the driver stage" in op.summary
    # No finding explains it and no log of it was collected: the command to ask for.
    assert op.caused_by == []
    assert ("The bundle does not say why the driver stage fails: "
            "nvidia-operator-validator-gpu-a: the bundle holds no log of its driver-validation "
            "container; its log is where the driver stage says what fails. Ask next for the "
            "output of: kubectl -n gpu-operator logs nvidia-operator-validator-gpu-a "
            "-c driver-validation --tail=200") in op.summary


def test_unexplained_toolkit_stage_says_so(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-container-toolkit-daemonset", "gpu-a",
                            mains={"nvidia-container-toolkit-ctr": "waiting:CrashLoopBackOff"}))
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-a"]
    assert "stops at the toolkit stage" in op.summary
    # the crash loop left no exit and no log: no CMP finding, OP001 asks for the log
    assert op.caused_by == []
    # A crash loop ran before: the previous instance's log is the one to ask for.
    assert ("Ask next for the output of: kubectl -n gpu-operator logs "
            "nvidia-container-toolkit-daemonset-gpu-a -c nvidia-container-toolkit-ctr "
            "--previous --tail=200") in op.summary


def test_a_recorded_crash_no_rule_names_is_op001s_cause_through_cmp007(
        tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-container-toolkit-daemonset", "gpu-a",
                            mains={"nvidia-container-toolkit-ctr": "error"}, restarts=5))
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-a"]
    assert "stops at the toolkit stage" in op.summary
    assert op.caused_by == ["CMP007:gpu-operator/nvidia-container-toolkit-daemonset"]
    assert "Kubernetes' record of the toolkit pod: nvidia-container-toolkit-ctr: Error, " \
        "exit code 1 (see CMP007)." in op.summary
    assert "No rule identified" not in op.summary


def test_explained_stage_does_not_say_unexplained(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-device-plugin-daemonset", "gpu-b",
                            mains={"nvidia-device-plugin": "waiting:CrashLoopBackOff"}))
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-b"]
    assert op.caused_by == ["OP008:gpu-b"]
    assert "No rule identified" not in op.summary
    assert "see OP008" in op.summary


def test_driver_stage_links_only_the_findings_that_exist(tmp_path: Path) -> None:
    """DRV003/DRV004 are linked only when they fire (no dangling, silent links)."""
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-operator-validator", "gpu-a",
                            inits={"driver-validation": "running"}))
    cluster.files["nodes/gpu-a/dmesg.txt"] = (
        "[    5.100000] nouveau 0000:3b:00.0: NVIDIA GA100 (170000a1)\n")
    cluster.files["nodes/gpu-a/host/modules.txt"] = "nouveau 2793472 0 - Live 0x0\n"
    report = analyse(cluster, tmp=tmp_path)
    op = of_rule(report, "OP001")["OP001:gpu-a"]
    assert "DRV003:gpu-a" in report.by_id()
    assert op.caused_by == ["DRV003:gpu-a"]
    assert "see DRV003" in op.summary
