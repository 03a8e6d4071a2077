"""Versions have one derivation in the facts (facts/operator_version.py,
Facts.kubernetes_version): the report's glance, CFG001 and ``diff`` read them there. Each
case below is one on which they used to disagree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse
from kit.bundles import write_dir
from kit.gate import gpu_node
from kit.objects import lists

from analyzers.engine.diff import snapshot
from analyzers.facts import Facts
from analyzers.results.models import Report
from bundle import open_bundle

NS = "gpu-operator"


def _deployment(image: str, *, name: str = "gpu-operator", namespace: str = NS,
                labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"template": {"metadata": {"labels": labels or {}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def _operator_pod(*images: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "gpu-operator-7c9f8-abcde", "namespace": NS,
                         "labels": {"app": "gpu-operator"}},
            "spec": {"containers": [{"name": f"c{i}", "image": image}
                                    for i, image in enumerate(images)]},
            "status": {"phase": "Running"}}


def _helm(*revisions: tuple[int, str, str]) -> dict[str, Any]:
    return {"cluster/helm/gpu-operator.json": [
        {"revision": number, "status": status, "chart": f"gpu-operator-{version}",
         "app_version": version, "updated": "2026-11-01T00:00:00Z", "values": {}}
        for number, status, version in revisions]}


def _files(deployments: list[dict[str, Any]], pods: list[dict[str, Any]],
           helm: dict[str, Any] | None = None) -> dict[str, Any]:
    files = lists(nodes=[gpu_node("gpu-a", 1, 1)], pods=pods, events=[],
                  deployments=deployments)
    files.update(helm or {})
    return files


def _analyse(tmp_path: Path, files: dict[str, Any]) -> tuple[str | None, str | None, str]:
    """(glance version, its source, CFG001's summary) of a bundle of ``files``."""
    report = analyse(files, tmp=tmp_path)
    assert report.overview is not None
    glance = report.overview.glance.operator
    cfg001 = [f for f in report.findings if f.rule_id == "CFG001"]
    assert len(cfg001) == 1
    return glance.version, glance.source, cfg001[0].summary


def test_the_pod_image_comes_before_the_helm_chart(tmp_path: Path) -> None:
    # CFG001 used to read Helm before the pod (26.7.0), the glance the pod (25.3.0).
    files = _files([_deployment("nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.8.0",
                                name="other")],
                   [_operator_pod("nvcr.io/nvidia/gpu-operator:v25.3.0")],
                   _helm((1, "deployed", "v26.7.0")))
    version, source, summary = _analyse(tmp_path, files)
    assert (version, source) == ("25.3.0", "image tag of Pod gpu-operator/gpu-operator-7c9f8-abcde")
    assert summary.startswith("The GPU Operator runs 25.3.0 (from the operator pod image)")


def test_the_deployed_helm_revision_not_a_failed_upgrade(tmp_path: Path) -> None:
    # CFG001 used to read the latest revision (a failed upgrade to 26.7.0).
    files = _files([], [], _helm((1, "deployed", "v25.3.0"), (2, "failed", "v26.7.0")))
    version, source, summary = _analyse(tmp_path, files)
    assert (version, source) == ("25.3.0", "Helm release gpu-operator revision 1")
    assert summary.startswith("The GPU Operator runs 25.3.0 (from the Helm release "
                              "gpu-operator)")


def test_an_unlabelled_deployment_running_the_operator_image(tmp_path: Path) -> None:
    # The glance used to ignore a Deployment with another name and no operator label.
    files = _files([_deployment("registry.example.com/mirror/gpu-operator:v25.10.1",
                                name="nvidia-gpu-operator", namespace="nvidia")], [])
    version, source, summary = _analyse(tmp_path, files)
    assert (version, source) == ("25.10.1",
                                 "image tag of Deployment nvidia/nvidia-gpu-operator")
    assert summary.startswith("The GPU Operator runs 25.10.1 (from the operator Deployment "
                              "image)")


def test_the_validator_image_is_not_the_operator(tmp_path: Path) -> None:
    files = _files([_deployment("nvcr.io/nvidia/cloud-native/gpu-operator-validator:v26.7.0",
                                labels={"app": "gpu-operator"})], [],
                   _helm((1, "deployed", "v25.3.0")))
    version, source, _ = _analyse(tmp_path, files)
    assert (version, source) == ("25.3.0", "Helm release gpu-operator revision 1")


def test_an_untagged_image_gives_way_to_helm(tmp_path: Path) -> None:
    files = _files([_deployment("nvcr.io/nvidia/gpu-operator:latest",
                                labels={"app": "gpu-operator"})], [],
                   _helm((1, "deployed", "v25.3.0")))
    version, source, summary = _analyse(tmp_path, files)
    assert (version, source) == ("25.3.0", "Helm release gpu-operator revision 1")
    assert "runs 25.3.0 (from the Helm release gpu-operator)" in summary


def _diff_image(tmp_path: Path, files: dict[str, Any]) -> str | None:
    with open_bundle(write_dir(tmp_path / "d", files)) as opened:
        facts = Facts(opened)
        report = Report.model_construct(bundle=_bundle_info())
        return snapshot(report, facts).get(("cluster", "gpu-operator image"))


def _bundle_info() -> Any:
    from analyzers.results.models import BundleInfo, ClusterRef
    return BundleInfo(path="b", format_version=1, created_at=None, cluster=ClusterRef(),
                      nodes=1, gpu_nodes=1)


def test_diff_reads_the_operator_image_not_a_sidecar(tmp_path: Path) -> None:
    # diff used to take the first container of the first app=gpu-operator pod.
    files = _files([], [_operator_pod("quay.io/example/log-shipper:2.1",
                                      "nvcr.io/nvidia/gpu-operator:v26.3.1")])
    assert _diff_image(tmp_path, files) == "nvcr.io/nvidia/gpu-operator:v26.3.1"


def test_diff_reads_the_deployment_before_the_pod(tmp_path: Path) -> None:
    # diff used to ignore the Deployment; the glance and CFG001 read it first.
    files = _files([_deployment("nvcr.io/nvidia/gpu-operator:v26.7.0")],
                   [_operator_pod("nvcr.io/nvidia/gpu-operator:v26.3.1")])
    assert _diff_image(tmp_path, files) == "nvcr.io/nvidia/gpu-operator:v26.7.0"


def test_no_operator_anywhere(tmp_path: Path) -> None:
    files = _files([], [])
    with open_bundle(write_dir(tmp_path / "d", files)) as opened:
        found = Facts(opened).operator_version
    assert (found.image, found.chart, found.source, found.text) == (None, None, None, None)


def test_kubernetes_version_from_version_json_is_text_only(tmp_path: Path) -> None:
    # The glance printed any gitVersion (a number too), diff only text; both read
    # Facts.kubernetes_version now. The manifest's server_version comes first.
    files = _files([], [])
    files["cluster/version.json"] = {"serverVersion": {"gitVersion": 1.31}}
    with open_bundle(write_dir(tmp_path / "n", files, cluster={"context": "t"})) as opened:
        assert Facts(opened).kubernetes_version is None
    files["cluster/version.json"] = {"serverVersion": {"gitVersion": "v1.31.4"}}
    with open_bundle(write_dir(tmp_path / "t", files, cluster={"context": "t"})) as opened:
        assert Facts(opened).kubernetes_version == "v1.31.4"
    with open_bundle(write_dir(tmp_path / "m", files)) as opened:
        assert Facts(opened).kubernetes_version == "v1.37.1"  # the manifest's (tests/kit.py)
