"""JSON output: the findings document, schema version 1."""

from __future__ import annotations

import orjson

from analyzers.results.models import Report


def render(report: Report) -> str:
    data = report.model_dump(mode="json")
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"
