"""What the renderers of ``gpu-triage diff`` share: how a fact value, a side of the
comparison and the compared cluster are shown (every bundle string made inert)."""

from __future__ import annotations

from analyzers.results.diff_models import DiffReport, FactChange
from analyzers.results.models import BundleInfo
from reports.view import clean

ABSENT = "(absent)"


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
