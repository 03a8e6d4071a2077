"""The terminal summary: root causes first, then the rest, then what was checked."""

from __future__ import annotations

import click

from analyzers.models import Finding, Report, Severity
from reports import terminal
from reports.view import CauseGroup, View, build, first_command

NODES_SHOWN = 6

_COLOURS = {Severity.CRITICAL: "red", Severity.HIGH: "red", Severity.MEDIUM: "yellow",
            Severity.LOW: "cyan", Severity.INFO: "white"}


def _one(text: str) -> str:
    """Bundle text on one terminal line (:func:`reports.terminal.line`, the one
    sanitiser): a value cannot start a line of its own (a forged finding) or carry an
    escape."""
    return terminal.line(text)


def _sev(severity: Severity, color: bool) -> str:
    label = f"{severity.value.upper():<8}"
    bold = severity in (Severity.CRITICAL, Severity.HIGH)
    return click.style(label, fg=_COLOURS[severity], bold=bold) if color else label


def _finding(f: Finding, view: View, color: bool, indent: str = "") -> list[str]:
    lines = [f"{indent}{_sev(f.severity, color)} {_one(f.rule_id)}  {_one(f.title)}",
             f"{indent}         {_one(f.summary)}"]
    symptoms = view.explained_by(f)
    if len(symptoms) > 8:  # many: counted per rule
        lines.append(f"{indent}         explains: {_rules(symptoms)}")
    elif symptoms:
        lines.append(f"{indent}         explains: {', '.join(_one(s.id) for s in symptoms)}")
    if f.evidence:
        e = f.evidence[0]
        at = f":{e.line}" if e.line else (f"#{_one(e.pointer)}" if e.pointer else "")
        lines.append(f"{indent}         evidence: {_one(e.path)}{at}  {_one(e.excerpt)[:160]}")
    command = first_command(f.remediation)
    if command:
        lines.append(f"{indent}         first step: {_one(command)}")
    return lines


def _rules(findings: tuple[Finding, ...]) -> str:
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.rule_id] = counts.get(finding.rule_id, 0) + 1
    return ", ".join(f"{_one(rule)} ×{n}" if n > 1 else _one(rule) for rule, n in counts.items())


def _group(item: CauseGroup, view: View, color: bool, indent: str = "  ") -> list[str]:
    """A cause group: one finding as before; several as one entry with its node count,
    the shared summary (``<node>`` standing for each node), the nodes, and the first
    node's evidence and first step."""
    if len(item.members) == 1:
        lines = _finding(item.first, view, color, indent)
        if item.outlier:
            lines.insert(2, f"{indent}         differs from the largest "
                         f"{_one(item.group.rule_id)} group ({item.others} findings)")
        return lines
    group, first = item.group, item.first
    pad = f"{indent}         "
    nodes = group.nodes
    shown = ", ".join(_one(n) for n in nodes[:NODES_SHOWN])
    more = f" and {len(nodes) - NODES_SHOWN} more" if len(nodes) > NODES_SHOWN else ""
    lines = [f"{indent}{_sev(group.severity, color)} {_one(group.rule_id)}  {_one(group.title)}"
             f"  · {len(item.members)} findings, the same cause",
             f"{pad}{_one(group.summary)}",
             f"{pad}on {len(nodes)} node(s): {shown}{more}"]
    if item.outlier:
        lines.append(f"{pad}differs from the largest {_one(group.rule_id)} group "
                     f"({item.others} findings)")
    if item.symptoms:
        lines.append(f"{pad}explains: {_rules(item.symptoms)}")
    if first.evidence:
        e = first.evidence[0]
        at = f":{e.line}" if e.line else (f"#{_one(e.pointer)}" if e.pointer else "")
        lines.append(f"{pad}evidence ({_one(first.nodes[0])}): {_one(e.path)}{at}  "
                     f"{_one(e.excerpt)[:140]}")
    command = first_command(first.remediation)
    if command:
        lines.append(f"{pad}first step ({_one(first.nodes[0])}): {_one(command)}")
    return lines


def render(report: Report, *, color: bool = False) -> str:
    view = build(report)
    info = report.bundle
    cluster = info.cluster
    out = [
        f"gpu-triage {report.tool.version} · {_one(cluster.context or 'cluster')} "
        f"{_one(cluster.server_version or '')} · bundle created "
        f"{_one(info.created_at or 'unknown')}",
        f"{info.nodes} nodes, {info.gpu_nodes} GPU nodes · "
        + ", ".join(f"{n} {s}" for s, n in report.summary.model_dump().items() if n),
        "",
    ]
    incomplete = view.incomplete()
    if incomplete is not None:
        out.insert(2, click.style(incomplete, fg="red", bold=True) if color else incomplete)
    if info.layout != "gpu-triage v1":  # a foreign layout (bundle.layouts) read as format v1
        out.insert(2, f"layout: {_one(info.layout)}; what it does not collect is skipped, "
                   "see Rules below")
    if report.suppressed:
        out.insert(-1, f"{len(report.suppressed)} finding(s) suppressed with a recorded "
                   "reason (see the JSON or HTML report)")
    if view.outliers:
        out.insert(-1, "different from the rest: " + "; ".join(
            f"{_one(g.group.rule_id)} on {', '.join(_one(n) for n in g.group.nodes[:3])}"
            + (f" and {len(g.group.nodes) - 3} more" if len(g.group.nodes) > 3 else "")
            + f" ({len(g.members)} finding(s); {g.others} others of the rule share another cause)"
            for g in view.outliers[:4]))
    verdict = view.verdict
    if verdict is None:
        out.append(("No problems found by the rules that completed. Checked: "
                    if incomplete else "No problems found. Checked: ")
                   + ", ".join(_one(r.rule_id) for r in report.rules
                               if r.status.value == "passed"))
    for title, items in (("ROOT CAUSES", view.root_groups),
                         ("OTHER FINDINGS", view.standalone_groups)):
        if not items:
            continue
        out.append(click.style(title, bold=True) if color else title)
        for item in items:
            out.extend(_group(item, view, color))
        out.append("")
    symptoms = sum(len(c.symptoms) for c in view.chains)
    if symptoms:
        out.append(f"{symptoms} symptom finding(s) are folded under their root causes; "
                   "see the HTML or JSON report.")
    counts = view.status_counts()
    out.append("Rules: " + ", ".join(f"{n} {s}" for s, n in counts.items())
               + f" · collection gaps: {len(report.collection_gaps)}"
               + f" · unreadable: {len(report.problems)}")
    for line in view.problem_rules():
        out.append(f"  {_one(line)}")
    return "\n".join(out) + "\n"
