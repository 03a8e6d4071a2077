"""The self-contained HTML report: CSS and JS inlined, no network, escaped throughout.

Python builds the view model; the template only loops and formats. jinja2 runs with
autoescape and StrictUndefined, and a Content-Security-Policy meta tag forbids any
request the page might try to make.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from importlib.resources import files
from typing import Any

import jinja2

from analyzers.models import Finding, Report
from reports.view import build, first_command

EVIDENCE_CAP = 8
EXCERPT_CAP = 600


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@cache
def _static(name: str) -> str:
    return (files("reports") / "static" / name).read_text(encoding="utf-8")


def anchor(finding_id: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in finding_id)
    return f"finding-{safe}"


def _finding_view(f: Finding, docs: dict[str, Any], explains: tuple[Finding, ...]) -> dict[str, Any]:
    evidence = []
    for e in f.evidence[:EVIDENCE_CAP]:
        excerpt = e.excerpt if len(e.excerpt) <= EXCERPT_CAP else e.excerpt[:EXCERPT_CAP] + "…"
        where = f"line {e.line}" if e.line else (e.pointer or "")
        evidence.append({"path": e.path, "where": where, "excerpt": excerpt})
    doc = docs.get(f.rule_id)
    return {
        "id": f.id,
        "anchor": anchor(f.id),
        "rule_id": f.rule_id,
        "family": f.rule_id.rstrip("0123456789"),
        "title": f.title,
        "severity": f.severity.value,
        "summary": f.summary,
        "why": doc.why if doc else "",
        "nodes": f.nodes,
        "evidence": evidence,
        "more_evidence": max(len(f.evidence) - EVIDENCE_CAP, 0),
        "remediation": f.remediation,
        "caused_by": [{"id": c, "anchor": anchor(c)} for c in f.caused_by],
        "explains": [{"id": s.id, "anchor": anchor(s.id), "title": s.title,
                      "severity": s.severity.value} for s in explains],
    }


def view_model(report: Report, generated_at: datetime) -> dict[str, Any]:
    view = build(report)
    docs = {d.rule_id: d for d in report.rule_docs}
    verdict = view.verdict
    chains = []
    for chain in view.chains:
        chains.append({
            "root": _finding_view(chain.root, docs, chain.symptoms),
            "symptoms": [_finding_view(s, docs, view.explained_by(s)) for s in chain.symptoms],
        })
    standalone = [_finding_view(f, docs, ()) for f in view.standalone]
    return {
        "title": f"gpu-triage · {report.bundle.cluster.context or 'cluster'}",
        "report": report.model_dump(mode="json"),
        "generated_at": generated_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
        "verdict": _finding_view(verdict, docs, view.explained_by(verdict)) if verdict else None,
        "verdict_command": first_command(verdict.remediation) if verdict else None,
        "chains": chains,
        "standalone": standalone,
        "status_counts": view.status_counts(),
        "nodes": sorted({n for f in report.findings for n in f.nodes}),
        "families": sorted({f.rule_id.rstrip("0123456789") for f in report.findings}),
        "passed": [r.rule_id for r in report.rules if r.status.value == "passed"],
        "css": _static("report.css"),
        "js": _static("report.js"),
    }


def render(report: Report, *, generated_at: datetime | None = None) -> str:
    moment = generated_at or datetime.now(UTC)
    template = _environment().get_template("report.html.j2")
    return template.render(**view_model(report, moment))
