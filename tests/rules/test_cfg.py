"""CFG001-CFG003: release support, supported products, time-slicing explained."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kit import analyse, findings
from kit.gate import bundle_files as gate_files
from kit.gate import container, gpu_node, smi_gpu, smi_xml, workload

from analyzers.results.models import Severity

# ------------------------------------------------------------------------------ CFG001


def _deployment(tag: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "gpu-operator", "namespace": "gpu-operator",
                         "labels": {"app": "gpu-operator"}},
            "spec": {"template": {"spec": {"containers": [
                {"name": "gpu-operator", "image": f"nvcr.io/nvidia/gpu-operator:{tag}"}]}}}}


def _operand(name: str, image: str, init: str | None = None) -> dict[str, Any]:
    pod = workload(name, "gpu-a", namespace="gpu-operator",
                   containers=[container(name.rsplit("-", 1)[0], image=image)],
                   init=[container("toolkit-validation", image=init)] if init else None)
    return pod


def _cfg001(tmp_path: Path, tag: str, pods: list[dict[str, Any]] | None = None,
            **kinds: Any) -> dict[str, Any]:
    deployments = kinds.pop("deployments", [_deployment(tag)])
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 1, 1)], pods=pods or [],
                 deployments=deployments, **kinds), tmp=tmp_path)
    return findings(report, "CFG001")


@pytest.mark.parametrize(("tag", "label", "severity"), [
    ("v25.3.0", "End of Support", Severity.MEDIUM),
    ("v25.10.1", "End of Support", Severity.MEDIUM),
    ("v26.3.1", "Deprecated", Severity.LOW),
    ("v27.1.0", "newer than this gpu-triage's release table", Severity.INFO),
])
def test_cfg001_status_from_the_release_table(tmp_path: Path, tag: str, label: str,
                                              severity: Severity) -> None:
    found = _cfg001(tmp_path, tag)
    assert list(found) == ["CFG001:gpu-operator/gpu-operator"]
    finding = found["CFG001:gpu-operator/gpu-operator"]
    assert finding.severity is severity
    assert f"The GPU Operator runs {tag[1:]} (from the operator Deployment image)" \
        in finding.summary
    assert label in finding.summary
    assert finding.evidence[0].pointer == "/items/0/spec/template/spec/containers/0/image"


def test_cfg001_operand_from_another_release(tmp_path: Path) -> None:
    pods = [_operand("nvidia-device-plugin-daemonset-abcde",
                     "nvcr.io/nvidia/k8s-device-plugin:v0.19.0",
                     init="nvcr.io/nvidia/cloud-native/gpu-operator-validator:v26.7.0"),
            _operand("nvidia-container-toolkit-daemonset-fghij",
                     "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0-ubuntu20.04")]
    found = _cfg001(tmp_path, "v26.7.0", pods)
    finding = found["CFG001:gpu-operator/gpu-operator"]
    assert finding.severity is Severity.LOW
    assert ("device plugin / GFD 0.19.0 (expected 0.20.0 for release 26.7.0) in "
            "gpu-operator/nvidia-device-plugin-daemonset-abcde") in finding.summary
    assert "Container Toolkit" not in finding.summary
    assert finding.evidence[1].pointer == "/items/0/spec/containers/0/image"


def test_cfg001_series_data_and_validator_version(tmp_path: Path) -> None:
    pods = [_operand("nvidia-device-plugin-daemonset-abcde",
                     "nvcr.io/nvidia/k8s-device-plugin:v0.19.2",
                     init="nvcr.io/nvidia/cloud-native/gpu-operator-validator:v26.3.0")]
    finding = _cfg001(tmp_path, "v26.3.1", pods)["CFG001:gpu-operator/gpu-operator"]
    assert "device plugin" not in finding.summary  # 0.19.2 is in the 26.3.x line's 0.19
    assert ("validator 26.3.0 (expected 26.3.1 for release 26.3.1 (versioned with the "
            "operator))") in finding.summary
    assert finding.evidence[1].pointer == "/items/0/spec/initContainers/0/image"


def test_cfg001_helm_fallback(tmp_path: Path) -> None:
    history = [{"revision": 1, "status": "deployed", "chart": "gpu-operator-v24.9.2",
                "app_version": "v24.9.2", "updated": "2025-02-01T00:00:00Z",
                "description": "Install complete", "values": {}}]
    found = _cfg001(tmp_path, "", deployments=[],
                    files={"cluster/helm/gpu-operator.json": history})
    finding = found["CFG001:gpu-operator/gpu-operator"]
    assert "runs 24.9.2 (from the Helm release gpu-operator)" in finding.summary
    assert "End of Support" in finding.summary
    assert finding.evidence[0].path == "cluster/helm/gpu-operator.json"
    assert finding.evidence[0].pointer == "/0/app_version"


# ------------------------------------------------------------------------------ CFG002


def test_cfg002_geforce_label_with_mig_wish(tmp_path: Path) -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-4090",
              "nvidia.com/mig.config": "all-1g.5gb"}
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 1, 1, labels=labels),
                                  gpu_node("gpu-b", 1, 1, labels={
                                      "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"})],
                 pods=[]), tmp=tmp_path)
    found = findings(report, "CFG002")
    assert list(found) == ["CFG002:gpu-a"]
    finding = found["CFG002:gpu-a"]
    assert finding.severity is Severity.LOW
    assert ("NVIDIA-GeForce-RTX-4090: not in NVIDIA's supported list for the GPU Operator "
            "(GeForce/consumer cards are not validated)") in finding.summary
    assert "MIG is impossible on these cards." in finding.summary
    assert "Yet the node asks for MIG (label nvidia.com/mig.config=all-1g.5gb)" \
        in finding.summary
    assert finding.evidence[0].pointer == "/items/0/metadata/labels/nvidia.com~1gpu.product"


def test_cfg002_geforce_from_nvidia_smi_brand(tmp_path: Path) -> None:
    xml = smi_xml(smi_gpu(product="NVIDIA GeForce RTX 3090", brand="GeForce"))
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 1, 1)], pods=[],
                 files={"nodes/gpu-a/nvidia-smi.xml": xml}), tmp=tmp_path)
    finding = findings(report, "CFG002")["CFG002:gpu-a"]
    assert finding.evidence[0].path == "nodes/gpu-a/nvidia-smi.xml"
    assert finding.evidence[0].line == 9  # <product_name>
    assert "MIG is impossible" in finding.summary
    assert "asks for MIG" not in finding.summary


def test_cfg002_unlisted_professional_card_is_info(tmp_path: Path) -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-RTX-6000-Ada-Generation"}
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 1, 1, labels=labels)], pods=[]),
                     tmp=tmp_path)
    finding = findings(report, "CFG002")["CFG002:gpu-a"]
    assert finding.severity is Severity.INFO
    assert "not in NVIDIA's support matrix" in finding.summary
    assert "MIG" not in finding.summary


@pytest.mark.parametrize("product", ["Tesla-T4-SHARED", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
                                     "NVIDIA-H100-80GB-HBM3", "NVIDIA-L4", "NVIDIA-RTX-A6000",
                                     "NVIDIA-A10G"])
def test_cfg002_supported_products_are_quiet(tmp_path: Path, product: str) -> None:
    labels = {"nvidia.com/gpu.product": product}
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 1, 1, labels=labels)], pods=[]),
                     tmp=tmp_path)
    assert findings(report, "CFG002") == {}


# ------------------------------------------------------------------------------ CFG003

SLICING = """version: v1
sharing:
  timeSlicing:
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


def _policy() -> dict[str, Any]:
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"},
            "spec": {"devicePlugin": {"config": {"name": "time-slicing-config",
                                                 "default": "any"}}}}


def _configmap(changed: str = "2026-11-20T09:00:00Z") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator",
                         "managedFields": [{"manager": "kubectl", "operation": "Update",
                                            "time": changed}]},
            "data": {"any": SLICING}}


def _plugin_pod(started: str) -> dict[str, Any]:
    pod = workload("nvidia-device-plugin-daemonset-abcde", "gpu-a", namespace="gpu-operator")
    pod["metadata"]["labels"] = {"app": "nvidia-device-plugin-daemonset"}
    pod["status"]["containerStatuses"] = [
        {"name": "nvidia-device-plugin", "ready": True, "restartCount": 0,
         "state": {"running": {"startedAt": started}}}]
    return pod


def test_cfg003_time_slicing_with_the_nodes_numbers(tmp_path: Path) -> None:
    xml = smi_xml(smi_gpu(product="NVIDIA GeForce RTX 4090", brand="GeForce",
                          total_mib=24576, used_mib=2000, util="40 %"))
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)], pods=[],
                 configmaps=[_configmap()], clusterpolicies=[_policy()],
                 files={"nodes/gpu-a/nvidia-smi.xml": xml}), tmp=tmp_path)
    found = findings(report, "CFG003")
    assert list(found) == ["CFG003:gpu-a"]
    finding = found["CFG003:gpu-a"]
    assert finding.severity is Severity.INFO
    assert finding.summary.startswith(
        "gpu-a advertises 4 nvidia.com/gpu slots on 1 physical GPU(s) (nvidia-smi; "
        "time-slicing, replicas 4, from config key 'any' of ConfigMap time-slicing-config). "
        "24576 MiB ÷ 4 = 6144 MiB per slot is arithmetic; the guarantee per slot is 0.")
    assert "DCGM cannot attribute GPU usage to pods" in finding.summary
    assert finding.evidence[0].pointer == "/items/0/data/any"
    assert finding.caused_by == []


def test_cfg003_from_gfd_labels_only(tmp_path: Path) -> None:
    labels = {"nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": "4",
              "nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "24576"}
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 8, 8, labels=labels)], pods=[]),
                     tmp=tmp_path)
    finding = findings(report, "CFG003")["CFG003:gpu-a"]
    assert finding.summary.startswith(
        "gpu-a advertises 8 nvidia.com/gpu slots on 2 physical GPU(s) (label "
        "nvidia.com/gpu.count; time-slicing, replicas 4, from the node's GFD labels). "
        "24576 MiB ÷ 4 = 6144 MiB per slot is arithmetic")


def test_cfg003_advertised_count_from_another_config_links_sc006(tmp_path: Path) -> None:
    labels = {"nvidia.com/gpu.count": "1"}
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 2, 2, labels=labels)],
                 pods=[_plugin_pod("2026-11-29T10:00:00Z")],
                 configmaps=[_configmap(changed="2026-11-29T11:00:00Z")],
                 clusterpolicies=[_policy()]), tmp=tmp_path)
    finding = findings(report, "CFG003")["CFG003:gpu-a"]
    assert "1 × 4 would be 4: the plugin there runs another config" in finding.summary
    assert finding.caused_by == ["SC006:gpu-operator/time-slicing-config"]


def test_cfg003_quiet_without_sharing(tmp_path: Path) -> None:
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)], pods=[],
                 clusterpolicies=[{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                                   "metadata": {"name": "cluster-policy"}, "spec": {}}]),
                     tmp=tmp_path)
    assert findings(report, "CFG003") == {}


# ------------------------------------------------------------------- the lab samples


@pytest.mark.parametrize("name", ["incident-toolkit-disabled", "healthy-toolkit-enabled"])
def test_lab_samples_operator_and_geforce_caveats(samples: Path, name: str) -> None:
    found = analyse(samples / name).by_id()
    cfg001 = found["CFG001:gpu-operator/gpu-operator"]
    assert cfg001.severity is Severity.LOW
    assert cfg001.summary.startswith("The GPU Operator runs 26.3.3 (from the operator "
                                     "Deployment image); 26.3.x is Deprecated")
    assert sorted(i for i in found if i.startswith("CFG002")) == [
        "CFG002:gpu-a", "CFG002:gpu-b", "CFG002:gpu-c", "CFG002:gpu-d"]
    assert "MIG is impossible on these cards." in found["CFG002:gpu-a"].summary
    assert not [i for i in found if i.startswith(("CFG003", "DRV007"))]
