"""The GPU stack's inventory (``facts.inventory``) on operator, standalone and managed
clusters, and the look-alikes it must not claim.

Look-alike shapes, from their public manifests:
- AMD's device plugin: DaemonSet ``amdgpu-device-plugin-daemonset``, label
  ``name=amdgpu-dp-ds``, image ``rocm/k8s-device-plugin``
  (https://github.com/ROCm/k8s-device-plugin, ``k8s-ds-amdgpu-dp.yaml``)
- Intel's GPU plugin: ``intel-gpu-plugin``, image ``intel/intel-gpu-plugin``
  (https://github.com/intel/intel-device-plugins-for-kubernetes)
- Prometheus' node exporter: ``quay.io/prometheus/node-exporter``
- a user's CUDA Deployment on ``nvcr.io/nvidia/cuda``
The Network Operator's MOFED DaemonSet (label ``nvidia.com/ofed-driver``, owner
``NicClusterPolicy``, image ``nvcr.io/nvidia/mellanox/doca-driver``):
https://github.com/Mellanox/network-operator (``manifests/state-ofed-driver``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import lookalikes as kit

from analyzers.facts import Facts
from bundle import open_bundle

ROWS = tuple[str, str, str, bool, str, int]


def inventory(root: Path) -> list[ROWS]:
    with open_bundle(root) as bundle:
        return [(w.kind, w.key, w.component, w.operator_managed, w.installer, len(w.pods))
                for w in Facts(bundle).inventory.workloads]


def test_operator_cluster_lists_operands_chart_parts_and_the_operator(tmp_path: Path) -> None:
    found = inventory(kit.operator_host_driver(tmp_path / "b"))
    op = "gpu-operator"
    assert found == [
        ("DaemonSet", f"{op}/gpu-feature-discovery", "gfd", True, op, 4),
        ("Deployment", f"{op}/gpu-operator", "operator", False, op, 1),
        ("Deployment", f"{op}/gpu-operator-node-feature-discovery-gc", "nfd", False,
         "gpu-operator Helm chart", 1),
        ("Deployment", f"{op}/gpu-operator-node-feature-discovery-master", "nfd", False,
         "gpu-operator Helm chart", 1),
        ("DaemonSet", f"{op}/gpu-operator-node-feature-discovery-worker", "nfd-worker", False,
         "gpu-operator Helm chart", 5),
        ("DaemonSet", f"{op}/nvidia-container-toolkit-daemonset", "toolkit", True, op, 4),
        ("Pod", f"{op}/nvidia-cuda-validator", "cuda-validator", True, op, 4),
        ("DaemonSet", f"{op}/nvidia-dcgm-exporter", "dcgm-exporter", True, op, 4),
        ("DaemonSet", f"{op}/nvidia-device-plugin-daemonset", "device-plugin", True, op, 4),
        ("DaemonSet", f"{op}/nvidia-device-plugin-mps-control-daemon", "mps-control-daemon",
         True, op, 0),
        ("DaemonSet", f"{op}/nvidia-mig-manager", "mig-manager", True, op, 0),
        ("DaemonSet", f"{op}/nvidia-operator-validator", "validator", True, op, 4),
    ]


def test_standalone_and_managed_plugins(tmp_path: Path) -> None:
    assert inventory(kit.standalone_plugin(tmp_path / "s")) == [
        ("DaemonSet", "kube-system/nvidia-device-plugin-daemonset", "device-plugin", False,
         "static manifest", 4)]
    assert inventory(kit.gke_managed(tmp_path / "g")) == [
        ("DaemonSet", "kube-system/nvidia-driver-installer", "driver", False, "GKE (managed)", 4),
        ("DaemonSet", "kube-system/nvidia-gpu-device-plugin-small-cos", "device-plugin", False,
         "GKE (managed)", 4)]
    # EKS's GPU AMIs and AKS's guide apply NVIDIA's static manifest (kube-system, gpu-resources)
    assert inventory(kit.eks_managed(tmp_path / "e")) == [
        ("DaemonSet", "kube-system/nvidia-device-plugin-daemonset", "device-plugin", False,
         "static manifest", 4)]
    assert inventory(kit.aks_managed(tmp_path / "a")) == [
        ("DaemonSet", "gpu-resources/nvidia-device-plugin-daemonset", "device-plugin", False,
         "static manifest", 4)]
    # Bottlerocket runs the plugin as a host service: no workload at all
    assert inventory(kit.bottlerocket_no_node_files(tmp_path / "r")) == []
    assert inventory(kit.talos_no_node_files(tmp_path / "t")) == [
        ("DaemonSet", "kube-system/nvidia-device-plugin", "device-plugin", False,
         "Helm chart nvidia-device-plugin", 4)]
    assert inventory(kit.standalone_dcgm_exporter(tmp_path / "d")) == [
        ("DaemonSet", "kube-system/nvidia-device-plugin-daemonset", "device-plugin", False,
         "static manifest", 4),
        ("DaemonSet", "monitoring/dcgm-exporter", "dcgm-exporter", False,
         "Helm chart dcgm-exporter", 4)]


def test_aks_manifest_is_recognised_by_its_image(tmp_path: Path) -> None:
    bundle = kit.base(tmp_path / "b")
    kit._without_operator(bundle)
    kit.add_plugin(bundle, namespace="gpu-resources", labels={"app": "gpu-plugin"},
                   image="mcr.microsoft.com/oss/nvidia/k8s-device-plugin:v0.14.1", log=False)
    assert inventory(bundle.save()) == [
        ("DaemonSet", "gpu-resources/nvidia-device-plugin-daemonset", "device-plugin", False,
         "AKS manifest", 4)]


def _deployment(name: str, namespace: str, image: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": name, "image": image}]}}},
            "status": {"replicas": 1}}


def test_look_alikes_are_not_claimed_and_network_operator_parts_are(tmp_path: Path) -> None:
    bundle = kit.base(tmp_path / "b")
    kit._without_operator(bundle)
    kit.add_plugin(bundle, ds_name="amdgpu-device-plugin-daemonset",
                   labels={"name": "amdgpu-dp-ds"}, container="amdgpu-dp-cntr",
                   image="rocm/k8s-device-plugin:1.25.2.8", log=False)
    kit.add_plugin(bundle, ds_name="intel-gpu-plugin", labels={"app": "intel-gpu-plugin"},
                   container="intel-gpu-plugin", image="intel/intel-gpu-plugin:0.30.0",
                   log=False)
    kit.add_plugin(bundle, namespace="monitoring", ds_name="node-exporter",
                   labels={"app.kubernetes.io/name": "node-exporter"}, container="exporter",
                   image="quay.io/prometheus/node-exporter:v1.8.1", log=False)
    bundle.set_items("deployments", [*bundle.items("deployments"), _deployment(
        "cuda-train", "ml", "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04")])
    kit.add_plugin(bundle, namespace="nvidia-network-operator",
                   ds_name="mofed-ubuntu22.04-ds",
                   labels={"nvidia.com/ofed-driver": "", "app": "mofed-ubuntu22.04"},
                   container="mofed-container",
                   image="nvcr.io/nvidia/mellanox/doca-driver:24.10-0.7.0.0-0", log=False)
    assert inventory(bundle.save()) == [
        ("DaemonSet", "nvidia-network-operator/mofed-ubuntu22.04-ds", "mofed", False,
         "Network Operator", 4)]
