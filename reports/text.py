"""The terminal summary: root causes first, then the rest, then what was checked."""

from __future__ import annotations

import re
import textwrap
from collections import Counter

import click

from analyzers.results.models import Finding, Report, Severity
from reports import terminal
from reports.inspect import command as inspect_command
from reports.inspect import preamble
from reports.view import (
    CauseGroup,
    View,
    at_least,
    build,
    cause_label,
    first_command,
    lower_bounds,
)

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


def _labelled(f: Finding, root: bool, summary: str) -> str:
    label = cause_label(f, root)
    return f"{label}: {summary}" if label else summary


def _finding(f: Finding, view: View, color: bool, indent: str = "",
             root: bool = False, inspect: bool = False) -> list[str]:
    lines = [f"{indent}{_sev(f.severity, color)} {_one(f.rule_id)}  {_one(f.title)}",
             f"{indent}         {_labelled(f, root, _one(f.summary))}"]
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
    return lines + _inspect(f, f"{indent}         ", inspect)


def _inspect(f: Finding, pad: str, inspect: bool) -> list[str]:
    shown = inspect_command(f) if inspect else None
    return [f"{pad}inspect: {_one(shown)}"] if shown else []


def _rules(findings: tuple[Finding, ...]) -> str:
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.rule_id] = counts.get(finding.rule_id, 0) + 1
    return ", ".join(f"{_one(rule)} ×{n}" if n > 1 else _one(rule) for rule, n in counts.items())


def _group(item: CauseGroup, view: View, color: bool, indent: str = "  ",
           root: bool = False, inspect: bool = False) -> list[str]:
    """A cause group: one finding as before; several as one entry with its node count,
    the shared summary (``<node>`` standing for each node), the nodes, and the first
    node's evidence and first step."""
    if len(item.members) == 1:
        lines = _finding(item.first, view, color, indent, root, inspect)
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
             f"{pad}{_labelled(first, root, _one(group.summary))}",
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
    return lines + _inspect(first, pad, inspect)


def render(report: Report, *, color: bool = False, width: int | None = None,
           inspect: bool = False) -> str:
    """The summary, each line wrapped to ``width`` columns (80 by default) at spaces only,
    so that a path or a command is never cut; coloured after wrapping."""
    lines = _lines(report, build(report), inspect)
    wrapped = [piece for text in lines for piece in _wrap(text, width or WIDTH)]
    if color:
        wrapped = [_colour(text) for text in wrapped]
    return "\n".join(wrapped) + "\n"


WIDTH = 80
_TITLES = ("ROOT CAUSES", "OTHER FINDINGS")
_LABEL = re.compile(r"^(\s*)(CRITICAL|HIGH|MEDIUM|LOW|INFO)( +)")
_STEP = re.compile(r"^((\s*)(?:first step(?: \([^)]*\))?|inspect):) (.*)$")
_QUOTED = re.compile(r"`[^`\n]+`")


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken at spaces only; a word
    longer than the line (a path, a command) stands whole on a line of its own. Lines
    after the first keep the indentation of the text under its label."""
    if len(text) <= width:
        return [text]
    step = _STEP.match(text)
    if step is not None:  # a command to copy: on a line of its own, never broken
        return [step[1].rstrip(), " " * len(step[2]) + step[3]]
    label = _LABEL.match(text)
    indent = " " * (label.end() if label else len(text) - len(text.lstrip(" ")))
    if len(indent) > width // 2:
        indent = indent[: width // 2]
    wrapper = textwrap.TextWrapper(width=width, subsequent_indent=indent,
                                   break_long_words=False, break_on_hyphens=False,
                                   drop_whitespace=True)
    # A `quoted command`, and a count after its rule ("RT007 ×2"), is one word: its
    # spaces are held while wrapping (bundle text reaches here without control
    # characters, so NUL cannot stand in the text).
    held = _QUOTED.sub(lambda m: m[0].replace(" ", "\0"), text).replace(" ×", "\0×")
    return [line.replace("\0", " ") for line in wrapper.wrap(held)] or [text]


def _colour(text: str) -> str:
    if text in _TITLES:
        return click.style(text, bold=True)
    if text.startswith("INCOMPLETE ANALYSIS"):
        return click.style(text, fg="red", bold=True)
    label = _LABEL.match(text)
    if label is None or len(label[1]) > 4:  # an entry's first line, not a wrapped one
        return text
    return f"{label[1]}{_sev(Severity(label[2].lower()), True)} {text[label.end():]}"


def _lines(report: Report, view: View, inspect: bool) -> list[str]:
    info = report.bundle
    cluster = info.cluster
    out = [
        f"gpu-triage {report.tool.version} · {_one(cluster.context or 'cluster')} "
        f"{_one(cluster.server_version or '')} · bundle created "
        f"{_one(info.created_at or 'unknown')}",
        f"{at_least(report)}{info.nodes} nodes, {info.gpu_nodes} GPU nodes · "
        + ", ".join(f"{n} {s}" for s, n in report.summary.model_dump().items() if n),
    ]
    incomplete = view.incomplete()
    if incomplete is not None:
        out.append(incomplete)
    if lower_bounds(report):
        out.append(lower_bounds(report))
    if info.layout != "gpu-triage v1":  # a foreign layout (bundle.layouts) read as format v1
        out.append(f"layout: {_one(info.layout)}; what it does not collect is skipped, "
                   "see Rules below")
    if report.suppressed:
        out.append(f"{len(report.suppressed)} finding(s) suppressed with a recorded "
                   "reason (see the JSON or HTML report)")
    if inspect and report.findings:
        out.append(_one(preamble(info.path)))
    out.append("")
    if view.verdict is None:
        out.append(("No problems found by the rules that completed. Checked: "
                    if incomplete else "No problems found. Checked: ")
                   + ", ".join(_one(r.rule_id) for r in report.rules
                               if r.status.value == "passed"))
    # info-only findings (context, such as a known issue beside the rule that explains
    # it) are counted on one line: the summary stays a screen
    context = [g for g in view.standalone_groups if g.group.severity is Severity.INFO]
    others = [g for g in view.standalone_groups if g.group.severity is not Severity.INFO]
    for title, items in (("ROOT CAUSES", list(view.root_groups)), ("OTHER FINDINGS", others)):
        if not items:
            continue
        out.append(title)
        for item in items:
            out.extend(_group(item, view, False, root=title == "ROOT CAUSES", inspect=inspect))
        out.append("")
    if context:
        kinds = Counter(g.group.rule_id for g in context)
        out.append(f"{len(context)} context finding(s) at info ("
                   + ", ".join(f"{rule} ×{n}" if n > 1 else rule
                               for rule, n in sorted(kinds.items()))
                   + "); see the HTML or JSON report.")
    # An outlier says so in its own entry ("differs from the largest ... group"), after
    # the root causes: no separate line names it a second time.
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
    return out
