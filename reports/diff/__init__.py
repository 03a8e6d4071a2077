"""Renderers of ``gpu-triage diff``: one module per format, all reading the DiffReport.

This module picks the renderer; what they share (how a fact value or a side of the
comparison is shown) is in :mod:`reports.diff.view`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from analyzers.results.diff_models import DiffReport

FORMATS = ("text", "json", "md", "html")


def render(diff: DiffReport, fmt: str, *, color: bool = False,
           generated_at: datetime | None = None) -> str:
    """Render ``diff`` in one of FORMATS; each renderer is imported only when used."""
    renderers: dict[str, Callable[[], str]] = {
        "text": lambda: _text(diff, color),
        "json": lambda: _json(diff),
        "md": lambda: _md(diff),
        "html": lambda: _html(diff, generated_at),
    }
    if fmt not in renderers:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return renderers[fmt]()


def _text(diff: DiffReport, color: bool) -> str:
    from reports.diff import text as diff_text

    return diff_text.render(diff, color=color)


def _json(diff: DiffReport) -> str:
    from reports.diff import jsonfmt as diff_json

    return diff_json.render(diff)


def _md(diff: DiffReport) -> str:
    from reports.diff import markdown as diff_markdown

    return diff_markdown.render(diff)


def _html(diff: DiffReport, generated_at: datetime | None) -> str:
    from reports.diff import html as diff_html

    return diff_html.render(diff, generated_at=generated_at)
