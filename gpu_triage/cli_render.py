"""``gpu-triage render REPORT.json -f FORMAT``: any format from a findings JSON already
made, without the bundle. The JSON carries everything the renderers read (the report
model, with the moment of the analysis), so what this writes is byte for byte what
``analyze`` wrote or would have written in that format."""

from __future__ import annotations

from pathlib import Path

import click

from gpu_triage.cli_common import (
    FORMATS,
    Failure,
    colour,
    shown,
    stderr,
    text_width,
    write_output,
)
from gpu_triage.exitcodes import Exit


@click.command()
@click.argument("report_path", metavar="REPORT.json", type=click.Path(path_type=Path))
@click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), required=True,
              help="The format to render.")
@click.option("-o", "--output", type=str, help="Write to FILE ('-' for stdout, the default).")
def render(report_path: Path, fmt: str, output: str | None) -> None:
    """Render a saved findings JSON (analyze -f json) in another format."""
    from pydantic import ValidationError

    from analyzers.results.models import Report
    from gpu_triage.bundle_paths import report_stem
    from reports import render as rendered

    try:
        data = report_path.read_bytes()
    except OSError as exc:
        raise Failure(f"cannot read {shown(report_path)}: {exc.strerror}", Exit.USAGE) from None
    try:
        report = Report.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "/".join(str(p) for p in first.get("loc", ()))
        raise Failure(f"{shown(report_path)} is not a gpu-triage findings JSON "
                      f"({where or 'document'}: {first.get('msg', 'invalid')})",
                      Exit.USAGE) from None
    html_name = f"{report_stem(Path(report.bundle.path))}.report.html"
    to_stdout = output in (None, "-")
    text = rendered(report, fmt, html_name=html_name,
                    color=fmt == "text" and to_stdout and colour(),
                    width=text_width() if to_stdout else None)
    if to_stdout:
        click.echo(text, nl=False)
        return
    assert output is not None
    write_output(Path(output), text)
    stderr(f"{fmt} report: {shown(output)}")
