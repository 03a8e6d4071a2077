"""OP003 explains what a node lacks because nothing was deployed on it.

On a fresh install where NFD never labelled the GPU nodes (NVIDIA/gpu-operator#149: no
NFD, the operator finds no node to match ``nvidia.com/gpu.present``), the operator sets no
deploy label, so no toolkit, device plugin or CDI spec ever reaches the node. RT001 (no
nvidia runtime), RT006 (no CDI spec), OP008 (no device plugin) and RT007 (a RuntimeClass
handler no GPU node defines) are true there, but they are symptoms: they hang under OP003
of the node (and so under OP011) instead of standing as root causes of their own. The
samples/nfd-not-labelling sample is this cluster at full size. Where no node file was
collected at all (a must-gather of that cluster), OP003 says it judged in part.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse, status
from kit import findings as of_rule
from kit.bundles import kube_list
from kit.cluster import (
    DEFAULT_APPS,
    Cluster,
    cluster_policy,
    daemonset,
    gpu_node,
    nfd_worker,
    pod_name,
    smi_xml,
)
from kit.objects import DUMP_WITHOUT_NVIDIA

from analyzers.results.models import RuleStatus

NVIDIA_LABELS = ("feature.node.kubernetes.io/pci-10de.present", "nvidia.com/gpu.present",
                 "nvidia.com/gpu.product", "nvidia.com/gpu.count")
# lspci -nnk -d 10de: of a GPU the host driver owns (the layout of gpu-operator#1328)
LSPCI = ("0000:17:00.0 3D controller [0302]: NVIDIA Corporation AD102GL [L40S] "
         "[10de:26b9] (rev a1)\n"
         "\tSubsystem: NVIDIA Corporation Device [10de:1851]\n"
         "\tKernel driver in use: nvidia\n"
         "\tKernel modules: nvidiafb, nouveau, nvidia_drm, nvidia\n")
CDI_HANDLER = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
               "metadata": {"name": "nvidia-cdi"}, "handler": "nvidia-cdi"}


def _unlabelled(toolkit: bool = True) -> Cluster:
    """Two GPU nodes NFD never labelled: no NVIDIA label, no capacity, no operand pod,
    containerd without the nvidia runtime, the host driver's nvidia-smi working; the
    policy enables the toolkit and CDI."""
    cluster = Cluster()
    spec = {"driver": {"enabled": False}, "toolkit": {"enabled": toolkit},
            "cdi": {"enabled": True}}
    cluster.policies = [cluster_policy(spec=spec)]
    for name in cluster.gpu_nodes:
        labels = gpu_node(name)["metadata"]["labels"]
        deploy = tuple(k for k in labels if k.startswith("nvidia.com/gpu.deploy."))
        cluster.nodes[name] = gpu_node(name, gpus=0, drop=(*NVIDIA_LABELS, *deploy))
        for app in DEFAULT_APPS:
            del cluster.pods[pod_name(app, name)]
        cluster.files[f"nodes/{name}/host/lspci.txt"] = LSPCI
        cluster.files[f"nodes/{name}/nvidia-smi.xml"] = smi_xml([{"bus": "00000000:17:00.0"}])
        cluster.files[f"nodes/{name}/containerd/config-dump.toml"] = DUMP_WITHOUT_NVIDIA
    for app in DEFAULT_APPS:
        cluster.daemonsets[app] = daemonset(app, desired=0)
    return cluster


def _with_cdi(cluster: Cluster) -> dict[str, Any]:
    """The cluster with the operator's nvidia-cdi RuntimeClass beside nvidia."""
    files = cluster.bundle_files()
    files["cluster/runtimeclasses.json"] = kube_list(
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
         "metadata": {"name": "nvidia"}, "handler": "nvidia"}, CDI_HANDLER)
    return files


def test_unlabelled_node_explains_what_was_never_deployed(tmp_path: Path) -> None:
    report = analyse(_with_cdi(_unlabelled()), tmp=tmp_path)
    op3 = of_rule(report, "OP003")
    assert sorted(op3) == ["OP003:gpu-a", "OP003:gpu-b"]
    assert op3["OP003:gpu-a"].causes == ["OP002:gpu-a", "OP008:gpu-a", "RT001:gpu-a",
                                         "RT007:handler/nvidia-cdi"]
    assert of_rule(report, "RT007")["RT007:handler/nvidia-cdi"].caused_by == \
        ["OP003:gpu-a", "OP003:gpu-b"]
    assert of_rule(report, "RT001")["RT001:gpu-a"].caused_by == ["OP003:gpu-a"]
    assert of_rule(report, "OP008")["OP008:gpu-b"].caused_by == ["OP002:gpu-b", "OP003:gpu-b"]
    # nothing that the missing labels explain stands as a root of its own
    roots = sorted(f.id for f in report.findings
                   if not f.caused_by and f.severity.rank >= 2)
    assert roots == ["OP011:node-feature-discovery"]


def test_toolkit_disabled_keeps_rt001_off_op003(tmp_path: Path) -> None:
    """With the toolkit disabled in the policy, the missing runtime is the host's to
    configure (CFG004), not something the missing labels explain."""
    report = analyse(_with_cdi(_unlabelled(toolkit=False)), tmp=tmp_path)
    assert of_rule(report, "OP003")["OP003:gpu-a"].causes == ["OP002:gpu-a", "OP008:gpu-a"]
    assert all(not link.startswith("OP003") for f in report.findings
               if f.rule_id in ("RT001", "RT007") for link in f.caused_by)


def test_labelled_node_links_nothing_it_does_not_explain(tmp_path: Path) -> None:
    """A node NFD labelled whose worker is down (OP003 medium): its operands run, so its
    findings are not OP003's doing."""
    cluster = Cluster()
    cluster.put(nfd_worker("gpu-a", "waiting:CrashLoopBackOff"))
    cluster.put(nfd_worker("gpu-b"))
    cluster.files["nodes/gpu-a/containerd/config-dump.toml"] = DUMP_WITHOUT_NVIDIA
    report = analyse(cluster, tmp=tmp_path)
    op3 = of_rule(report, "OP003")["OP003:gpu-a"]
    assert op3.severity.value == "medium"
    assert op3.causes == []
    assert "OP003:gpu-a" not in of_rule(report, "RT001")["RT001:gpu-a"].caused_by


NFD_MISSING = [{"type": "Ready", "status": "True", "reason": "NFDLabelsMissing",
                "message": "No NFD labels found"}]


def test_partial_without_node_files_when_the_operator_finds_no_gpu_node(
        tmp_path: Path) -> None:
    """A must-gather of the fresh install: no node directory (no driver pod, so no bug
    report) and only nodes labelled as GPU nodes listed. The policy says the operator
    found no NFD label: OP003 cannot tell which nodes have GPUs, so it is partial."""
    cluster = Cluster(gpu_nodes=())
    cluster.policies = [cluster_policy(conditions=NFD_MISSING)]
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP003") == {}
    result = next(r for r in report.rules if r.rule_id == "OP003")
    assert result.status is RuleStatus.PARTIAL
    assert result.reason == (
        "judged in part: the operator finds no GPU node, but no node's files were collected "
        "(host/lspci.txt, nvidia-smi.xml): whether cp-1 have GPUs is not in the bundle")


def test_passed_without_node_files_when_the_operator_is_content(tmp_path: Path) -> None:
    cluster = Cluster(gpu_nodes=())
    report = analyse(cluster, tmp=tmp_path)
    assert status(report, "OP003") is RuleStatus.PASSED
