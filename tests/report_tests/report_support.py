"""Helpers shared by the report tests: paths, the fixed clock, golden files.

Golden files live in ``tests/report_tests/golden/``. After an intended change to the HTML view
model, the Overview or the Markdown, regenerate them and review the diff::

    GPU_TRIAGE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/report_tests
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.results.models import Report
from bundle import open_bundle

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
OUTPUT = ROOT / "tests" / "output"
GENERATED = datetime(2026, 11, 29, 15, 0, 0, tzinfo=UTC)
UPDATE = os.environ.get("GPU_TRIAGE_UPDATE_GOLDEN") == "1"


def check_golden(name: str, actual: str) -> None:
    """Compare ``actual`` with ``golden/<name>``; rewrite it when updating goldens."""
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"missing golden file {path}; run with GPU_TRIAGE_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, (f"{name} differs from its golden file; if the change is "
                                "intended, rerun with GPU_TRIAGE_UPDATE_GOLDEN=1 and review "
                                "the diff")


def dump(data: Any) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def analyse_dir(path: Path) -> Report:
    with open_bundle(path) as opened:
        return analyze(opened, discover().rules)
