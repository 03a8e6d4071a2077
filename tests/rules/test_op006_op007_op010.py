"""OP006 (ClusterPolicy), OP007 (driver upgrade stuck), OP010 (driver vs kernel)."""

from __future__ import annotations

from pathlib import Path

from kit import analyse, paths
from kit import findings as of_rule
from kit.cluster import Cluster, cluster_policy, event, gpu_node, operand_pod, pod_name

from analyzers.results.models import Severity

DRIVER = "nvidia-driver-daemonset"
UPGRADE = "nvidia.com/gpu-driver-upgrade-state"
MISSING_CRD = 'error: the server doesn\'t have a resource type "clusterpolicies"'

# ----------------------------------------------------------------------------- OP006


def test_not_ready_policy_with_conditions_and_operator_line(tmp_path: Path) -> None:
    cluster = Cluster(policies=[cluster_policy(state_="notReady", conditions=[
        {"type": "Ready", "status": "False", "reason": "OperandNotReady",
         "message": "ClusterPolicy is not ready, states not ready: [state-driver]"},
        {"type": "Error", "status": "False", "reason": "Reconciled", "message": ""},
    ])])
    cluster.put(operand_pod(DRIVER, "gpu-a", mains={"nvidia-driver-ctr": "waiting:"
                                                    "CrashLoopBackOff"}))
    cluster.files["logs/gpu-operator/gpu-operator-5d8f/gpu-operator.log"] = (
        '2026-11-29T13:59:00Z {"level":"info","ts":"2026-11-29T13:59:00Z","logger":'
        '"controllers.ClusterPolicy","msg":"ClusterPolicy not yet ready","reason":'
        '"ClusterPolicy is not ready, states not ready: [state-driver]"}\n')
    cluster.put({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "gpu-operator-5d8f", "namespace": "gpu-operator",
                              "labels": {"app": "gpu-operator"}},
                 "spec": {"nodeName": "cp-1", "containers": [{"name": "gpu-operator"}]},
                 "status": {"phase": "Running"}})
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP006")
    assert sorted(found) == ["OP006:cluster-policy"]
    op = found["OP006:cluster-policy"]
    assert "is notReady (OperandNotReady)" in op.summary
    assert "Operator: [state-driver]." in op.summary
    pointers = [(e.path, e.pointer) for e in op.evidence]
    assert ("cluster/clusterpolicies.json", "/items/0/status/state") in pointers
    assert ("cluster/clusterpolicies.json", "/items/0/status/conditions/0") in pointers
    assert ("logs/gpu-operator/gpu-operator-5d8f/gpu-operator.log", 1) in paths(op)
    assert op.caused_by == ["OP001:gpu-a"]


def test_missing_crd_is_read_from_the_collection_error(tmp_path: Path) -> None:
    cluster = Cluster(policies=None)
    cluster.policies = None
    cluster.failed = [{"path": "cluster/clusterpolicies.json", "error": MISSING_CRD}]
    report = analyse(cluster, tmp=tmp_path)
    op = of_rule(report, "OP006")["OP006:missing"]
    assert op.title == "ClusterPolicy CRD missing"
    assert "collection result" in op.summary and MISSING_CRD in op.summary
    assert op.evidence[0].path == "manifest.json"
    assert op.evidence[0].pointer and op.evidence[0].pointer.endswith("/error")


def test_empty_policy_list_and_ignored_duplicate(tmp_path: Path) -> None:
    empty = Cluster(policies=[])
    op = of_rule(analyse(empty, tmp=tmp_path / "empty"), "OP006")["OP006:missing"]
    assert "No ClusterPolicy exists" in op.summary
    dup = Cluster(policies=[cluster_policy(), cluster_policy("second", state_="ignored",
                                                             created="2026-11-20T00:00:00Z")])
    found = of_rule(analyse(dup, tmp=tmp_path / "dup"), "OP006")
    assert sorted(found) == ["OP006:second"]
    assert found["OP006:second"].severity is Severity.MEDIUM
    assert "the operator follows cluster-policy" in found["OP006:second"].summary


# ----------------------------------------------------------------------------- OP007


def test_upgrade_failed_and_left_cordoned(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.nodes["gpu-a"] = gpu_node("gpu-a", labels={UPGRADE: "upgrade-failed"},
                                      unschedulable=True)
    cluster.put(operand_pod(DRIVER, "gpu-a", inits={"k8s-driver-manager": "waiting:"
                                                    "CrashLoopBackOff"}))
    log = cluster.log(DRIVER, "gpu-a", "k8s-driver-manager", [
        "Unloading NVIDIA driver kernel modules...",
        "Could not unload NVIDIA driver kernel modules, driver is in use"])
    cluster.events.append(event("gpu-a", "GPUDriverUpgrade", "Successfully updated node "
                                "state label to upgrade-failed", kind="Node",
                                type_="Normal"))
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP007")
    assert sorted(found) == ["OP007:gpu-a"]
    op = found["OP007:gpu-a"]
    assert op.severity is Severity.HIGH
    assert "failed (nvidia.com/gpu-driver-upgrade-state=upgrade-failed)" in op.summary
    assert "still cordoned and was not cordoned before it" in op.summary
    pointers = [(e.path, e.pointer) for e in op.evidence]
    assert ("cluster/nodes.json",
            "/items/1/metadata/labels/nvidia.com~1gpu-driver-upgrade-state") in pointers
    assert ("cluster/nodes.json", "/items/1/spec/unschedulable") in pointers
    assert (log, 2) in paths(op)
    assert any(e.path == "cluster/events.json" for e in op.evidence)
    assert f"kubectl label node gpu-a {UPGRADE}=upgrade-required --overwrite" in op.remediation
    assert "kubectl uncordon gpu-a" in op.remediation


def test_middle_state_is_stuck_only_when_old(tmp_path: Path) -> None:
    cluster = Cluster()
    three_hours = str(1_795_960_800 - 3 * 3600)  # 2026-11-29T14:00:00Z minus 3 h
    cluster.nodes["gpu-a"] = gpu_node(
        "gpu-a", labels={UPGRADE: "validation-required"}, unschedulable=True,
        annotations={"nvidia.com/gpu-driver-upgrade-validation-start-time": three_hours})
    cluster.nodes["gpu-b"] = gpu_node("gpu-b", labels={UPGRADE: "drain-required"},
                                      unschedulable=True)
    found = of_rule(analyse(cluster, tmp=tmp_path), "OP007")
    assert sorted(found) == ["OP007:gpu-a", "OP007:gpu-b"]
    assert "stuck at validation-required for 3.0 h" in found["OP007:gpu-a"].summary
    assert found["OP007:gpu-a"].severity is Severity.HIGH
    assert "was at drain-required when collected" in found["OP007:gpu-b"].summary
    assert found["OP007:gpu-b"].severity is Severity.MEDIUM


# ----------------------------------------------------------------------------- OP010

PRECOMPILED = "nvcr.io/nvidia/driver:535-5.15.0-105-generic-ubuntu22.04"


def _precompiled_cluster() -> Cluster:
    cluster = Cluster()
    cluster.files["nodes/gpu-a/host/uname.txt"] = (
        "Linux gpu-a 5.15.0-105-generic #115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024 x86_64 "
        "x86_64 x86_64 GNU/Linux\n")
    pod = operand_pod(DRIVER, "gpu-a", image=PRECOMPILED, mains={
        "nvidia-driver-ctr": f'waiting:ImagePullBackOff:Back-off pulling image "{PRECOMPILED}"'})
    cluster.put(pod)
    cluster.events.append(event(
        pod_name(DRIVER, "gpu-a"), "Failed",
        f'Failed to pull image "{PRECOMPILED}": rpc error: code = NotFound desc = failed to '
        f'pull and unpack image "{PRECOMPILED}": failed to resolve reference "{PRECOMPILED}": '
        f"{PRECOMPILED}: not found"))
    for app in ("nvidia-container-toolkit-daemonset", "nvidia-operator-validator"):
        cluster.put(operand_pod(app, "gpu-a", inits={"driver-validation": "running"}))
    assert cluster.policies is not None
    cluster.policies[0]["spec"]["driver"]["usePrecompiled"] = True
    return cluster


def test_precompiled_image_missing_for_the_kernel(tmp_path: Path) -> None:
    report = analyse(_precompiled_cluster(), tmp=tmp_path)
    found = of_rule(report, "OP010")
    assert sorted(found) == ["OP010:gpu-a"]
    op = found["OP010:gpu-a"]
    assert op.severity is Severity.CRITICAL
    assert f"the image {PRECOMPILED} does not exist in the registry" in op.summary
    assert "precompiled tag for the node's kernel 5.15.0-105-generic" in op.summary
    assert ("nodes/gpu-a/host/uname.txt", 1) in paths(op)
    pointers = [(e.path, e.pointer) for e in op.evidence]
    assert ("cluster/events.json", "/items/0/message") in pointers
    assert any(p and p.endswith("/status/containerStatuses/0/state/waiting/message")
               for _, p in pointers)
    # and the driver pod's pull failure, Kubernetes' record of it
    assert op.causes == ["CMP004:gpu-operator/nvidia-driver-daemonset", "OP001:gpu-a"]
    op1 = of_rule(report, "OP001")["OP001:gpu-a"]
    assert op1.caused_by == ["OP010:gpu-a"]
    assert "stops at the driver stage" in op1.summary


def test_kernel_from_node_info_and_build_failure(tmp_path: Path) -> None:
    cluster = Cluster()
    del cluster.files["nodes/gpu-b/host/uname.txt"]
    cluster.nodes["gpu-b"] = gpu_node("gpu-b", kernel="6.8.0-31-generic")
    cluster.put(operand_pod(DRIVER, "gpu-b", mains={"nvidia-driver-ctr": "waiting:"
                                                    "CrashLoopBackOff"}))
    log = cluster.log(DRIVER, "gpu-b", "nvidia-driver-ctr", [
        "Resolving Linux kernel version...",
        "Could not resolve Linux kernel version",
    ], previous=True)
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP010")["OP010:gpu-b"]
    assert ("no kernel packages for the node's kernel 6.8.0-31-generic: 'Could not resolve "
            "Linux kernel version'") in op.summary
    assert (log, 2) in paths(op)
    assert ("cluster/nodes.json", "/items/2/status/nodeInfo/kernelVersion") in \
        [(e.path, e.pointer) for e in op.evidence]


def test_upgrade_failed_because_the_kernel_has_no_image(tmp_path: Path) -> None:
    cluster = _precompiled_cluster()
    cluster.nodes["gpu-a"] = gpu_node("gpu-a", labels={UPGRADE: "upgrade-failed"})
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP007")["OP007:gpu-a"]
    assert op.caused_by == ["OP010:gpu-a"]


def test_pull_failure_that_is_not_a_missing_tag(tmp_path: Path) -> None:
    cluster = Cluster()
    image = "nvcr.io/nvidia/driver:570.195.03-ubuntu24.04"
    cluster.put(operand_pod(DRIVER, "gpu-a", image=image,
                            mains={"nvidia-driver-ctr": "waiting:ErrImagePull"}))
    cluster.events.append(event(
        pod_name(DRIVER, "gpu-a"), "Failed",
        f'Failed to pull image "{image}": rpc error: code = Unknown desc = failed to pull and '
        f'unpack image "{image}": failed to resolve reference "{image}": unexpected status from '
        "HEAD request: 401 Unauthorized"))
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP010")["OP010:gpu-a"]
    assert f"the image {image} cannot be pulled (Failed to pull image" in op.summary
    assert "does not exist" not in op.summary and "precompiled" not in op.summary
