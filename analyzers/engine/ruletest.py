"""The case harness behind ``gpu-triage rules test DIR``.

Each local rule file ``DIR/<stem>.py`` may have ``DIR/<stem>.cases.toml`` beside it;
``DIR/cases/*.toml`` hold cases for every rule of DIR, or for one rule alone when the
file is named after it (``cases/SITE001.toml``). A case names a bundle (relative
to the TOML file) and the finding ids it must and must not produce::

    [[case]]
    name = "fires on the incident sample"          # optional
    bundle = "../../samples/incident-toolkit-disabled"
    expect = ["SITE001:cluster-policy"]            # each must be a finding
    absent = ["SITE001:gpu-a"]                     # none may be a finding
    status = { SITE001 = "failed" }                # optional: rule id → status
    reason = { SITE001 = "not in the bundle" }     # optional: rule id → text its
                                                   # status reason must contain
    exact = true                                   # optional: 'expect' lists every
                                                   # finding of the case's rules
    also = ["OP001"]                               # optional: rules to run alongside
                                                   # (whose reading the case needs)

Instead of ``bundle``, a case may write its bundle inline: ``base`` (a bundle kept as
data under ``analyzers/data/case_bases/``), ``files``, ``drop``, ``patch``, ``add`` and
``failed``; see :mod:`analyzers.engine.casebundle`. Such a bundle is built in a temporary
directory for that case alone.

A case runs only the rules it covers (those of its file, or of DIR for ``cases/``),
so built-in rules neither slow it down nor interfere. Bundles are opened and analysed
once per set of rules.
"""

from __future__ import annotations

import tempfile
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analyzers.engine import analyze, casebundle
from analyzers.engine.casebundle import Inline, InlineError
from analyzers.engine.plugins import LoadedRule
from analyzers.results.models import Report, RuleStatus
from bundle import BundleError, Limits, open_bundle

_KEYS = frozenset({"name", "bundle", "expect", "absent", "status", "reason", "exact", "also",
                   *casebundle.INLINE_KEYS})
_STATUSES = frozenset(s.value for s in RuleStatus)


class CaseFileError(ValueError):
    """A case file that cannot be read; the message names the file and case."""


@dataclass(frozen=True, slots=True)
class Case:
    source: Path
    number: int
    name: str
    bundle: Path | None
    rules: tuple[str, ...]
    expect: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    status: tuple[tuple[str, str], ...] = ()
    reason: tuple[tuple[str, str], ...] = ()
    inline: Inline | None = None
    exact: bool = False
    also: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.source.name} #{self.number} {self.name}".rstrip()


@dataclass(slots=True)
class CaseResult:
    case: Case
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def case_files(directory: Path, rules_by_file: dict[Path, list[str]]) -> list[tuple[Path,
                                                                                    tuple[str,
                                                                                          ...]]]:
    """(case file, the rule ids its cases run), in a stable order."""
    found: list[tuple[Path, tuple[str, ...]]] = []
    every = tuple(sorted({rule for ids in rules_by_file.values() for rule in ids}))
    for path, ids in sorted(rules_by_file.items()):
        cases = path.with_name(f"{path.stem}.cases.toml")
        if cases.is_file():
            found.append((cases, tuple(ids)))
    shared = directory / "cases"
    if shared.is_dir():
        found.extend((p, rules_of(p, every)) for p in sorted(shared.glob("*.toml")))
    return found


def rules_of(path: Path, every: Sequence[str]) -> tuple[str, ...]:
    """The rules a file under ``cases/`` runs: the one it is named after
    (``cases/SITE001.toml``), else every rule of the directory."""
    return (path.stem,) if path.stem in every else tuple(every)


def load_cases(path: Path, rules: tuple[str, ...]) -> list[Case]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CaseFileError(f"{path}: {exc}") from None
    entries = data.get("case")
    if set(data) - {"case"} or not isinstance(entries, list) or not entries:
        raise CaseFileError(f"{path}: expected one or more [[case]] tables")
    return [_case(path, number, entry, rules) for number, entry in enumerate(entries, start=1)]


def _strings(value: object, where: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CaseFileError(f"{where}: '{key}' must be a list of finding ids")
    return tuple(value)


def _case(path: Path, number: int, entry: object, rules: tuple[str, ...]) -> Case:
    where = f"{path}: [[case]] #{number}"
    if not isinstance(entry, dict):
        raise CaseFileError(f"{where} is not a table")
    unknown = set(entry) - _KEYS
    if unknown:
        raise CaseFileError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    bundle = entry.get("bundle")
    inline = None
    if set(entry) & casebundle.INLINE_KEYS:
        if bundle is not None:
            raise CaseFileError(f"{where}: give either 'bundle' or an inline bundle "
                                f"({', '.join(sorted(casebundle.INLINE_KEYS))}), not both")
        try:
            inline = casebundle.parse(entry, where)
        except InlineError as exc:
            raise CaseFileError(str(exc)) from None
    elif not isinstance(bundle, str) or not bundle:
        raise CaseFileError(f"{where}: 'bundle' (a path relative to the case file) or an "
                            "inline bundle ('base' and/or 'files') is required")
    status = entry.get("status", {})
    if not isinstance(status, dict) or not all(
            isinstance(v, str) and v in _STATUSES for v in status.values()):
        raise CaseFileError(f"{where}: 'status' maps rule ids to one of "
                            f"{', '.join(sorted(_STATUSES))}")
    exact = entry.get("exact", False)
    if exact is not True and exact is not False:
        raise CaseFileError(f"{where}: 'exact' must be true or false")
    reason = entry.get("reason", {})
    if not isinstance(reason, dict) or not all(isinstance(v, str) for v in reason.values()):
        raise CaseFileError(f"{where}: 'reason' maps rule ids to text the status reason "
                            "must contain")
    also = entry.get("also", [])
    if not isinstance(also, list) or not all(isinstance(r, str) for r in also):
        raise CaseFileError(f"{where}: 'also' must be a list of rule ids")
    case = Case(source=path, number=number, name=str(entry.get("name", "")), exact=exact,
                also=tuple(also),
                reason=tuple(sorted((str(k), str(v)) for k, v in reason.items())),
                bundle=path.parent / bundle if isinstance(bundle, str) else None,
                rules=rules, inline=inline,
                expect=_strings(entry.get("expect"), where, "expect"),
                absent=_strings(entry.get("absent"), where, "absent"),
                status=tuple(sorted((str(k), str(v)) for k, v in status.items())))
    if not (case.expect or case.absent or case.status or case.reason):
        raise CaseFileError(f"{where}: give 'expect', 'absent', 'status' or 'reason'")
    return case


Analyse = Callable[[Path, Sequence[LoadedRule]], Report]


def _analyse(path: Path, rules: Sequence[LoadedRule]) -> Report:
    with open_bundle(path, Limits()) as opened:
        return analyze(opened, rules)


def run(cases: Sequence[Case], loaded: Sequence[LoadedRule],
        analyse: Analyse = _analyse) -> list[CaseResult]:
    """Run every case; cases on the same bundle file and rules share one analysis."""
    reports: dict[tuple[Path, tuple[str, ...]], Report | str] = {}
    with tempfile.TemporaryDirectory(prefix="gpu-triage-cases-") as scratch:
        return [check(case, loaded, analyse, Path(scratch), reports) for case in cases]


def check(case: Case, loaded: Sequence[LoadedRule], analyse: Analyse = _analyse,
          scratch: Path | None = None,
          reports: dict[tuple[Path, tuple[str, ...]], Report | str] | None = None) -> CaseResult:
    """Run one case: build its bundle (an inline one under ``scratch``), analyse it with
    the case's rules and compare what was found with what the case expects."""
    if scratch is None:
        with tempfile.TemporaryDirectory(prefix="gpu-triage-case-") as made:
            return check(case, loaded, analyse, Path(made), reports)
    result = CaseResult(case)
    known = {lr.rule.id for lr in loaded}
    result.failures.extend(f"also: {rule_id} is not a loaded rule"
                           for rule_id in case.also if rule_id not in known)
    for finding_id in (*case.expect, *case.absent):
        rule_id = finding_id.partition(":")[0]
        if rule_id not in case.rules:
            result.failures.append(f"{finding_id}: {rule_id} is not a rule this case runs "
                                   f"({', '.join(case.rules) or 'none'})")
    if result.failures:
        return result
    report = _report(case, loaded, analyse, scratch, {} if reports is None else reports)
    if isinstance(report, str):
        result.failures.append(report)
        return result
    found = {f.id for f in report.findings}
    statuses = {r.rule_id: r for r in report.rules}
    for finding_id in case.expect:
        if finding_id not in found:
            rule = statuses.get(finding_id.partition(":")[0])
            why = f" ({rule.status.value}: {rule.reason})" if rule and rule.reason else ""
            result.failures.append(f"expected {finding_id}, not found{why}")
    result.failures.extend(f"{finding_id} found, expected absent"
                           for finding_id in case.absent if finding_id in found)
    for rule_id, wanted in case.reason:
        rule = statuses.get(rule_id)
        said = rule.reason if rule is not None else None
        if said is None or wanted not in said:
            result.failures.append(f"{rule_id}'s reason is {said!r}, expected it to say "
                                   f"{wanted!r}")
    if case.exact:
        result.failures.extend(f"{f.id} found, not among 'expect' (exact = true)"
                               for f in report.findings
                               if f.rule_id in case.rules and f.id not in case.expect)
    for rule_id, expected in case.status:
        rule = statuses.get(rule_id)
        got = rule.status.value if rule is not None else "not loaded"
        if got != expected:
            reason = f" ({rule.reason})" if rule is not None and rule.reason else ""
            result.failures.append(f"{rule_id} is {got}{reason}, expected {expected}")
    return result


def _report(case: Case, loaded: Sequence[LoadedRule], analyse: Analyse, scratch: Path,
            reports: dict[tuple[Path, tuple[str, ...]], Report | str]) -> Report | str:
    by_id = {lr.rule.id: lr for lr in loaded}
    rules = [by_id[r] for r in (*case.rules, *case.also) if r in by_id]
    if case.inline is not None:
        target = scratch / f"case-{len(list(scratch.iterdir()))}"
        try:
            bundle = casebundle.write(case.inline, target, case.label)
        except InlineError as exc:
            return str(exc)
        try:
            return analyse(bundle, rules)
        except BundleError as exc:
            return f"cannot read the inline bundle's {exc.path}: {exc.problem}"
    assert case.bundle is not None
    key = (case.bundle.resolve(), (*case.rules, *case.also))
    if key not in reports:
        try:
            reports[key] = analyse(case.bundle, rules)
        except BundleError as exc:
            reports[key] = f"cannot read bundle {exc.path}: {exc.problem}"
    return reports[key]
