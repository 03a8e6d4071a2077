"""The shared journal scan (analyzers/facts/journals.py) keeps what its readers need.

Readers of ``scan.lifecycle`` (RT004's restart patterns, the timeline's unit words)
see only the entries ``LIFECYCLE`` keeps, so every line their patterns can match must
be kept: checked with lines generated from the patterns themselves. On the committed
samples, the scan gives the same answers as walking every entry.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzers import signatures, timeline
from analyzers.facts.journals import LIFECYCLE, _maybe_lifecycle, journal_scan
from analyzers.rules import rt_service
from bundle import open_bundle
from bundle.kernel import kernel_lines_from_journal

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
BUNDLES = sorted(p.parent for p in SAMPLES.glob("*/manifest.json"))

READER_PATTERNS: list[re.Pattern[str]] = [
    rt_service._KILLED_HUP, rt_service._SENT_HUP, rt_service._SCHEDULED,
    rt_service._STARTED, rt_service._FAILED, rt_service._GAVE_UP,
    *(pattern for pattern, _, _ in timeline._UNIT_WORDS),
]


@pytest.mark.parametrize("pattern", READER_PATTERNS, ids=lambda p: p.pattern[:40])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_every_life_cycle_line_a_reader_wants_is_kept(pattern: re.Pattern[str],
                                                      data: st.DataObject) -> None:
    line = data.draw(st.from_regex(pattern))
    assert pattern.search(line)
    assert _maybe_lifecycle(line) and LIFECYCLE.search(line), line


def test_routine_lines_are_not_life_cycle_lines() -> None:
    for line in ('time="2026-11-20T09:28:16Z" level=info msg="StartContainer for \\"abc\\" '
                 'returns successfully"',
                 'I1120 09:28:31.123456    2345 kubelet.go:2461] "SyncLoop (PLEG): event for '
                 'pod" event={"Type":"ContainerStarted"}'):
        assert not (_maybe_lifecycle(line) and LIFECYCLE.search(line))


@pytest.mark.parametrize("sample", BUNDLES, ids=lambda p: p.name)
def test_the_scan_answers_like_a_walk_over_every_entry(sample: Path) -> None:
    with open_bundle(sample) as bundle:
        for node in bundle.node_names:
            for unit in ("containerd", "kubelet"):
                entries = bundle.node(node).journal(unit)
                scan = journal_scan(bundle, node, unit)
                path = f"nodes/{node}/journal/{unit}.jsonl"
                assert list(scan.kernel) == kernel_lines_from_journal(
                    ((e.line, e.fields) for e in entries), path)
                assert rt_service.restarts(list(scan.lifecycle)) == rt_service.restarts(entries)
                assert list(timeline.containerd_records(node, path, scan.lifecycle)) == \
                    list(timeline.containerd_records(node, path, entries))
                walked = [(e, tuple(found)) for e in entries
                          if (found := signatures.match(e.message, f"journal:{unit}"))]
                assert list(scan.matches) == walked
                pids = [pid for ident, pid in scan.pids if ident.startswith("containerd")]
                assert rt_service._pids(scan.pids) == list(dict.fromkeys(pids))
