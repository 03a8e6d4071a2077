"""OP016's CRD half on a cluster/crds.json that cannot be read (invalid JSON, or not
shaped like a List of CRDs): no CRD is called missing on that account, and the rule does
not say passed for the half it could not judge.

Setup: gpu-operator#602 (v23.9.0 needs the nvidiadrivers.nvidia.com CRD):
https://github.com/NVIDIA/gpu-operator/issues/602
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rules"))

from kit import analyse, status
from kit import findings as of_rule  # noqa: E402
from kit.cluster import Cluster
from test_op016_crd import _operator  # noqa: E402

from analyzers.results.models import RuleStatus  # noqa: E402


@pytest.mark.parametrize("text", [
    "{not json", "[]", '"a string"', "42", '{"kind": "List", "items": "nope"}',
    '{"kind": "List", "items": [7, null, {"metadata": []}]}'])
def test_unreadable_crds_call_no_crd_missing(tmp_path: Path, text: str) -> None:
    cluster = Cluster()
    _operator(cluster, "v23.9.0")
    cluster.files["cluster/crds.json"] = text
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP016") == {}
    assert status(report, "OP016") is RuleStatus.PARTIAL
    reason = next(r.reason or "" for r in report.rules if r.rule_id == "OP016")
    assert "cluster/crds.json holds no readable list of CRDs" in reason
