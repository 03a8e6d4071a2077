"""The shared journal scan (analyzers/facts/journals.py) keeps what its readers need.

Readers of ``scan.lifecycle`` (RT004's restart patterns, the timeline's unit words)
see only the entries ``LIFECYCLE`` keeps, so every line their patterns can match must
be kept: checked with lines generated from the patterns themselves.

The scan asks its questions of columns and of all messages joined, and builds entries
only for the lines it picks. It must answer exactly like a walk over every parsed entry
(:func:`_walk`, the way the readers used to read): checked on the committed samples, on
hand-made hostile journals and on generated ones mixing escapes, byte-array messages,
case and script variants, needles split across fields, line-break variants and bad lines.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kit.bundles import write_dir

from analyzers.engine import timeline
from analyzers.facts.journals import (
    LIFECYCLE,
    JournalScan,
    journal_scan,
    lifecycle_rows,
    scan_records,
    signature_hits,
)
from analyzers.knowledge import signatures
from analyzers.rules.rt import _service as rt_service
from bundle import open_bundle
from bundle.kernel import kernel_lines_from_journal
from bundle.textfiles import journal_records, parse_journal

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
BUNDLES = sorted(p.parent for p in SAMPLES.glob("*/manifest.json"))
PATH = "nodes/gpu-a/journal/containerd.jsonl"

READER_PATTERNS: list[re.Pattern[str]] = [
    rt_service._KILLED_HUP, rt_service._SENT_HUP, rt_service._SCHEDULED,
    rt_service._STARTED, rt_service._FAILED, rt_service._GAVE_UP,
    *(pattern for pattern, _, _ in timeline._UNIT_WORDS),
]


def _walk(text: str, path: str, source: str) -> tuple[Any, ...]:
    """What the scan must find, read the slow way: every entry of parse_journal."""
    entries, problems = [], []
    for entry, line, error in parse_journal(text):
        if entry is None:
            problems.append((line, error))
        else:
            entries.append(entry)
    kernel = kernel_lines_from_journal(((e.line, e.fields) for e in entries), path)
    matches = [(e, tuple(found)) for e in entries if (found := signatures.match(e.message, source))]
    lifecycle = [e for e in entries if LIFECYCLE.search(e.message)]
    pids = dict.fromkeys((str(e.fields.get("SYSLOG_IDENTIFIER", "")), e.pid)
                         for e in entries if e.pid is not None)
    return tuple(kernel), tuple(matches), tuple(lifecycle), tuple(pids), problems


def _scan(text: str, path: str, source: str) -> tuple[Any, ...]:
    records, problems = journal_records(text)
    scan = scan_records(records, path, source)
    return scan.kernel, scan.matches, scan.lifecycle, scan.pids, problems


def _line(**fields: Any) -> str:
    return orjson.dumps(fields).decode()


# --------------------------------------------------------------------- life-cycle


@pytest.mark.parametrize("pattern", READER_PATTERNS, ids=lambda p: p.pattern[:40])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_every_life_cycle_line_a_reader_wants_is_kept(pattern: re.Pattern[str],
                                                      data: st.DataObject) -> None:
    line = data.draw(st.from_regex(pattern))
    assert pattern.search(line)
    assert LIFECYCLE.search(line), line
    # Hypothesis may draw noise that is itself a life-cycle line (it reuses strings it
    # has seen); such noise would rightly be kept, so it is not noise.
    noise = data.draw(st.lists(st.text().filter(lambda t: not LIFECYCLE.search(t)),
                               max_size=3))
    assert lifecycle_rows([*noise, line, *noise]) == [len(noise)], line


def test_routine_lines_are_not_life_cycle_lines() -> None:
    lines = ['time="2026-11-20T09:28:16Z" level=info msg="StartContainer for \\"abc\\" '
             'returns successfully"',
             'I1120 09:28:31.123456    2345 kubelet.go:2461] "SyncLoop (PLEG): event for '
             'pod" event={"Type":"ContainerStarted"}',
             "x\nStarted containerd.service"]  # "Started" only at the start of a message
    assert lifecycle_rows(lines) == []


def test_life_cycle_words_in_any_case_and_script() -> None:
    messages = [
        "STARTED CONTAINERD.SERVICE - containerd container runtime.",
        "İİİİ noise whose lower case is longer",  # shifts every later offset
        "containerd.service: ſent signal SIGHUP to main process 7",  # re.I: ſ is s
        "containerd.service: Failed with result 'signal'.",
        "stopping containerd.service...",
        "stop ping",
        "Started",  # no space after the word: not a life-cycle line
        "",
        "main PROCESS EXITED, code=killed, status=1/HUP",
    ]
    assert lifecycle_rows(messages) == [i for i, m in enumerate(messages) if LIFECYCLE.search(m)]
    assert lifecycle_rows(messages) == [0, 2, 3, 4, 8]


def test_signature_needles_are_found_in_the_right_message() -> None:
    source = "journal:containerd"
    messages = ["ꞵꞵꞵ İ", "no needle here", "level=error msg=\"failed to load plugin "
                "io.containerd.grpc.v1.cri\" error=\"invalid plugin config\"",
                "NVIDIA-CONTAINER-CLI: INITIALIZATION ERROR: NVML ERROR: DRIVER/LIBRARY "
                "VERSION MISMATCH", "failed to load\nplugin"]
    walked = [(i, tuple(found)) for i, m in enumerate(messages)
              if (found := signatures.match(m, source))]
    assert signature_hits(messages, source) == walked
    assert [i for i, _ in walked] == [2, 3]


# ----------------------------------------------------------------- hostile journals

CONTAINERD = {"SYSLOG_IDENTIFIER": "containerd", "_PID": "2301", "_TRANSPORT": "stdout"}
SYSTEMD = {"SYSLOG_IDENTIFIER": "systemd", "_PID": "1", "_TRANSPORT": "journal"}
KERNEL = {"SYSLOG_IDENTIFIER": "kernel", "_TRANSPORT": "kernel",
          "__REALTIME_TIMESTAMP": "1795960000000000", "_SOURCE_MONOTONIC_TIMESTAMP": "99200000"}
XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."

HOSTILE_LINES = [
    _line(**SYSTEMD, MESSAGE="Started containerd.service - containerd container runtime.",
          __REALTIME_TIMESTAMP="1795960000000000"),
    # escapes: quotes, backslashes, slashes and \u escapes that spell needles
    '{"MESSAGE":"msg=\\"Started\\" \\\\ failed with result \'signal\'.","_PID":"1"}',
    '{"MESSAGE":"\\u0053tarted containerd.service","SYSLOG_IDENTIFIER":"systemd","_PID":"1"}',
    '{"MESSAGE":"nvidia-container-cli: driver\\/library version mismatch","_PID":"2301"}',
    '{"MESSAGE":"' + XID + '","_TRANSPORT":"kern\\u0065l"}',
    '{"MESSAGE":"x","SYSLOG_IDENTIFIER":"containerd\\u0000","_PID":"\\u0032301"}',
    # journald's byte arrays, valid and not UTF-8, and other message types
    _line(**SYSTEMD, MESSAGE=list(b"Started containerd.service")),
    _line(**KERNEL, MESSAGE=list(XID.encode()) + [0xff]),
    _line(MESSAGE=[83, 116, 999], _PID="5"),
    _line(MESSAGE=None, _PID="6"),
    _line(MESSAGE=12, SYSLOG_IDENTIFIER=None, _PID="7"),
    _line(MESSAGE={"Started ": 1}),
    # upper case and other scripts
    _line(**SYSTEMD, MESSAGE="CONTAINERD.SERVICE: SCHEDULED RESTART JOB, RESTART COUNTER IS AT 3."),
    _line(**CONTAINERD, MESSAGE="FAILED TO LOAD PLUGIN IO.CONTAINERD.GRPC.V1.CRI"),
    _line(**SYSTEMD, MESSAGE="İ containerd.service: ſent signal SIGHUP to main process 2301"),
    _line(**CONTAINERD, MESSAGE="\u212aelvin and ΑΣ ς sigma"),
    # needles split across fields, lines and messages
    _line(**CONTAINERD, MESSAGE="failed with", CODE_FUNC="result 'signal'"),
    _line(**CONTAINERD, MESSAGE="noise\nStarted containerd.service"),
    _line(**CONTAINERD, MESSAGE="unresolvable\ncdi device"),
    # repeated fields, duplicate keys, odd PIDs and identifiers
    _line(MESSAGE=XID, _TRANSPORT=["journal", "kernel"]),
    _line(MESSAGE=XID, SYSLOG_IDENTIFIER=["kernel"]),
    '{"MESSAGE":"noise","MESSAGE":"Stopped containerd.service","_PID":"1","_PID":"0001"}',
    _line(MESSAGE="a", SYSLOG_IDENTIFIER=["containerd", "x"], _PID="2302"),
    _line(MESSAGE="b", SYSLOG_IDENTIFIER="containerd", _PID=["2303", "2304"]),
    _line(MESSAGE="c", SYSLOG_IDENTIFIER="containerd", _PID="12345678901"),
    _line(MESSAGE="d", SYSLOG_IDENTIFIER="containerd", _PID=2305),
    _line(MESSAGE="e", _PID="-1"),
    # blank and bad lines
    "", "   ", "\t",
    '{"MESSAGE":"Started containerd.service"',
    "-- Boot 3f2a --",
    "[1, 2]", '"Started containerd.service"', "null",
    '{"MESSAGE":"failed with result \'x\'", }',
    '{"MESSAGE":"a\tb"}',
    '{"MESSAGE":"\\ud800"}',
    '{"MESSAGE":"Started \u2028containerd.service"}',  # a line break to splitlines
    '{"MESSAGE":"Started \rcontainerd.service"}',
]


def test_hostile_lines_are_scanned_like_a_walk() -> None:
    text = "\n".join(HOSTILE_LINES) + "\n"
    scanned = _scan(text, PATH, "journal:containerd")
    assert scanned == _walk(text, PATH, "journal:containerd")
    kernel, matches, lifecycle, pids, problems = scanned
    assert [k.line for k in kernel] == [5, 8, 20, 21]
    assert [e.line for e, _ in matches] == [4, 14]
    assert [e.line for e in lifecycle] == [1, 2, 3, 7, 13, 15, 22]
    assert pids == (("systemd", 1), ("", 1), ("", 2301), ("containerd\x00", 2301), ("", 5),
                    ("", 6), ("None", 7), ("containerd", 2301), ("['containerd', 'x']", 2302))
    assert [line for line, _ in problems] == [31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42]


def test_crlf_and_a_journal_without_a_final_newline() -> None:
    lines = [_line(**SYSTEMD, MESSAGE="Started containerd.service"),
             _line(**CONTAINERD, MESSAGE='failed to load plugin io.containerd.grpc.v1.cri '
                   'error="invalid plugin config"')]
    for text in ("\r\n".join(lines) + "\r\n", "\n".join(lines), "\r\n".join(lines)):
        scanned = _scan(text, PATH, "journal:containerd")
        assert scanned == _walk(text, PATH, "journal:containerd")
        assert [e.line for e in scanned[2]] == [1] and [e.line for e, _ in scanned[1]] == [2]


def test_empty_journals() -> None:
    for text in ("", "\n", "\n\n  \n"):
        assert _scan(text, PATH, "journal:kubelet") == ((), (), (), (), [])


FRAGMENTS = ["Started ", "started", "STOPPING ", "Stopped", "start request", "process exited",
             "Scheduled Restart", "failed with result", "sent signal", "ſent signal", "İ",
             "nvidia-container-cli", "NVIDIA-Container-CLI", "driver/library version mismatch",
             "failed to load plugin", "no runtime for", "unresolvable cdi device", "NVRM: ",
             XID, "\n", " ", "x", "é", "\\", '"', "\t", "\u2028"]
messages = st.lists(st.sampled_from(FRAGMENTS), max_size=4).map("".join)
values = st.one_of(st.sampled_from(["kernel", "containerd", "systemd", "1", "2301", "007", ""]),
                   st.none(), st.integers(-1, 3),
                   st.lists(st.sampled_from(["kernel", "containerd", "1"]), max_size=2))
records = st.fixed_dictionaries(
    {}, optional={"MESSAGE": st.one_of(messages, st.lists(st.integers(0, 300), max_size=8),
                                       values),
                  "_TRANSPORT": values, "SYSLOG_IDENTIFIER": values, "_PID": values,
                  "__REALTIME_TIMESTAMP": st.sampled_from(["1795960000000000", "x", "-5"]),
                  "_SOURCE_MONOTONIC_TIMESTAMP": st.sampled_from(["99200000", "1.5"])})


def _escaped(line: str) -> str:
    """The same object written with \\u escapes for ASCII letters and escaped slashes."""
    return re.sub(r"[A-Za-z/]", lambda m: f"\\u{ord(m[0]):04x}", line)


lines = st.one_of(
    records.map(lambda r: orjson.dumps(r).decode()),
    records.map(lambda r: _escaped(orjson.dumps(r).decode())),
    st.sampled_from(HOSTILE_LINES),
    st.text(max_size=20),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(lines, max_size=12), st.sampled_from(["\n", "\r\n"]),
       st.sampled_from(["journal:containerd", "journal:kubelet", "journal:nvidia-fabricmanager"]))
def test_generated_journals_are_scanned_like_a_walk(rows: list[str], newline: str,
                                                   source: str) -> None:
    text = newline.join(rows)
    assert _scan(text, PATH, source) == _walk(text, PATH, source)


# --------------------------------------------------------------------- whole bundles


def test_bad_lines_are_problems_of_the_journal(tmp_path: Path) -> None:
    text = "\n".join([_line(**SYSTEMD, MESSAGE="Started containerd.service"), "not json", "",
                      "[1]"]) + "\n"
    root = write_dir(tmp_path / "b", {PATH: text})
    expected = [(PATH, "line 2", "not JSON (invalid literal, expected 'null': line 1 column 1 "
                                 "(char 0))"),
                (PATH, "line 4", "a JSON list, expected an object")]
    with open_bundle(root) as bundle:
        scan = journal_scan(bundle, "gpu-a", "containerd")
        assert [e.line for e in scan.lifecycle] == [1]
        assert [(p.path, p.where, p.message) for p in bundle.problems] == expected
    with open_bundle(root) as bundle:  # reading the journal itself records the same
        bundle.node("gpu-a").journal("containerd")
        assert [(p.path, p.where, p.message) for p in bundle.problems] == expected


def test_a_number_out_of_a_doubles_range_makes_its_line_bad_in_any_field() -> None:
    """A line holding a number no double can hold is not JSON to orjson, even in a field
    no scan reads. A decoder that skips the fields it does not name (msgspec's structs
    skip such a number, checking its syntax only) would call these lines good; any
    faster reader must keep reporting them (docs/performance.md, msgspec)."""
    good = _line(**SYSTEMD, MESSAGE="Started containerd.service")
    huge = [good[:-1] + ',"X":1e400}', good[:-1] + ',"X":[2e308]}',
            good[:-1] + ',"X":{"Y":-1' + "0" * 400 + "}}", good[:-1] + ',"X":1.5e-400}']
    text = "\n".join([good, *huge]) + "\n"
    scanned = _scan(text, PATH, "journal:containerd")
    assert scanned == _walk(text, PATH, "journal:containerd")
    lifecycle, problems = scanned[2], scanned[4]
    assert [e.line for e in lifecycle] == [1, 5]  # 1.5e-400 reads as 0.0: a good line
    assert [(line, "infinity" in error) for line, error in problems] == [
        (2, True), (3, True), (4, True)]


def test_a_missing_journal_scans_empty(tmp_path: Path) -> None:
    with open_bundle(write_dir(tmp_path / "b", {"nodes/gpu-a/dmesg.txt": "x\n"})) as bundle:
        assert journal_scan(bundle, "gpu-a", "kubelet") == JournalScan(
            path="nodes/gpu-a/journal/kubelet.jsonl", kernel=(), matches=(), lifecycle=(),
            pids=())
        assert bundle.problems == ()


@pytest.mark.parametrize("sample", BUNDLES, ids=lambda p: p.name)
def test_the_scan_answers_like_a_walk_over_every_entry(sample: Path) -> None:
    with open_bundle(sample) as bundle:
        for node in bundle.node_names:
            for unit in ("containerd", "kubelet"):
                entries = bundle.node(node).journal(unit)
                scan = journal_scan(bundle, node, unit)
                path = f"nodes/{node}/journal/{unit}.jsonl"
                text = bundle.read_text(path) or ""
                assert _scan(text, path, f"journal:{unit}") == _walk(text, path,
                                                                     f"journal:{unit}")
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
