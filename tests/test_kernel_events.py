"""facts.kernel_events: merging dmesg with journal kernel entries, GPU identities."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from kit.bundles import write_dir
from kit.driver import at, gpu_node, journal_kernel, smi_gpu, smi_xml
from kit.objects import lists

from analyzers.facts import Facts
from analyzers.facts.kernel_events import in_time_order, merge_lines
from bundle import open_bundle
from bundle.kernel import KernelLine, parse_xid

XID = "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."


def _line(path: str, number: int, time: datetime | None, uptime: float | None,
          message: str = XID) -> KernelLine:
    return KernelLine(path=path, line=number, raw=message, message=message, time=time,
                      uptime=uptime)


def test_a_journal_repeat_is_dropped_but_a_later_boot_is_kept() -> None:
    start = datetime(2026, 11, 29, 10, tzinfo=UTC)
    dmesg = [_line("d", 1, start, None)]
    journal = [_line("j", 1, start + timedelta(seconds=2), 70.0),
               _line("j", 2, start + timedelta(days=2), 80.0)]
    merged = merge_lines(dmesg, journal)
    assert [(m.path, m.line) for m in merged] == [("d", 1), ("j", 2)]


def test_repeats_are_matched_one_to_one_and_by_uptime() -> None:
    dmesg = [_line("d", 1, None, 100.0), _line("d", 2, None, 100.5)]
    journal = [_line("j", 1, None, 100.1), _line("j", 2, None, 100.6),
               _line("j", 3, None, 100.7)]
    assert [(m.path, m.line) for m in merge_lines(dmesg, journal)] == [
        ("d", 1), ("d", 2), ("j", 3)]


def test_events_sort_by_wall_clock_else_uptime_else_log_order() -> None:
    late = parse_xid(_line("d", 1, at("2026-11-29T10:00:05"), 5.0))
    early = parse_xid(_line("j", 1, at("2026-11-29T10:00:01"), 9.0))
    assert late is not None and early is not None
    assert in_time_order([late, early]) == [early, late]
    no_clock = parse_xid(_line("d", 9, None, None))
    assert no_clock is not None
    assert in_time_order([late, no_clock, early]) == [late, no_clock, early]


def test_identities_tolerate_paddings_and_use_the_driver_uuid_line(tmp_path: Path) -> None:
    smi = smi_xml(smi_gpu("00000000:3B:00.0", "GPU-3b6ec030-5adc-1847-e155-79f635584b4e"))
    dmesg = ("[    5.1] NVRM: GPU at PCI:0000:5e:00: GPU-509665ad-b600-ac93-3616-d754b23d636d\n"
             f"[   99.2] {XID}\n")
    journal = journal_kernel((XID, at("2026-11-29T10:00:00"), 99.2))
    files = {**lists(nodes=[gpu_node("gpu-a")]), "nodes/gpu-a/nvidia-smi.xml": smi,
             "nodes/gpu-a/dmesg.txt": dmesg, "nodes/gpu-a/journal/kernel.jsonl": journal}
    with open_bundle(write_dir(tmp_path / "b", files)) as bundle:
        kernel = Facts(bundle).kernel_events["gpu-a"]
    assert kernel.sources == ("nodes/gpu-a/dmesg.txt", "nodes/gpu-a/journal/kernel.jsonl")
    assert len(kernel.xids) == 1
    assert kernel.gpu("0000:3b:00") is kernel.gpu("00000000:3B:00.0")
    assert kernel.gpu("0000:3b:00.1") is kernel.gpu("0000:3b:00.0")
    assert kernel.key("PCI:0000:3B:00") == "0000:3b:00.0"
    found = kernel.gpu("0000:5e:00.0")
    assert found is not None and found.uuid == "GPU-509665ad-b600-ac93-3616-d754b23d636d"
    assert found.index is None and found.bus_id == ""
    assert list(kernel.xids_by_gpu()) == ["0000:3b:00.0"]
