"""Cross-rule links: made through analyzers/refs.py, checked by the engine.

A rule names another rule's finding by the target's id and subject
(``refs.link("RT001", node)``); the subject's shape hangs on the target's class
(``Rule.subject``), and the rule files are the one list of ids. No module of analyzers/
types a finding id by hand. Every ``refs.link`` call of the source names a rule file and
as many parts as its subject has; the engine reports a link that can never name a
finding as an error of the rule that made it, and drops, as before, a link to a finding
that simply did not fire.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from kit.bundles import kube_list, write_dir

from analyzers import refs
from analyzers.engine import analyze
from analyzers.engine.plugins import LoadedRule, discover
from analyzers.results.models import Finding, Report, RuleStatus, Severity
from analyzers.rule import Context, Rule
from analyzers.rules import builtin as builtin_rule
from bundle import open_bundle

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"

# A rule id followed by a colon and a subject: "RT001:gpu-a", f"DRV001:{name}/...".
ID_COLON = re.compile(r"(?<![A-Za-z0-9_])[A-Z]{2,5}[0-9]{3}:(?!\s)")
# f"{<x>.id}:{subject}" builds an id from a computed rule id.
ID_PARTS = {"id", "rule_id", "value"}
# The two places that build ids: the references, and Rule.finding for a rule's own.
ALLOWED = {"analyzers/refs.py": "f'{rule_id}:{subject}'",
           "analyzers/rule.py": "f'{cls.id}:{subject}'"}
# Finding ids quoted as examples in text shown to users (not links).
EXAMPLES = {"analyzers/engine/catalog.py": "`RT001:gpu-a`",
            "analyzers/engine/suppress.py": "such as RT004:gpu-a"}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                found.add(id(first.value))
    return found


def hand_typed_ids(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal or f-string that types a finding id."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in skip and ID_COLON.search(node.value)):
            hits.append((node.lineno, node.value))
        if isinstance(node, ast.JoinedStr):
            for part, after in zip(node.values, node.values[1:], strict=False):
                if not (isinstance(part, ast.FormattedValue) and isinstance(after, ast.Constant)
                        and re.match(r":(?!\s)", str(after.value))):
                    continue
                expr = part.value
                if ((isinstance(expr, ast.Attribute) and expr.attr in ID_PARTS)
                        or (isinstance(expr, ast.Name) and expr.id in ("rule", "rule_id"))):
                    hits.append((node.lineno, ast.unparse(node)))
    return hits


def test_no_module_of_analyzers_types_a_finding_id_by_hand() -> None:
    found = []
    for path in sorted((ROOT / "analyzers").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        for line, text in hand_typed_ids(path.read_text(encoding="utf-8")):
            if text == ALLOWED.get(where) or EXAMPLES.get(where, "\0") in text:
                continue
            found.append(f"{where}:{line}: {text[:80]}")
    assert found == [], "use refs.link(<target rule id>, <subject parts>):\n" + \
        "\n".join(found)


@pytest.mark.parametrize(("source", "flagged"), [
    ('links = [f"RT001:{name}"]', True),
    ('links = [f"DRV001:{name}/" f"{pci}"]', True),
    ('causes = ["OP006:missing"]', True),
    ('link = "RT001:" + name', True),
    ('caused_by = [f"{self.id}:{n}" for n in nodes]', True),
    ('link = f"{cause.value}:{node}"', True),
    ('text = "# then follow CFG004: enable the toolkit"', False),
    ('text = f"{point.value}: cannot load"', False),
    ('text = "see RT001 and OP001"', False),
    ('def f():\n    """Links RT001:gpu-a."""\n', False),
])
def test_the_scan_finds_ids_typed_by_hand(source: str, flagged: bool) -> None:
    assert bool(hand_typed_ids(source)) is flagged


def _link_calls(source: str) -> Iterator[tuple[int, str, int | None]]:
    """(line, target id, number of subject parts; None where a part is starred) of
    every ``refs.link("<ID>", ...)`` / ``link("<ID>", ...)`` call with a literal id."""
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and node.args
                and ((isinstance(node.func, ast.Attribute) and node.func.attr == "link")
                     or (isinstance(node.func, ast.Name) and node.func.id == "link"))):
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            starred = any(isinstance(arg, ast.Starred) for arg in node.args[1:])
            yield node.lineno, first.value, None if starred else len(node.args) - 1


def test_every_link_in_the_source_names_a_rule_file_and_fits_its_subject() -> None:
    builtin = {loaded.rule.id: loaded.rule for loaded in discover().rules}
    seen, wrong = 0, []
    for path in sorted((ROOT / "analyzers").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        for line, rule_id, parts in _link_calls(path.read_text(encoding="utf-8")):
            seen += 1
            rule = builtin.get(rule_id)
            if rule is None:
                wrong.append(f"{where}:{line}: {rule_id} is no rule file")
            elif parts is not None and parts not in (1, rule.subject.parts):
                # one part for a subject of several is a key already joined
                # (OP017's "<namespace>/<DaemonSet>"): the engine checks its shape
                wrong.append(f"{where}:{line}: {rule_id} takes {rule.subject.parts} part(s) "
                             f"({rule.subject.shape}), not {parts}")
    assert seen >= 80  # the scan reads the calls (every family links)
    assert wrong == []


def test_the_link_scan_reads_ids_and_parts() -> None:
    source = ('a = refs.link("RT001", node)\nb = link("DRV001", node, pci)\n'
              'c = refs.link(rule_id, node)\nd = refs.link("SC006", *key)\n')
    assert list(_link_calls(source)) == [(1, "RT001", 1), (2, "DRV001", 2), (4, "SC006", None)]


def test_each_rule_class_holds_its_subject_shape() -> None:
    builtin = {loaded.rule.id: loaded.rule for loaded in discover().rules}
    shapes = {rule_id: rule.subject for rule_id, rule in builtin.items()
              if rule.subject is not refs.NODE}
    assert shapes == {
        "CFG004": refs.POLICY, "DRV001": refs.GPU, "DRV002": refs.GPU, "DRV005":
        refs.NODE_OR_KERNELS, "DRV006": refs.GPU, "DRV007": refs.GPU, "HELM001": refs.REVISION,
        "HELM002": refs.RELEASE, "OP006": refs.POLICY_OR_MISSING, "OP017": refs.DAEMONSET,
        "SC001": refs.POD, "SC006": refs.WORKLOAD_OR_CONFIGMAP,
        **{f"CMP{n:03d}": refs.WORKLOAD for n in range(1, 11)}, "KI001": refs.KNOWN}
    for rule_id in ("RT001", "DRV003", "OP001"):
        assert builtin[rule_id].subject is refs.NODE
    # the one list of ids is the rule files: the engine finds a built-in rule by its id
    assert builtin_rule("DRV003") is builtin["DRV003"]
    assert builtin_rule("HELM001") is builtin["HELM001"]
    assert [builtin_rule(x) for x in ("DRV999", "XYZ001", "RT01", "common", "_base")] == \
        [None] * 5


def test_links_build_the_ids_their_rules_emit() -> None:
    assert refs.link("RT001", "gpu-a") == "RT001:gpu-a"
    assert refs.link("DRV001", "gpu-a", "0000:17:00.0") == "DRV001:gpu-a/0000:17:00.0"
    assert refs.GPU.of("gpu-a", "0000:17:00.0") == "gpu-a/0000:17:00.0"
    assert refs.link("CFG004", "cluster-policy") == "CFG004:cluster-policy"
    assert (refs.link("OP006", "cluster-policy"), refs.link("OP006", refs.MISSING)) == (
        "OP006:cluster-policy", "OP006:missing")
    assert refs.link("SC006", "render/sdxl") == "SC006:render/sdxl"
    assert refs.link("SC006", "gpu-operator", "plugin-config") == \
        "SC006:gpu-operator/plugin-config"
    assert refs.link("HELM001", "gpu-operator", 2) == "HELM001:gpu-operator/2"
    assert refs.REVISION.of("gpu-operator", 2) == "gpu-operator/2"
    assert refs.link("HELM002", "gpu-operator") == "HELM002:gpu-operator"


def _shape(rule_id: str) -> refs.Subject | None:
    """The targets of the test below: the built-in rules, and TST001 loaded beside them."""
    if rule_id == "TST001":
        return refs.NODE
    rule = builtin_rule(rule_id)
    return rule.subject if rule is not None else None


@pytest.mark.parametrize(("link", "reason"), [
    ("RT001:gpu-a", None),
    ("DRV001:gpu-a/0000:17:00.0", None),
    ("HELM001:gpu-operator/2", None),
    ("TST001:x", None),                 # a loaded rule of the default shape
    ("RT01:gpu-a", "RT01:gpu-a names no rule (RT01 does not exist)"),
    ("XYZ001:gpu-a", "XYZ001:gpu-a names no rule (XYZ001 does not exist)"),
    ("DRV001:gpu-a", "DRV001:gpu-a is not a finding DRV001 produces "
                     "(its subject is <node>/<gpu>)"),
    ("HELM001:gpu-operator", "HELM001:gpu-operator is not a finding HELM001 produces "
                             "(its subject is <release>/<revision>)"),
    ("HELM001:gpu-operator/two", "HELM001:gpu-operator/two is not a finding HELM001 "
                                 "produces (its subject is <release>/<revision>)"),
    ("DRV001:gpu-a/", "DRV001:gpu-a/ is not a finding DRV001 produces "
                      "(its subject is <node>/<gpu>)"),
    ("SC006:render", "SC006:render is not a finding SC006 produces "
                     "(its subject is <namespace>/<workload or ConfigMap>)"),
    ("RT001:", "'RT001:' is not <rule id>:<subject>"),
    ("RT001", "'RT001' is not <rule id>:<subject>"),
])
def test_dangling_says_why_a_link_can_never_name_a_finding(link: str,
                                                           reason: str | None) -> None:
    assert refs.dangling(link, _shape) == reason


# --- the engine ---------------------------------------------------------------------------

class Linker(Rule):
    """Links the findings the test gives it.

    Why it matters:
    Tests links.

    Remediation:
    None.
    """

    id = "TST010"
    slug = "linker"
    severity = Severity.LOW
    links: tuple[str, ...] = ()

    def check(self, ctx: Context) -> Iterable[Finding]:
        yield self.finding("gpu-a", "linked", caused_by=[refs.Link(x) for x in self.links])


class Target(Rule):
    """A finding that others link.

    Why it matters:
    Tests links.

    Remediation:
    None.
    """

    id = "TST011"
    slug = "target"
    severity = Severity.HIGH

    def check(self, ctx: Context) -> Iterable[Finding]:
        yield self.finding("gpu-a", "target")


def _run(tmp_path: Path, *links: str) -> Report:
    rule = type("Linking", (Linker,), {"links": links, "__doc__": Linker.__doc__})
    path = write_dir(tmp_path / "b", {"cluster/nodes.json": kube_list()})
    with open_bundle(path) as bundle:
        return analyze(bundle, [LoadedRule(rule, "test"), LoadedRule(Target, "test")])


def _result(report: Report, rule_id: str) -> tuple[RuleStatus, str | None]:
    result = next(r for r in report.rules if r.rule_id == rule_id)
    return result.status, result.reason


def test_a_link_to_a_rule_that_does_not_exist_is_an_error_of_its_rule(tmp_path: Path) -> None:
    report = _run(tmp_path, "TST011:gpu-a", "RT01:gpu-a")
    assert _result(report, "TST010") == (
        RuleStatus.ERROR,
        "linked findings that cannot exist: RT01:gpu-a names no rule (RT01 does not exist)")
    assert [f.id for f in report.findings] == ["TST011:gpu-a"]
    assert _result(report, "TST011") == (RuleStatus.FAILED, None)


def test_a_link_of_the_wrong_shape_is_an_error_of_its_rule(tmp_path: Path) -> None:
    report = _run(tmp_path, "DRV001:gpu-a")
    assert _result(report, "TST010") == (
        RuleStatus.ERROR, "linked findings that cannot exist: DRV001:gpu-a is not a finding "
                          "DRV001 produces (its subject is <node>/<gpu>)")
    assert [f.id for f in report.findings] == ["TST011:gpu-a"]


def test_links_to_findings_that_did_not_fire_are_dropped_quietly(tmp_path: Path) -> None:
    # RT001 and DRV001 are not run here; TST011 runs but has no finding on gpu-b.
    report = _run(tmp_path, refs.link("RT001", "gpu-a"),
                  refs.link("DRV001", "gpu-a", "0000:17:00.0"),
                  "TST011:gpu-b", "TST011:gpu-a")
    assert _result(report, "TST010") == (RuleStatus.FAILED, None)
    by_id = report.by_id()
    assert by_id["TST010:gpu-a"].caused_by == ["TST011:gpu-a"]
    assert by_id["TST011:gpu-a"].causes == ["TST010:gpu-a"]


def test_every_dangling_link_is_named_up_to_three(tmp_path: Path) -> None:
    report = _run(tmp_path, "AB001:a", "AB002:a", "AB003:a", "AB004:a")
    status, reason = _result(report, "TST010")
    assert status is RuleStatus.ERROR
    assert reason == ("linked findings that cannot exist: AB001:a names no rule (AB001 does "
                      "not exist); AB002:a names no rule (AB002 does not exist); AB003:a "
                      "names no rule (AB003 does not exist) (and 1 more)")


# --- every sample --------------------------------------------------------------------------

def _reports() -> Iterator[tuple[str, Report]]:
    rules = discover().rules
    for manifest in sorted(SAMPLES.glob("*/manifest.json")):
        with open_bundle(manifest.parent) as bundle:
            yield manifest.parent.name, analyze(bundle, rules)


def test_no_rule_makes_a_dangling_link_and_every_subject_fits_its_rules_shape() -> None:
    rules = {loaded.rule.id: loaded.rule for loaded in discover().rules}
    errors, misfits = [], []
    seen = 0
    for sample, report in _reports():
        seen += 1
        errors += [f"{sample}: {r.rule_id}: {r.reason}" for r in report.rules
                   if r.status is RuleStatus.ERROR]
        for finding in report.findings:
            shape = rules[finding.rule_id].subject
            subject = finding.id.partition(":")[2]
            if not shape.accepts(subject):
                misfits.append(f"{sample}: {finding.id} ({shape.shape})")
    assert seen >= 20
    assert errors == []
    assert misfits == []
