"""Every sample's JSON and HTML report is byte-identical to the stored snapshot.

The guard for refactors (issue 26): moving code must not move a byte of any report.
An intended report change rewrites the snapshot: ``python tests/report_snapshot.py --write``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import report_snapshot  # noqa: E402


def test_every_sample_report_matches_the_snapshot() -> None:
    stored = json.loads(report_snapshot.SNAPSHOT.read_text(encoding="utf-8"))
    now = report_snapshot.render()
    assert len(now) == 2 * len(report_snapshot.bundles()) >= 60
    assert report_snapshot.differences(stored, now) == []


def test_the_check_notices_a_changed_report() -> None:
    stored = {"a.json": "1", "a.html": "2", "b.json": "3"}
    now = {"a.json": "1", "a.html": "9", "c.json": "4"}
    assert report_snapshot.differences(stored, now) == [
        "a.html: differs", "b.json: missing now", "c.json: new"]


def test_only_the_generation_stamp_is_blanked() -> None:
    text = ('"generated_at": "2026-12-06T05:13:08+00:00", "created": "2026-11-26T15:10:00Z"'
            " · generated 2026-12-06 05:13:08 UTC")
    assert report_snapshot.strip(text) == (
        '"generated_at": <stamp>, "created": "2026-11-26T15:10:00Z" · generated <stamp>')
