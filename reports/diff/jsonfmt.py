"""The diff as JSON: the DiffReport model (``kind: gpu-triage-diff``)."""

from __future__ import annotations

import orjson

from analyzers.results.diff_models import DiffReport


def render(diff: DiffReport) -> str:
    data = diff.model_dump(mode="json")
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"
