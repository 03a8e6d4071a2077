"""``gpu-triage diff BEFORE AFTER``: did the fix work?

Both bundles are analysed with the same rules, then compared finding by finding and
fact by fact (:mod:`analyzers.engine.diff`). Exit 1 when AFTER has NEW findings at or above
``--fail-on``; a finding that only changed does not count.
"""

from __future__ import annotations

from pathlib import Path

import click

from gpu_triage.cli_common import (
    FORMATS,
    SEVERITIES,
    SUFFIXES,
    check_output,
    colour,
    load_rules,
    one_line,
    shown,
    stderr,
    unreadable,
    write_output,
)
from gpu_triage.cli_rules import only_skip_options, resolve
from gpu_triage.exitcodes import Exit, exit_code

EPILOG = ("\b\nExit codes:\n  0  no new finding at or above --fail-on\n"
          "  1  new findings at or above --fail-on\n  2  usage error\n"
          "  3  a bundle cannot be read at all\n  4  unexpected internal error")


@click.command(epilog=EPILOG)
@click.argument("before", metavar="BEFORE", type=click.Path(path_type=Path))
@click.argument("after", metavar="AFTER", type=click.Path(path_type=Path))
@click.option("-f", "--format", "fmt", type=click.Choice(FORMATS),
              help="Output format (default: a terminal summary).")
@click.option("-o", "--output", type=str, help="Write the diff to FILE ('-' for stdout).")
@click.option("--fail-on", type=click.Choice(SEVERITIES), default="high", show_default=True,
              help="Exit 1 when a NEW finding is at or above this severity.")
@click.option("--max-member-mib", type=click.IntRange(1), default=512, show_default=True,
              help="Refuse archive members larger than this.")
@click.option("--max-total-gib", type=click.IntRange(1), default=16, show_default=True,
              help="Stop reading an archive that expands beyond this.")
@only_skip_options
@click.pass_context
def diff(ctx: click.Context, before: Path, after: Path, fmt: str | None, output: str | None,
         fail_on: str, max_member_mib: int, max_total_gib: int, rule_dirs: tuple[Path, ...],
         only: tuple[str, ...], skip: tuple[str, ...]) -> None:
    """Compare two bundles of one cluster: resolved, new, changed findings, moved facts.

    Suppressions do not apply here: a suppressed finding is still there, not fixed.
    """
    from analyzers.engine import analyze, facts_of
    from analyzers.engine.diff import compare
    from bundle import BundleError, Limits, open_bundle
    from reports.diff import render

    choice = resolve(load_rules(rule_dirs), only, skip)
    if output not in (None, "-"):  # refuse a link before the analysis, not after it
        check_output(Path(output))
    limits = Limits(max_member_bytes=max_member_mib << 20, max_total_bytes=max_total_gib << 30)
    reports = []
    try:
        with open_bundle(before, limits) as first, open_bundle(after, limits) as second:
            for opened in (first, second):
                reports.append(analyze(opened, choice.rules,
                                       selection=choice.selection or None))
            # the facts each analysis built, compared as they are (not built again)
            result = compare(reports[0], reports[1], facts_of(first), facts_of(second))
    except BundleError as exc:
        raise unreadable(exc) from None
    warn_if_reversed(reports[0].bundle.created_at, reports[1].bundle.created_at)
    if fmt is None and output not in (None, "-"):
        fmt = SUFFIXES.get(Path(output).suffix.lower(), "text")
    fmt = fmt or "text"
    text = render(result, fmt, color=fmt == "text" and output in (None, "-") and colour())
    if output in (None, "-"):
        click.echo(text, nl=False)
    else:
        write_output(Path(output), text)
        stderr(f"{fmt} diff: {shown(output)}")
    code = exit_code(result.new, fail_on)  # what is still there is not the fix's doing
    if code is not Exit.OK:
        ctx.exit(int(code))


def warn_if_reversed(before: str | None, after: str | None) -> None:
    """A warning on stderr when BEFORE's bundle was created after AFTER's (the arguments
    were likely swapped: the diff would call the fixed findings new). Silent when either
    time is missing or unreadable."""
    from datetime import UTC, datetime

    def parsed(value: str | None) -> datetime | None:
        try:
            stamp = datetime.fromisoformat(value or "")
        except ValueError:
            return None
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)

    first, second = parsed(before), parsed(after)
    if first is not None and second is not None and first > second:
        stderr(f"warning: BEFORE was collected after AFTER ({one_line(before, 40)} > "
               f"{one_line(after, 40)}): are the two bundles swapped?")
