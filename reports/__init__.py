"""Renderers: one module per output format, all reading the same Report model."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from analyzers.results.models import Report

FORMATS = ("text", "json", "md", "html", "jira", "zendesk")


def render(report: Report, fmt: str, *, color: bool = False, html_name: str | None = None,
           generated_at: datetime | None = None, width: int | None = None,
           inspect: bool = False) -> str:
    """Render ``report`` in one of FORMATS; each renderer is imported only when used.
    ``generated_at`` defaults to the report's own moment (``Report.generated_at``), so a
    report rendered again from its JSON is the same, byte for byte; ``width``: the
    terminal summary's line width (default 80); ``inspect``: text and HTML add each
    finding's kubectl command for ``serve``."""
    if generated_at is None and report.generated_at:
        generated_at = datetime.fromisoformat(report.generated_at)
    renderers: dict[str, Callable[[], str]] = {
        "text": lambda: _text(report, color, width, inspect),
        "json": lambda: _json(report),
        "md": lambda: _md(report, html_name),
        "html": lambda: _html(report, generated_at, inspect),
        "jira": lambda: _ticket(report, "jira", html_name),
        "zendesk": lambda: _ticket(report, "zendesk", html_name),
    }
    if fmt not in renderers:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return renderers[fmt]()


def _text(report: Report, color: bool, width: int | None, inspect: bool) -> str:
    from reports import text

    return text.render(report, color=color, width=width, inspect=inspect)


def _json(report: Report) -> str:
    from reports import jsonfmt

    return jsonfmt.render(report)


def _md(report: Report, html_name: str | None) -> str:
    from reports import markdown

    return markdown.render(report, html_name=html_name)


def _html(report: Report, generated_at: datetime | None, inspect: bool) -> str:
    from reports import html

    return html.render(report, generated_at=generated_at, inspect=inspect)


def _ticket(report: Report, kind: str, html_name: str | None) -> str:
    from reports import ticket

    return ticket.render(report, kind, html_name=html_name)
