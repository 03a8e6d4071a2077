"""The terminal side of ``gpu-triage analyze`` over many bundles (see :mod:`gpu_triage.batch`):
progress on stderr, one summary line per bundle on stdout, the overall exit code."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import click

from analyzers.selection import Selection
from analyzers.suppress import Suppression
from bundle import Limits
from gpu_triage import batch
from gpu_triage.exitcodes import Exit

DEFAULT_FORMATS = ("html", "json")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def analyze_many(bundles: list[Path], *, fmt: str | None, fail_on: str, limits: Limits,
                 rule_dirs: tuple[Path, ...], selection: Selection,
                 suppressions: tuple[Suppression, ...], today: date, out_dir: Path | None,
                 jobs: int | None) -> int:
    """Analyse ``bundles`` in parallel; print the summary; return the worst exit code."""
    options = batch.Options(out_dir=out_dir or Path("."),
                            formats=(fmt,) if fmt else DEFAULT_FORMATS, fail_on=fail_on,
                            limits=limits, rule_dirs=rule_dirs, selection=selection,
                            suppressions=suppressions, today=today)
    planned = batch.jobs_for(bundles)
    count = batch.workers(jobs, len(planned))
    click.echo(f"analysing {len(planned)} bundle(s) with {count} worker process(es)", err=True)

    def progress(done: int, total: int, outcome: batch.Outcome) -> None:
        record = outcome.record
        state = record.error or f"exit {record.exit_code}"
        click.echo(f"[{done}/{total}] {_clean(record.bundle)}: {_clean(state)}", err=True)
        for note in outcome.notes:
            click.echo(f"  {_clean(note)}", err=True)

    result = batch.run(planned, options, jobs_limit=jobs, progress=progress)
    width = max(len(_clean(o.record.bundle)) for o in result.outcomes)
    click.echo(f"{'BUNDLE':<{width}}  {'LAYOUT':<23} CRIT HIGH  MED  LOW INFO  EXIT")
    for outcome in result.outcomes:
        r = outcome.record
        if r.error is not None:
            click.echo(f"{_clean(r.bundle):<{width}}  {_clean(r.error)[:60]:<48}  {r.exit_code:>4}")
            continue
        click.echo(f"{_clean(r.bundle):<{width}}  {_clean(r.layout or ''):<23} {r.critical:>4} "
                   f"{r.high:>4} {r.medium:>4} {r.low:>4} {r.info:>4}  {r.exit_code:>4}")
    click.echo(f"index: {result.index}", err=True)
    return result.exit_code if result.outcomes else int(Exit.OK)


def _clean(text: str) -> str:
    """One terminal-safe line: control characters (escapes, newlines) become spaces."""
    return " ".join(_CONTROL.sub(" ", text).split())[:300]
