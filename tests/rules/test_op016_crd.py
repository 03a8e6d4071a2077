"""OP016, CRD half: the installed CRDs (cluster/crds.json) are older than the running
operator.

Bundles built from real public threads:
- chart v22.9.0 over a CRD of an earlier release (``unknown field "enabled" in
  com.nvidia.v1.ClusterPolicy.spec.dcgmExporter``, ``... spec.toolkit: unknown field
  "installDir"``): https://github.com/NVIDIA/gpu-operator/issues/431 and
  https://github.com/NVIDIA/gpu-operator/issues/435;
- v26.3.3 validated against a schema from 2025, new fields silently pruned, no error
  anywhere: https://github.com/edgelesssys/contrast/pull/2599;
- v23.9.0 upgraded from v23.6.1 without the nvidiadrivers.nvidia.com CRD, the operator
  crash-looping: https://github.com/NVIDIA/gpu-operator/issues/602.
The field table is read from the chart CRDs of every release tag of NVIDIA/gpu-operator.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from kit import analyse, status
from kit import findings as of_rule
from kit.bundles import kube_list
from kit.cluster import NS, Cluster, stamp

from analyzers.knowledge import packaged
from analyzers.results.models import RuleStatus

SUBJECT = "OP016:clusterpolicies.nvidia.com"
BASE = ("operator", "driver", "toolkit", "devicePlugin", "dcgmExporter", "gfd", "mig",
        "migManager", "validator", "psp")
TABLE = tomllib.loads(packaged.read_toml("clusterpolicy_crd"))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.lstrip("v").split("."))


def _fields_before(release: str) -> set[str]:
    """The spec fields of the chart CRD of ``release`` (the table's fields up to it, and
    the sections every release has)."""
    fields = {f"{section}.image" for section in BASE} | set(BASE)
    for name, entry in TABLE["field"].items():
        if _version(entry["since"]) <= _version(release):
            fields.add(name)
            if "." not in name:
                fields.add(f"{name}.image")
    return fields


def _crd(name: str, fields: set[str], *, open_spec: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "object", "properties": {}}
    for field in sorted(fields):
        section, _, child = field.partition(".")
        entry = spec["properties"].setdefault(section, {"type": "object", "properties": {}})
        if child:
            entry["properties"][child] = {"type": "string"}
    if open_spec:
        spec["x-kubernetes-preserve-unknown-fields"] = True
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": "nvidia.com", "names": {"kind": "ClusterPolicy"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "properties": {"spec": spec}}}}]}}


def _operator(cluster: Cluster, release: str) -> None:
    image = f"nvcr.io/nvidia/gpu-operator:{release}"
    cluster.files["cluster/deployments.json"] = kube_list(
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "gpu-operator", "namespace": NS},
         "spec": {"template": {"spec": {"containers": [{"name": "gpu-operator",
                                                          "image": image}]}}}})


def _values(cluster: Cluster, values: dict[str, Any], chart: str = "gpu-operator-v22.9.0"
            ) -> None:
    """The operator's Helm release with these user values (its latest revision)."""
    cluster.files["cluster/helm/gpu-operator.json"] = [
        {"revision": 1, "status": "deployed", "chart": chart, "app_version": chart[13:],
         "updated": "2026-11-20T09:27:58Z", "description": "Upgrade complete",
         "values": values}]


def test_chart_22_9_over_an_older_crd_fires(tmp_path: Path) -> None:
    """gpu-operator#431/#435: the v22.9.0 chart's dcgmExporter.enabled, gfd.enabled,
    toolkit.installDir are unknown to the installed CRD of v1.11; the values set two."""
    cluster = Cluster()
    _operator(cluster, "v22.9.0")
    _values(cluster, {"dcgmExporter": {"enabled": True},
                      "toolkit": {"installDir": "/usr/local/nvidia"}})
    cluster.files["cluster/crds.json"] = kube_list(
        _crd("clusterpolicies.nvidia.com", _fields_before("v1.11.1")))
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP016")
    assert sorted(found) == [SUBJECT]
    op = found[SUBJECT]
    assert "set spec.dcgmExporter.enabled (v22.9.0), spec.toolkit.installDir (v22.9.0), " \
        "which the" in op.summary
    assert "spec.gfd.enabled" not in op.summary   # the schema lacks it, nothing sets it
    assert "nvcr.io/nvidia/gpu-operator:v22.9.0" in op.summary
    assert "the API server prunes those fields" in op.summary
    assert [(e.path, e.pointer) for e in op.evidence] == [
        ("cluster/deployments.json", "/items/0/spec/template/spec/containers/0/image"),
        ("cluster/crds.json",
         "/items/0/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties"),
        ("cluster/helm/gpu-operator.json", "/0/values/dcgmExporter/enabled")]
    assert "kubectl get crd clusterpolicies.nvidia.com" in op.remediation


def test_26_3_3_over_a_2025_schema_fires(tmp_path: Path) -> None:
    """edgelesssys/contrast#2599: v26.3.3 against a v25.3 schema, pruned silently; the
    values set two of the fields the old schema lacks (and one it has)."""
    cluster = Cluster()
    _operator(cluster, "v26.3.3")
    _values(cluster, {"cdi": {"nriPluginEnabled": True}, "driver": {"secretEnv": "s"},
                      "toolkit": {"enabled": True}}, chart="gpu-operator-v26.3.3")
    cluster.files["cluster/crds.json"] = kube_list(
        _crd("clusterpolicies.nvidia.com", _fields_before("v25.3.4")),
        _crd("nvidiadrivers.nvidia.com", set()))
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP016")[SUBJECT]
    assert "set spec.driver.secretEnv (v25.10.0), spec.cdi.nriPluginEnabled (v26.3.0), " \
        "which the" in op.summary
    assert "spec.dcgmExporter.hostPID" not in op.summary   # lacking, but nothing sets it
    assert " more" not in op.summary
    assert "CRD is not installed" not in op.summary


def _v26_on_a_2025_schema(values: dict[str, Any] | None) -> Cluster:
    """Operator v26.3.3 over a v25.3.4 ClusterPolicy schema; ``values`` the user's Helm
    values (None: no Helm release and no ClusterPolicy in the bundle)."""
    cluster = Cluster()
    _operator(cluster, "v26.3.3")
    if values is None:
        cluster.policies = None
    else:
        _values(cluster, values, chart="gpu-operator-v26.3.3")
    cluster.files["cluster/crds.json"] = kube_list(
        _crd("clusterpolicies.nvidia.com", _fields_before("v25.3.4")),
        _crd("nvidiadrivers.nvidia.com", set()))
    return cluster


def test_healthy_cluster_whose_schema_lacks_unset_fields_is_quiet(tmp_path: Path) -> None:
    """Issue 25 case 5: the stored schema lacks fields of the running release, but neither
    the ClusterPolicy nor the Helm values set any of them: nothing is pruned."""
    report = analyse(_v26_on_a_2025_schema({"toolkit": {"enabled": True}}), tmp=tmp_path)
    assert of_rule(report, "OP016") == {}
    assert status(report, "OP016") is RuleStatus.PASSED


def test_a_section_that_keeps_unknown_fields_prunes_nothing_below_it(tmp_path: Path) -> None:
    """x-kubernetes-preserve-unknown-fields on spec.cdi keeps spec.cdi.nriPluginEnabled;
    spec.driver has no such marker, so spec.driver.secretEnv is pruned."""
    cluster = Cluster()
    _operator(cluster, "v26.3.3")
    _values(cluster, {"cdi": {"nriPluginEnabled": True}, "driver": {"secretEnv": "s"}},
            chart="gpu-operator-v26.3.3")
    crd = _crd("clusterpolicies.nvidia.com", _fields_before("v25.3.4"))
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["cdi"]["x-kubernetes-preserve-unknown-fields"] = True
    cluster.files["cluster/crds.json"] = kube_list(crd, _crd("nvidiadrivers.nvidia.com", set()))
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP016")[SUBJECT]
    assert "set spec.driver.secretEnv (v25.10.0), which the" in op.summary
    assert "nriPluginEnabled" not in op.summary


def test_fields_not_judged_without_policy_or_values(tmp_path: Path) -> None:
    """Nothing in the bundle says what was submitted: partial, never a claim."""
    report = analyse(_v26_on_a_2025_schema(None), tmp=tmp_path)
    assert of_rule(report, "OP016") == {}
    assert status(report, "OP016") is RuleStatus.PARTIAL


def test_missing_nvidiadriver_crd_after_upgrade_fires(tmp_path: Path) -> None:
    """gpu-operator#602: v23.9.0 without the nvidiadrivers.nvidia.com CRD."""
    cluster = Cluster()
    _operator(cluster, "v23.9.0")
    cluster.files["cluster/crds.json"] = kube_list(
        _crd("clusterpolicies.nvidia.com", _fields_before("v23.9.0")))
    name = "gpu-operator-6fdbc66bd4-k82lb"
    cluster.put({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": name, "namespace": NS, "labels": {"app": "gpu-operator"}},
                 "spec": {"nodeName": "cp-1", "containers": [
                     {"name": "gpu-operator", "image": "nvcr.io/nvidia/gpu-operator:v23.9.0"}]},
                 "status": {"phase": "Running", "containerStatuses": [
                     {"name": "gpu-operator", "ready": False, "restartCount": 5,
                      "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}})
    log = f"logs/{NS}/{name}/gpu-operator.log"
    cluster.files[log] = stamp([
        "ERROR controller-runtime.source.EventHandler failed to get API group resources: "
        "unable to retrieve the complete list of server APIs: nvidia.com/v1alpha1: the "
        "server could not find the requested resource",
        "ERROR setup problem running manager: failed to wait for nvidia-driver-controller "
        "caches to sync: timed out waiting for cache to be synced for Kind "
        "*v1alpha1.NVIDIADriver"])
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP016")[SUBJECT]
    assert ("The nvidiadrivers.nvidia.com (needed since v23.9.0) CRD is not installed"
            in op.summary)
    assert "lacks" not in op.summary
    located = [(e.path, e.line, e.pointer) for e in op.evidence]
    assert ("cluster/crds.json", None, "/items") in located
    assert (log, 1, None) in located and (log, 2, None) in located


def test_quiet_when_the_crd_matches_the_operator(tmp_path: Path) -> None:
    cluster = Cluster()
    _operator(cluster, "v26.3.3")
    cluster.files["cluster/crds.json"] = kube_list(
        _crd("clusterpolicies.nvidia.com", _fields_before("v26.3.3")),
        _crd("nvidiadrivers.nvidia.com", set()))
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP016") == {}
    assert status(report, "OP016") is RuleStatus.PASSED


def test_quiet_on_a_schema_that_keeps_unknown_fields(tmp_path: Path) -> None:
    cluster = Cluster()
    _operator(cluster, "v26.3.3")
    cluster.files["cluster/crds.json"] = kube_list(
        _crd("clusterpolicies.nvidia.com", set(BASE), open_spec=True),
        _crd("nvidiadrivers.nvidia.com", set()))
    assert of_rule(analyse(cluster, tmp=tmp_path), "OP016") == {}


def test_quiet_when_a_newer_crd_runs_an_older_operator(tmp_path: Path) -> None:
    """The CRD may be ahead of the operator (CRDs applied first, as NVIDIA documents)."""
    cluster = Cluster()
    _operator(cluster, "v24.9.2")
    cluster.files["cluster/crds.json"] = kube_list(
        _crd("clusterpolicies.nvidia.com", _fields_before("v26.7.0")),
        _crd("nvidiadrivers.nvidia.com", set()))
    assert of_rule(analyse(cluster, tmp=tmp_path), "OP016") == {}
