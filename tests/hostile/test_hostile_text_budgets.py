"""Work budgets of the line-oriented parsers: kernel logs, journals, bug reports.

The bombs of ``bombs.py`` in this area are analysed at full size through the CLI: each
ends in exactly the recorded problem(s) of its file (path, kind, place, the limit in
the message), the exit code of a clean bundle and no rule in ``error``. Then the limits
from both sides: a record just under a cap reads exactly as before, one just over is
cut at the cap; joining stays the concatenation it was (compared with the old,
quadratic algorithm on generated pieces); the patterns that were quadratic on long
whitespace runs or repeats finish on inputs that took minutes (no timing is asserted:
before the change these tests did not end).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
from bombs import deep_json, kernel_continuations, malformed_journal
from hostile_kit import HOSTILE, analyse_json, assert_no_rule_errors, problems_of
from hypothesis import given
from hypothesis import strategies as st
from kit.bundles import write_dir
from layouts_kit import SEP, must_gather_files, write

from analyzers.facts.journals import journal_scan, scan_records
from analyzers.facts.kernel_events import MERGE_LOOKS, merge_lines
from bundle import open_bundle
from bundle.kernel import (
    _MAYBE_PREFIX_RE,
    RECORD_MAX_CHARS,
    RECORD_MAX_LINES,
    KernelLine,
    _join_parts,
    _read_prefixes,
    kernel_lines_from_journal,
    parse_dmesg,
    parse_xid,
    scan_signals,
)
from bundle.layouts import bugreport
from bundle.textfiles import JOURNAL_LISTED, journal_records, parse_journal

NODE = "nodes/gpu-a/"
GPU_AT = "[    1.000000] NVRM: GPU at PCI:0000:3b:00: GPU-1"
NOT_JSON = "not JSON (unexpected character, expected a JSON value: line 1 column 1 (char 0))"


def _cut(records: int, lines: int) -> str:
    dropped = f"; {lines:,} continuation lines were not read" if lines else ""
    return (f"{records:,} kernel record(s) over the cap of 1,000 lines or 65,536 characters "
            f"per record were cut there{dropped}")


def _notes() -> tuple[list[tuple[str, str]], Any]:
    found: list[tuple[str, str]] = []
    return found, lambda message, where: found.append((message, where))


# --------------------------------------------------------------------------- the bombs


def test_kernel_continuation_bomb_is_cut_at_the_record_cap(tmp_path: Path) -> None:
    code, report = analyse_json(kernel_continuations(tmp_path), tmp_path)
    assert code == 0
    assert problems_of(report) == [
        (NODE + "dmesg.txt", "refused", "line 1", _cut(1, 2_000_000 - 999))]
    assert_no_rule_errors(report)


def test_malformed_journal_bomb_lists_twenty_lines_and_counts_the_rest(tmp_path: Path) -> None:
    code, report = analyse_json(malformed_journal(tmp_path), tmp_path)
    assert code == 0
    path = NODE + "journal/kubelet.jsonl"
    assert problems_of(report) == [
        *((path, "parse", f"line {n}", NOT_JSON) for n in range(1, 21)),
        (path, "parse", "line 21", "1,999,980 more line(s) are not JSON objects (only the "
                                   "first 20 of a journal are listed)")]
    assert_no_rule_errors(report)


def test_a_deep_json_journal_line_is_one_parse_problem(tmp_path: Path) -> None:
    code, report = analyse_json(deep_json(tmp_path), tmp_path)
    assert code == 0
    journal = [p for p in problems_of(report) if p[0].endswith(".jsonl")]
    assert journal == [(NODE + "journal/containerd.jsonl", "parse", "line 1",
                        "not JSON (depth limit exceeded: line 1 column 1037 (char 1036))")]
    assert_no_rule_errors(report)


def test_a_bug_report_within_the_ratio_is_read_under_the_kernel_caps(tmp_path: Path) -> None:
    """A bug report that expands honestly (random-looking text) but holds a record of
    5,000 lines: its dmesg section is cut like a dmesg.txt of a format v1 bundle."""
    lines = "".join(f" c{n * 7919 % 100_003:x}\n" for n in range(5_000))
    text = f"{SEP}\n\nStart of NVIDIA bug report log file.\n\n{SEP}\n\ndmesg:\n\n{GPU_AT}\n" \
           f"{lines}[    2.000000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n" \
           f"{SEP}\n"
    files = {**must_gather_files(), "nvidia-bug-report_gpu-a.log.gz": gzip.compress(text.encode())}
    root = write(tmp_path / "must-gather", files)
    code, report = analyse_json(root, tmp_path)
    clean, _ = analyse_json(write(tmp_path / "clean", must_gather_files()), tmp_path)
    assert code == clean == 1  # the must-gather's own finding (toolkit disabled)
    assert problems_of(report) == [(NODE + "dmesg.txt", "refused", "line 1", _cut(1, 5_000 - 999))]
    assert_no_rule_errors(report)
    with open_bundle(root) as opened:
        lines_read = opened.node("gpu-a").dmesg
        assert [line.line for line in lines_read] == [1, 5_002]
        assert parse_xid(lines_read[1]) is not None  # the record after the cut one is read


# --------------------------------------------------------------------------- kernel caps


def _record(continuations: int, width: int = 8) -> str:
    return GPU_AT + "\n" + "".join(f" {'w' * (width - 1)}\n" for _ in range(continuations))


def test_a_record_at_the_line_cap_is_joined_whole() -> None:
    notes, note = _notes()
    text = _record(RECORD_MAX_LINES - 1)
    [line] = parse_dmesg(text, "d", note=note)
    assert line.message == _join_parts(text.replace("[    1.000000] ", "").split("\n"))
    assert notes == []


def test_a_record_over_the_line_cap_keeps_its_first_lines() -> None:
    notes, note = _notes()
    text = _record(RECORD_MAX_LINES + 4) + "[    2.000000] next\n"
    lines = parse_dmesg(text, "d", note=note)
    assert [line.message for line in lines] == [
        parse_dmesg(_record(RECORD_MAX_LINES - 1), "d")[0].message, "next"]
    assert [line.line for line in lines] == [1, RECORD_MAX_LINES + 6]
    assert notes == [(_cut(1, 5), "line 1")]


def test_a_record_at_the_character_cap_is_whole_and_one_over_is_cut() -> None:
    head = "NVRM: x"
    for extra, cut in ((0, False), (1, True)):
        notes, note = _notes()
        body = head + "y" * (RECORD_MAX_CHARS - len(head) + extra)
        [line] = parse_dmesg(f"[ 1.0] {body}\n", "d", note=note)
        assert line.message == body[:RECORD_MAX_CHARS]
        assert notes == ([(_cut(1, 0), "line 1")] if cut else [])


def test_continuations_past_the_character_cap_are_counted() -> None:
    notes, note = _notes()
    wide = " " + "z" * 40_000 + "\n"
    lines = parse_dmesg(GPU_AT + "\n" + wide * 4, "d", note=note)
    assert len(lines[0].message) == RECORD_MAX_CHARS
    assert notes == [(_cut(1, 2), "line 1")]  # two lines read pass the cap; two not read


def test_cut_records_are_one_note_per_file_at_the_first() -> None:
    notes, note = _notes()
    text = "[ 1.0] a\n" + _record(RECORD_MAX_LINES + 1) + _record(RECORD_MAX_LINES + 2)
    parse_dmesg(text, "d", note=note)
    assert notes == [(_cut(2, 2 + 3), "line 2")]


def test_journal_messages_are_cut_like_dmesg_records() -> None:
    notes, note = _notes()
    message = "NVRM: a" + "\nb" * (RECORD_MAX_LINES + 9)
    entries = [(7, {"_TRANSPORT": "kernel", "MESSAGE": message}),
               (8, {"_TRANSPORT": "kernel", "MESSAGE": "NVRM: c\nd"})]
    lines = kernel_lines_from_journal(entries, "j", note=note)
    assert lines[0].message == "NVRM: a" + " b" * (RECORD_MAX_LINES - 1)
    assert lines[1].message == "NVRM: c d"
    assert notes == [(_cut(1, 10), "line 7")]


def test_a_journal_scan_records_a_cut_kernel_message(tmp_path: Path) -> None:
    path = NODE + "journal/containerd.jsonl"
    line = orjson.dumps({"_TRANSPORT": "kernel", "MESSAGE": "x" * (RECORD_MAX_CHARS + 1)})
    with open_bundle(write_dir(tmp_path / "b", {path: line.decode() + "\n"})) as opened:
        scan = journal_scan(opened, "gpu-a", "containerd")
        assert len(scan.kernel[0].message) == RECORD_MAX_CHARS
        assert [(p.path, p.kind, p.where, p.message) for p in opened.problems] == [
            (path, "refused", "line 1", _cut(1, 0))]


def _join_before(parts: list[str]) -> str:
    """How records were joined before (one concatenation per piece)."""
    message = ""
    for index, piece in enumerate(parts):
        text = piece.strip()
        if not text:
            continue
        if index and message.startswith("NVRM:") and text.startswith("NVRM:"):
            text = text[5:].lstrip()
        message = f"{message} {text}" if message else text
    return message


pieces = st.lists(st.sampled_from(["NVRM:", "NVRM: x", " NVRM:  y ", "", "  ", "z", "\t",
                                   "NVRM:NVRM:", "API mismatch", " a b "]), max_size=8)


@HOSTILE
@given(pieces)
def test_joining_is_the_concatenation_it_was(parts: list[str]) -> None:
    assert _join_parts(parts) == _join_before(parts)


fragments = st.sampled_from([
    "[", "]", " ", "1", "0", ".", ",", ";", "-", ":", "<4>", "kernel:", "kern", "err", "Nov",
    "17", "Mon", "T", "+00:00", "host", "\t", "Jan ", "2025-11-17T09:12:45,123456+00:00",
    "4,123,456789,-;", "kern  :err   : ", "10.0.0.1: kern: warning: [2025-01-07T21:16:59Z]: ",
    "Nov 17 09:12:45 host kernel: ", "[Mon Nov 17 09:12:45 2025] ", "[ 1234.567890] ",
    "local3", "user :", "x", "NVRM: "])


@HOSTILE
@given(st.lists(fragments, max_size=8).map("".join))
def test_the_cheap_prefix_test_never_hides_a_prefix(line: str) -> None:
    body = line.lstrip()
    if body and _read_prefixes(body).prefixed:
        assert _MAYBE_PREFIX_RE.match(body)


def _kernel_line(message: str) -> KernelLine:
    return KernelLine("d", 1, message, message, None, None)


def test_patterns_that_were_quadratic_end_on_long_runs() -> None:
    spaces = " " * RECORD_MAX_CHARS
    xid = _kernel_line("NVRM: Xid (PCI:0000:3b:00)" + spaces + "a")
    assert parse_xid(xid) is None
    assert scan_signals(xid) == []
    sxid = _kernel_line("nvidia-nvswitch0: SXid (PCI:0000:3b:00.0)" + spaces + "x")
    assert scan_signals(sxid) == []
    banner = _kernel_line("NVRM: " + "loading NVIDIA UNIX " * 3_000)
    assert scan_signals(banner) == []
    tag = _kernel_line("a:" + spaces + "module verification failed: x")
    assert [s.detail for s in scan_signals(tag)] == ["module: x"]
    # The forms the drivers print still read as before.
    assert parse_xid(_kernel_line("NVRM: Xid (PCI:0000:3b:00) : 79, pid=1, name=x, y")).xid == 79
    banner = _kernel_line("NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.1")
    assert [s.detail for s in scan_signals(banner)] == ["open 570.1"]
    tag = _kernel_line("nvidia: module verification failed: signature and/or required key "
                       "missing - tainting kernel")
    assert [s.detail for s in scan_signals(tag)][0].startswith("nvidia: signature")


def test_merging_a_repeated_message_is_linear_and_exact() -> None:
    def line(number: int, uptime: float) -> KernelLine:
        return KernelLine("d", number, "AER", "pcieport: AER: Corrected error", None, uptime)

    kept = [line(n, float(n)) for n in range(20_000)]
    twins = [line(n, float(n)) for n in range(20_000)]
    assert merge_lines(kept, twins) == kept  # an AER storm in both: each absorbs its twin
    far = [line(n, 1e9 + n) for n in range(20_000)]
    assert merge_lines(kept, far) == kept + far  # none is a repeat: all kept
    # A repeat further than MERGE_LOOKS unmatched lines of the same text is kept twice.
    late = line(0, float(MERGE_LOOKS + 5))
    assert merge_lines(kept[:MERGE_LOOKS + 10], [late]) == [*kept[:MERGE_LOOKS + 10], late]
    assert merge_lines(kept[:MERGE_LOOKS - 10], [line(0, float(MERGE_LOOKS - 12))]) == \
        kept[:MERGE_LOOKS - 10]


# --------------------------------------------------------------------------- journals


def _journal(bad: int, good_after: int = 1) -> str:
    good = orjson.dumps({"MESSAGE": "Started containerd.service", "_PID": "1"}).decode()
    return "\n".join([good, *(["x", "[1]", "{"] * bad)[:bad], "", *[good] * good_after]) + "\n"


def test_journal_bad_lines_up_to_the_listing_cap_are_each_listed() -> None:
    text = _journal(JOURNAL_LISTED)
    records, problems = journal_records(text)
    walked = [(line, error) for entry, line, error in parse_journal(text) if entry is None]
    assert problems == walked and len(problems) == JOURNAL_LISTED
    assert len(records) == len(text.splitlines())


def test_journal_bad_lines_past_the_listing_cap_are_counted() -> None:
    text = _journal(JOURNAL_LISTED + 7, good_after=3)
    records, problems = journal_records(text)
    walked = [(line, error) for entry, line, error in parse_journal(text) if entry is None]
    assert problems[:JOURNAL_LISTED] == walked[:JOURNAL_LISTED]
    assert problems[JOURNAL_LISTED:] == [
        (walked[JOURNAL_LISTED][0], "7 more line(s) are not JSON objects (only the first 20 "
                                    "of a journal are listed)")]
    # The good lines after the bad ones are read as before, at their own lines.
    scan = scan_records(records, "j", "journal:containerd")
    assert [e.line for e in scan.lifecycle] == [1, *range(len(records) - 2, len(records) + 1)]
    assert [e.line for e in scan.lifecycle] == [
        entry.line for entry, _, _ in parse_journal(text)
        if entry is not None and entry.message.startswith("Started")]


# --------------------------------------------------------------------------- bug reports


def test_bug_report_sections_with_many_blank_lines_read_as_before() -> None:
    blank = "\n" * 200_000
    text = f"x\n{SEP}\ndmesg:\n{blank}[ 1.0] a\n{blank}\n{SEP}\n*** /proc/cmdline\n{blank}quiet\n"
    assert bugreport.sections(text) == {"dmesg.txt": "[ 1.0] a\n", "host/cmdline": "quiet\n"}
