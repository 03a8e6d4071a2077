"""Kernel log parsing: line formats, Xid variants, other GPU signals, robustness.

Example lines are real ones: from NVIDIA's Xid documentation and A100 memory error
management pages, the format strings of NVIDIA/open-gpu-kernel-modules, gpud's dmesg
test data and public GitHub issue threads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundle import kernel
from bundle.kernel import (
    SIGNAL_KINDS,
    KernelLine,
    KernelSignal,
    XidEvent,
    kernel_lines_from_journal,
    normalize_pci,
    parse_dmesg,
    parse_xid,
    scan_signals,
)

PATH = "nodes/gpu-a/dmesg.txt"

XID_48_OLD = (
    "NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double "
    "bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x7fffa8860 "
    "partition 7, subpartition 1."
)
XID_43 = "NVRM: Xid (PCI:0000:00:05): 43, pid=1045242, name=pt_main_thread, Ch 00000008"
XID_79_NEW = "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus."


def one(text: str, *, year_hint: int | None = None) -> KernelLine:
    lines = parse_dmesg(text, PATH, year_hint=year_hint)
    assert len(lines) == 1, lines
    return lines[0]


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, sec: int = 0, us: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, sec, us, tzinfo=UTC)


def line_of(message: str) -> KernelLine:
    return KernelLine(path=PATH, line=1, raw=message, message=message, time=None, uptime=None)


def xid_of(message: str) -> XidEvent:
    event = parse_xid(line_of(message))
    assert event is not None
    return event


def signals_of(message: str) -> list[tuple[str, str | None, str]]:
    return [(s.kind, s.pci, s.detail) for s in scan_signals(line_of(message))]


# --------------------------------------------------------------------------------------
# Line formats
# --------------------------------------------------------------------------------------


def test_plain_dmesg_monotonic_stamp() -> None:
    raw = f"[  219.470994] {XID_48_OLD}"
    got = one(raw)
    assert got == KernelLine(PATH, 1, raw, XID_48_OLD, None, 219.470994)


def test_plain_dmesg_space_padded_stamp() -> None:
    got = one("[   23.991667] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  525.147.05")
    assert got.uptime == 23.991667
    assert got.message == "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  525.147.05"


def test_dmesg_ctime_stamp() -> None:
    got = one(f"[Wed Jul 31 23:14:18 2024] {XID_43}")
    assert got.time == utc(2024, 7, 31, 23, 14, 18)
    assert got.uptime is None
    assert got.message == XID_43


def test_dmesg_ctime_stamp_with_padded_day() -> None:
    got = one(
        "[Mon Aug  5 03:54:13 2024] NVRM: Xid (PCI:0000:00:07): 31, pid=2512125, "
        "name=python3.10, Ch 00000008, intr 00000000."
    )
    assert got.time == utc(2024, 8, 5, 3, 54, 13)
    assert got.message.startswith("NVRM: Xid (PCI:0000:00:07): 31,")


def test_dmesg_iso_stamp() -> None:
    got = one(f"2025-11-17T09:12:45,123456+00:00 {XID_79_NEW}")
    assert got.time == utc(2025, 11, 17, 9, 12, 45, 123456)
    assert got.uptime is None
    assert got.message == XID_79_NEW


def test_dmesg_iso_stamp_with_offset_is_converted_to_utc() -> None:
    got = one(f"2025-11-17T10:12:45,000001+01:00 {XID_79_NEW}")
    assert got.time == utc(2025, 11, 17, 9, 12, 45, 1)
    assert got.time is not None and got.time.tzinfo is UTC


def test_syslog_with_bracketed_uptime_and_year_hint() -> None:
    raw = f"Dec  2 11:38:47 worker4 kernel: [  219.470994] {XID_48_OLD}"
    got = one(raw, year_hint=2024)
    assert got == KernelLine(PATH, 1, raw, XID_48_OLD, utc(2024, 12, 2, 11, 38, 47), 219.470994)


def test_syslog_without_uptime_and_without_year_hint() -> None:
    got = one(f"Apr 29 19:24:11 EVE kernel: {XID_79_NEW}")
    assert (got.message, got.time, got.uptime) == (XID_79_NEW, None, None)


def test_journalctl_short_precise() -> None:
    got = one(
        "Aug 10 22:40:59.893888 anthill kernel: NVRM: GPU0 _issueRpcAndWait: "
        "rpcSendMessage failed with status 0x0000000f",
        year_hint=2025,
    )
    assert got.time == utc(2025, 8, 10, 22, 40, 59, 893888)
    assert got.message == (
        "NVRM: GPU0 _issueRpcAndWait: rpcSendMessage failed with status 0x0000000f"
    )


def test_rsyslog_rfc3339_with_host_and_uptime() -> None:
    got = one(f"2025-01-07T21:16:59.312055+00:00 host kernel: [1378283.684891] {XID_79_NEW}")
    assert got.time == utc(2025, 1, 7, 21, 16, 59, 312055)
    assert got.uptime == 1378283.684891
    assert got.message == XID_79_NEW


def test_talos_prefix() -> None:
    got = one(
        "192.168.11.119: kern: warning: [2026-04-22T21:29:21.342163186Z]: NVRM: Xid "
        "(PCI:0000:0b:00): 119, pid=11431, name=gpu-feature-dis, Timeout after 45s of waiting "
        "for RPC response from GPU3 GSP! Expected function 76 (GSP_RM_CONTROL) sequence 4128 "
        "(0x20803039 0xb0)."
    )
    assert got.time == utc(2026, 4, 22, 21, 29, 21, 342163)
    assert got.message.startswith("NVRM: Xid (PCI:0000:0b:00): 119, pid=11431,")


def test_bare_kernel_tag() -> None:
    raw = (
        "kernel: NVRM: Xid (PCI:0000:97:00): 45, pid=1818987, name=python3, Ch 00000003 "
        "caused by previous Xid 145"
    )
    assert one(raw).message == raw.removeprefix("kernel: ")


def test_raw_kmsg_and_priority_prefixes() -> None:
    lines = parse_dmesg(
        f"<4>[  219.470994] {XID_43}\n4,1234,219470994,-;{XID_79_NEW}\n SUBSYSTEM=pci\n", PATH
    )
    assert [(x.line, x.message, x.uptime) for x in lines] == [
        (1, XID_43, 219.470994),
        (2, XID_79_NEW, 219.470994),
    ]


def test_dmesg_decoded_facility_prefix() -> None:
    got = one(f"kern  :err   : [  219.470994] {XID_43}")
    assert (got.message, got.uptime) == (XID_43, 219.470994)


def test_leading_whitespace_is_ignored() -> None:
    raw = f"    \t[  219.470994] {XID_43}"
    got = one(raw)
    assert (got.raw, got.message, got.uptime) == (raw, XID_43, 219.470994)


def test_crlf_line_endings() -> None:
    lines = parse_dmesg(f"[ 1.000000] {XID_43}\r\n[ 2.000000] {XID_79_NEW}\r\n", PATH)
    assert [(x.line, x.raw, x.message) for x in lines] == [
        (1, f"[ 1.000000] {XID_43}", XID_43),
        (2, f"[ 2.000000] {XID_79_NEW}", XID_79_NEW),
    ]


API_MISMATCH_DMESG = (
    "[  12.345678] NVRM: API mismatch: the client has the version 535.54.03, but\n"
    "               NVRM: this kernel module has the version 530.30.02.  Please\n"
    "               NVRM: make sure that this kernel module and all NVIDIA driver\n"
    "               NVRM: components have the same version.\n"
)
API_MISMATCH_JOINED = (
    "NVRM: API mismatch: the client has the version 535.54.03, but this kernel module has the "
    "version 530.30.02.  Please make sure that this kernel module and all NVIDIA driver "
    "components have the same version."
)


def test_multi_line_message_is_joined() -> None:
    lines = parse_dmesg(f"[  12.000000] {XID_43}\n{API_MISMATCH_DMESG}", PATH)
    assert [(x.line, x.message) for x in lines] == [(1, XID_43), (2, API_MISMATCH_JOINED)]
    assert lines[1].raw == API_MISMATCH_DMESG.splitlines()[0]
    assert lines[1].uptime == 12.345678


def test_unindented_continuation_is_joined() -> None:
    got = one("[ 5.0] NVRM: API mismatch: the client has the version 1.2, but\nNVRM: this kernel")
    assert got.message == "NVRM: API mismatch: the client has the version 1.2, but this kernel"


def test_rsyslog_escaped_newlines_are_joined() -> None:
    got = one(
        "Nov 17 09:12:45 host kernel: NVRM: API mismatch: the client has the version "
        "535.54.03, but#012NVRM: this kernel module has the version 530.30.02.  Please#012"
        "NVRM: make sure that this kernel module and all NVIDIA driver#012NVRM: components "
        "have the same version."
    )
    assert got.message == API_MISMATCH_JOINED


def test_bare_lines_without_any_prefix_stay_separate() -> None:
    lines = parse_dmesg(f"{XID_43}\nNVRM: GPU 0000:09:00.0: GPU has fallen off the bus.\n", PATH)
    assert [(x.line, x.message, x.time, x.uptime) for x in lines] == [
        (1, XID_43, None, None),
        (2, "NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.", None, None),
    ]


def test_blank_line_ends_a_record_and_line_numbers_count_it() -> None:
    lines = parse_dmesg(f"[ 1.0] {XID_43}\n\n   trailing words\n", PATH)
    assert [(x.line, x.message) for x in lines] == [(1, XID_43), (3, "trailing words")]


def test_bare_xid_line_after_prefixed_record_is_not_swallowed() -> None:
    lines = parse_dmesg(f"kernel: {XID_43}\n{XID_79_NEW}\n", PATH)
    assert [(x.line, x.message) for x in lines] == [(1, XID_43), (2, XID_79_NEW)]


def test_journal_markers_are_skipped() -> None:
    text = (
        "-- Logs begin at Mon 2025-11-17 09:00:00 UTC. --\n"
        f"Nov 17 09:12:45 host kernel: {XID_43}\n"
        "-- Boot 6f3c2a --\n"
        f"Nov 17 09:20:00 host kernel: {XID_79_NEW}\n"
    )
    lines = parse_dmesg(text, PATH, year_hint=2025)
    assert [(x.line, x.message, x.time) for x in lines] == [
        (2, XID_43, utc(2025, 11, 17, 9, 12, 45)),
        (4, XID_79_NEW, utc(2025, 11, 17, 9, 20)),
    ]


def test_syslog_year_rolls_back_across_new_year() -> None:
    text = f"Dec 31 23:59:59 h kernel: {XID_43}\nJan  1 00:00:01 h kernel: {XID_79_NEW}\n"
    lines = parse_dmesg(text, PATH, year_hint=2026)
    assert [x.time for x in lines] == [utc(2025, 12, 31, 23, 59, 59), utc(2026, 1, 1, 0, 0, 1)]


def test_impossible_dates_give_no_time() -> None:
    assert one(f"Feb 30 10:00:00 h kernel: {XID_43}", year_hint=2025).time is None
    assert one(f"2025-13-40T99:99:99,000000+00:00 {XID_43}").time is None
    assert one(f"[Mon Feb 30 10:00:00 2025] {XID_43}").time is None


def test_byte_order_mark_is_dropped() -> None:
    assert one(f"\ufeff[ 1.5] {XID_43}").message == XID_43


def test_empty_and_whitespace_text() -> None:
    assert parse_dmesg("", PATH) == []
    assert parse_dmesg("\n \r\n\t\n", PATH) == []


# --------------------------------------------------------------------------------------
# Journal entries
# --------------------------------------------------------------------------------------


def test_journal_kernel_entry_with_text_message() -> None:
    entry: Mapping[str, object] = {
        "_TRANSPORT": "kernel",
        "MESSAGE": XID_79_NEW,
        "__REALTIME_TIMESTAMP": "1763370765123456",
        "_SOURCE_MONOTONIC_TIMESTAMP": "219470994",
    }
    got = kernel_lines_from_journal([(7, entry)], "nodes/a/journal/kernel.jsonl")
    assert got == [
        KernelLine(
            "nodes/a/journal/kernel.jsonl",
            7,
            XID_79_NEW,
            XID_79_NEW,
            utc(2025, 11, 17, 9, 12, 45, 123456),
            219.470994,
        )
    ]


def test_journal_byte_list_message_with_invalid_utf8() -> None:
    data = list(b"NVRM: Xid (PCI:0000:3b:00): 13, bad \xff byte")
    entry: Mapping[str, object] = {"SYSLOG_IDENTIFIER": "kernel", "MESSAGE": data}
    (got,) = kernel_lines_from_journal([(1, entry)], PATH)
    assert got.message == "NVRM: Xid (PCI:0000:3b:00): 13, bad \ufffd byte"
    assert (got.time, got.uptime) == (None, None)


def test_journal_keeps_only_kernel_entries() -> None:
    entries: list[tuple[int, Mapping[str, object]]] = [
        (1, {"_TRANSPORT": "stdout", "SYSLOG_IDENTIFIER": "containerd", "MESSAGE": "hello"}),
        (2, {"_TRANSPORT": "kernel", "MESSAGE": XID_43}),
        (3, {"_TRANSPORT": "syslog", "SYSLOG_IDENTIFIER": "kernel", "MESSAGE": XID_79_NEW}),
        (4, {"_TRANSPORT": "kernel"}),
        (5, {"_TRANSPORT": "kernel", "MESSAGE": None}),
    ]
    got = kernel_lines_from_journal(entries, PATH)
    assert [(x.line, x.message) for x in got] == [(2, XID_43), (3, XID_79_NEW)]


def test_journal_multi_line_message_is_joined() -> None:
    message = (
        "NVRM: API mismatch: the client has the version 535.54.03, but\n"
        "NVRM: this kernel module has the version 530.30.02.  Please\n"
        "NVRM: make sure that this kernel module and all NVIDIA driver\n"
        "NVRM: components have the same version.\n"
    )
    (got,) = kernel_lines_from_journal([(9, {"_TRANSPORT": "kernel", "MESSAGE": message})], PATH)
    assert got.message == API_MISMATCH_JOINED
    assert got.raw == "NVRM: API mismatch: the client has the version 535.54.03, but"


def test_journal_monotonic_fallback_and_bad_timestamps() -> None:
    entry: Mapping[str, object] = {
        "_TRANSPORT": "kernel",
        "MESSAGE": XID_43,
        "__REALTIME_TIMESTAMP": "not-a-number",
        "__MONOTONIC_TIMESTAMP": "1500000",
    }
    (got,) = kernel_lines_from_journal([(1, entry)], PATH)
    assert (got.time, got.uptime) == (None, 1.5)


# --------------------------------------------------------------------------------------
# normalize_pci
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("0000:3b:00", "0000:3b:00.0"),
        ("PCI:0000:3b:00", "0000:3b:00.0"),
        ("00000000:3B:00.0", "0000:3b:00.0"),
        ("00000000:C1:00.1", "0000:c1:00.1"),
        ("3b:00.0", "0000:3b:00.0"),
        ("0000:3b:00.0", "0000:3b:00.0"),
        ("  0009:01:00 ", "0009:01:00.0"),
        ("pci:0018:01:00", "0018:01:00.0"),
        ("10000:01:00.0", "10000:01:00.0"),
        ("GPU-27b94a00-ed54-5c24-b1fd-1054085de32a", None),
        ("09:12:45", None),
        ("0000:3b:00.8", None),
        ("", None),
        ("N/A", None),
    ],
)
def test_normalize_pci(given: str, expected: str | None) -> None:
    assert normalize_pci(given) == expected


# --------------------------------------------------------------------------------------
# Xid variants
# --------------------------------------------------------------------------------------


def test_xid_unknown_process_r515_to_r565() -> None:
    line = one(f"[  219.470994] {XID_48_OLD}")
    assert parse_xid(line) == XidEvent(
        xid=48,
        pci="0000:07:00.0",
        pid=None,
        process=None,
        detail=(
            "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer "
            "at physAddr 0x7fffa8860 partition 7, subpartition 1."
        ),
        caused_by=None,
        mig_gi=None,
        mig_ci=None,
        source=line,
    )


def test_xid_known_process() -> None:
    got = xid_of(XID_43)
    assert (got.xid, got.pci, got.pid, got.process, got.detail) == (
        43,
        "0000:00:05.0",
        1045242,
        "pt_main_thread",
        "Ch 00000008",
    )


def test_xid_31_mmu_fault() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0000:00:07): 31, pid=2512125, name=python3.10, Ch 00000008, intr "
        "00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ 0x73ac_1c000000. Fault "
        "is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE"
    )
    assert (got.xid, got.pid, got.process) == (31, 2512125, "python3.10")
    assert got.detail == (
        "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ "
        "0x73ac_1c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE"
    )


def test_xid_31_r595_wording() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0000:01:00): 31, pid=13705, name=UnrealEditor, channel 0x0000000c, "
        "intr 00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_PROP_0 faulted @ "
        "0x0_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"
    )
    assert (got.pci, got.pid, got.process) == ("0000:01:00.0", 13705, "UnrealEditor")
    assert got.detail.startswith("channel 0x0000000c, intr 00000000. MMU Fault:")


def test_xid_13_burst_line_with_unknown_process() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp "
        "Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"
    )
    assert (got.xid, got.pci, got.pid, got.process) == (13, "0000:cb:00.0", None, None)
    assert got.detail == (
        "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"
    )


def test_xid_13_old_driver_without_pid() -> None:
    line = one(
        "[139600.598066] NVRM: Xid (PCI:0000:05:00): 13, Graphics SM Warp Exception on "
        "(GPC 0, TPC 0): Out Of Range Address"
    )
    got = parse_xid(line)
    assert got is not None
    assert (got.xid, got.pci, got.pid, got.process, got.detail) == (
        13,
        "0000:05:00.0",
        None,
        None,
        "Graphics SM Warp Exception on (GPC 0, TPC 0): Out Of Range Address",
    )


def test_xid_109_context_switch_timeout() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008, "
        "errorString CTX SWITCH TIMEOUT, Info 0x58005"
    )
    assert (got.xid, got.pid, got.process, got.detail) == (
        109,
        1797828,
        "pt_main_thread",
        "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005",
    )


def test_xid_119_gsp_timeout() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of "
        "waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) "
        "(0x2081 0x4)."
    )
    assert (got.xid, got.pci, got.pid, got.process) == (119, "0000:9b:00.0", 2024380, "nvidia-smi")


def test_xid_79_old_driver_pid_zero() -> None:
    got = xid_of("NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus.")
    assert (got.xid, got.pci, got.pid, got.process, got.detail) == (
        79,
        "0000:09:00.0",
        0,
        None,
        "GPU has fallen off the bus.",
    )


def test_xid_79_r570_form_without_pid() -> None:
    line = one(f"Apr 29 19:24:11 EVE kernel: {XID_79_NEW}")
    got = parse_xid(line)
    assert got == XidEvent(
        79, "0000:01:00.0", None, None, "GPU has fallen off the bus.", None, None, None, line
    )


def test_xid_79_r515_to_r565_form() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off "
        "the bus."
    )
    assert (got.pci, got.pid, got.process, got.detail) == (
        "0000:05:00.0",
        None,
        None,
        "GPU has fallen off the bus.",
    )


def test_xid_45_caused_by_previous_xid() -> None:
    line = one(
        "kernel: NVRM: Xid (PCI:0000:97:00): 45, pid=1818987, name=python3, Ch 00000003 "
        "caused by previous Xid 145"
    )
    got = parse_xid(line)
    assert got is not None
    assert (got.xid, got.pci, got.pid, got.process, got.detail, got.caused_by) == (
        45,
        "0000:97:00.0",
        1818987,
        "python3",
        "Ch 00000003 caused by previous Xid 145",
        145,
    )


def test_xid_74_nvlink_registers() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0003:00:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error "
        "detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"
    )
    assert (got.xid, got.pci, got.pid) == (74, "0003:00:00.0", None)
    assert got.detail == (
        "NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"
    )


def test_xid_62_pid_without_name() -> None:
    got = xid_of("NVRM: Xid (PCI:0000:02:00): 62, pid=1300, 203c(3090) 85020c09 ffffbd53")
    assert (got.xid, got.pid, got.process, got.detail) == (
        62,
        1300,
        None,
        "203c(3090) 85020c09 ffffbd53",
    )


def test_xid_r510_pid_without_name() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0000:0c:00): 31, pid=11461, Ch 00000053, intr 10000000. MMU Fault: "
        "ENGINE GRAPHICS"
    )
    assert (got.pid, got.process, got.detail) == (
        11461,
        None,
        "Ch 00000053, intr 10000000. MMU Fault: ENGINE GRAPHICS",
    )


def test_xid_r418_without_pid() -> None:
    got = xid_of("NVRM: Xid (PCI:0000:01:00): 31, Ch 0000005a, intr 10000000. MMU Fault: x")
    assert (got.pid, got.detail) == (None, "Ch 0000005a, intr 10000000. MMU Fault: x")


def test_xid_very_old_attr_without_pci_prefix() -> None:
    got = xid_of("NVRM: Xid (0000:03:00): 14, Channel 00000001")
    assert (got.xid, got.pci, got.detail) == (14, "0000:03:00.0", "Channel 00000001")


def test_xid_94_mig_gpu_instance() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). "
        "RST: No, D-RST: No"
    )
    assert (got.xid, got.pci, got.pid, got.mig_gi, got.mig_ci, got.detail) == (
        94,
        "0000:01:00.0",
        7194,
        5,
        None,
        "Contained: CE User Channel (0x9). RST: No, D-RST: No",
    )


def test_xid_mig_gpu_and_compute_instance() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0000:01:00 GPU-I:03 GPU-CI:01): 31, pid=42, name=python3, Ch 00000001"
    )
    assert (got.pci, got.mig_gi, got.mig_ci, got.pid, got.process) == (
        "0000:01:00.0",
        3,
        1,
        42,
        "python3",
    )


def test_xid_95_uncontained() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0000:01:00): 95, pid=7062, Uncontained: LTC TAG (0x2,0x0). RST: Yes, "
        "D-RST: No"
    )
    assert (got.xid, got.pid, got.detail) == (
        95,
        7062,
        "Uncontained: LTC TAG (0x2,0x0). RST: Yes, D-RST: No",
    )


def test_xid_94_unknown_process() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0000:00:08): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). "
        "RST: No, D-RST: No"
    )
    assert (got.pid, got.process, got.detail) == (
        None,
        None,
        "Contained: SM (0x1). RST: No, D-RST: No",
    )


def test_xid_63_row_remapper() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, "
        "reset gpu to activate."
    )
    assert (got.pci, got.pid, got.detail) == (
        "0000:10:1c.0",
        1896,
        "Row Remapper: New row marked for remapping, reset gpu to activate.",
    )


def test_xid_nvlink5_variants() -> None:
    linkless = xid_of(
        "NVRM: Xid (PCI:0018:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000)"
    )
    assert (linkless.xid, linkless.pci, linkless.pid) == (149, "0018:01:00.0", None)
    assert linkless.detail == "NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000)"

    with_process = xid_of(
        "NVRM: Xid (PCI:0018:01:00): 145, pid=876767, name=ray::WorkerDict, RLW_RXPIPE "
        "Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 "
        "0x00000004)"
    )
    assert (with_process.pid, with_process.process) == (876767, "ray::WorkerDict")
    assert with_process.detail.startswith("RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2")

    line = one(
        "[171167.620236] NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link "
        "01 (0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"
    )
    spaced = parse_xid(line)
    assert spaced is not None
    assert (spaced.xid, spaced.pci, line.uptime) == (149, "0009:01:00.0", 171167.620236)
    assert spaced.detail.startswith("NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (")


def test_xid_154_recovery_action() -> None:
    got = xid_of(
        "NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 "
        "(Drain and Reset)"
    )
    assert (got.xid, got.detail) == (
        154,
        "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
    )


@pytest.mark.parametrize(
    "message",
    [
        "nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
        "NVRM: GPU at PCI:0000:3b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d",
        "XidCriticalError: Xid=48 on Device=GPU-1; marking device as unhealthy.",
        "",
    ],
)
def test_non_xid_lines(message: str) -> None:
    assert parse_xid(line_of(message)) is None


# --------------------------------------------------------------------------------------
# Other signals
# --------------------------------------------------------------------------------------


def test_fallen_off_bus_runtime_line() -> None:
    assert signals_of("NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.") == [
        ("fallen_off_bus", "0000:09:00.0", "GPU stopped answering on PCIe at runtime")
    ]


def test_fallen_off_bus_on_xid_79_line() -> None:
    assert signals_of(XID_79_NEW) == [
        (
            "fallen_off_bus",
            "0000:01:00.0",
            "reported with Xid 79: GPU stopped answering on PCIe at runtime",
        )
    ]


def test_fallen_off_bus_at_probe_time() -> None:
    line = one(
        "[    5.100000] NVRM: The NVIDIA GPU 0000:9a:00.0\n"
        "               NVRM: (PCI ID: 10de:28a0) installed in this system has\n"
        "               NVRM: fallen off the bus and is not responding to commands.\n"
    )
    assert [(s.kind, s.pci, s.detail) for s in scan_signals(line)] == [
        ("fallen_off_bus", "0000:9a:00.0", "GPU was unreachable when the driver probed it")
    ]


def test_device_handle_and_gpu_lost() -> None:
    message = (
        "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the "
        "system to recover this GPU"
    )
    assert signals_of(message) == [
        ("gpu_lost", "0000:3b:00.0", message),
        (
            "device_handle",
            "0000:3b:00.0",
            "GPU is lost.  Reboot the system to recover this GPU",
        ),
    ]


def test_device_plugin_handle_failure() -> None:
    assert signals_of(
        "unable to get device handle from UUID: Unknown Error; marking it as unhealthy"
    ) == [("device_handle", None, "from UUID: Unknown Error; marking it as unhealthy")]


def test_rm_init_adapter_failed() -> None:
    assert signals_of("NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)") == [
        (
            "rm_init_adapter_failed",
            "0000:0a:00.0",
            "0x24:0x72:1568 (status 0x72: GPU memory error)",
        )
    ]
    assert signals_of("NVRM: GPU 0000:0a:00.0: rm_init_adapter failed, device minor number 0") == [
        ("rm_init_adapter_failed", "0000:0a:00.0", "device minor number 0")
    ]


def test_aer_fatal_from_pcieport_names_the_source_device() -> None:
    message = (
        "pcieport 0000:00:01.0: AER: Multiple Uncorrected (Fatal) error received: 0000:3b:00.0"
    )
    assert signals_of(message) == [("aer", "0000:3b:00.0", f"fatal: {message}")]


def test_aer_bus_error_severities() -> None:
    fatal = (
        "nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
        "type=Transaction Layer, (Requester ID)"
    )
    corrected = (
        "pcieport 0000:00:03.1: PCIe Bus Error: severity=Corrected, type=Data Link Layer, "
        "(Transmitter ID)"
    )
    nonfatal = "pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:3b:00.0"
    assert signals_of(fatal) == [("aer", "0000:3b:00.0", f"fatal: {fatal}")]
    assert signals_of(corrected) == [("aer", "0000:00:03.1", f"corrected: {corrected}")]
    assert signals_of(nonfatal) == [("aer", "0000:3b:00.0", f"nonfatal: {nonfatal}")]


def test_aer_recovery_failure() -> None:
    message = "nvidia 0000:3b:00.0: AER: can't recover (no error_detected callback)"
    assert signals_of(message) == [("aer", "0000:3b:00.0", f"recovery_failed: {message}")]


def test_aer_housekeeping_lines_are_quiet() -> None:
    assert signals_of("pcieport 0000:00:01.0: AER: enabled with IRQ 122") == []


def test_api_mismatch_old_wording() -> None:
    assert signals_of(API_MISMATCH_JOINED) == [
        ("api_mismatch", None, "client 535.54.03, kernel module 530.30.02")
    ]


def test_api_mismatch_r575_wording() -> None:
    line = one(
        "[ 5.1] NVRM: API mismatch: the client 'nvidia-smi' (pid 1234)\n"
        "       NVRM: has the version 575.51.02, but this kernel module has\n"
        "       NVRM: the version 570.133.07.  Please make sure that this\n"
    )
    assert [(s.kind, s.detail) for s in scan_signals(line)] == [
        (
            "api_mismatch",
            "client 575.51.02, kernel module 570.133.07 (client process 'nvidia-smi' pid 1234)",
        )
    ]


def test_api_mismatch_first_record_only() -> None:
    assert signals_of("NVRM: API mismatch: the client has the version 535.54.03, but") == [
        ("api_mismatch", None, "client 535.54.03, kernel module not on this line")
    ]


def test_nvml_version_mismatch() -> None:
    assert signals_of("Failed to initialize NVML: Driver/library version mismatch") == [
        ("api_mismatch", None, "NVML: driver/library version mismatch")
    ]


def test_nouveau_and_nova_core_and_probe() -> None:
    assert signals_of("nouveau 0000:01:00.0: DRM: VRAM: 8192 MiB") == [
        ("nouveau", "0000:01:00.0", "nouveau 0000:01:00.0: DRM: VRAM: 8192 MiB")
    ]
    assert signals_of("NVRM: GPU 0000:01:00.0 is already bound to NovaCore.") == [
        ("nova_core", "0000:01:00.0", "GPU 0000:01:00.0 is already bound to NovaCore.")
    ]
    assert signals_of("NVRM: The NVIDIA probe routine was not called for 1 device(s).") == [
        ("probe_failed", None, "The NVIDIA probe routine was not called for 1 device(s).")
    ]
    assert signals_of("NVRM: No NVIDIA devices probed.") == [
        ("probe_failed", None, "No NVIDIA devices probed.")
    ]


def test_nouveau_drm_banner_and_lockdown_rejection() -> None:
    banner = "[drm] Initialized nouveau 1.3.1 20120801 for 0000:01:00.0 on minor 0"
    assert signals_of(banner) == [("nouveau", "0000:01:00.0", banner)]
    rejected = "Loading of unsigned module is rejected"
    assert signals_of(rejected) == [("lockdown", None, rejected)]


def test_xid_79_sequence_from_old_driver() -> None:
    text = (
        "[1084456.074562] NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus.\n"
        "[1084456.074570] NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.\n"
        "[1084456.074580] NVRM: GPU 0000:09:00.0: GPU is on Board .\n"
        "[1084456.074590] NVRM: A GPU crash dump has been created. If possible, please run\n"
        "[1084456.074590] NVRM: nvidia-bug-report.sh as root to collect this data before\n"
        "[1084456.074590] NVRM: the NVIDIA kernel module is unloaded.\n"
    )
    lines = parse_dmesg(text, PATH)
    assert [x.line for x in lines] == [1, 2, 3, 4, 5, 6]
    xids = [(e.xid, e.pci, e.pid) for e in map(parse_xid, lines) if e is not None]
    assert xids == [(79, "0000:09:00.0", 0)]
    signals = [(s.source.line, s.kind, s.pci) for line in lines for s in scan_signals(line)]
    assert signals == [
        (1, "fallen_off_bus", "0000:09:00.0"),
        (2, "fallen_off_bus", "0000:09:00.0"),
    ]


def test_gsp_context_line() -> None:
    message = "NVRM: GPU4 GSP RPC buffer contains function 103 (GSP_RM_ALLOC) and data 0x1."
    assert signals_of(message) == [("gsp", None, message[6:])]


def test_unsupported_gpu() -> None:
    message = (
        "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2330) installed in this system is not "
        "supported by the NVIDIA 470.82 driver release."
    )
    assert signals_of(message) == [("unsupported_gpu", "0000:01:00.0", message[6:])]


def test_secure_boot_signals() -> None:
    assert signals_of(
        "nvidia: module verification failed: signature and/or required key missing - "
        "tainting kernel"
    ) == [
        (
            "module_verification",
            None,
            "nvidia: signature and/or required key missing - tainting kernel",
        )
    ]
    assert signals_of(
        "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7"
    ) == [
        (
            "lockdown",
            None,
            "modprobe: unsigned module loading is restricted; see man kernel_lockdown.7",
        )
    ]
    assert signals_of("modprobe: ERROR: could not insert 'nvidia': Operation not permitted") == [
        ("module_load_failed", None, "nvidia: Operation not permitted")
    ]
    assert signals_of("modprobe: ERROR: could not insert 'nvidia': Required key not available") == [
        ("module_load_failed", None, "nvidia: Required key not available")
    ]


def test_gsp_firmware_missing() -> None:
    assert signals_of(
        "nvidia 0000:01:00.0: Direct firmware load for nvidia/550.54.14/gsp_ga10x.bin failed "
        "with error -2"
    ) == [
        (
            "firmware_missing",
            "0000:01:00.0",
            "nvidia/550.54.14/gsp_ga10x.bin not loaded (error -2)",
        )
    ]
    assert signals_of("NVRM: RmFetchGspRmImages: No firmware image found") == [
        ("firmware_missing", None, "no GSP firmware image found")
    ]


def test_gsp_and_reset_required() -> None:
    assert signals_of("NVRM: _issueRpcAndWait: rpcRecvPoll timedout for fn 76 sequence 4127!") == [
        ("gsp", None, "_issueRpcAndWait: rpcRecvPoll timedout for fn 76 sequence 4127!")
    ]
    message = (
        "NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED] "
        "(0x00000062) returned from status"
    )
    assert signals_of(message) == [("reset_required", None, message[6:])]


def test_bar_invalid() -> None:
    assert signals_of("NVRM: BAR1 is 0M @ 0x0 (PCI:0000:3b:00.0)") == [
        ("bar_invalid", "0000:3b:00.0", "BAR1 is 0M @ 0x0 (PCI:0000:3b:00.0)")
    ]


def test_nvlink_and_nvswitch() -> None:
    message = "NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!"
    assert signals_of(message) == [("nvlink", None, message[6:])]
    banner = "nvidia-nvlink: Nvlink Core is being initialized, major device number 239"
    assert signals_of(banner) == []
    assert signals_of(
        "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress "
        "non-posted PRIV error (First)"
    ) == [
        (
            "nvswitch",
            "0000:05:00.0",
            "SXid 12028 non-fatal: Link 32 egress non-posted PRIV error (First)",
        )
    ]
    assert signals_of(
        "nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 20034, Fatal, Link 30 LTSSM Fault Up"
    ) == [("nvswitch", "0000:00:00.0", "SXid 20034 fatal: Link 30 LTSSM Fault Up")]


def test_pcie_link_degraded() -> None:
    message = (
        "pci 0000:3b:00.0: 252.048 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe "
        "x16 link at 0000:00:01.0 (capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 link)"
    )
    assert signals_of(message) == [("pcie_link_degraded", "0000:3b:00.0", message)]


def test_driver_loaded_banners() -> None:
    assert signals_of(
        "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  525.147.05  Wed Oct 25 20:27:35 UTC 2023"
    ) == [("driver_loaded", None, "proprietary 525.147.05")]
    assert signals_of(
        "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  595.71.05  Release Build  (root@)"
    ) == [("driver_loaded", None, "open 595.71.05")]


@pytest.mark.parametrize(
    "message",
    [
        XID_43,
        XID_48_OLD,
        "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  525.147.05",
        "EXT4-fs (sda1): mounted filesystem with ordered data mode.",
        "",
    ],
)
def test_quiet_lines(message: str) -> None:
    assert signals_of(message) == []


def test_every_emitted_kind_is_documented() -> None:
    text = "\n".join(
        [
            "[1.0] NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.",
            "[1.1] pcieport 0000:00:01.0: AER: Corrected error received: 0000:3b:00.0",
            "[1.2] nvidia: module verification failed: signature and/or required key missing",
            "[1.3] NVRM: RmFetchGspRmImages: No firmware image found",
            "[1.4] nouveau 0000:01:00.0: DRM: VRAM",
        ]
    )
    kinds = [s.kind for line in parse_dmesg(text, PATH) for s in scan_signals(line)]
    assert kinds == ["fallen_off_bus", "aer", "module_verification", "firmware_missing", "nouveau"]
    assert set(kinds) <= SIGNAL_KINDS.keys()


def test_signal_detail_is_clipped() -> None:
    long_line = "NVRM: GPU 0000:01:00.0 is already bound to nouveau " + "x" * 500
    (signal,) = scan_signals(line_of(long_line))
    assert signal.kind == "nouveau"
    assert len(signal.detail) == 300
    assert signal.detail.endswith("...")


# --------------------------------------------------------------------------------------
# Never raises
# --------------------------------------------------------------------------------------

PREFIXES = [
    "",
    "[  219.470994] ",
    "[Mon Aug  5 03:54:13 2024] ",
    "2025-11-17T09:12:45,123456+00:00 ",
    "Dec  2 11:38:47 worker4 kernel: [  219.470994] ",
    "Apr 29 19:24:11 EVE kernel: ",
    "192.168.11.119: kern: warning: [2026-04-22T21:29:21.342163186Z]: ",
    "<4>",
    "4,1,2,-;",
    "kern  :err   : ",
    "kernel: ",
    "   ",
]
FRAGMENTS = [
    "NVRM: Xid (",
    "PCI:0000:3b:00",
    " GPU-I:",
    " GPU-CI:",
    "): ",
    "79",
    ", pid=",
    "'<unknown>'",
    ", name=",
    "caused by previous Xid ",
    "fallen off the bus",
    "AER: ",
    "Uncorrected (Fatal) error received: ",
    "RmInitAdapter failed! (0x",
    "API mismatch: the client ",
    "has the version ",
    "SXid (",
    "#012",
    "\n",
    "\r\n",
    " ",
]

lines_text = st.lists(
    st.tuples(
        st.sampled_from(PREFIXES),
        st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=12),
    ),
    max_size=10,
).map(lambda rows: "\n".join(prefix + "".join(parts) for prefix, parts in rows))


def _exercise(text: str, year_hint: int | None) -> None:
    lines = parse_dmesg(text, PATH, year_hint=year_hint)
    physical = text.split("\n")
    previous = 0
    for line in lines:
        assert previous < line.line <= len(physical)
        previous = line.line
        assert line.path == PATH
        assert "\n" not in line.raw
        assert line.time is None or line.time.tzinfo is UTC
        event = parse_xid(line)
        assert event is None or event.source is line
        for signal in scan_signals(line):
            assert isinstance(signal, KernelSignal)
            assert signal.kind in SIGNAL_KINDS
            assert signal.pci is None or normalize_pci(signal.pci) == signal.pci


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(), year_hint=st.one_of(st.none(), st.integers(-10, 10_000)))
def test_never_raises_on_arbitrary_text(text: str, year_hint: int | None) -> None:
    _exercise(text, year_hint)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=2000))
def test_never_raises_on_arbitrary_bytes(data: bytes) -> None:
    _exercise(data.decode("utf-8", errors="replace"), 2025)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(text=lines_text, year_hint=st.one_of(st.none(), st.just(2025), st.just(1)))
def test_never_raises_on_near_miss_lines(text: str, year_hint: int | None) -> None:
    _exercise(text, year_hint)


@settings(max_examples=300)
@given(message=st.text())
def test_parse_xid_and_scan_signals_never_raise_on_any_message(message: str) -> None:
    line = line_of(message)
    parse_xid(line)
    scan_signals(line)
    normalize_pci(message)


journal_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(),
    st.lists(st.integers(-5, 300), max_size=40),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
)
journal_entries = st.dictionaries(
    st.sampled_from(
        [
            "_TRANSPORT",
            "SYSLOG_IDENTIFIER",
            "MESSAGE",
            "__REALTIME_TIMESTAMP",
            "__MONOTONIC_TIMESTAMP",
            "_SOURCE_MONOTONIC_TIMESTAMP",
        ]
    ),
    st.one_of(journal_values, st.just("kernel"), st.from_regex(r"[0-9]{1,25}", fullmatch=True)),
)


@settings(max_examples=300)
@given(entries=st.lists(st.tuples(st.integers(), journal_entries), max_size=8))
def test_journal_never_raises(entries: list[tuple[int, Mapping[str, object]]]) -> None:
    for line in kernel_lines_from_journal(entries, PATH):
        assert line.time is None or line.time.tzinfo is not None
        parse_xid(line)
        scan_signals(line)


def test_journal_skips_malformed_items() -> None:
    junk: list[object] = [None, (1,), (1, 2, 3), ("x", {}), (1, "not a mapping"), 5]
    assert kernel_lines_from_journal(junk, PATH) == []  # type: ignore[arg-type]


def test_patterns_are_compiled_on_first_use() -> None:
    pattern = kernel._Pattern(r"xid (?P<n>[0-9]+)", re.IGNORECASE)
    assert not {"search", "match", "fullmatch"} & set(vars(pattern))
    found = pattern.search("NVRM: Xid 79")
    assert found is not None and found["n"] == "79" and found.span() == (6, 12)
    assert {"search", "match", "fullmatch"} <= set(vars(pattern))
    assert pattern.match("XID 8") and not pattern.match(" xid 8")
    assert pattern.fullmatch("xid 8") and not pattern.fullmatch("xid 8 ")
    with pytest.raises(AttributeError):
        _ = pattern.sub


# --------------------------------------------------------------------------------------
# Stamp formats of real bundles: every one keeps a multi-line NVRM record whole, PCI included
# --------------------------------------------------------------------------------------

# A real `dmesg -H` capture (RTX 3090 on a Rockchip board, driver 535.129.03), from
# https://github.com/HeyMeco/Rockchip-pcie-devices/blob/15067d850b28986a2736a933a184a8ce64ecb535/_cards_gpu/Nvidia_RTX-3090-Founders-Edition.md
RELTIME = (
    "[Nov18 10:51] nvidia: loading out-of-tree module taints kernel.\n"
    "[  +0.000060] NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\n"
    "              NVRM: BAR1 is 0M @ 0x0 (PCI:0002:21:00.0)\n"
    "[  +0.000029] nvidia 0002:21:00.0: vgaarb: changed VGA decodes: olddecodes=io+mem,"
    "decodes=none:owns=none\n"
    "[  +0.000033] NVRM: The NVIDIA GPU 0002:21:00.0\n"
    "              NVRM: (PCI ID: 10de:2204) installed in this system has\n"
    "              NVRM: fallen off the bus and is not responding to commands.\n"
    "[  +0.000046] nvidia: probe of 0002:21:00.0 failed with error -1\n"
)
FALLEN_JOINED = ("NVRM: The NVIDIA GPU 0002:21:00.0 (PCI ID: 10de:2204) installed in this "
                 "system has fallen off the bus and is not responding to commands.")
FALLEN_SIGNAL = ("fallen_off_bus", "0002:21:00.0", "GPU was unreachable when the driver probed it")


def fallen_of(lines: list[KernelLine]) -> list[tuple[str, str | None, str]]:
    return [(s.kind, s.pci, s.detail) for line in lines for s in scan_signals(line)
            if s.kind == "fallen_off_bus"]


def test_reltime_stamps_are_prefixes_and_continuations_join() -> None:
    lines = parse_dmesg(RELTIME, PATH)
    assert [(x.line, x.message, x.time, x.uptime) for x in lines] == [
        (1, "nvidia: loading out-of-tree module taints kernel.", None, None),
        (2, "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid: "
            "BAR1 is 0M @ 0x0 (PCI:0002:21:00.0)", None, None),
        (4, "nvidia 0002:21:00.0: vgaarb: changed VGA decodes: olddecodes=io+mem,"
            "decodes=none:owns=none", None, None),
        (5, FALLEN_JOINED, None, None),
        (8, "nvidia: probe of 0002:21:00.0 failed with error -1", None, None),
    ]
    assert fallen_of(lines) == [FALLEN_SIGNAL]
    assert [(s.kind, s.pci) for s in scan_signals(lines[1])] == [("bar_invalid", "0002:21:00.0")]


def test_reltime_deltas_of_ten_seconds_and_more() -> None:
    # util-linux widens the delta field past 9.999999 s: "[ +12.345678]"
    got = parse_dmesg("[ +12.133392] zram0: detected capacity change from 0 to 2097152\n", PATH)
    assert [x.message for x in got] == ["zram0: detected capacity change from 0 to 2097152"]


def restamped(first: str, later: str) -> str:
    """RELTIME's fallen-off-the-bus record and the line after it, stamped another way."""
    record = RELTIME.splitlines()[4:8]
    return "\n".join([record[0].replace("[  +0.000033]", first), *record[1:3],
                      record[3].replace("[  +0.000046]", later)]) + "\n"


@pytest.mark.parametrize(("first", "later", "time"), [
    ("[Sat Nov 18 10:51:02 2023]", "[Sat Nov 18 10:51:02 2023]", utc(2023, 11, 18, 10, 51, 2)),
    ("2023-11-18T10:51:02,468215+00:00", "2023-11-18T10:51:02,468261+00:00",
     utc(2023, 11, 18, 10, 51, 2, 468215)),
    ("kern  :err   : 2023-11-18T10:51:02,468215+00:00",
     "kern  :err   : 2023-11-18T10:51:02,468261+00:00", utc(2023, 11, 18, 10, 51, 2, 468215)),
    ("kern  :err   : [Nov18 10:51]", "kern  :err   : [  +0.000046]", None),
    ("<3>[   63.468215]", "<3>[   63.468261]", None),
    ("Nov 18 10:51:02 rock kernel:", "Nov 18 10:51:02 rock kernel:", None),
    ("2023-11-18T10:51:02.468215+00:00 rock kernel:",
     "2023-11-18T10:51:02.468261+00:00 rock kernel:", utc(2023, 11, 18, 10, 51, 2, 468215)),
    ("rock: kern:     err: [2023-11-18T10:51:02.468215000Z]:",
     "rock: kern:     err: [2023-11-18T10:51:02.468261000Z]:",
     utc(2023, 11, 18, 10, 51, 2, 468215)),
], ids=["ctime", "iso", "decode-iso", "decode-reltime", "prio", "syslog", "rsyslog", "talos"])
def test_each_stamp_format_keeps_the_record_and_its_pci_address(
        first: str, later: str, time: datetime | None) -> None:
    lines = parse_dmesg(restamped(first, later), PATH)
    assert [(x.line, x.message, x.time) for x in lines] == [
        (1, FALLEN_JOINED, time),
        (4, "nvidia: probe of 0002:21:00.0 failed with error -1", lines[1].time)]
    assert fallen_of(lines) == [FALLEN_SIGNAL]


def test_dmesg_x_iso_line_from_gpud() -> None:
    # leptonai/gpud components/memory/testdata/dmesg.decode.iso.log (Apache-2.0)
    got = one("kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, "
              "pid='<unknown>', name=<unknown>, Graphics SM Global Exception on (GPC 8, TPC 5, "
              "SM 1): Multiple Warp Errors")
    assert got.time == utc(2025, 1, 21, 4, 41, 44, 283302)
    event = parse_xid(got)
    assert event is not None and (event.xid, event.pci) == (13, "0000:38:00.0")


def test_raw_kmsg_record_with_continuation_lines() -> None:
    text = restamped("3,1021,63468215,-;", "3,1022,63468261,-;")
    lines = parse_dmesg(text, PATH)
    assert [(x.line, x.uptime) for x in lines] == [(1, 63.468215), (4, 63.468261)]
    assert fallen_of(lines) == [FALLEN_SIGNAL]


def test_talos_dictionary_lines_are_not_message_text() -> None:
    # talosctl dmesg prints kmsg's dictionary lines after a record, as /dev/kmsg does:
    # https://github.com/siderolabs/extensions/blob/b61799a7e401b061aecfb759e071e853ea4f9cf3/drivers/thunderbolt/README.md
    text = ("10.100.52.1: kern:    info: [2023-07-23T16:47:30.48512066Z]: thunderbolt 0-0:1.1: "
            "new retimer found, vendor=0x8087 device=0x15ee\n"
            " SUBSYSTEM=thunderbolt\n"
            " DEVICE=+thunderbolt:0-0:1.1\n")
    assert [(x.message, x.time) for x in parse_dmesg(text, PATH)] == [
        ("thunderbolt 0-0:1.1: new retimer found, vendor=0x8087 device=0x15ee",
         utc(2023, 7, 23, 16, 47, 30, 485120))]


def test_reltime_lookalikes_are_not_stamps() -> None:
    # a bracket that is not a stamp stays in the message (and starts no prefix)
    for text in ("[Nov18] hello", "[+1] hello", "[Nov18 10:51:02] hello"):
        assert one(text).message == text
