"""The first step a report offers to copy is a command a rule built, never a line of
its written remediation: prose is shown as comments, and a line quoting a command in
``double backquotes`` is prose."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.rule import as_comments
from bundle import open_bundle
from reports.view import first_command

ROOT = Path(__file__).resolve().parent.parent
RULES = discover().rules


@pytest.mark.parametrize("loaded", RULES, ids=lambda loaded: loaded.rule.id)
def test_a_finding_without_commands_shows_its_rule_prose_as_comments(loaded: object) -> None:
    rule = loaded.rule  # type: ignore[attr-defined]
    finding = rule.finding("gpu-1", "summary", nodes=["gpu-1"])
    assert finding.remediation == as_comments(rule.docs().remediation)
    assert all(line.startswith("#") for line in finding.remediation.splitlines())
    assert first_command(finding.remediation) is None


# Findings of these samples carried their rule's written remediation, and the report
# offered a fragment of a sentence of it as the first step to copy; they now build
# read-first commands (RT005 is asserted below, no sample makes it fire).
FIRST_STEPS = {
    ("secureboot-dkms-refused", "DRV004"): "mokutil --sb-state",
    ("driver-build-no-headers", "RT006"): "ls -l /var/run/cdi /etc/cdi",
    ("incident-toolkit-disabled", "RT007"):
        "kubectl get runtimeclass -o custom-columns=NAME:.metadata.name,HANDLER:.handler",
}


@pytest.mark.parametrize("sample", sorted({s for s, _ in FIRST_STEPS}))
def test_prose_is_never_offered_as_a_first_step(sample: str) -> None:
    docs = {loaded.rule.id: loaded.rule.docs().remediation for loaded in RULES}
    with open_bundle(ROOT / "samples" / sample) as opened:
        report = analyze(opened, RULES)
    offered = {f.rule_id: first_command(f.remediation) for f in report.findings}
    for (where, rule), step in FIRST_STEPS.items():
        if where == sample:
            assert offered[rule] == step
    assert not any(f.remediation == docs[f.rule_id] for f in report.findings)
    assert not any("``" in command or command.endswith(".")
                   for command in offered.values() if command)


def test_a_runtime_without_its_cri_plugin_is_looked_at_first() -> None:
    from analyzers.rules.rt._service import _cri_remediation

    remediation = _cri_remediation("gpu-7")
    assert remediation.splitlines()[0].startswith("# on gpu-7 (kubectl debug node/gpu-7")
    assert first_command(remediation) == "containerd config dump | grep -n disabled_plugins"
    assert "systemctl restart containerd" not in [line for line in remediation.splitlines()
                                                  if not line.startswith("#")]


def test_prose_lines_are_skipped() -> None:
    assert first_command("Review them first:\nand ``kubectl delete pods -n x``.") is None
    assert first_command("# read first\nkubectl get pods -A\nkubectl delete pod x") == \
        "kubectl get pods -A"
    assert as_comments("Fix the node.\n\nThen ``restart``.") == \
        "# Fix the node.\n#\n# Then ``restart``."


def test_a_lost_gpu_is_looked_at_before_its_node_is_cordoned() -> None:
    """DRV002: the evidence the reboot would erase comes first, read-only; cordon and
    drain follow, for the node of the finding."""
    with open_bundle(ROOT / "samples" / "xid79-fallen-off-bus") as opened:
        report = analyze(opened, RULES)
    lost = next(f for f in report.findings if f.rule_id == "DRV002")
    assert lost.nodes == ["hgx-1"]
    assert first_command(lost.remediation).startswith("dmesg --time-format iso")
    lines = lost.remediation.splitlines()
    assert lines.index("kubectl cordon hgx-1") > lines.index("ipmitool sel list | tail -20")


def test_rejected_pods_are_reviewed_before_anything_is_deleted() -> None:
    """SC005 offered "and ``kubectl delete pods -n <ns> --field-selector=status.phase=
    Failed``." as its first step; it now lists the failed pods of its node, and leaves
    deleting them, per namespace, to a comment."""
    with open_bundle(ROOT / "samples" / "timeslicing") as opened:
        report = analyze(opened, RULES)
    rejected = next(f for f in report.findings if f.rule_id == "SC005")
    assert rejected.id == "SC005:gpu-2"
    assert first_command(rejected.remediation) == (
        "kubectl get pods -A --field-selector status.phase=Failed,spec.nodeName=gpu-2 -o wide")
    commands = [line for line in rejected.remediation.splitlines() if not line.startswith("#")]
    assert commands == [first_command(rejected.remediation)]


def test_the_bundle_rules_offer_their_static_checks() -> None:
    """BND001 (a gap of another kind) and BND002 once offered the commands indented in
    their docstrings; they now give them as their own remediation."""
    from analyzers.rules.bnd import _base as bnd

    assert first_command(bnd._OTHER_GAP) == "kubectl auth can-i list events --all-namespaces"
    assert first_command(bnd._UNREADABLE).startswith("gzip -t bundle.tgz && tar -tzf")
