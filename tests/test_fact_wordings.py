"""The facts name no rule: where a fact reads the wordings of one catalog rule, it lists
them by signature id. These tests hold each list to the signatures that name that rule
in analyzers/data/signatures.toml, so a wording added there for the rule is read by the
fact too (or the test says which list to extend)."""

from __future__ import annotations

from analyzers.facts.dcgm import NO_DCGM_WORDINGS, PROFILING_WORDINGS
from analyzers.facts.driverkernel import INSTALL_WORDINGS
from analyzers.facts.fabric import FABRIC_WORDINGS
from analyzers.facts.stages import NO_HANDLER_WORDINGS
from analyzers.knowledge import signatures


def _feeding(rule_id: str, source: str | None = None) -> set[str]:
    return {s.id for s in signatures.for_rule(rule_id)
            if source is None or s.applies_to(source)}


def test_the_driver_install_wordings_are_op010s() -> None:
    assert set(INSTALL_WORDINGS) == _feeding("OP010")


def test_the_fabric_wordings_are_op005s() -> None:
    assert set(FABRIC_WORDINGS) == _feeding("OP005")


def test_the_missing_handler_event_wordings_are_rt001s() -> None:
    assert set(NO_HANDLER_WORDINGS) == _feeding("RT001", "event")
    # RT001's log wordings are not about a sandbox: the set leaves them out on purpose
    assert "validator-toolkit-not-ready" in _feeding("RT001") - NO_HANDLER_WORDINGS


def test_the_exporter_wordings_are_op004s_and_op013s() -> None:
    assert set(NO_DCGM_WORDINGS) == _feeding("OP004")
    assert set(PROFILING_WORDINGS) == _feeding("OP013")
