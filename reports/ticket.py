"""A ticket comment in Jira wiki markup or Zendesk's Markdown (``-f jira``, ``-f zendesk``).

The same content as the Markdown comment, in the order a reader needs it: whether the
analysis is complete, the verdict and its first step, then each root cause or other
finding by cause group (nodes, what it explains, its first evidence, its remediation),
then what was not checked. Sized for a comment: at most :data:`TOP` groups and the
dialect's length cap (:mod:`reports.ticket_dialects`), with what was left out named.
Every piece of bundle text goes through the dialect's escaping or a block it cannot
close.
"""

from __future__ import annotations

from collections import Counter

from analyzers.results.models import Finding, Report, RuleStatus
from reports.ticket_dialects import DIALECTS, Dialect
from reports.view import NOT_CHECKED, CauseGroup, View, build, first_command

TOP = 8
EVIDENCE = 2
EXCERPT = 200
REMEDY_LINES = 12
NODES = 8


def render(report: Report, kind: str, *, html_name: str | None = None) -> str:
    d = DIALECTS[kind]
    view = build(report)
    cluster = report.bundle.cluster
    out = [d.title(d.text(f"gpu-triage: {cluster.context or 'cluster'} (Kubernetes "
                          f"{cluster.server_version or 'unknown'})")), ""]
    incomplete = view.incomplete()
    if incomplete is not None:
        out += [d.bold(d.text(incomplete)), ""]
    out += _verdict(d, view)
    counts = ", ".join(f"{n} {s}" for s, n in report.summary.model_dump().items() if n)
    out += [d.text(f"Findings: {counts or 'none'}."), ""]
    groups = [*view.root_groups, *view.standalone_groups]  # root causes first
    footer = [_coverage(d, report)]
    if html_name:
        footer.append(d.text("Full report with every finding: the attached ")
                      + d.code(html_name))
    budget = d.LIMIT - len("\n".join(out + footer)) - 400
    shown = 0
    for item in groups[:TOP]:
        block = _group(d, view, item)
        size = len("\n".join(block)) + 1
        if size > budget:
            break
        out += block
        budget -= size
        shown += 1
    if shown < len(groups):
        rest = groups[shown:]
        out += [d.text(f"… and {len(rest)} more: " + ", ".join(
            g.group.rule_id + (f" ×{len(g.members)}" if len(g.members) > 1 else "")
            for g in rest[:20]) + (" …" if len(rest) > 20 else "") + " (see the HTML report)."),
            ""]
    out += footer
    return "\n".join(out).rstrip() + "\n"


def _verdict(d: Dialect, view: View) -> list[str]:
    verdict = view.verdict
    if verdict is None:
        return [d.bold(d.text("No problems found.")), ""]
    nodes = sorted(verdict.nodes)
    where = f" on {_nodes(nodes)}" if nodes else ""
    out = [d.bold(d.text(f"Verdict: {verdict.severity.value.upper()} {verdict.rule_id}"))
           + " " + d.text(f"{where.strip()}: {verdict.summary}".lstrip(": "))]
    command = first_command(verdict.remediation)
    if command:
        out += ["", d.text("First step:"), d.block(command)]
    return out + [""]


def _group(d: Dialect, view: View, item: CauseGroup) -> list[str]:
    group, first = item.group, item.first
    many = len(item.members) > 1
    count = f" ×{len(item.members)}" if many else ""
    out = [d.heading(d.text(f"{group.severity.value.upper()} · {group.rule_id}{count} · "
                            f"{group.title}")),
           d.text(group.summary if many else first.summary), ""]
    if group.nodes:
        out.append(d.bullet(d.text(f"Nodes: {_nodes(group.nodes)}")))
    if item.outlier:
        out.append(d.bullet(d.text(f"Differs from the {item.others} other {group.rule_id} "
                                   "finding(s), which share another cause")))
    if item.symptoms:
        counts = Counter(s.rule_id for s in item.symptoms)
        out.append(d.bullet(d.text("Explains: " + ", ".join(
            f"{rule} ×{n}" if n > 1 else rule for rule, n in sorted(counts.items())))))
    out += _evidence(d, first)
    if first.remediation:
        lines = first.remediation.strip("\n").splitlines()
        if len(lines) > REMEDY_LINES:
            lines = lines[:REMEDY_LINES] + [f"# … {len(lines) - REMEDY_LINES} more line(s) "
                                            "in the HTML report"]
        out += ["", d.block("\n".join(lines))]
    return out + [""]


def _evidence(d: Dialect, finding: Finding) -> list[str]:
    out = []
    for e in finding.evidence[:EVIDENCE]:
        at = f":{e.line}" if e.line else (f"#{e.pointer}" if e.pointer else "")
        excerpt = e.excerpt if len(e.excerpt) <= EXCERPT else e.excerpt[:EXCERPT] + "…"
        out.append(d.bullet(d.code(f"{e.path}{at}") + " " + d.text(f"— {excerpt}")))
    if len(finding.evidence) > EVIDENCE:
        out.append(d.bullet(d.text(f"… {len(finding.evidence) - EVIDENCE} more in the HTML "
                                   "report")))
    return out


def _nodes(nodes: list[str]) -> str:
    more = f" and {len(nodes) - NODES} more" if len(nodes) > NODES else ""
    return ", ".join(nodes[:NODES]) + more


def _coverage(d: Dialect, report: Report) -> str:
    counts = Counter(r.status.value for r in report.rules)
    parts = [f"{counts.get(s.value, 0)} {s.value}" for s in RuleStatus
             if s is not RuleStatus.PARTIAL or counts.get(s.value)]
    line = f"Rules: {', '.join(parts)}; collection gaps: {len(report.collection_gaps)}."
    missing = [r for r in report.rules if r.status in NOT_CHECKED]
    if missing:
        line += " Not checked: " + "; ".join(
            f"{r.rule_id} {r.status.value} ({(r.reason or '')[:100]})" for r in missing[:4])
        line += f"; {len(missing) - 4} more." if len(missing) > 4 else "."
    return d.text(line)
