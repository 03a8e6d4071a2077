"""Confidence on every causal claim (issue 25): each finding says whether its cause is
``confirmed`` by direct evidence or ``likely`` (inferred from an absence or a pattern),
every built-in rule states which its findings are, the reports say so beside the cause,
and a likely cause never opens its remediation with a step that changes the cluster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzers.commands import is_destructive, opens_destructively
from analyzers.engine import analyze
from analyzers.engine.plugins import BUILTIN_ORIGIN, discover
from analyzers.results.models import Confidence, Finding, Report
from bundle import open_bundle
from reports import markdown, text
from reports.view import first_command

ROOT = Path(__file__).resolve().parent.parent
RULES = discover().rules
SAMPLES = sorted(p.name for p in (ROOT / "samples").iterdir()
                 if (p / "manifest.json").is_file())


@pytest.mark.parametrize("loaded", [r for r in RULES if r.origin == BUILTIN_ORIGIN],
                         ids=lambda loaded: loaded.rule.id)
def test_every_builtin_rule_states_its_confidence(loaded: object) -> None:
    rule = loaded.rule  # type: ignore[attr-defined]
    assert "confidence" in vars(rule), f"{rule.id} does not state its confidence"
    assert isinstance(rule.confidence, Confidence)


@pytest.mark.parametrize("loaded", RULES, ids=lambda loaded: loaded.rule.id)
def test_no_rule_can_build_a_likely_finding_that_opens_destructively(loaded: object) -> None:
    """Enforced where findings are made (Rule.finding), so it holds for every rule and
    every remediation a rule builds, not only for the ones the samples reach."""
    rule = loaded.rule  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="likely cause opens with a destructive step"):
        rule.finding("gpu-1", "s", confidence=Confidence.LIKELY,
                     remediation="# on gpu-1:\nkubectl drain gpu-1 --ignore-daemonsets")
    read_first = rule.finding("gpu-1", "s", confidence=Confidence.LIKELY,
                              remediation="kubectl get node gpu-1\nkubectl drain gpu-1")
    assert read_first.confidence is Confidence.LIKELY
    confirmed = rule.finding("gpu-1", "s", confidence=Confidence.CONFIRMED,
                             remediation="kubectl cordon gpu-1")
    assert confirmed.confidence is Confidence.CONFIRMED
    assert rule.finding("gpu-1", "s").confidence is rule.confidence


def _report(sample: str) -> Report:
    with open_bundle(ROOT / "samples" / sample) as opened:
        return analyze(opened, RULES)


@pytest.mark.parametrize("sample", SAMPLES)
def test_likely_findings_of_the_samples_open_with_a_read(sample: str) -> None:
    report = _report(sample)
    for finding in report.findings:
        if finding.confidence is Confidence.LIKELY:
            command = first_command(finding.remediation)
            assert command is None or not is_destructive(command), (finding.id, command)


def test_destructive_commands_are_recognised() -> None:
    for line in ("kubectl drain gpu-1 --ignore-daemonsets", "kubectl -n gpu-operator delete "
                 "pod x", "sudo systemctl restart containerd", "helm upgrade gpu-operator x",
                 "reboot", "modprobe -r nvidia", "nvidia-smi -i 0 -r", "rm -f /etc/cdi/x"):
        assert is_destructive(line), line
    for line in ("kubectl get pods -A", "kubectl -n gpu-operator logs x", "systemctl status "
                 "containerd", "dmesg --time-format iso | tail", "nvidia-smi -q",
                 "helm history gpu-operator", "kubectl describe node gpu-1"):
        assert not is_destructive(line), line
    assert opens_destructively("# prose\n\nkubectl delete pod x") == "kubectl delete pod x"
    assert opens_destructively("kubectl get pod x\nkubectl delete pod x") is None


def test_the_reports_say_likely_cause_beside_an_inferred_cause() -> None:
    """nfd-not-labelling: OP011 (labelling broken, inferred from absent labels) is a
    likely cause; the JSON carries the field, the text and Markdown name it."""
    report = _report("nfd-not-labelling")
    likely = [f for f in report.findings if f.confidence is Confidence.LIKELY]
    assert "OP011" in {f.rule_id for f in likely}
    document = json.loads(report.model_dump_json())
    confidences = {f["id"]: f["confidence"] for f in document["findings"]}
    assert confidences["OP011:node-feature-discovery"] == "likely"
    assert "           likely cause: Node labelling is broken" in text.render(report)
    assert "*likely cause:* Node labelling is broken" in markdown.render(report)
    confirmed = _report("incident-toolkit-disabled")
    roots = [f for f in confirmed.findings if not f.caused_by]
    assert roots and all(f.confidence is Confidence.CONFIRMED
                         for f in roots if f.rule_id in ("CFG004", "RT001"))
    assert "           cause: " in text.render(confirmed)
    assert ":** cause: " in markdown.render(confirmed)


def test_a_report_written_before_the_field_reads_as_confirmed() -> None:
    """Schema 1 gained an optional field: older documents still validate."""
    old = {"id": "RT001:gpu-a", "rule_id": "RT001", "title": "t", "severity": "critical",
           "summary": "s"}
    assert Finding.model_validate(old).confidence is Confidence.CONFIRMED


def test_the_html_report_names_the_cause_beside_it() -> None:
    from datetime import UTC, datetime

    from reports import html

    page = html.render(_report("nfd-not-labelling"), generated_at=datetime(2026, 12, 1,
                                                                            tzinfo=UTC))
    assert '<span class="pill cause">likely cause</span> Node labelling is broken' in page
    confirmed = html.render(_report("incident-toolkit-disabled"),
                            generated_at=datetime(2026, 12, 1, tzinfo=UTC))
    assert '<span class="pill cause">cause</span>' in confirmed
