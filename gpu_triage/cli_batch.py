"""The terminal side of ``gpu-triage analyze`` over many bundles (see :mod:`gpu_triage.batch`):
progress on stderr, one summary line per bundle on stdout, the overall exit code."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import click

from analyzers.engine.selection import Selection
from analyzers.engine.suppress import Suppression
from bundle import Limits
from gpu_triage import batch
from gpu_triage.cli_common import output_failure
from gpu_triage.exitcodes import Exit
from gpu_triage.outputs import OutputError
from reports.terminal import line, name

DEFAULT_FORMATS = ("html", "json")


def analyze_many(bundles: list[Path], *, formats: tuple[str, ...], fail_on: str, limits: Limits,
                 rule_dirs: tuple[Path, ...], selection: Selection,
                 suppressions: tuple[Suppression, ...], today: date, out_dir: Path | None,
                 jobs: int | None) -> int:
    """Analyse ``bundles`` in parallel; print the summary; return the worst exit code."""
    options = batch.Options(out_dir=out_dir or Path("."),
                            formats=formats or DEFAULT_FORMATS, fail_on=fail_on,
                            limits=limits, rule_dirs=rule_dirs, selection=selection,
                            suppressions=suppressions, today=today)
    planned = batch.jobs_for(bundles)
    count = batch.workers(jobs, len(planned))
    click.echo(f"analysing {len(planned)} bundle(s) with {count} worker process(es)", err=True)

    def progress(done: int, total: int, outcome: batch.Outcome) -> None:
        record = outcome.record
        state = record.error or f"exit {record.exit_code}"
        click.echo(f"[{done}/{total}] {name(record.bundle)}: {_clean(state)}", err=True)
        for note in outcome.notes:
            click.echo(f"  {_clean(note)}", err=True)

    try:
        result = batch.run(planned, options, jobs_limit=jobs, progress=progress)
    except OutputError as exc:
        raise output_failure(exc) from None
    width = max(len(name(o.record.bundle)) for o in result.outcomes)
    click.echo(f"{'BUNDLE':<{width}}  {'LAYOUT':<23} CRIT HIGH  MED  LOW INFO  EXIT")
    for outcome in result.outcomes:
        r = outcome.record
        if r.error is not None:
            click.echo(f"{name(r.bundle):<{width}}  {_clean(r.error)[:60]:<48}  {r.exit_code:>4}")
            continue
        click.echo(f"{name(r.bundle):<{width}}  {_clean(r.layout or ''):<23} {r.critical:>4} "
                   f"{r.high:>4} {r.medium:>4} {r.low:>4} {r.info:>4}  {r.exit_code:>4}")
    click.echo(f"index: {name(result.index)}", err=True)
    return result.exit_code if result.outcomes else int(Exit.OK)


def _clean(text: str) -> str:
    """Bundle text (an error, a layout) as one terminal-safe line."""
    return line(text, 300)
