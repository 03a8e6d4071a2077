"""OP002 (operand DaemonSets skip a GPU node) and OP003 (NFD did not label it)."""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of_rule
from kit.cluster import DEFAULT_APPS, Cluster, gpu_node, nfd_worker, pod_name, smi_xml

from analyzers.results.models import Severity

DP_LABEL = "nvidia.com/gpu.deploy.device-plugin"
PCI = "feature.node.kubernetes.io/pci-10de.present"


def test_paused_deploy_label_left_behind(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.nodes["gpu-b"] = gpu_node("gpu-b", labels={DP_LABEL: "paused-for-mig-change"})
    del cluster.pods[pod_name("nvidia-device-plugin-daemonset", "gpu-b")]
    cluster.daemonsets["nvidia-device-plugin-daemonset"]["status"]["desiredNumberScheduled"] = 1
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP002")
    assert sorted(found) == ["OP002:gpu-b"]
    op = found["OP002:gpu-b"]
    assert op.nodes == ["gpu-b"]
    assert "nvidia-device-plugin-daemonset (nvidia.com/gpu.deploy.device-plugin=" \
           "paused-for-mig-change)" in op.summary
    assert op.severity is Severity.HIGH
    pointers = [(e.path, e.pointer) for e in op.evidence]
    assert ("cluster/nodes.json", "/items/2/metadata/labels/nvidia.com~1gpu.deploy.device-plugin"
            ) in pointers
    assert any(e.pointer and e.pointer.endswith("/status/desiredNumberScheduled")
               and "desired 1" in e.excerpt for e in op.evidence)
    assert f"kubectl label node gpu-b {DP_LABEL}=true --overwrite" in op.remediation


def test_untolerated_taint_skips_every_operand(tmp_path: Path) -> None:
    cluster = Cluster()
    taint = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
    cluster.nodes["gpu-a"] = gpu_node("gpu-a", taints=[taint])
    for app in DEFAULT_APPS:
        del cluster.pods[pod_name(app, "gpu-a")]
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP002")["OP002:gpu-a"]
    assert f"{len(DEFAULT_APPS)} operand DaemonSet(s) place no pod" in op.summary
    assert "untolerated taint dedicated=ml:NoSchedule" in op.summary
    assert ("cluster/nodes.json", "/items/1/spec/taints/0") in \
        [(e.path, e.pointer) for e in op.evidence]
    assert "daemonsets.tolerations" in op.remediation


def test_node_without_nfd_label_gets_no_operands_op003_explains_op002(tmp_path: Path) -> None:
    cluster = Cluster()
    deploy = tuple(k for k in gpu_node("x")["metadata"]["labels"]
                   if k.startswith("nvidia.com/gpu.deploy."))
    cluster.nodes["gpu-a"] = gpu_node("gpu-a", drop=(PCI, "nvidia.com/gpu.present", *deploy))
    for app in DEFAULT_APPS:
        del cluster.pods[pod_name(app, "gpu-a")]
    cluster.put(nfd_worker("gpu-a"))
    cluster.put(nfd_worker("gpu-b"))
    report = analyse(cluster, tmp=tmp_path)
    op2 = of_rule(report, "OP002")["OP002:gpu-a"]
    op3 = of_rule(report, "OP003")["OP003:gpu-a"]
    assert sorted(of_rule(report, "OP003")) == ["OP003:gpu-a"]
    assert op2.caused_by == ["OP003:gpu-a"]
    assert op3.causes == ["OP002:gpu-a"]
    assert "nvidia-device-plugin-daemonset" in op2.summary
    assert "no nvidia.com/gpu.deploy.<component> label" in op2.summary
    assert "nvidia.com/gpu.present is not 'true'" in op2.summary
    assert op3.severity is Severity.HIGH
    assert "has NVIDIA GPUs (nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB)" in op3.summary
    assert "is Running and still does not label NVIDIA PCI devices" in op3.summary
    assert ("cluster/nodes.json", "/items/1/metadata/labels") in \
        [(e.path, e.pointer) for e in op3.evidence]


def test_nfd_worker_failing_on_a_labelled_node(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(nfd_worker("gpu-a"))
    cluster.put(nfd_worker("gpu-b", "waiting:CrashLoopBackOff"))
    cluster.files["logs/gpu-operator/gpu-operator-node-feature-discovery-worker-gpu-b/"
                  "worker.log"] = ("2026-11-29T13:00:00Z I1129 nfd-worker.go:1] starting\n"
                                   "2026-11-29T13:00:01Z F1129 nfd-worker.go:2] failed to "
                                   "connect: context deadline exceeded\n")
    found = of_rule(analyse(cluster, tmp=tmp_path), "OP003")
    assert sorted(found) == ["OP003:gpu-b"]
    op = found["OP003:gpu-b"]
    assert op.severity is Severity.MEDIUM
    assert "is CrashLoopBackOff" in op.summary
    assert ("logs/gpu-operator/gpu-operator-node-feature-discovery-worker-gpu-b/worker.log", 2) \
        in [(e.path, e.line) for e in op.evidence]


def test_gpu_seen_only_by_nvidia_smi(tmp_path: Path) -> None:
    cluster = Cluster()
    labels = tuple(k for k in gpu_node("x")["metadata"]["labels"] if k.startswith("nvidia.com")
                   or k == PCI)
    cluster.nodes["gpu-b"] = gpu_node("gpu-b", gpus=0, drop=labels)
    for app in DEFAULT_APPS:
        del cluster.pods[pod_name(app, "gpu-b")]
    cluster.files["nodes/gpu-b/nvidia-smi.xml"] = smi_xml([{}])
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP003")["OP003:gpu-b"]
    assert "nvidia-smi lists 1 GPU(s): NVIDIA A100-SXM4-40GB" in op.summary
    assert "no NFD worker pod was found in the cluster" in op.summary
