"""A kernel log naming thousands of GPUs is read for the first 64 it names.

Every distinct PCI address in an Xid line (or a kernel signal, or an SXid) becomes a
finding of its own. A 4.6 MB dmesg of 50,000 Xid 79 lines, each with another address,
made 100,004 findings: 63 s, 1.75 GB of memory and a 220 MB JSON report. No server holds
more than 16 GPUs and 12 NVSwitches, so the lines of addresses past the first 64 of each
kind are left out, and one refused problem per kind says how many were.

Wording: the Xid 79 line of samples/xid79-fallen-off-bus (NVIDIA's Xid catalogue).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.facts.kernel_events import MAX_DEVICES
from analyzers.results.models import Report
from bundle import open_bundle

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "xid79-fallen-off-bus"
REAL = "0000:ca:00.0"  # the sample's GPU that fell off the bus


def _flooded(tmp_path: Path, addresses: int) -> Report:
    target = tmp_path / "b"
    shutil.copytree(SAMPLE, target)
    # bus i % 256, device i // 256 (a device number has 5 bits: up to 8,192 addresses)
    lines = [f"2026-11-28T03:13:{i % 60:02d},000000+00:00 NVRM: Xid (PCI:0001:{i & 0xff:02x}:"
             f"{i >> 8:02x}): 79, GPU has fallen off the bus." for i in range(addresses)]
    with (target / "nodes" / "hgx-1" / "dmesg.txt").open("a") as dmesg:
        dmesg.write("\n".join(lines) + "\n")
    with open_bundle(target) as opened:
        return analyze(opened, discover().rules)


def _gpus(report: Report, rule: str) -> set[str]:
    return {f.id.split("/", 1)[1] for f in report.findings if f.rule_id == rule}


def test_a_flood_of_addresses_is_read_for_the_first_64(tmp_path: Path) -> None:
    report = _flooded(tmp_path, 3000)
    xids = _gpus(report, "DRV001")
    assert len(xids) == MAX_DEVICES and REAL in xids  # the real GPU came first
    lost = _gpus(report, "DRV002")
    assert len(lost) <= MAX_DEVICES and REAL in lost
    refused = {p.message for p in report.problems
               if p.path == "nodes/hgx-1/dmesg.txt" and p.kind == "refused"}
    assert ("Xid lines name 3,001 distinct PCI addresses; those of the first 64 were read, "
            "the lines of the other 2,937 were not (no server holds that many GPUs or "
            "NVSwitches)") in refused
    assert any(m.startswith("GPU kernel lines name 3,002 distinct") for m in refused)
    assert "BND002:refused" in {f.id for f in report.findings}


def test_up_to_64_addresses_are_all_read(tmp_path: Path) -> None:
    """The sample's log names two addresses already (its GPU, and a second one in a
    kernel signal): 62 more make 64 for the signals and 63 for the Xids."""
    report = _flooded(tmp_path, MAX_DEVICES - 2)
    assert len(_gpus(report, "DRV001")) == MAX_DEVICES - 1
    assert not [p for p in report.problems if "distinct PCI addresses" in p.message]
    one_more = _flooded(tmp_path / "more", MAX_DEVICES - 1)
    assert [p.message[:44] for p in one_more.problems if "distinct PCI" in p.message] == [
        "GPU kernel lines name 65 distinct PCI addres"]
