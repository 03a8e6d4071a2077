"""OP016 on Helm records built from real public threads its own tests do not use.

- A chart v22.9.0 install over a ClusterPolicy CRD left by an earlier release, in an
  air-gapped cluster, as the user typed it (``INATLLATION``, ``ClusterOolicy``,
  ``ClusterPlicy``): https://github.com/NVIDIA/gpu-operator/issues/435 — the rule did not
  read this hand-copied wording before; it now also matches the schema path
  ``in com.nvidia.v1.``;
- MicroK8s enabling the GPU add-on (chart 1.7.0) over an older CRD:
  https://github.com/NVIDIA/gpu-operator/issues/218;
- the latest chart over an older CRD, ``unknown field "kernelModuleConfig"``:
  https://github.com/NVIDIA/gpu-operator/issues/342.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit import analyse
from kit import findings as of_rule
from kit.cluster import Cluster

CRD = "clusterpolicies.nvidia.com"


def _history(*revisions: tuple[int, str, str]) -> str:
    def one(number: int, status: str, description: str) -> dict[str, Any]:
        return {"revision": number, "status": status, "chart": "gpu-operator-v22.9.0",
                "app_version": "v22.9.0", "updated": f"2022-11-0{number}T10:00:00Z",
                "description": description, "values": {}}
    return json.dumps([one(*r) for r in revisions])


def _op016(tmp_path: Path, history: str) -> tuple[list[str], str, list[str]]:
    cluster = Cluster()
    cluster.files["cluster/helm/gpu-operator.json"] = history
    found = of_rule(analyse(cluster, tmp=tmp_path), "OP016")
    finding = found.get(f"OP016:{CRD}")
    return sorted(found), finding.summary if finding else "", finding.causes if finding else []


def test_hand_typed_install_failure_over_a_leftover_crd(tmp_path: Path) -> None:
    typed = ('Error:INATLLATION FAILED:unable to build kubernetes objects from release '
             'mainfest: error validating:" " :error validating data :[ValidationError('
             'ClusterOolicy.spec.dcgmExporter):unknown field "enable" in com.nvidia.v1.'
             'ClusterPlicy.spec.dcgmExporter,ValidationError(ClusterOolicy.spec.driver):'
             'unknown field "rollingUpdate" in com.nvidia.v1.ClusterPlicy.spec.driver]')
    ids, summary, causes = _op016(tmp_path, _history((1, "failed", typed)))
    assert ids == [f"OP016:{CRD}"]
    assert 'unknown field "enable"' in summary
    assert causes[-1] == "HELM002:gpu-operator"


def test_microk8s_addon_over_an_older_crd(tmp_path: Path) -> None:
    said = ('unable to build kubernetes objects from release manifest: error validating "": '
            'error validating data: [ValidationError(ClusterPolicy.spec.dcgmExporter): unknown '
            'field "priorityClassName" in com.nvidia.v1.ClusterPolicy.spec.dcgmExporter, '
            'ValidationError(ClusterPolicy.spec): unknown field "mig" in '
            'com.nvidia.v1.ClusterPolicy.spec]')
    ids, summary, _ = _op016(tmp_path, _history((1, "failed", said)))
    assert ids == [f"OP016:{CRD}"]
    assert 'unknown field "priorityClassName"' in summary


def test_kernel_module_config_unknown(tmp_path: Path) -> None:
    said = ('unable to build kubernetes objects from release manifest: error validating "": '
            'error validating data: ValidationError(ClusterPolicy.spec.driver): unknown field '
            '"kernelModuleConfig" in com.nvidia.v1.ClusterPolicy.spec.driver')
    ids, _, _ = _op016(tmp_path, _history((1, "superseded", "Install complete"),
                                          (2, "failed", f'Upgrade "gpu-operator" failed: {said}')))
    assert ids == [f"OP016:{CRD}"]


def test_quiet_on_another_kind_unknown_field(tmp_path: Path) -> None:
    said = ('error validating data: ValidationError(ServiceMonitor.spec): unknown field '
            '"relabelings" in com.coreos.monitoring.v1.ServiceMonitor.spec')
    ids, _, _ = _op016(tmp_path, _history((1, "failed", said)))
    assert ids == []
