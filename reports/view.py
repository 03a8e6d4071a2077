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

from analyzers.results.models import Confidence, Finding, FindingGroup, Report, RuleStatus, Severity
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
class CauseGroup:
    """One :class:`FindingGroup` with its member findings (sorted by node) and what its
    members explain. ``others`` is the size of the largest group of the same rule (and
    title) among
    the root and standalone findings when that is at least :data:`OUTLIER_RATIO` times
    this one: then this group is an outlier (these nodes differ from most of that rule's
    nodes); else 0."""

    group: FindingGroup
    members: tuple[Finding, ...]
    symptoms: tuple[Finding, ...]
    others: int = 0

    @property
    def first(self) -> Finding:
        return self.members[0]

    @property
    def outlier(self) -> bool:
        return self.others > 0


# A group is an outlier when its rule has a group at least this many times its size:
# 3 nodes of 400 are; 30 nodes beside 38 with another Xid are two problems, not one odd.
OUTLIER_RATIO = 2


def groups_of(report: Report) -> list[FindingGroup]:
    """The report's groups (analyzers.engine.grouping). A report that carries none (written
    before grouping existed, or built by hand) is shown as it was then: every finding a
    group of its own."""
    if report.groups or not report.findings:
        return list(report.groups)
    return [FindingGroup(id=f.id, rule_id=f.rule_id, title=f.title, severity=f.severity,
                         summary=f.summary, findings=[f.id], nodes=list(f.nodes),
                         caused_by=list(f.caused_by), causes=list(f.causes))
            for f in report.findings]


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
    # root and standalone findings by cause group, in the order of chains then standalone
    root_groups: tuple[CauseGroup, ...] = ()
    standalone_groups: tuple[CauseGroup, ...] = ()
    group_of: dict[str, CauseGroup] = field(default_factory=dict)

    @property
    def outliers(self) -> tuple[CauseGroup, ...]:
        return tuple(g for g in (*self.root_groups, *self.standalone_groups) if g.outlier)

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

    def incomplete(self) -> str | None:
        """The sentence every format shows first when rules ended in ``error``: such an
        analysis is incomplete and must never look clean (exit code 5)."""
        errored = [r.rule_id for r in self.report.rules if r.status is RuleStatus.ERROR]
        if not errored:
            return None
        shown = ", ".join(errored[:8]) + (f" and {len(errored) - 8} more"
                                          if len(errored) > 8 else "")
        return (f"INCOMPLETE ANALYSIS: {len(errored)} rule(s) ended in error ({shown}); "
                "what they check was not judged, so findings may be missing.")

    def problem_rules(self) -> list[str]:
        """One line per status and reason, naming every rule it holds for (in the
        report's order): ``DRV006, DRV007 (skipped: no node collected nvidia-smi.xml)``."""
        grouped: dict[tuple[str, str | None], list[str]] = {}
        for r in self.report.rules:
            if r.status in NOT_CHECKED:
                grouped.setdefault((r.status.value, r.reason), []).append(r.rule_id)
        return [f"{', '.join(ids)} ({status}: {reason})"
                for (status, reason), ids in grouped.items()]


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
    cause = _cause_groups(report, by_id, symptoms_of,
                          [c.root for c in chains] + standalone)
    heads = _heads(cause, [c.root for c in chains])
    rooted = {g.group.id for g in heads}
    alone = [g for g in _heads(cause, standalone) if g.group.id not in rooted]
    return View(report, tuple(chains), tuple(standalone), symptoms_of, rule_reach,
                tuple(heads), tuple(alone), cause)


def _cause_groups(report: Report, by_id: dict[str, Finding],
                  symptoms_of: dict[str, tuple[Finding, ...]],
                  heads: list[Finding]) -> dict[str, CauseGroup]:
    """Finding id → its cause group; ``others`` set among the groups of ``heads``."""
    built: list[CauseGroup] = []
    for group in groups_of(report):
        members = tuple(by_id[i] for i in group.findings if i in by_id)
        if not members:
            continue
        seen: dict[str, Finding] = {}
        for member in members:
            for symptom in symptoms_of.get(member.id, ()):
                seen.setdefault(symptom.id, symptom)
        symptoms = tuple(sorted(seen.values(), key=lambda f: (-f.severity.rank, f.rule_id,
                                                               f.id)))
        built.append(CauseGroup(group, members, symptoms))
    head_ids = {f.id for f in heads}
    # same rule and title: one kind of finding (KI001's entries each title their own)
    top: dict[tuple[str, str], int] = {}
    for item in built:
        kind = (item.group.rule_id, item.group.title)
        if any(m.id in head_ids for m in item.members):
            top[kind] = max(top.get(kind, 0), len(item.members))
    out: dict[str, CauseGroup] = {}
    for item in built:
        largest = top.get((item.group.rule_id, item.group.title), 0)
        if any(m.id in head_ids for m in item.members) and largest >= OUTLIER_RATIO * len(
                item.members):
            item = CauseGroup(item.group, item.members, item.symptoms, others=largest)
        for member in item.members:
            out[member.id] = item
    return out


def _heads(cause: dict[str, CauseGroup], findings: list[Finding]) -> list[CauseGroup]:
    """The cause groups of ``findings``, each once, in the order of their first member
    there."""
    seen: dict[str, CauseGroup] = {}
    for finding in findings:
        item = cause.get(finding.id)
        if item is not None:
            seen.setdefault(item.group.id, item)
    return list(seen.values())


def _rank(finding: Finding, symptoms_of: dict[str, tuple[Finding, ...]],
          rule_reach: dict[str, int]) -> tuple[int, int, str, int, str]:
    """Order of root causes: most severe first; among equals, the rule whose findings
    explain the most other findings (over every node it fires on), then within a rule
    the finding explaining the most."""
    return (-finding.severity.rank, -rule_reach.get(finding.rule_id, 0), finding.rule_id,
            -len(symptoms_of.get(finding.id, ())), finding.id)


_COMMAND = re.compile(r"^(?:[a-z][a-z0-9_.-]*|/[\w./-]+|\./[\w./-]+)(?:\s|$)")


def lower_bounds(report: Report) -> str:
    """The sentence saying the counts are lower bounds (lists the collector shortened to
    fit --max-file-bytes), or "" when every list was read whole."""
    shortened = report.bundle.shortened
    if not shortened:
        return ""
    named = "; ".join(f"{plain(n.path)} ({plain(n.note)})" for n in shortened[:3])
    more = f"; and {len(shortened) - 3} more" if len(shortened) > 3 else ""
    return f"Counts are lower bounds: the collector shortened {named}{more}."


def at_least(report: Report) -> str:
    """"at least " before a count taken from a shortened list, else ""."""
    return "at least " if report.bundle.shortened else ""


def cause_label(finding: Finding, root: bool) -> str:
    """The words a report puts before a finding's summary: a root cause is a "cause"
    (confirmed by direct evidence) or a "likely cause" (inferred from an absence or a
    pattern); another finding is marked only when it is inferred."""
    likely = finding.confidence is Confidence.LIKELY
    if root:
        return "likely cause" if likely else "cause"
    return "likely" if likely else ""


def first_command(remediation: str) -> str | None:
    """The first command of a remediation text: comments, blanks and prose skipped.

    A command starts with a lower-case program name or a path (``kubectl ...``,
    ``/usr/bin/nvidia-smi``); prose starts with a capital and often ends with ':'.
    """
    for line in remediation.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or stripped.endswith(":") or "``" in stripped:
            continue  # a comment, a heading, or a line of prose quoting a command
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
