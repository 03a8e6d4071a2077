"""One exit code for every command that judges findings (``analyze``, batch, ``diff``)."""

from __future__ import annotations

import pytest

from analyzers.results.models import Finding, Severity
from gpu_triage.exitcodes import Exit, exit_code


def _finding(rule: str, severity: Severity) -> Finding:
    return Finding(id=f"{rule}:gpu-a", rule_id=rule, title="t", severity=severity, summary="s")


@pytest.mark.parametrize(("fail_on", "expected"), [
    ("info", Exit.FINDINGS), ("medium", Exit.FINDINGS), ("high", Exit.OK),
    ("critical", Exit.OK)])
def test_a_finding_at_or_above_fail_on_is_findings(fail_on: str, expected: Exit) -> None:
    found = [_finding("RT004", Severity.LOW), _finding("OP010", Severity.MEDIUM)]
    assert exit_code(found, fail_on) is expected


def test_no_findings_is_ok_at_any_threshold() -> None:
    assert exit_code([], "info") is Exit.OK


def test_a_rule_in_error_makes_it_incomplete_whatever_was_found() -> None:
    assert exit_code([], "critical", errored=["DRV003"]) is Exit.INCOMPLETE
    assert exit_code([_finding("OP010", Severity.CRITICAL)], "info",
                     errored=["DRV003"]) is Exit.INCOMPLETE
