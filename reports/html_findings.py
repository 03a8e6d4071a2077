"""The findings part of the HTML view model: causal chains, standalone findings, cards.

Size stays bounded on big bundles: findings with the same cause on many nodes (one
:class:`analyzers.results.models.FindingGroup`) are one card whose collapsed node table gives each
node its own row and first evidence (capped at :data:`MEMBER_ROWS` per table and
:data:`MEMBER_BUDGET` in the report; the rest are named). Cards of one rule are shown
together; only the first few of a rule are full cards, the next ones one-line rows, and the
rest are counted and named. Every string from the bundle passes :func:`reports.view.clean` here; the
template escapes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from analyzers.results.models import Evidence, Finding, Report, RuleDoc
from reports.view import (
    CauseGroup,
    Chain,
    View,
    cause_label,
    clean,
    family,
    first_command,
    group_by_rule,
)

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
MEMBER_ROWS = 500           # rows of one group's node table
MEMBER_BUDGET = 4000        # node-table rows in the whole report
MEMBER_NAMES = 2000         # nodes named past the rows
MEMBER_EXCERPT = 200


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
class MemberRow:
    """One node of a group: its own finding id and first evidence. (Its summary is the
    group's, with its own node, pods and times: the evidence shows those.)"""

    node: str
    id: str
    anchor: str
    path: str
    where: str
    excerpt: str


@dataclass(frozen=True, slots=True)
class MemberTable:
    """The nodes of a card that stands for a group of findings with the same cause."""

    count: int
    nodes: int
    pattern: str                # the shared summary, <node> standing for each node
    rows: list[MemberRow]
    rest: list[str]             # nodes past the rows, named only
    rest_more: int
    outlier_of: int             # > 0: the size of the larger group of this rule


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
    group: MemberTable | None = None
    filter_nodes: str = ""      # every node the card stands for (data-nodes)
    cause: str = ""             # "cause", "likely cause", "likely" or "" (view.cause_label)
    references: tuple[str, ...] = ()   # https pages where it was seen before (validated)


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
    total: int = 0              # symptom findings of every node of the root's group

    @property
    def explains(self) -> int:
        return self.total or (len(self.symptoms) + len(self.compact) + len(self.elsewhere)
                              + self.hidden)


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
    member_budget: int = MEMBER_BUDGET

    def __post_init__(self) -> None:
        self.docs = {d.rule_id: d for d in self.report.rule_docs}
        self.by_id = self.report.by_id()

    def link(self, finding: Finding) -> Link:
        return Link(id=_cap(finding.id, 300), anchor=self.anchors.by_id.get(finding.id),
                    rule_id=finding.rule_id, severity=finding.severity.value,
                    title=_cap(finding.title, TITLE_CAP))

    def cause(self, finding: Finding) -> CauseGroup | None:
        """The finding's cause group when it has more than one member."""
        item = self.view.group_of.get(finding.id)
        return item if item is not None and len(item.members) > 1 else None

    def members(self, item: CauseGroup) -> MemberTable:
        rows: list[MemberRow] = []
        room = min(MEMBER_ROWS, max(self.member_budget, 0))
        for index, member in enumerate(item.members[:room]):
            first = member.evidence[0] if member.evidence else None
            where = ""
            if first is not None:
                where = (f"line {first.line}" if first.line else _cap(first.pointer or "", 200))
            excerpt = first.excerpt.strip().split("\n", 1)[0] if first is not None else ""
            rows.append(MemberRow(
                node=_cap(member.nodes[0] if member.nodes else "", 253),
                id=_cap(member.id, 300),
                # the first member is the card itself, which carries its anchor
                anchor=self.anchors.assign(member.id) if index else "",
                path=_cap(first.path, 300) if first is not None else "", where=where,
                excerpt=_cap(excerpt, MEMBER_EXCERPT)))
        self.member_budget -= len(rows)
        rest = sorted({n for m in item.members[len(rows):] for n in m.nodes})
        return MemberTable(count=len(item.members), nodes=len(item.group.nodes),
                           pattern=_cap(item.group.summary, SUMMARY_CAP), rows=rows,
                           rest=[_cap(n, 253) for n in rest[:MEMBER_NAMES]],
                           rest_more=max(len(rest) - MEMBER_NAMES, 0),
                           outlier_of=item.others)

    def explains_of(self, finding: Finding) -> list[Finding]:
        """What a card explains: for a group, what every member explains, one card per
        cause group (its first member)."""
        item = self.cause(finding)
        symptoms = item.symptoms if item is not None else self.view.explained_by(finding)
        return fold(self.view, symptoms)

    def card(self, finding: Finding, docs: Mapping[str, RuleDoc]) -> FindingView:
        by_id = self.by_id
        doc = docs.get(finding.rule_id)
        explains = self.explains_of(finding)
        item = self.cause(finding)
        nodes = item.group.nodes if item is not None else finding.nodes
        return FindingView(
            id=_cap(finding.id, 300),
            anchor=self.anchors.assign(finding.id),
            rule_id=finding.rule_id,
            family=family(finding.rule_id),
            title=_cap(finding.title, TITLE_CAP),
            severity=finding.severity.value,
            summary=_cap(finding.summary, SUMMARY_CAP),
            cause=cause_label(finding, not finding.caused_by),
            why=prose(doc.why) if doc else [],
            nodes=[_cap(n, 253) for n in nodes[:NODES_SHOWN]],
            nodes_more=max(len(nodes) - NODES_SHOWN, 0),
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
            group=self.members(item) if item is not None else None,
            filter_nodes=" ".join(_cap(n, 253) for n in nodes),
            references=tuple(_cap(u, 500) for u in finding.references[:8]),
        )

    def compact(self, finding: Finding) -> CompactView:
        item = self.cause(finding)
        every = item.group.nodes if item is not None else finding.nodes
        nodes = [_cap(n, 253) for n in every[:NODES_SHOWN]]
        summary = (f"{len(item.members)} nodes, the same cause: {item.group.summary}"
                   if item is not None else finding.summary)
        return CompactView(
            id=_cap(finding.id, 300), anchor=self.anchors.assign(finding.id),
            rule_id=finding.rule_id, family=family(finding.rule_id),
            severity=finding.severity.value, title=_cap(finding.title, TITLE_CAP),
            nodes=", ".join(nodes) + (f" +{len(every) - NODES_SHOWN}"
                                      if len(every) > NODES_SHOWN else ""),
            node_list=[_cap(n, 253) for n in every], summary=_cap(summary, 240))


def fold(view: View, findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with each cause group kept once, as its first member, in order."""
    seen: set[str] = set()
    out = []
    for finding in findings:
        item = view.group_of.get(finding.id)
        key = item.group.id if item is not None else finding.id
        if key in seen:
            continue
        seen.add(key)
        out.append(item.first if item is not None else finding)
    return out


def _plan(builder: Builder, chains: Sequence[Chain], roots: Sequence[Finding]
          ) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Decide, before building anything, which findings get a full card or a row, so that
    every link knows whether its target exists. Returns finding id → "full"/"compact" and
    root id → the symptom ids shown in full under it."""
    mode: dict[str, str] = {}
    under: dict[str, list[str]] = {}
    symptoms = {c.root.id: builder.explains_of(c.root) for c in chains}
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
    items = [builder.cause(f) for f in findings]
    nodes = sorted({n for f, item in zip(findings, items, strict=True)
                    for n in (item.group.nodes if item is not None else f.nodes)})
    count = sum(len(item.members) if item is not None else 1 for item in items)
    chains: list[ChainView] = []
    compact: list[CompactView] = []
    hidden: list[Finding] = []
    explained: set[str] = set()
    for finding, item in zip(findings, items, strict=True):
        every = item.symptoms if item is not None else builder.view.explained_by(finding)
        explained.update(s.id for s in every)
        symptoms = builder.explains_of(finding)
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
            chains.append(ChainView(builder.card(finding, docs), cards, rows, elsewhere, left,
                                    len(every) if item is not None else 0))
        elif how == "compact" and finding.id not in builder.placed:
            builder.placed.add(finding.id)
            compact.append(builder.compact(finding))
        elif finding.id not in builder.placed:
            hidden.extend(item.members if item is not None else [finding])
    hidden_nodes = sorted({n for f in hidden for n in f.nodes})
    return GroupView(
        anchor=f"group-{kind}-{anchor(first.rule_id)[len('finding-'):]}",
        rule_id=first.rule_id, family=family(first.rule_id), severity=first.severity.value,
        title=_cap(first.title, TITLE_CAP), count=count,
        nodes=[_cap(n, 253) for n in nodes[:NODES_SHOWN]],
        nodes_more=max(len(nodes) - NODES_SHOWN, 0), chains=chains, compact=compact,
        hidden=len(hidden), hidden_nodes=[_cap(n, 253) for n in hidden_nodes[:OVERFLOW_NAMES]],
        hidden_nodes_more=max(len(hidden_nodes) - OVERFLOW_NAMES, 0), explains=len(explained))


def groups(builder: Builder) -> tuple[list[GroupView], list[GroupView]]:
    """(root-cause groups, standalone groups), each group one rule, each cause group of
    it one card (its first member)."""
    view = builder.view
    roots = [g.first for g in view.root_groups]
    chains = [Chain(f, tuple(view.explained_by(f))) for f in roots]
    mode, under = _plan(builder, chains, [*roots, *(g.first for g in view.standalone_groups)])
    chain_groups = [_group(builder, g.findings, mode, under, "root")
                    for g in group_by_rule(roots)]
    alone = sorted((g.first for g in view.standalone_groups),
                   key=lambda f: (-f.severity.rank, f.rule_id, f.id))
    alone_groups = [_group(builder, g.findings, mode, under, "other")
                    for g in group_by_rule(alone)]
    return chain_groups, alone_groups


def verdict_command(finding: Finding) -> str | None:
    """The first step to copy: never cut, so a command longer than the cap is not offered."""
    command = first_command(finding.remediation)
    return command if command and len(command) <= LINE_CAP else None
