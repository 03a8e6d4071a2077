"""Renderers: one module per output format, all reading the same Report model."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from analyzers.models import Report

FORMATS = ("text", "json", "md", "html")


def render(report: Report, fmt: str, *, color: bool = False, html_name: str | None = None,
           generated_at: datetime | None = None, inspect: bool = False) -> str:
    """Render ``report`` in one of FORMATS; each renderer is imported only when used.
    ``inspect``: text and HTML add each finding's kubectl command for ``serve``."""
    renderers: dict[str, Callable[[], str]] = {
        "text": lambda: _text(report, color, inspect),
        "json": lambda: _json(report),
        "md": lambda: _md(report, html_name),
        "html": lambda: _html(report, generated_at, inspect),
    }
    if fmt not in renderers:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return renderers[fmt]()


def _text(report: Report, color: bool, inspect: bool) -> str:
    from reports import text

    return text.render(report, color=color, inspect=inspect)


def _json(report: Report) -> str:
    from reports import jsonfmt

    return jsonfmt.render(report)


def _md(report: Report, html_name: str | None) -> str:
    from reports import markdown

    return markdown.render(report, html_name=html_name)


def _html(report: Report, generated_at: datetime | None, inspect: bool) -> str:
    from reports import html

    return html.render(report, generated_at=generated_at, inspect=inspect)
