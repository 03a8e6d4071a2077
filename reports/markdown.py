"""Markdown sized for a ticket comment: verdict, the cluster in two lines, root causes
by cause group (one entry for the same problem on many nodes, with the node list) with
their first evidence and remediation, and what was not checked.

Bounded: at most :data:`TOP` rule groups, short evidence, remediation cut at
:data:`REMEDY_LINES` lines, and the whole text under :data:`MAX_CHARS` characters (most
trackers cap a comment near 32 000; a comment should be read in a minute). Everything
from the bundle is escaped (:func:`_inline`) or fenced (:func:`_code`).
"""

from __future__ import annotations

import re
from collections import Counter

from analyzers.results.models import Finding, Overview, Report, RuleStatus, Severity
from reports.view import (
    NOT_CHECKED,
    CauseGroup,
    View,
    at_least,
    build,
    cause_label,
    clean,
    first_command,
    lower_bounds,
)

TOP = 5
EVIDENCE = 2
EXCERPT = 180
REMEDY_LINES = 12
NODES = 6
EXPLAINS_LISTED = 8
MAX_CHARS = 6000


def _inline(text: str) -> str:
    """Bundle text as inline Markdown: no controls, no markup, no raw HTML, no links.

    Brackets, angle brackets, backticks, emphasis and table characters are escaped.
    """
    text = " ".join(clean(text).split())
    return re.sub(r"([\\`*_{}\[\]<>|~&])", r"\\\1", text)


def _line(text: str) -> str:
    """:func:`_inline` for text that starts a line: no heading, list or quote either."""
    text = re.sub(r"^([#+=>-])", r"\\\1", _inline(text))
    return re.sub(r"^(\d+)([.)])", r"\1\\\2", text)


def _code(text: str) -> str:
    """A fenced block that the text itself cannot close."""
    body = clean(text)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{body}\n{fence}"


def _nodes(nodes: list[str]) -> str:
    shown = ", ".join(_inline(n) for n in nodes[:NODES])
    return shown + (f" and {len(nodes) - NODES} more" if len(nodes) > NODES else "")


def _where(f: Finding) -> list[str]:
    lines = []
    for e in f.evidence[:EVIDENCE]:
        at = f":{e.line}" if e.line else (f" `{_inline(e.pointer)}`" if e.pointer else "")
        excerpt = _inline(e.excerpt)
        if len(excerpt) > EXCERPT:
            excerpt = excerpt[:EXCERPT].rstrip("\\") + "…"
        lines.append(f"  - `{_inline(e.path)}`{at} — {excerpt}")
    if len(f.evidence) > EVIDENCE:
        lines.append(f"  - … {len(f.evidence) - EVIDENCE} more in the HTML report")
    return lines


def _remedy(text: str) -> str:
    lines = text.strip("\n").splitlines()
    if len(lines) > REMEDY_LINES:
        lines = lines[:REMEDY_LINES] + [f"# … {len(lines) - REMEDY_LINES} more line(s) in the "
                                        "HTML report"]
    return _code("\n".join(lines))


def _glance(report: Report, overview: Overview | None) -> list[str]:
    info = report.bundle
    head = f"{info.gpu_nodes} GPU node(s) of {at_least(report)}{info.nodes}"
    if lower_bounds(report):
        head = f"{lower_bounds(report)} {head}"
    if overview is None:
        return [head + "."]
    glance = overview.glance
    gpus = glance.gpus
    physical = f"{gpus.physical} physical, " if gpus.physical is not None else ""
    line = (f"{head} · GPUs: {physical}{gpus.advertised} advertised, {gpus.allocatable} "
            f"allocatable, {gpus.assigned} assigned")
    parts = [line + "."]
    operator = glance.operator
    versions = []
    if operator.version:
        versions.append(f"GPU Operator {_inline(operator.version)} "
                        f"(**{_inline(operator.status_label)}**)")
    for label, spread in (("containerd", glance.containerd), ("driver", glance.drivers)):
        known = [s for s in spread if s.value != "unknown"]
        if len(known) > 1:
            versions.append(f"{label} differs: " + ", ".join(
                f"{_inline(s.value)} ×{s.count}" for s in known))
        elif known:
            versions.append(f"{label} {_inline(known[0].value)}")
    if versions:
        parts.append(" · ".join(versions) + ".")
    return parts


def _verdict(view: View, report: Report) -> list[str]:
    verdict = view.verdict
    if verdict is None:
        passed = sum(1 for r in report.rules if r.status is RuleStatus.PASSED)
        return [f"**No problems found.** {passed} rule(s) passed on "
                f"{report.bundle.gpu_nodes} GPU node(s); {len(report.collection_gaps)} "
                "collection gap(s)."]
    roots = [c.root for c in view.chains] + list(view.standalone)
    same = [f for f in roots if f.rule_id == verdict.rule_id]
    nodes = sorted({n for f in same for n in f.nodes})
    symptoms = {s.id: s for f in same for s in view.explained_by(f)}
    where = f" on {_nodes(nodes)}" if nodes else ""
    out = []
    if verdict.severity.rank < Severity.MEDIUM.rank:
        out.append("**No critical, high or medium problem found.** The most notable of the "
                   "minor findings:")
    out.append(f"**Verdict — {verdict.severity.value.upper()} {verdict.rule_id}{where}:** "
               f"{cause_label(verdict, True)}: {_inline(verdict.summary)}")
    if symptoms:
        counts = Counter(s.rule_id for s in symptoms.values())
        out.append(f"It explains {len(symptoms)} other finding(s): "
                   + ", ".join(f"{rule} ×{n}" if n > 1 else rule
                               for rule, n in sorted(counts.items())) + ".")
    command = first_command(verdict.remediation)
    if command:
        out += ["", "First step (from its remediation):", _code(command)]
    return out


def _group(item: CauseGroup) -> list[str]:
    """One cause group: the problem once, its nodes, the first node's evidence and
    remediation. A group that differs from most findings of its rule says so."""
    first, group = item.first, item.group
    many = len(item.members) > 1
    nodes = group.nodes
    count = f" ×{len(item.members)}" if many else ""
    out = [f"#### {group.severity.value.upper()} · {group.rule_id}{count} · "
           f"{_inline(group.title)}",
           f"*{cause_label(first, True)}:* " + _line(group.summary if many else first.summary)]
    if many and nodes:
        out.append(f"- The same cause on {len(nodes)} nodes: {_nodes(nodes)} "
                   f"(shown: {_inline(first.nodes[0])})")
    elif nodes:
        out.append(f"- Nodes: {_nodes(nodes)}")
    if item.outlier:
        out.append(f"- Differs from the {item.others} other {group.rule_id} node(s): "
                   "its own entry")
    if len(item.symptoms) > EXPLAINS_LISTED:  # a fleet: counted per rule
        counts = Counter(s.rule_id for s in item.symptoms)
        out.append("- Explains: " + ", ".join(f"{rule} ×{n}" if n > 1 else rule
                                              for rule, n in sorted(counts.items())))
    elif item.symptoms:
        out.append("- Explains: " + ", ".join(_inline(i) for i in sorted(
            s.id for s in item.symptoms)))
    out.extend(_where(first))
    if first.remediation:
        out += ["", _remedy(first.remediation)]
    out.append("")
    return out


def _ids(groups: list[CauseGroup]) -> str:
    return ", ".join(g.group.rule_id + (f" ×{len(g.members)}" if len(g.members) > 1 else "")
                     for g in groups)


def _coverage(report: Report) -> str:
    counts = Counter(r.status.value for r in report.rules)
    # "partial" is named only when it happens: most bundles are read whole
    parts = [f"{counts.get(s.value, 0)} {s.value}" for s in RuleStatus
             if s is not RuleStatus.PARTIAL or counts.get(s.value)]
    line = f"Rules: {', '.join(parts)}; collection gaps: {len(report.collection_gaps)}"
    if report.suppressed:
        line += f"; {len(report.suppressed)} finding(s) suppressed by a suppression file"
    line += "."
    missing = [r for r in report.rules if r.status in NOT_CHECKED]
    if missing:
        shown = "; ".join(f"{r.rule_id} {r.status.value} ({_inline(r.reason or '')[:100]})"
                          for r in missing[:4])
        more = f"; {len(missing) - 4} more" if len(missing) > 4 else ""
        line += f" Not checked: {shown}{more}."
    return line


def render(report: Report, *, html_name: str | None = None) -> str:
    view = build(report)
    cluster = report.bundle.cluster
    out = [f"### gpu-triage: {_inline(cluster.context or 'cluster')} "
           f"(Kubernetes {_inline(cluster.server_version or 'unknown')})", ""]
    incomplete = view.incomplete()
    if incomplete is not None:
        out += [f"**{incomplete}**", ""]
    out += _verdict(view, report)
    out.append("")
    out += _glance(report, report.overview)
    counts = ", ".join(f"{n} {s}" for s, n in report.summary.model_dump().items() if n)
    out += [f"Findings: {counts or 'none'}.", ""]
    if view.outliers:
        out[-1:] = ["Different from the rest: " + "; ".join(
            f"{g.group.rule_id} on {_nodes(g.group.nodes)} ({len(g.members)} finding(s); "
            f"{g.others} others of the rule share another cause)"
            for g in view.outliers[:4]) + ".", ""]
    rule_groups = sorted([*view.root_groups, *view.standalone_groups],
                         key=lambda g: -g.group.severity.rank)
    tail = []
    if len(rule_groups) > TOP:
        rest = rule_groups[TOP:]
        tail.append(f"… and {len(rest)} more root or standalone problem(s): "
                    + _ids(rest) + ".")
    footer = [_coverage(report)]
    if html_name:
        footer.append(f"Full report with every finding, the node matrix and the timeline: "
                      f"attached `{_inline(html_name)}`.")
    budget = MAX_CHARS - len("\n".join(out + tail + footer)) - 200
    shown = 0
    for group in rule_groups[:TOP]:
        block = _group(group)
        size = len("\n".join(block))
        if shown and size > budget:
            break
        out += block
        budget -= size
        shown += 1
    if shown < min(TOP, len(rule_groups)):
        left = rule_groups[shown:TOP]
        tail.insert(0, "… left out to fit a comment (see the HTML report): "
                    + _ids(left) + ".")
    out += tail
    if tail:
        out.append("")
    out += footer
    return "\n".join(out).rstrip() + "\n"
