"""A format-neutral view of a Report: verdict, causal chains, standalone findings.

Every renderer reads this instead of re-deriving the structure, so the terminal,
Markdown and HTML outputs always agree on what the root cause is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzers.models import Finding, Report, RuleStatus, Severity

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def plain(text: str) -> str:
    """Bundle text made safe for a terminal: ANSI escapes and control characters removed."""
    return _CONTROL.sub("", _ANSI.sub("", text))


@dataclass(frozen=True, slots=True)
class Chain:
    root: Finding
    symptoms: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class View:
    report: Report
    chains: tuple[Chain, ...]
    standalone: tuple[Finding, ...]

    @property
    def verdict(self) -> Finding | None:
        """The most severe root cause; a standalone finding if there is no chain."""
        candidates = [c.root for c in self.chains] + list(self.standalone)
        if not candidates:
            return None
        return min(candidates, key=lambda f: (-f.severity.rank, -len(f.causes), f.id))

    def explained_by(self, finding: Finding) -> tuple[Finding, ...]:
        for chain in self.chains:
            if chain.root.id == finding.id:
                return chain.symptoms
        return ()

    def status_counts(self) -> dict[str, int]:
        counts = {status.value: 0 for status in RuleStatus}
        for result in self.report.rules:
            counts[result.status.value] += 1
        return counts

    def problem_rules(self) -> list[str]:
        return [f"{r.rule_id} ({r.status.value}: {r.reason})" for r in self.report.rules
                if r.status in (RuleStatus.SKIPPED, RuleStatus.ERROR)]


def _descendants(finding: Finding, by_id: dict[str, Finding]) -> list[Finding]:
    seen: dict[str, Finding] = {}
    stack = list(finding.causes)
    while stack:
        current = stack.pop()
        if current in seen or current == finding.id or current not in by_id:
            continue
        seen[current] = by_id[current]
        stack.extend(by_id[current].causes)
    return sorted(seen.values(), key=lambda f: (-f.severity.rank, f.rule_id, f.id))


def build(report: Report) -> View:
    by_id = report.by_id()
    chains = []
    standalone = []
    for finding in report.findings:
        if finding.caused_by:
            continue
        if finding.causes:
            chains.append(Chain(finding, tuple(_descendants(finding, by_id))))
        else:
            standalone.append(finding)
    chains.sort(key=lambda c: (-c.root.severity.rank, c.root.rule_id, c.root.id))
    return View(report, tuple(chains), tuple(standalone))


def first_command(remediation: str) -> str | None:
    """The first command line of a remediation text (comments and blanks skipped)."""
    for line in remediation.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return stripped
    return None


SEVERITY_ORDER = [s.value for s in Severity]
