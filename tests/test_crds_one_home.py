"""``cluster/crds.json`` has one reader (bundle/crds.py through ``bundle.cluster.crds``):
the operator-presence fact and OP016 read the same parsed CRDs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kit.bundles import kube_list, kube_node, write_dir

from analyzers.facts import Facts
from bundle import open_bundle
from bundle.reader import Bundle

CRD_SIGN = "the clusterpolicies.nvidia.com CRD exists"


def crd(name: str) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"versions": [{"name": "v1", "served": True, "storage": True}]}}


def signs(tmp_path: Path, crds: Any | None) -> list[str]:
    files: dict[str, Any] = {"cluster/nodes.json": kube_list(kube_node("gpu-a", 1)),
                             "cluster/pods.json": kube_list()}
    if crds is not None:
        files["cluster/crds.json"] = crds
    with open_bundle(write_dir(tmp_path / "b", files)) as bundle:
        return Facts(bundle).operator_signs


def test_the_policy_crd_is_a_sign_of_the_operator(tmp_path: Path) -> None:
    found = signs(tmp_path, kube_list(crd("nvidiadrivers.nvidia.com"),
                                      crd("clusterpolicies.nvidia.com")))
    assert found == [CRD_SIGN]


@pytest.mark.parametrize("crds", [
    None,                                             # not collected
    kube_list(crd("nvidiadrivers.nvidia.com")),       # another CRD only
    kube_list(),                                      # --ignore-not-found: none installed
    {"kind": "List", "items": None},                  # no readable list
    "not json at all {",
], ids=["absent", "other-crd", "empty", "items-null", "invalid-json"])
def test_no_policy_crd_no_sign(tmp_path: Path, crds: Any) -> None:
    assert signs(tmp_path, crds) == []


def test_crds_json_is_parsed_once_for_the_fact_and_op016(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzers.engine import analyze
    from analyzers.engine.plugins import discover

    reads: list[str] = []
    original = Bundle.read_json

    def counting(self: Bundle, path: str) -> Any:
        reads.append(path)
        return original(self, path)

    monkeypatch.setattr(Bundle, "read_json", counting)
    files = {"cluster/nodes.json": kube_list(kube_node("gpu-a", 1)),
             "cluster/pods.json": kube_list(),
             "cluster/crds.json": kube_list(crd("clusterpolicies.nvidia.com"))}
    with open_bundle(write_dir(tmp_path / "b", files)) as bundle:
        report = analyze(bundle, discover().rules)
    assert reads.count("cluster/crds.json") == 1
    assert {r.rule_id: r.status.value for r in report.rules}["OP016"] == "passed"
