"""The diff on a terminal: what was resolved, what is new, what changed, what moved.

Every value from a bundle goes through :func:`reports.terminal.line`: one field stays on
one line, so a finding's title cannot start a section (``RESOLVED``) or a row of its own.
"""

from __future__ import annotations

import click

from analyzers.results.diff_models import DiffReport
from analyzers.results.models import Finding, Severity
from reports.diff.view import cluster_name, fact_line, side, warning
from reports.terminal import line

_COLOURS = {Severity.CRITICAL: "red", Severity.HIGH: "red", Severity.MEDIUM: "yellow",
            Severity.LOW: "cyan", Severity.INFO: "white"}
INDENT = " " * 11
UNCHANGED_SHOWN = 12


def _sev(severity: Severity, color: bool) -> str:
    label = f"{severity.value.upper():<8}"
    return click.style(label, fg=_COLOURS[severity]) if color else label


def _heading(text: str, color: bool) -> str:
    return click.style(text, bold=True) if color else text


def _one(finding: Finding, color: bool, summary: bool) -> list[str]:
    lines = [f"  {_sev(finding.severity, color)} {line(finding.id)}  {line(finding.title)}"]
    if summary:
        lines.append(f"{INDENT}{line(finding.summary)}")
    return lines


def render(diff: DiffReport, *, color: bool = False) -> str:
    s = diff.summary
    out = [f"gpu-triage diff {diff.tool.version} · {line(cluster_name(diff))}",
           f"  before: {line(side(diff.before))}",
           f"  after:  {line(side(diff.after))}"]
    note = warning(diff)
    if note:
        out.append(f"  warning: {note}")
    out += [f"{s.resolved} resolved · {s.new} new · {s.changed} changed · {s.unchanged} "
            f"unchanged · {s.unverified} not verified · {s.facts} facts moved", ""]
    if diff.new:
        out.append(_heading("NEW", color))
        for finding in diff.new:
            out += _one(finding, color, summary=True)
        out.append("")
    if diff.changed:
        out.append(_heading("CHANGED", color))
        for changed in diff.changed:
            out += _one(changed.after, color, summary=True)
            out.append(INDENT + " · ".join(f"{line(c.field)}: {line(c.before)} → {line(c.after)}"
                                           for c in changed.changes))
        out.append("")
    if diff.resolved:
        out.append(_heading("RESOLVED", color))
        for finding in diff.resolved:
            out += _one(finding, color, summary=False)
        out.append("")
    if diff.unverified:
        out.append(_heading("NOT VERIFIED (gone, but the rule did not run in AFTER)", color))
        for item in diff.unverified:
            out += _one(item.finding, color, summary=False)
            out.append(f"{INDENT}{line(item.reason)}")
        out.append("")
    if diff.facts:
        out.append(_heading("FACTS THAT MOVED", color))
        rows = [tuple(line(v) for v in fact_line(change)) for change in diff.facts]
        width_subject = max(len(r[0]) for r in rows)
        width_fact = max(len(r[1]) for r in rows)
        for subject, fact, before, after in rows:
            out.append(f"  {subject:<{width_subject}}  {fact:<{width_fact}}  "
                       f"{before} → {after}")
        out.append("")
    if diff.coverage:
        out.append(_heading("COVERAGE THAT MOVED", color))
        for rule in diff.coverage:
            before = rule.before.value if rule.before is not None else "not loaded"
            after = rule.after.value if rule.after is not None else "not loaded"
            reason = f" ({line(rule.reason)})" if rule.reason else ""
            out.append(f"  {line(rule.rule_id):<8} {before} → {after}{reason}")
        out.append("")
    if diff.unchanged:
        shown = ", ".join(line(f.id) for f in diff.unchanged[:UNCHANGED_SHOWN])
        more = f" and {len(diff.unchanged) - UNCHANGED_SHOWN} more" \
            if len(diff.unchanged) > UNCHANGED_SHOWN else ""
        out.append(f"Unchanged: {shown}{more}")
    return "\n".join(out).rstrip("\n") + "\n"
