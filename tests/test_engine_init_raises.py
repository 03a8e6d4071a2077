"""A rule whose constructor raises (a plugin's own __init__) is an error of that rule,
like one whose check raises; the run goes on."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kit.bundles import kube_list, write_dir

from analyzers.engine import analyze
from analyzers.engine.plugins import LoadedRule
from analyzers.results.models import Finding, RuleStatus, Severity
from analyzers.rule import Context, Rule
from bundle import open_bundle


class BadInit(Rule):
    """Raises when made.

    Why it matters:
    Tests isolation.

    Remediation:
    None.
    """

    id = "TST101"
    slug = "bad-init"
    severity = Severity.LOW

    def __init__(self) -> None:
        raise RuntimeError("no config file")

    def check(self, ctx: Context) -> Iterable[Finding]:
        return []


class Quiet(Rule):
    """Finds nothing.

    Why it matters:
    Tests isolation.

    Remediation:
    None.
    """

    id = "TST102"
    slug = "quiet"
    severity = Severity.LOW

    def check(self, ctx: Context) -> Iterable[Finding]:
        return []


def test_a_rule_whose_constructor_raises_is_an_error(tmp_path: Path) -> None:
    path = write_dir(tmp_path / "b", {"cluster/nodes.json": kube_list()})
    with open_bundle(path) as bundle:
        report = analyze(bundle, [LoadedRule(BadInit, "test"), LoadedRule(Quiet, "test")])
    statuses = {r.rule_id: (r.status, r.reason) for r in report.rules}
    assert statuses["TST101"] == (RuleStatus.ERROR, "RuntimeError: no config file (see --verbose)")
    assert statuses["TST102"] == (RuleStatus.PASSED, None)
