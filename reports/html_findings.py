"""The findings part of the HTML view model: causal chains, standalone findings, cards.

Size stays bounded on big bundles: findings of one rule are grouped, only the first few
of a group are shown in full, the next ones as one-line rows, and the rest are counted
and named. Every string from the bundle passes :func:`reports.view.clean` here; the
template escapes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from analyzers.models import Evidence, Finding, Report, RuleDoc
from reports.view import Chain, View, clean, family, first_command, group_by_rule

FULL_PER_GROUP = 5          # findings of one rule shown as full cards
SYMPTOMS_FULL = 8           # symptoms of one root shown as full cards
COMPACT_CAP = 150           # one-line rows per group before the rest is only counted
FULL_BUDGET = 200           # full cards in the whole report
EVIDENCE_CAP = 8
EXCERPT_LINES = 12
LINE_CAP = 400
TITLE_CAP = 300
SUMMARY_CAP = 3000
NODES_SHOWN = 12
OVERFLOW_NAMES = 200


@dataclass(frozen=True, slots=True)
class Segment:
    text: str
    mark: bool = False


@dataclass(frozen=True, slots=True)
class EvidenceView:
    path: str
    where: str
    lines: list[list[Segment]]
    more_lines: int
    marked: bool


@dataclass(frozen=True, slots=True)
class CodeLine:
    text: str
    comment: bool


@dataclass(frozen=True, slots=True)
class Link:
    id: str
    anchor: str | None          # None: the finding is not shown in this file
    rule_id: str
    severity: str
    title: str


@dataclass(frozen=True, slots=True)
class FindingView:
    id: str
    anchor: str
    rule_id: str
    family: str
    title: str
    severity: str
    summary: str
    why: list[Segment]          # mark: shown as code
    nodes: list[str]
    nodes_more: int
    objects: list[str]
    evidence: list[EvidenceView]
    evidence_more: int
    remediation: list[CodeLine]
    caused_by: list[Link]
    explains: list[Link]
    explains_more: int
    doc: RuleDocView | None


@dataclass(frozen=True, slots=True)
class RuleDocView:
    rule_id: str
    title: str
    remediation: list[Segment]  # mark: shown as code


@dataclass(frozen=True, slots=True)
class CompactView:
    id: str
    anchor: str | None
    rule_id: str
    family: str
    severity: str
    title: str
    nodes: str
    node_list: list[str]
    summary: str


@dataclass(frozen=True, slots=True)
class ChainView:
    root: FindingView
    symptoms: list[FindingView]
    compact: list[CompactView]
    elsewhere: list[Link]       # symptoms it shares with a root shown earlier
    hidden: int

    @property
    def explains(self) -> int:
        return len(self.symptoms) + len(self.compact) + len(self.elsewhere) + self.hidden


@dataclass(frozen=True, slots=True)
class GroupView:
    anchor: str
    rule_id: str
    family: str
    severity: str
    title: str
    count: int
    nodes: list[str]
    nodes_more: int
    chains: list[ChainView]
    compact: list[CompactView]
    hidden: int
    hidden_nodes: list[str]
    hidden_nodes_more: int
    explains: int               # symptoms under every root of the group


@dataclass(slots=True)
class Anchors:
    """Unique, deterministic element ids for findings (``finding-RT002-gpu-a``)."""

    by_id: dict[str, str] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    def assign(self, finding_id: str) -> str:
        known = self.by_id.get(finding_id)
        if known is not None:
            return known
        base = anchor(finding_id)
        candidate, n = base, 2
        while candidate in self.used:
            candidate, n = f"{base}-{n}", n + 1
        self.used.add(candidate)
        self.by_id[finding_id] = candidate
        return candidate


def anchor(finding_id: str) -> str:
    """``RT002:gpu-a`` → ``finding-RT002-gpu-a``: letters, digits, ``-_.`` kept."""
    safe = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_.") else "-"
                   for ch in finding_id)
    return f"finding-{safe[:200]}"


def _cap(text: str, limit: int) -> str:
    text = clean(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def prose(text: str) -> list[Segment]:
    """Rule documentation text: reStructuredText-style ``literals`` become code segments."""
    parts = _cap(text, SUMMARY_CAP).split("``")
    if len(parts) % 2 == 0:  # an unpaired marker: show the text as it is
        return [Segment(_cap(text, SUMMARY_CAP))]
    return [Segment(part, index % 2 == 1) for index, part in enumerate(parts) if part]


# -- evidence --------------------------------------------------------------------------------


def _segments(excerpt: str, spans: Sequence[tuple[int, int]]) -> list[Segment]:
    parts: list[Segment] = []
    at = 0
    for start, end in sorted(spans):
        start, end = max(start, at), min(end, len(excerpt))
        if start >= end:
            continue
        if start > at:
            parts.append(Segment(excerpt[at:start]))
        parts.append(Segment(excerpt[start:end], True))
        at = end
    if at < len(excerpt):
        parts.append(Segment(excerpt[at:]))
    return parts


def _lines(parts: Iterable[Segment]) -> list[list[Segment]]:
    lines: list[list[Segment]] = [[]]
    for part in parts:
        pieces = part.text.split("\n")
        for index, piece in enumerate(pieces):
            if index:
                lines.append([])
            if piece:
                lines[-1].append(Segment(piece, part.mark))
    return lines


def _cap_line(line: list[Segment]) -> list[Segment]:
    capped: list[Segment] = []
    room = LINE_CAP
    total = sum(len(s.text) for s in line)
    for segment in line:
        text = clean(segment.text.rstrip("\r"))
        if room <= 0:
            break
        capped.append(Segment(text[:room], segment.mark))
        room -= len(text)
    if total > LINE_CAP:
        capped.append(Segment(f" … ({total - LINE_CAP:,} more characters)"))
    return capped


def evidence_view(evidence: Evidence, spans: Sequence[tuple[int, int]]) -> EvidenceView:
    lines = _lines(_segments(evidence.excerpt, spans))
    while len(lines) > 1 and not lines[-1]:
        lines.pop()
    shown = [_cap_line(line) for line in lines[:EXCERPT_LINES]]
    if evidence.line:
        where = f"line {evidence.line}"
    elif evidence.pointer:
        where = _cap(evidence.pointer, 200)
    else:
        where = ""
    return EvidenceView(path=_cap(evidence.path, 500), where=where, lines=shown,
                        more_lines=max(len(lines) - EXCERPT_LINES, 0),
                        marked=any(s.mark for line in shown for s in line))


def remediation_lines(text: str) -> list[CodeLine]:
    """The lines of a copy block. A line longer than the cap is not cut (a cut command or
    quoted value would leave a quote open for the lines after it): a comment saying so
    stands in its place."""
    lines = [clean(line.rstrip()) for line in text.strip("\n").splitlines()]
    return [CodeLine(line, line.lstrip().startswith("#")) if len(line) <= LINE_CAP * 2
            else CodeLine(f"# a line of {len(line):,} characters is left out here; the JSON "
                          "report has it", True)
            for line in lines]


# -- cards -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Builder:
    """Builds finding views; remembers what is shown so links only point at real ids."""

    report: Report
    view: View
    marks: Mapping[tuple[str, int], list[tuple[int, int]]]
    anchors: Anchors = field(default_factory=Anchors)
    placed: set[str] = field(default_factory=set)
    budget: int = FULL_BUDGET

    docs: dict[str, RuleDoc] = field(default_factory=dict)
    by_id: dict[str, Finding] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.docs = {d.rule_id: d for d in self.report.rule_docs}
        self.by_id = self.report.by_id()

    def link(self, finding: Finding) -> Link:
        return Link(id=_cap(finding.id, 300), anchor=self.anchors.by_id.get(finding.id),
                    rule_id=finding.rule_id, severity=finding.severity.value,
                    title=_cap(finding.title, TITLE_CAP))

    def card(self, finding: Finding, docs: Mapping[str, RuleDoc]) -> FindingView:
        by_id = self.by_id
        doc = docs.get(finding.rule_id)
        explains = list(self.view.explained_by(finding))
        return FindingView(
            id=_cap(finding.id, 300),
            anchor=self.anchors.assign(finding.id),
            rule_id=finding.rule_id,
            family=family(finding.rule_id),
            title=_cap(finding.title, TITLE_CAP),
            severity=finding.severity.value,
            summary=_cap(finding.summary, SUMMARY_CAP),
            why=prose(doc.why) if doc else [],
            nodes=[_cap(n, 253) for n in finding.nodes[:NODES_SHOWN]],
            nodes_more=max(len(finding.nodes) - NODES_SHOWN, 0),
            objects=[_cap(f"{o.kind} {o.namespace + '/' if o.namespace else ''}{o.name}", 300)
                     for o in finding.objects[:NODES_SHOWN]],
            evidence=[evidence_view(e, self.marks.get((finding.id, i), []))
                      for i, e in enumerate(finding.evidence[:EVIDENCE_CAP])],
            evidence_more=max(len(finding.evidence) - EVIDENCE_CAP, 0),
            remediation=remediation_lines(finding.remediation),
            caused_by=[self.link(by_id[c]) for c in finding.caused_by if c in by_id],
            explains=[self.link(s) for s in explains[:20]],
            explains_more=max(len(explains) - 20, 0),
            doc=RuleDocView(doc.rule_id, _cap(doc.title, TITLE_CAP), prose(doc.remediation))
            if doc else None,
        )

    def compact(self, finding: Finding) -> CompactView:
        nodes = [_cap(n, 253) for n in finding.nodes[:NODES_SHOWN]]
        return CompactView(
            id=_cap(finding.id, 300), anchor=self.anchors.assign(finding.id),
            rule_id=finding.rule_id, family=family(finding.rule_id),
            severity=finding.severity.value, title=_cap(finding.title, TITLE_CAP),
            nodes=", ".join(nodes) + (f" +{len(finding.nodes) - NODES_SHOWN}"
                                      if len(finding.nodes) > NODES_SHOWN else ""),
            node_list=nodes, summary=_cap(finding.summary, 240))


def _plan(builder: Builder, chains: Sequence[Chain], roots: Sequence[Finding]
          ) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Decide, before building anything, which findings get a full card or a row, so that
    every link knows whether its target exists. Returns finding id → "full"/"compact" and
    root id → the symptom ids shown in full under it."""
    mode: dict[str, str] = {}
    under: dict[str, list[str]] = {}
    symptoms = {c.root.id: c.symptoms for c in chains}
    budget = builder.budget
    for group in group_by_rule(roots):
        for index, finding in enumerate(group.findings):
            if index < FULL_PER_GROUP and budget > 0:
                mode[finding.id] = "full"
                budget -= 1
            elif index < FULL_PER_GROUP + COMPACT_CAP:
                mode[finding.id] = "compact"
    for root_id, items in symptoms.items():
        if mode.get(root_id) != "full":
            continue
        shown: list[str] = []
        rows = 0
        for symptom in items:
            if symptom.id in mode:
                continue
            if len(shown) < SYMPTOMS_FULL and budget > 0:
                mode[symptom.id] = "full"
                shown.append(symptom.id)
                budget -= 1
            elif rows < COMPACT_CAP:
                mode[symptom.id] = "compact"
                rows += 1
        under[root_id] = shown
    for finding_id in sorted(mode):
        builder.anchors.assign(finding_id)
    return mode, under


def _group(builder: Builder, findings: Sequence[Finding], mode: Mapping[str, str],
           under: Mapping[str, list[str]], kind: str) -> GroupView:
    docs = builder.docs
    by_id = builder.by_id
    first = findings[0]
    nodes = sorted({n for f in findings for n in f.nodes})
    chains: list[ChainView] = []
    compact: list[CompactView] = []
    hidden: list[Finding] = []
    explained: set[str] = set()
    for finding in findings:
        symptoms = builder.view.explained_by(finding)
        explained.update(s.id for s in symptoms)
        how = mode.get(finding.id)
        if how == "full" and finding.id not in builder.placed:
            builder.placed.add(finding.id)
            elsewhere = [builder.link(s) for s in symptoms if s.id in builder.placed]
            full_ids = under.get(finding.id, [])
            cards = []
            for symptom_id in full_ids:
                builder.placed.add(symptom_id)
                cards.append(builder.card(by_id[symptom_id], docs))
            rows = [builder.compact(s) for s in symptoms
                    if s.id not in full_ids and mode.get(s.id) == "compact"
                    and s.id not in builder.placed]
            for row in rows:
                builder.placed.add(row.id)
            left = sum(1 for s in symptoms if s.id not in mode)
            chains.append(ChainView(builder.card(finding, docs), cards, rows, elsewhere, left))
        elif how == "compact" and finding.id not in builder.placed:
            builder.placed.add(finding.id)
            compact.append(builder.compact(finding))
        elif finding.id not in builder.placed:
            hidden.append(finding)
    hidden_nodes = sorted({n for f in hidden for n in f.nodes})
    return GroupView(
        anchor=f"group-{kind}-{anchor(first.rule_id)[len('finding-'):]}",
        rule_id=first.rule_id, family=family(first.rule_id), severity=first.severity.value,
        title=_cap(first.title, TITLE_CAP), count=len(findings),
        nodes=[_cap(n, 253) for n in nodes[:NODES_SHOWN]],
        nodes_more=max(len(nodes) - NODES_SHOWN, 0), chains=chains, compact=compact,
        hidden=len(hidden), hidden_nodes=[_cap(n, 253) for n in hidden_nodes[:OVERFLOW_NAMES]],
        hidden_nodes_more=max(len(hidden_nodes) - OVERFLOW_NAMES, 0), explains=len(explained))


def groups(builder: Builder) -> tuple[list[GroupView], list[GroupView]]:
    """(root-cause groups, standalone groups), each group one rule."""
    view = builder.view
    roots = [c.root for c in view.chains]
    mode, under = _plan(builder, view.chains, [*roots, *view.standalone])
    chain_groups = [_group(builder, g.findings, mode, under, "root")
                    for g in group_by_rule(roots)]
    alone = sorted(view.standalone, key=lambda f: (-f.severity.rank, f.rule_id, f.id))
    alone_groups = [_group(builder, g.findings, mode, under, "other")
                    for g in group_by_rule(alone)]
    return chain_groups, alone_groups


def verdict_command(finding: Finding) -> str | None:
    """The first step to copy: never cut, so a command longer than the cap is not offered."""
    command = first_command(finding.remediation)
    return command if command and len(command) <= LINE_CAP else None
