"""The OP rules on the committed samples (samples/README.md): the second write-up's
incident. Each OP rule's quiet case on its healthy counterpart is in
tests/rules/cases/<ID>.toml."""

from __future__ import annotations

from pathlib import Path

import pytest
from kit import analyse

from analyzers.results.models import Report

GPU_NODES = ("gpu-a", "gpu-b", "gpu-c", "gpu-d")


def _report(samples: Path, name: str) -> Report:
    return analyse(samples / name)


@pytest.fixture(scope="module")
def incident(samples: Path) -> Report:
    return _report(samples, "incident-toolkit-disabled")


def test_incident_operands_stop_at_the_toolkit_stage_because_of_rt001(incident: Report) -> None:
    found = incident.by_id()
    assert sorted(i for i in found if i.startswith("OP001:")) == [f"OP001:{n}" for n in GPU_NODES]
    for node in GPU_NODES:
        op1 = found[f"OP001:{node}"]
        assert op1.caused_by == [f"RT001:{node}"]
        assert "stops at the toolkit stage: 4 pod(s) cannot create their sandbox" in op1.summary
        assert any(e.path == "cluster/events.json" and "no runtime for" in e.excerpt
                   for e in op1.evidence)
        op8 = found[f"OP008:{node}"]
        assert f"RT001:{node}" in op8.caused_by
        assert "no nvidia.com/* resource in capacity" in op8.summary


def test_incident_policy_not_ready_is_explained_by_the_nodes(incident: Report) -> None:
    op6 = incident.by_id()["OP006:cluster-policy"]
    assert "is notReady" in op6.summary
    assert op6.caused_by == [f"OP001:{n}" for n in GPU_NODES]


def test_incident_reports_nothing_else_from_the_operator_family(incident: Report) -> None:
    rules = {f.rule_id for f in incident.findings if f.rule_id.startswith("OP")}
    assert rules == {"OP001", "OP006", "OP008"}
