"""Markdown sized for a ticket comment: verdict, top findings, evidence, first steps."""

from __future__ import annotations

import re

from analyzers.models import Finding, Report
from reports.view import build, plain

TOP = 6


def _inline(text: str) -> str:
    """Bundle text as inline Markdown: no controls, no markup, no raw HTML."""
    text = plain(text).replace("\n", " ")
    return re.sub(r"([\\`*_\[\]<>|~])", r"\\\1", text)


def _code(text: str) -> str:
    """A fenced block that the text itself cannot close."""
    body = plain(text)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{body}\n{fence}"


def _where(f: Finding) -> list[str]:
    lines = []
    for e in f.evidence[:3]:
        at = f":{e.line}" if e.line else (f" `{e.pointer}`" if e.pointer else "")
        lines.append(f"  - `{_inline(e.path)}`{at} — {_inline(e.excerpt)[:200]}")
    if len(f.evidence) > 3:
        lines.append(f"  - … {len(f.evidence) - 3} more in the HTML report")
    return lines


def render(report: Report, *, html_name: str | None = None) -> str:
    view = build(report)
    cluster = report.bundle.cluster
    out = [f"### gpu-triage: {_inline(cluster.context or 'cluster')} "
           f"({_inline(cluster.server_version or 'unknown version')})", ""]
    verdict = view.verdict
    if verdict is None:
        passed = sum(1 for r in report.rules if r.status.value == "passed")
        out.append(f"**No problems found.** {passed} rules passed; "
                   f"{len(report.collection_gaps)} collection gap(s).")
    else:
        explained = view.explained_by(verdict)
        tail = f" It explains {len(explained)} other finding(s)." if explained else ""
        out.append(f"**Verdict — {verdict.severity.value.upper()} {verdict.rule_id}:** "
                   f"{_inline(verdict.summary)}{tail}")
    out.append("")
    counts = ", ".join(f"{n} {s}" for s, n in report.summary.model_dump().items() if n)
    out.append(f"{report.bundle.gpu_nodes} GPU node(s) of {report.bundle.nodes}; "
               f"findings: {counts or 'none'}.")
    out.append("")
    roots = [c.root for c in view.chains] + list(view.standalone)
    for f in roots[:TOP]:
        out.append(f"#### {f.severity.value.upper()} · {f.rule_id} · {_inline(f.title)}")
        out.append(_inline(f.summary))
        symptoms = view.explained_by(f)
        if symptoms:
            out.append(f"- Explains: {', '.join(_inline(s.id) for s in symptoms[:10])}")
        if f.nodes:
            out.append(f"- Nodes: {', '.join(_inline(n) for n in f.nodes)}")
        out.extend(_where(f))
        if f.remediation:
            out.append("")
            out.append(_code(f.remediation))
        out.append("")
    if len(roots) > TOP:
        out.append(f"… and {len(roots) - TOP} more root or standalone finding(s).")
        out.append("")
    if html_name:
        out.append(f"Full report with every finding and its evidence: attached "
                   f"`{_inline(html_name)}`.")
    return "\n".join(out).rstrip() + "\n"
