"""OP016 (logs, events and Helm records): the API server rejects the ClusterPolicy
against an older CRD. Wordings: gpu-operator#139 (Required value), #461 (Invalid value),
#431 (unknown field)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit import analyse, status
from kit import findings as of_rule
from kit.cluster import NS, Cluster, stamp

from analyzers.results.models import RuleStatus

REQUIRED = ('cannot patch "cluster-policy" with kind ClusterPolicy: ClusterPolicy.nvidia.com '
            '"cluster-policy" is invalid: spec.operator.deployGFD: Required value')
CRD = "clusterpolicies.nvidia.com"


def _revision(number: int, status_: str, description: str) -> dict[str, Any]:
    return {"revision": number, "status": status_, "chart": f"gpu-operator-v1.{number + 3}.0",
            "app_version": f"1.{number + 3}.0", "updated": f"2021-01-2{number}T10:00:00Z",
            "description": description, "values": {}}


def _operator(cluster: Cluster) -> str:
    name = "gpu-operator-5d8f7c9b6d-x2k4p"
    cluster.put({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": name, "namespace": NS, "labels": {"app": "gpu-operator"}},
                 "spec": {"nodeName": "cp-1", "containers": [
                     {"name": "gpu-operator", "image": "nvcr.io/nvidia/gpu-operator:v1.5.1"}]},
                 "status": {"phase": "Running", "containerStatuses": [
                     {"name": "gpu-operator", "ready": True, "restartCount": 0,
                      "state": {"running": {}}}]}})
    return f"logs/{NS}/{name}/gpu-operator.log"


def test_failed_helm_upgrade_fires_and_explains_helm002(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.files["cluster/helm/gpu-operator.json"] = json.dumps([
        _revision(1, "superseded", "Install complete"),
        _revision(2, "failed", f'Upgrade "gpu-operator" failed: {REQUIRED}')])
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP016")
    assert sorted(found) == [f"OP016:{CRD}"]
    op = found[f"OP016:{CRD}"]
    assert "spec.operator.deployGFD: Required value" in op.summary
    assert "Helm never upgrades CRDs" in op.summary
    [evidence] = op.evidence
    assert evidence.path == "cluster/helm/gpu-operator.json"
    assert evidence.pointer == "/1/description"
    assert "gpu-operator revision 2 (failed)" in evidence.excerpt
    assert "HELM002:gpu-operator" in op.causes
    assert "helm -n gpu-operator history gpu-operator" in op.remediation


def test_operator_log_line_fires(tmp_path: Path) -> None:
    cluster = Cluster()
    path = _operator(cluster)
    cluster.files[path] = stamp([
        "INFO controllers.ClusterPolicy Reconciliate ClusterPolicies after node label update",
        'ERROR controllers.ClusterPolicy Failed to update ClusterPolicy status '
        '{"error": "ClusterPolicy.nvidia.com \\"cluster-policy\\" is invalid: '
        'spec.devicePlugin.config: Invalid value: \\"null\\": spec.devicePlugin.config in body '
        'must be of type object: \\"null\\""}'])
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP016")[f"OP016:{CRD}"]
    assert [(e.path, e.line) for e in op.evidence] == [(path, 2)]


def test_quiet_on_a_clean_history(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.files["cluster/helm/gpu-operator.json"] = json.dumps([
        _revision(1, "superseded", "Install complete"),
        _revision(2, "deployed", "Upgrade complete")])
    path = _operator(cluster)
    cluster.files[path] = stamp(["INFO controllers.ClusterPolicy ClusterPolicy is ready"])
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP016") == {}
    assert status(report, "OP016") is RuleStatus.PASSED
