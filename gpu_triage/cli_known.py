"""The known-issues base on the command line: ``gpu-triage explain KI-…``,
``gpu-triage rules --known-issues`` and ``gpu-triage rules test --known-issues PATH``.

Like the other command modules it imports the analysis only inside the functions that
use it, prints every text that comes from a data file through the terminal sanitiser,
and turns bad input into :class:`gpu_triage.cli_common.Failure`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gpu_triage.cli_common import Failure, one_line, shown
from gpu_triage.exitcodes import Exit

if TYPE_CHECKING:
    from analyzers.knowledge.known_issues import Issue
    from analyzers.knowledge.known_issues_check import Located

#: What an ID must start with to be a known-issue entry rather than a rule.
KI_PREFIX = "KI-"
#: Text width of the wrapped cause and fix.
_WIDTH = 88
ISSUE_PATH = click.Path(exists=True, path_type=Path)


def is_known_issue(ident: str) -> bool:
    return ident.upper().startswith(KI_PREFIX)


def _load(paths: Sequence[Path]) -> list[Located]:
    """The entries of the files ``paths`` name; a file that cannot be used is a usage
    error naming the file and the entry."""
    from analyzers.knowledge.known_issues import KnownIssueError
    from analyzers.knowledge.known_issues_check import issue_paths, located

    try:
        return located([file for path in paths for file in issue_paths(path)])
    except KnownIssueError as exc:
        raise Failure(f"known issues: {exc}", Exit.USAGE) from None


def _where(issue: Issue) -> str:
    """The source kind and its location keys, in words."""
    keys = [f"{name} {value}" for name in ("container", "reason", "object", "unit", "path", "key")
            if (value := getattr(issue, name)) is not None]
    if issue.previous:
        keys.append("the previous run's log")
    return issue.source.value + (f" ({'; '.join(keys)})" if keys else "")


def _conditions(issue: Issue) -> str:
    """The context conditions, or a word that there are none."""
    parts = []
    for name, value in issue.context.model_dump(exclude_defaults=True).items():
        shown_value = ", ".join(value) if isinstance(value, (list, tuple)) else str(value)
        parts.append(f"{name.replace('_', '-')} {shown_value}")
    return "; ".join(parts) if parts else "none (holds wherever the line appears)"


def _paragraph(text: str) -> list[str]:
    return textwrap.wrap(one_line(text, None), _WIDTH, initial_indent="  ",
                         subsequent_indent="  ")


def explain_issue(ident: str, extra: Sequence[Path] = ()) -> None:
    """Print one entry (from ``extra`` files first, then the packaged base)."""
    from analyzers.knowledge.known_issues import KnownIssueError
    from analyzers.knowledge.known_issues_check import find
    from reports.terminal import lines

    extra_entries = _load(extra)
    try:
        entry = find(ident, extra_entries)
    except KnownIssueError as exc:  # the packaged base itself
        raise Failure(f"packaged known issues: {exc}", Exit.USAGE) from None
    if entry is None:
        raise Failure(f"unknown known issue {ident!r}; list them with `gpu-triage rules "
                      "--known-issues`", Exit.USAGE)
    issue = entry.issue
    needles = " and ".join(repr(n) for n in issue.needles)
    match = f"{needles} in one line (case-{issue.case.value})"
    out = [f"{issue.id} · known issue · {', '.join(issue.components)} · "
           f"{shown(entry.path.name)}", "", one_line(issue.title, None), "",
           f"Matched in: {one_line(_where(issue), None)}",
           f"Line holds: {one_line(match, None)}"]
    if issue.regex is not None:
        out.append(f"Regex: {one_line(issue.regex, None)}")
    out += [f"Conditions: {one_line(_conditions(issue), None)}", "", "Cause:",
            *_paragraph(issue.cause), "", "Fix:", *_paragraph(issue.fix)]
    if issue.commands:
        out += ["", "Commands:", *(f"  {one_line(c, None)}" for c in issue.commands)]
    out += ["", "Example line(s):", *(f"  {lines(e)}" for e in issue.examples),
            "", "Sources:", *(f"  {one_line(url, None)}" for url in issue.sources),
            "", "Established:", *_paragraph(issue.established)]
    click.echo("\n".join(out))


def list_issues(components: Sequence[str], prefixes: Sequence[str]) -> None:
    """One line per packaged entry: ID, primary component, title, source kind; only the
    entries of ``components`` (any of an entry's) and ID ``prefixes``, when given."""
    from analyzers.knowledge.known_issues import KnownIssueError, load

    try:
        issues = load()
    except KnownIssueError as exc:
        raise Failure(f"known issues: {exc}", Exit.USAGE) from None
    wanted = {c.lower() for c in components}
    starts = tuple(p.upper() if is_known_issue(p) else f"{KI_PREFIX}{p.upper()}"
                   for p in prefixes)
    for issue in sorted(issues, key=lambda item: item.id):
        if wanted and wanted.isdisjoint(issue.components):
            continue
        if starts and not issue.id.startswith(starts):
            continue
        click.echo(f"{issue.id:<17} {issue.components[0]:<18} {one_line(issue.title)}  "
                   f"[{issue.source.value}]")


def test_issues(paths: Sequence[Path]) -> tuple[int, int]:
    """Check the entries in ``paths`` against the packaged base, print PASS/FAIL per
    entry, and return (passed, failed). Files that cannot be loaded: exit 2."""
    from analyzers.knowledge.known_issues import KnownIssueError
    from analyzers.knowledge.known_issues_check import check

    tested = _load(paths)
    try:
        verdicts = check(tested)
    except (KnownIssueError, OSError) as exc:  # the packaged base itself, or ids.txt
        raise Failure(f"packaged known issues: {exc}", Exit.USAGE) from None
    for verdict in verdicts:
        label = f"{verdict.entry.issue.id} ({shown(verdict.entry.path.name)})"
        click.echo(f"{'PASS' if verdict.passed else 'FAIL'}  {label}")
        for text in (*verdict.problems, *(f"note: {n}" for n in verdict.notes)):
            click.echo(f"      {one_line(text, None)}")
    failed = sum(not v.passed for v in verdicts)
    return len(verdicts) - failed, failed
