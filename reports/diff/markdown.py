"""The diff as Markdown for a ticket comment: new and changed first, then what was fixed.

Everything from the bundles is escaped: no markup, raw HTML, links or table breaks can
come from a finding, a node name or a fact value.
"""

from __future__ import annotations

import re

from analyzers.results.diff_models import DiffReport
from analyzers.results.models import Finding
from reports.diff.view import cluster_name, fact_line, side, warning
from reports.terminal import line

LISTED = 40


def _inline(text: str) -> str:
    text = line(text)  # one line per field: a value cannot open a heading or a table row
    return re.sub(r"([\\`*_{}\[\]<>|~&#])", r"\\\1", text)


def _finding_row(finding: Finding, extra: str = "") -> str:
    cells = [finding.severity.value, f"`{finding.rule_id}`", _inline(finding.id),
             _inline(finding.title)]
    if extra:
        cells.append(extra)
    return "| " + " | ".join(cells) + " |"


def _more(count: int) -> list[str]:
    return ["", f"…and {count - LISTED} more in the JSON or HTML diff."] if count > LISTED \
        else []


def render(diff: DiffReport) -> str:
    s = diff.summary
    out = [f"### gpu-triage diff · {_inline(cluster_name(diff))}", "",
           f"- **Before:** {_inline(side(diff.before))}",
           f"- **After:** {_inline(side(diff.after))}",
           f"- **{s.resolved} resolved · {s.new} new · {s.changed} changed · {s.unchanged} "
           f"unchanged · {s.unverified} not verified · {s.facts} facts moved**"]
    note = warning(diff)
    if note:
        out.append(f"- **Warning:** {_inline(note)}")
    if diff.new:
        out += ["", "#### New", "", "| severity | rule | id | title | summary |",
                "|---|---|---|---|---|"]
        out += [_finding_row(f, _inline(f.summary)) for f in diff.new[:LISTED]]
        out += _more(len(diff.new))
    if diff.changed:
        out += ["", "#### Changed", "", "| severity | rule | id | title | what changed |",
                "|---|---|---|---|---|"]
        for changed in diff.changed[:LISTED]:
            what = "; ".join(f"{_inline(c.field)}: {_inline(c.before)} → {_inline(c.after)}"
                             for c in changed.changes)
            out.append(_finding_row(changed.after, what))
        out += _more(len(diff.changed))
    if diff.resolved:
        out += ["", "#### Resolved", "", "| severity | rule | id | title |", "|---|---|---|---|"]
        out += [_finding_row(f) for f in diff.resolved[:LISTED]]
        out += _more(len(diff.resolved))
    if diff.unverified:
        out += ["", "#### Not verified (gone, but the rule did not run in AFTER)", "",
                "| severity | rule | id | title | why |", "|---|---|---|---|---|"]
        out += [_finding_row(u.finding, _inline(u.reason)) for u in diff.unverified[:LISTED]]
        out += _more(len(diff.unverified))
    if diff.facts:
        out += ["", "#### Facts that moved", "", "| subject | fact | before | after |",
                "|---|---|---|---|"]
        for change in diff.facts[:LISTED * 2]:
            subject, fact, before, after = (_inline(v) for v in fact_line(change))
            out.append(f"| {subject} | {fact} | {before} | {after} |")
        if len(diff.facts) > LISTED * 2:
            out += ["", f"…and {len(diff.facts) - LISTED * 2} more in the JSON or HTML diff."]
    if diff.coverage:
        out += ["", "#### Coverage that moved", "", "| rule | before | after | reason |",
                "|---|---|---|---|"]
        for rule in diff.coverage:
            before = rule.before.value if rule.before is not None else "not loaded"
            after = rule.after.value if rule.after is not None else "not loaded"
            out.append(f"| `{rule.rule_id}` | {before} | {after} | "
                       f"{_inline(rule.reason or '')} |")
    if diff.unchanged:
        ids = ", ".join(_inline(f.id) for f in diff.unchanged[:LISTED])
        more = f" and {len(diff.unchanged) - LISTED} more" if len(diff.unchanged) > LISTED else ""
        out += ["", f"Unchanged: {ids}{more}"]
    return "\n".join(out) + "\n"
