"""A format-neutral view of a Report: verdict, causal chains, standalone findings.

Every renderer reads this instead of re-deriving the structure, so the terminal,
Markdown and HTML outputs always agree on what the root cause is.
"""

from __future__ import annotations

import re
import shlex
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzers.models import Finding, Report, RuleStatus, Severity
from reports.terminal import inert


def plain(text: str) -> str:
    """Bundle text made safe for a terminal: ANSI escapes and control characters removed
    (:func:`reports.terminal.inert`, the one sanitiser)."""
    return inert(text)


def clean(text: str) -> str:
    """Bundle text made safe to write anywhere: :func:`plain`, and lone surrogates (which
    no UTF-8 file can hold) replaced."""
    return plain(text).encode("utf-8", "replace").decode("utf-8")


def family(rule_id: str) -> str:
    """``RT`` of ``RT002``."""
    return rule_id.rstrip("0123456789")


@dataclass(frozen=True, slots=True)
class RuleGroup:
    """Findings of one rule, in report order (the same problem on several subjects)."""

    rule_id: str
    findings: tuple[Finding, ...]

    @property
    def first(self) -> Finding:
        return self.findings[0]

    @property
    def nodes(self) -> list[str]:
        return sorted({n for f in self.findings for n in f.nodes})


def group_by_rule(findings: Iterable[Finding]) -> list[RuleGroup]:
    """Group findings by rule, keeping the order in which each rule first appears."""
    order: dict[str, list[Finding]] = {}
    for finding in findings:
        order.setdefault(finding.rule_id, []).append(finding)
    return [RuleGroup(rule_id, tuple(items)) for rule_id, items in order.items()]


@dataclass(frozen=True, slots=True)
class Chain:
    root: Finding
    symptoms: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class View:
    report: Report
    chains: tuple[Chain, ...]
    standalone: tuple[Finding, ...]
    symptoms_of: dict[str, tuple[Finding, ...]] = field(default_factory=dict)
    rule_reach: dict[str, int] = field(default_factory=dict)

    @property
    def verdict(self) -> Finding | None:
        """The most severe root cause (see :func:`build` for the order); a standalone
        finding if there is no chain."""
        candidates = [c.root for c in self.chains] + list(self.standalone)
        if not candidates:
            return None
        return min(candidates, key=lambda f: _rank(f, self.symptoms_of, self.rule_reach))

    def explained_by(self, finding: Finding) -> tuple[Finding, ...]:
        """What a root cause explains (empty for findings that are not roots)."""
        return self.symptoms_of.get(finding.id, ())

    def status_counts(self) -> dict[str, int]:
        counts = {status.value: 0 for status in RuleStatus}
        for result in self.report.rules:
            counts[result.status.value] += 1
        return counts

    def problem_rules(self) -> list[str]:
        return [f"{r.rule_id} ({r.status.value}: {r.reason})" for r in self.report.rules
                if r.status in NOT_CHECKED]


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
    symptoms_of = {chain.root.id: chain.symptoms for chain in chains}
    reach: dict[str, set[str]] = defaultdict(set)
    for chain in chains:
        reach[chain.root.rule_id].update(s.id for s in chain.symptoms)
    rule_reach = {rule_id: len(ids) for rule_id, ids in reach.items()}
    chains.sort(key=lambda c: _rank(c.root, symptoms_of, rule_reach))
    return View(report, tuple(chains), tuple(standalone), symptoms_of, rule_reach)


def _rank(finding: Finding, symptoms_of: dict[str, tuple[Finding, ...]],
          rule_reach: dict[str, int]) -> tuple[int, int, str, int, str]:
    """Order of root causes: most severe first; among equals, the rule whose findings
    explain the most other findings (over every node it fires on), then within a rule
    the finding explaining the most."""
    return (-finding.severity.rank, -rule_reach.get(finding.rule_id, 0), finding.rule_id,
            -len(symptoms_of.get(finding.id, ())), finding.id)


_COMMAND = re.compile(r"^(?:[a-z][a-z0-9_.-]*|/[\w./-]+|\./[\w./-]+)(?:\s|$)")


def first_command(remediation: str) -> str | None:
    """The first command of a remediation text: comments, blanks and prose skipped.

    A command starts with a lower-case program name or a path (``kubectl ...``,
    ``/usr/bin/nvidia-smi``); prose starts with a capital and often ends with ':'.
    """
    for line in remediation.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or stripped.endswith(":"):
            continue
        if _COMMAND.match(stripped) and _balanced(stripped):
            return stripped
    return None


def _balanced(line: str) -> bool:
    """Quotes closed, no trailing backslash: pasted alone, the line ends where it ends.
    (Rules build their commands with analyzers.commands, whose lines always are; this
    keeps a local rule's hand-written line with an open quote from being offered.)"""
    try:
        shlex.split(line)
    except ValueError:
        return False
    return not line.endswith("\\")


SEVERITY_ORDER = [s.value for s in Severity]
# Rules whose "no finding" does not mean "checked and healthy".
NOT_CHECKED = (RuleStatus.SKIPPED, RuleStatus.ERROR, RuleStatus.PARTIAL)
