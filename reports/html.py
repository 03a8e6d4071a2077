"""The self-contained HTML report: CSS and JS inlined, no network, escaped throughout.

Python builds the view model (:func:`view_model`, also the subject of the golden tests);
the template only loops and formats. jinja2 runs with autoescape and StrictUndefined. A
Content-Security-Policy meta tag allows only the page's own inline style and script (by
hash) and forbids every request, so even a string that escaped escaping could not load
or run anything.
"""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib.resources import files

import jinja2

from analyzers.results.models import Finding, Report, RuleStatus, Severity
from reports.html_findings import (
    Builder,
    GroupView,
    anchor,
    groups,
    verdict_command,
)
from reports.html_overview import (
    CoverageView,
    GlanceView,
    InventoryView,
    MatrixView,
    TimelineView,
    coverage_view,
    glance_view,
    inventory_view,
    matrix_view,
    timeline_view,
)
from reports.template_cache import template_cache
from reports.view import (
    NOT_CHECKED,
    SEVERITY_ORDER,
    build,
    cause_label,
    clean,
    family,
    lower_bounds,
)

NODE_FILTER_CAP = 5000
OTHERS_SHOWN = 8


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        bytecode_cache=template_cache(),  # compiled once, then read (template_cache.py)
    )


@cache
def _static(name: str) -> str:
    return (files("reports") / "static" / name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def csp(css: str, js: str) -> str:
    """Nothing may load; only this page's own style and script (by hash) may apply."""
    return (f"default-src 'none'; style-src '{_sha256(css)}'; script-src '{_sha256(js)}'; "
            "img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; "
            "object-src 'none'; frame-src 'none'; worker-src 'none'; manifest-src 'none'; "
            "base-uri 'none'; form-action 'none'")


@dataclass(frozen=True, slots=True)
class Explained:
    rule_id: str
    title: str
    count: int


@dataclass(frozen=True, slots=True)
class OtherRoot:
    rule_id: str
    severity: str
    title: str
    count: int
    anchor: str


@dataclass(frozen=True, slots=True)
class Outlier:
    """Nodes whose finding differs from most findings of the same rule."""

    rule_id: str
    severity: str
    title: str
    nodes: str
    count: int
    of: int                     # findings in the rule's largest group
    anchor: str


@dataclass(frozen=True, slots=True)
class VerdictView:
    ok: bool
    minor: bool                 # only low or info findings: nothing blocks GPU workloads
    severity: str
    rule_id: str
    title: str
    anchor: str
    summary: str
    nodes: str
    node_count: int
    explains: list[Explained]
    explains_total: int
    command: str | None
    others: list[OtherRoot]
    others_more: int
    checked: str
    not_checked: int
    same_cause: int = 0         # > 1: the verdict is one cause on this many findings
    outliers: list[Outlier] = field(default_factory=list)
    cause: str = ""             # "cause" or "likely cause" (reports.view.cause_label)


@dataclass(frozen=True, slots=True)
class Page:
    title: str
    context: str
    kubernetes: str
    created_at: str
    layout: str                 # a foreign bundle layout that was read; "" for ours
    tool_version: str
    generated_at: str
    nodes: int
    gpu_nodes: int
    lower_bounds: str           # counts taken from lists the collector shortened
    severity_counts: list[tuple[str, int]]
    verdict: VerdictView
    incomplete: str             # rules ended in error: said before the verdict; "" if none
    glance: GlanceView | None
    chain_groups: list[GroupView]
    standalone_groups: list[GroupView]
    findings_total: int
    severities: list[str]
    families: list[str]
    filter_nodes: list[str]
    matrix: MatrixView | None
    timeline: TimelineView | None
    coverage: CoverageView
    inventory: InventoryView | None
    csp: str
    css: str
    js: str


def _c(text: str | None, limit: int = 300) -> str:
    value = clean(text or "")
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _node_text(nodes: list[str], limit: int = 4) -> str:
    shown = ", ".join(_c(n, 80) for n in nodes[:limit])
    return shown + (f" and {len(nodes) - limit} more" if len(nodes) > limit else "")


def _verdict(report: Report, verdict: Finding | None, roots: list[Finding],
             explained: dict[str, list[Finding]], builder: Builder,
             rule_groups: list[GroupView]) -> VerdictView:
    passed = sorted(r.rule_id for r in report.rules if r.status is RuleStatus.PASSED)
    not_checked = sum(r.status in NOT_CHECKED for r in report.rules)
    checked = (f"{len(passed)} rule(s) passed on {report.bundle.gpu_nodes} GPU node(s) of "
               f"{report.bundle.nodes}: {', '.join(passed) or 'none'}")
    if verdict is None:
        return VerdictView(True, False, "", "", "", "", "", "", 0, [], 0, None, [], 0, checked,
                           not_checked)
    same = [f for f in roots if f.rule_id == verdict.rule_id]
    nodes = sorted({n for f in same for n in f.nodes})
    symptoms: dict[str, Finding] = {}
    for root in same:
        for symptom in explained.get(root.id, []):
            symptoms[symptom.id] = symptom
    by_rule = Counter(s.rule_id for s in symptoms.values())
    titles = {s.rule_id: s.title for s in symptoms.values()}
    rank = {s.rule_id: s.severity.rank for s in symptoms.values()}
    merged: dict[str, OtherRoot] = {}
    for g in rule_groups:          # a rule can head a chain and also stand alone
        if g.rule_id == verdict.rule_id:
            continue
        seen = merged.get(g.rule_id)
        merged[g.rule_id] = (OtherRoot(g.rule_id, g.severity, g.title, g.count, g.anchor)
                             if seen is None else OtherRoot(seen.rule_id, seen.severity,
                                                            seen.title, seen.count + g.count,
                                                            seen.anchor))
    others = list(merged.values())
    explains = [Explained(rule_id, _c(titles[rule_id], 200), count)
                for rule_id, count in sorted(by_rule.items(), key=lambda kv: (-rank[kv[0]],
                                                                                kv[0]))]
    item = builder.view.group_of.get(verdict.id)
    grouped = item is not None and len(item.members) > 1
    outliers = [Outlier(g.group.rule_id, g.group.severity.value, _c(g.group.title),
                        _node_text(g.group.nodes), len(g.members), g.others,
                        builder.anchors.assign(g.first.id))
                for g in builder.view.outliers]
    return VerdictView(
        ok=False, minor=verdict.severity.rank < Severity.MEDIUM.rank,
        severity=verdict.severity.value, rule_id=verdict.rule_id,
        title=_c(verdict.title),
        anchor=builder.anchors.assign(item.first.id if item is not None and grouped
                                      else verdict.id),
        summary=_c(item.group.summary if item is not None and grouped else verdict.summary,
                   1200),
        nodes=_node_text(nodes), node_count=len(nodes), cause=cause_label(verdict, True),
        explains=explains, explains_total=len(symptoms), command=verdict_command(verdict),
        others=others[:OTHERS_SHOWN], others_more=max(len(others) - OTHERS_SHOWN, 0),
        checked=checked, not_checked=not_checked,
        same_cause=len(item.members) if item is not None and grouped else 0,
        outliers=outliers[:OTHERS_SHOWN],
    )


def view_model(report: Report, generated_at: datetime) -> Page:
    view = build(report)
    marks: dict[tuple[str, int], list[tuple[int, int]]] = {}
    overview = report.overview
    for mark in overview.marks if overview else []:
        marks.setdefault((mark.finding, mark.evidence), []).append((mark.start, mark.end))
    builder = Builder(report, view, marks)
    chain_groups, standalone_groups = groups(builder)
    roots = [c.root for c in view.chains] + list(view.standalone)
    explained = {c.root.id: list(c.symptoms) for c in view.chains}
    verdict = _verdict(report, view.verdict, roots, explained, builder,
                       chain_groups + standalone_groups)
    info = report.bundle
    nodes = sorted({n for f in report.findings for n in f.nodes})
    context = _c(info.cluster.context or "cluster", 120)
    return Page(
        title=f"gpu-triage · {context}",
        context=context,
        kubernetes=_c(info.cluster.server_version or "unknown", 80),
        created_at=_c(info.created_at or "unknown", 80),
        layout="" if info.layout == "gpu-triage v1" else _c(info.layout, 80),
        tool_version=_c(report.tool.version, 40),
        generated_at=generated_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        nodes=info.nodes,
        gpu_nodes=info.gpu_nodes,
        lower_bounds=lower_bounds(report),
        severity_counts=[(s, n) for s, n in report.summary.model_dump().items() if n],
        verdict=verdict,
        incomplete=view.incomplete() or "",
        glance=glance_view(report, overview.glance) if overview else None,
        chain_groups=chain_groups,
        standalone_groups=standalone_groups,
        findings_total=len(report.findings),
        severities=[s for s in SEVERITY_ORDER
                    if any(f.severity is Severity(s) for f in report.findings)],
        families=sorted({family(f.rule_id) for f in report.findings}),
        filter_nodes=[_c(n, 253) for n in nodes[:NODE_FILTER_CAP]],
        matrix=matrix_view(report, overview, builder.anchors) if overview and overview.nodes
        else None,
        timeline=timeline_view(overview.timeline) if overview else None,
        coverage=coverage_view(report),
        inventory=inventory_view(report, overview) if overview else None,
        csp=csp(_static("report.css"), _static("report.js")),
        css=_static("report.css"),
        js=_static("report.js"),
    )


def render(report: Report, *, generated_at: datetime | None = None,
           inspect: bool = False) -> str:
    """``inspect``: each finding card shows the kubectl command for ``serve``
    (:mod:`reports.inspect`), outside the view model."""
    from reports.inspect import command, preamble

    moment = generated_at or datetime.now(UTC)
    template = _environment().get_template("report.html.j2")
    commands = {f.id: c for f in report.findings if (c := command(f))} if inspect else {}
    return template.render(page=view_model(report, moment), inspect=commands,
                           inspect_note=preamble(report.bundle.path) if inspect else "")


__all__ = ["anchor", "render", "view_model"]
