"""Rules from outside the project: an entry-point package, ``--rules DIR``, the case harness
``rules test``; and rule selection (``--only`` / ``--skip``) and ``--suppress``."""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path

import pytest
from kit.cli import invoke as _run

from analyzers.engine.plugins import discover
from analyzers.engine.selection import Selection, SelectionError
from analyzers.engine.suppress import SuppressionError, apply, parse
from analyzers.results.models import Finding, Severity

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
INCIDENT = SAMPLES / "incident-toolkit-disabled"
HEALTHY = SAMPLES / "healthy-toolkit-enabled"
EXAMPLES = ROOT / "docs" / "examples"

RULE = '''
from analyzers.results.models import Severity
from analyzers.rule import Rule, cluster


class {name}(Rule):
    """{title}.

    Why it matters:
    A test.

    Remediation:
    None.
    """

    id = "{rule_id}"
    slug = "{slug}"
    severity = Severity.{severity}
    inputs = (cluster("nodes.json"),)

    def check(self, ctx):
        for node in sorted(ctx.facts.gpu_nodes):
            yield self.finding(node, f"On {{node}}, a site check failed.", nodes=[node])
'''


def rule_source(rule_id: str, severity: str = "LOW", name: str = "SiteCheck") -> str:
    return RULE.format(name=name, title=f"Site check {rule_id}", rule_id=rule_id,
                       slug=rule_id.lower(), severity=severity)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


# -- a package exposing the gpu_triage.rules entry point --------------------------------


def test_an_installed_package_adds_rules_through_the_entry_point(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site-packages"
    (site / "acme_gpu_rules").mkdir(parents=True)
    (site / "acme_gpu_rules" / "__init__.py").write_text(
        rule_source("ACME001", name="AcmeCheck") + "\nRULES = [AcmeCheck]\n", encoding="utf-8")
    info = site / "acme_gpu_rules-1.2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-gpu-rules\n"
                                   "Version: 1.2.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[gpu_triage.rules]\nacme = acme_gpu_rules:RULES\n",
                                           encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    loaded = discover().by_id()
    assert loaded["ACME001"].origin == "acme-gpu-rules (acme)"
    assert loaded["RT001"].origin == "built-in"
    code, out, _ = _run(["rules"])
    assert code == 0
    assert any(line.startswith("ACME001") and line.endswith("[acme-gpu-rules (acme)]")
               for line in out.splitlines())
    code, out, _ = _run(["analyze", str(INCIDENT), "-f", "json"])
    report = json.loads(out)
    assert {f["id"] for f in report["findings"] if f["rule_id"] == "ACME001"} == {
        "ACME001:gpu-a", "ACME001:gpu-b", "ACME001:gpu-c", "ACME001:gpu-d"}
    sys.modules.pop("acme_gpu_rules", None)


# -- --rules DIR ------------------------------------------------------------------------


def _rules_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "site-rules"
    directory.mkdir()
    (directory / "checks.py").write_text(rule_source("SITE101", "HIGH"), encoding="utf-8")
    (directory / "broken.py").write_text("import does_not_exist\n", encoding="utf-8")
    (directory / "clash.py").write_text(rule_source("RT001", name="Clash"), encoding="utf-8")
    (directory / "_helpers.py").write_text("raise SystemExit('never imported')\n",
                                           encoding="utf-8")
    return directory


def test_rules_dir_loads_each_file_in_its_own_try_block(tmp_path: Path) -> None:
    directory = _rules_dir(tmp_path)
    code, out, err = _run(["analyze", str(HEALTHY), "-f", "json", "--rules", str(directory)])
    report = json.loads(out)
    assert code == 1  # SITE101 is high and fires on every GPU node
    assert sorted(f["id"] for f in report["findings"] if f["rule_id"] == "SITE101") == [
        "SITE101:gpu-a", "SITE101:gpu-b", "SITE101:gpu-c", "SITE101:gpu-d"]
    origin = {r["rule_id"]: r["origin"] for r in report["rules"]}
    assert origin["SITE101"] == f"local {directory / 'checks.py'}"
    assert origin["RT001"] == "built-in"
    assert "broken.py: cannot load: ModuleNotFoundError" in err
    assert "clash.py: rule RT001 is already provided" in err
    assert "_helpers" not in err
    code, out, _ = _run(["explain", "site101", "--rules", str(directory)])
    assert code == 0 and out.startswith("SITE101 (site101)")
    code, out, _ = _run(["rules", "--rules", str(directory)])
    assert "SITE101" in out


def test_rules_dir_must_exist(tmp_path: Path) -> None:
    code, out, err = _run(["analyze", str(HEALTHY), "--rules", str(tmp_path / "nope")])
    assert (code, out) == (2, "")
    assert "does not exist" in err


# -- --only / --skip --------------------------------------------------------------------


def test_skip_reports_the_rule_skipped_with_its_reason() -> None:
    code, out, _ = _run(["analyze", str(INCIDENT), "-f", "json", "--skip", "RT001,CFG004"])
    report = json.loads(out)
    rules = {r["rule_id"]: r for r in report["rules"]}
    assert (rules["RT001"]["status"], rules["RT001"]["reason"]) == ("skipped",
                                                                    "deselected with --skip")
    assert rules["CFG004"]["reason"] == "deselected with --skip"
    assert not any(f["rule_id"] in ("RT001", "CFG004") for f in report["findings"])
    assert code == 1


def test_only_runs_a_family_and_lists_the_rest_as_not_selected() -> None:
    code, out, _ = _run(["analyze", str(INCIDENT), "-f", "json", "--only", "cfg"])
    report = json.loads(out)
    ran = {r["rule_id"] for r in report["rules"] if r["status"] != "skipped"}
    assert ran and all(rule.startswith("CFG") for rule in ran)
    assert {r["reason"] for r in report["rules"] if not r["rule_id"].startswith("CFG")} == {
        "not selected with --only"}
    assert code == 1  # CFG004 is critical


def test_unknown_selection_is_a_usage_error() -> None:
    code, out, err = _run(["analyze", str(INCIDENT), "--only", "NOPE999"])
    assert (code, out) == (2, "")
    assert "no installed rule or rule family NOPE999" in err
    with pytest.raises(SelectionError):
        Selection.parse(["RT001;rm -rf"])


# -- --suppress -------------------------------------------------------------------------

SUPPRESS = """
[[suppress]]
id = "CFG004:cluster-policy"
reason = "toolkit intentionally off during the migration (CHG-42)"
until = 2027-01-01

[[suppress]]
rule = "RT001"
reason = "known; fixed by the toolkit rollout"

[[suppress]]
rule = "OP008"
reason = "old exception"
until = "2026-01-01"

[[suppress]]
id = "SC001:default/no-such-pod"
reason = "stale entry"
"""


def test_suppressed_findings_move_to_the_suppressed_list(tmp_path: Path) -> None:
    path = tmp_path / "suppress.toml"
    path.write_text(SUPPRESS, encoding="utf-8")
    code, out, err = _run(["analyze", str(INCIDENT), "-f", "json", "--suppress", str(path)])
    report = json.loads(out)
    suppressed = {s["finding"]["id"]: (s["reason"], s["matched"], s["until"])
                  for s in report["suppressed"]}
    assert suppressed == {
        "CFG004:cluster-policy": ("toolkit intentionally off during the migration (CHG-42)",
                                  "id CFG004:cluster-policy", "2027-01-01"),
        **{f"RT001:gpu-{n}": ("known; fixed by the toolkit rollout", "rule RT001", None)
           for n in "abcd"}}
    ids = {f["id"] for f in report["findings"]}
    assert not ids & set(suppressed)
    assert "OP008:gpu-a" in ids  # its suppression expired
    assert report["summary"]["critical"] == 0
    for finding in report["findings"]:
        assert not set(finding["caused_by"]) & set(suppressed)
    assert "suppressed 5 finding(s)" in err
    assert "suppression rule OP008" in err and "expired on 2026-01-01" in err
    assert "suppression id SC001:default/no-such-pod" in err and "matched no finding" in err
    assert code == 1  # OP001 etc. are still high


def test_suppressing_everything_at_or_above_fail_on_exits_zero(tmp_path: Path) -> None:
    path = tmp_path / "all.toml"
    path.write_text("".join(f'[[suppress]]\nrule = "{r}"\nreason = "lab"\n\n' for r in (
        "CFG004", "RT001", "RT006", "OP001", "OP006", "OP008", "SC001")), encoding="utf-8")
    code, out, _ = _run(["analyze", str(INCIDENT), "-f", "json", "--suppress", str(path)])
    assert code == 0
    assert not [f for f in json.loads(out)["findings"] if f["severity"] in ("critical", "high")]


@pytest.mark.parametrize("text, message", [
    ('[[suppress]]\nid = "RT004:gpu-a"\n', "a non-empty 'reason' is required"),
    ('[[suppress]]\nid = "RT004:gpu-a"\nrule = "RT004"\nreason = "x"\n', "exactly one of"),
    ('[[suppress]]\nrule = "rt4"\nreason = "x"\n', "'rule' must be a rule id"),
    ('[[suppress]]\nrule = "RT004"\nreason = "x"\nuntil = "soon"\n', "'until' must be a date"),
    ('[[suppress]]\nrule = "RT004"\nreason = "x"\nwhy = 1\n', "unknown key(s) why"),
    ("suppress = 3\n", "array of tables"),
    ("[[suppress]\n", "invalid TOML"),
])
def test_invalid_suppression_files_are_usage_errors(tmp_path: Path, text: str,
                                                    message: str) -> None:
    with pytest.raises(SuppressionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(text, "s.toml")
    path = tmp_path / "s.toml"
    path.write_text(text, encoding="utf-8")
    code, out, err = _run(["analyze", str(INCIDENT), "--suppress", str(path)])
    assert (code, out) == (2, "")
    assert message.split("(")[0] in err


def test_an_id_match_wins_over_a_rule_match() -> None:
    from analyzers.engine import analyze
    from bundle import open_bundle

    with open_bundle(INCIDENT) as opened:
        report = analyze(opened, discover().rules)
    rules = parse('[[suppress]]\nrule = "RT001"\nreason = "by rule"\n\n'
                  '[[suppress]]\nid = "RT001:gpu-a"\nreason = "by id"\n', "s.toml")
    outcome = apply(report, rules, date(2026, 11, 29))
    reasons = {s.finding.id: s.reason for s in outcome.report.suppressed}
    assert reasons["RT001:gpu-a"] == "by id" and reasons["RT001:gpu-b"] == "by rule"
    assert outcome.report.summary.critical == report.summary.critical - 4
    assert isinstance(outcome.report.suppressed[0].finding, Finding)
    assert outcome.report.suppressed[0].finding.severity is Severity.CRITICAL


# -- rules test DIR ---------------------------------------------------------------------


def test_the_documented_example_passes_its_cases() -> None:
    code, out, err = _run(["rules", "test", str(EXAMPLES)])
    assert code == 0, out + err
    assert out.splitlines() == [
        "PASS  site_toolkit.cases.toml #1 fires when the toolkit is disabled",
        "PASS  site_toolkit.cases.toml #2 quiet once the toolkit is enabled",
        "2 passed, 0 failed"]
    assert err == ""


def test_a_failing_case_prints_fail_and_exits_one(tmp_path: Path) -> None:
    directory = tmp_path / "rules"
    directory.mkdir()
    (directory / "checks.py").write_text(rule_source("SITE101"), encoding="utf-8")
    (directory / "cases").mkdir()
    (directory / "cases" / "lab.toml").write_text(
        f'[[case]]\nname = "fires"\nbundle = "{INCIDENT}"\n'
        'expect = ["SITE101:gpu-a", "SITE101:gpu-z"]\nabsent = ["SITE101:gpu-b"]\n'
        'status = {{ SITE101 = "passed" }}\n'.replace("{{", "{").replace("}}", "}"),
        encoding="utf-8")
    (directory / "checks.cases.toml").write_text(
        f'[[case]]\nbundle = "{HEALTHY}"\nexpect = ["SITE101:gpu-c"]\n', encoding="utf-8")
    code, out, _ = _run(["rules", "test", str(directory)])
    assert code == 1
    assert out.splitlines() == [
        "PASS  checks.cases.toml #1",
        "FAIL  lab.toml #1 fires",
        "      expected SITE101:gpu-z, not found",
        "      SITE101:gpu-b found, expected absent",
        "      SITE101 is failed, expected passed",
        "1 passed, 1 failed"]


def test_rules_test_without_cases_or_with_a_bad_case_file_is_a_usage_error(
        tmp_path: Path) -> None:
    directory = tmp_path / "rules"
    directory.mkdir()
    (directory / "checks.py").write_text(rule_source("SITE101"), encoding="utf-8")
    code, out, err = _run(["rules", "test", str(directory)])
    assert (code, out) == (2, "")
    assert "no cases in" in err
    (directory / "checks.cases.toml").write_text('[[case]]\nexpect = ["SITE101:x"]\n',
                                                 encoding="utf-8")
    code, _, err = _run(["rules", "test", str(directory)])
    assert code == 2 and "'bundle'" in err
    (directory / "checks.cases.toml").write_text(
        f'[[case]]\nbundle = "{HEALTHY}"\nexpect = ["RT001:gpu-a"]\n', encoding="utf-8")
    code, out, _ = _run(["rules", "test", str(directory)])
    assert code == 1 and "RT001 is not a rule this case runs (SITE101)" in out
