"""The diff as one self-contained HTML page: CSS inlined, no script, no network.

Python builds the view (plain strings, already cleaned of control characters); the
template only loops. jinja2 autoescapes everything and runs with StrictUndefined. The
Content-Security-Policy allows the page's own inline style (by hash) and nothing else:
no script, no request of any kind.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib.resources import files

import jinja2

from analyzers.results.diff_models import DiffReport
from analyzers.results.models import Finding
from reports.diff.view import cluster_name, fact_line, side, warning
from reports.template_cache import template_cache
from reports.view import clean

EXCERPT = 300


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("reports", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True,
                              bytecode_cache=template_cache())  # as the report's


@cache
def _css() -> str:
    return (files("reports") / "static" / "diff.css").read_text(encoding="utf-8")


def csp(css: str) -> str:
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    return (f"default-src 'none'; style-src 'sha256-{digest}'; script-src 'none'; "
            "img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; "
            "object-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'none'")


@dataclass(frozen=True, slots=True)
class Row:
    severity: str
    rule_id: str
    id: str
    title: str
    summary: str
    detail: str
    evidence: str


@dataclass(frozen=True, slots=True)
class Section:
    key: str
    title: str
    note: str
    rows: list[Row]


@dataclass(frozen=True, slots=True)
class Page:
    csp: str
    css: str
    title: str
    cluster: str
    before: str
    after: str
    warning: str
    counts: list[tuple[str, int]]
    sections: list[Section]
    facts: list[tuple[str, str, str, str]]
    coverage: list[tuple[str, str, str, str]]
    generated: str
    version: str


def _clip(text: str) -> str:
    text = clean(text)
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def _row(finding: Finding, detail: str = "") -> Row:
    first = finding.evidence[0] if finding.evidence else None
    where = ""
    if first is not None:
        at = f":{first.line}" if first.line else (f"#{first.pointer}" if first.pointer else "")
        where = f"{clean(first.path)}{clean(at)}  {_clip(first.excerpt)}"
    return Row(severity=finding.severity.value, rule_id=clean(finding.rule_id),
               id=clean(finding.id), title=clean(finding.title), summary=clean(finding.summary),
               detail=clean(detail), evidence=where)


def view(diff: DiffReport, generated_at: datetime | None = None) -> Page:
    css = _css()
    s = diff.summary
    sections = [
        Section("new", "New", "in AFTER only", [_row(f) for f in diff.new]),
        Section("changed", "Changed", "in both, with other numbers, severity, nodes or evidence",
                [_row(c.after, " · ".join(f"{c2.field}: {c2.before} → {c2.after}"
                                          for c2 in c.changes)) for c in diff.changed]),
        Section("resolved", "Resolved", "in BEFORE only, and its rule ran in AFTER",
                [_row(f) for f in diff.resolved]),
        Section("unverified", "Not verified", "in BEFORE only, but its rule did not run in AFTER",
                [_row(u.finding, u.reason) for u in diff.unverified]),
        Section("unchanged", "Unchanged", "in both, alike", [_row(f) for f in diff.unchanged]),
    ]
    coverage = [(r.rule_id, r.before.value if r.before is not None else "not loaded",
                 r.after.value if r.after is not None else "not loaded", clean(r.reason or ""))
                for r in diff.coverage]
    when = (generated_at or datetime.now(UTC)).astimezone(UTC)
    return Page(
        csp=csp(css), css=css,
        title=f"gpu-triage diff · {cluster_name(diff)}",
        cluster=cluster_name(diff), before=side(diff.before), after=side(diff.after),
        warning=warning(diff) or "",
        counts=[("resolved", s.resolved), ("new", s.new), ("changed", s.changed),
                ("unchanged", s.unchanged), ("not verified", s.unverified),
                ("facts moved", s.facts)],
        sections=[section for section in sections if section.rows],
        facts=[fact_line(change) for change in diff.facts],
        coverage=coverage,
        generated=when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        version=clean(diff.tool.version),
    )


def render(diff: DiffReport, *, generated_at: datetime | None = None) -> str:
    template = _environment().get_template("diff.html.j2")
    return template.render(page=view(diff, generated_at))
