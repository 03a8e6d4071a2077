"""Renderers of ``gpu-triage diff``: one module per format, all reading the DiffReport.

Shared helpers live here: how a fact value or a side of the comparison is shown.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from analyzers.models import BundleInfo, DiffReport, FactChange
from reports.view import clean

FORMATS = ("text", "json", "md", "html")
ABSENT = "(absent)"


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
    from reports import diff_text

    return diff_text.render(diff, color=color)


def _json(diff: DiffReport) -> str:
    from reports import diff_json

    return diff_json.render(diff)


def _md(diff: DiffReport) -> str:
    from reports import diff_markdown

    return diff_markdown.render(diff)


def _html(diff: DiffReport, generated_at: datetime | None) -> str:
    from reports import diff_html

    return diff_html.render(diff, generated_at=generated_at)


def value(text: str | None) -> str:
    return ABSENT if text is None else clean(text)


def side(info: BundleInfo) -> str:
    """One line about a compared bundle: path, creation time, layout."""
    created = info.created_at or "creation time unknown"
    return f"{clean(info.path)} (created {clean(created)}, {clean(info.layout)})"


def cluster_name(diff: DiffReport) -> str:
    before, after = diff.before.cluster.context, diff.after.cluster.context
    if before and after and before != after:
        return f"{clean(before)} / {clean(after)}"
    return clean(before or after or "cluster")


def warning(diff: DiffReport) -> str | None:
    if diff.same_cluster is False:
        return ("the two bundles name different cluster contexts; finding ids only match "
                "within one cluster")
    return None


def fact_line(change: FactChange) -> tuple[str, str, str, str]:
    return (clean(change.subject), clean(change.fact), value(change.before), value(change.after))
