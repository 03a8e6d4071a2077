"""DRV011 on hostile kernel logs: the Xid 74/45 echoes of fatal SXids found in linear
time, and a bounded summary however many SXid numbers a switch reports.

Each Xid 74 was compared with every serious SXid of the switch: 6,000 of each (a 1.2 MB
dmesg) took 5.6 s, 20,000 about a minute, 60,000 ten. The comparison is now a bisection over the
SXids' clocks, with exactly the old rule for which clocks compare (wall clock where
both have one, else uptime, else always); a property test holds it to the old loop.
No timing is asserted: before the change the large case did not end in a test run.

Wordings: the SXid 20034 and Xid 74 lines of tests/rules/test_drv011.py (gpud's
sxid/kmsg.go examples, after NVIDIA's Fabric Manager User Guide).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from hostile_kit import HOSTILE
from hypothesis import given
from hypothesis import strategies as st
from kit import analyse
from kit import findings as of
from kit.driver import bundle_files as drv_files
from kit.driver import gpu_node

from analyzers.knowledge import sxid as catalog
from analyzers.rules.drv._sxid import NEAR_S, _Clocks
from bundle.kernel import KernelLine, SXidEvent, XidEvent

BASE = datetime(2026, 11, 29, tzinfo=UTC)
CLOCK = st.tuples(st.none() | st.integers(0, 3000), st.none() | st.integers(0, 3000))


def near_before(xid: XidEvent, sxids: list[SXidEvent]) -> bool:
    """DRV011's pairwise comparison before the change, the reference."""
    for event in sxids:
        a, b = xid.source, event.source
        if a.time is not None and b.time is not None:
            if abs((a.time - b.time).total_seconds()) <= NEAR_S:
                return True
        elif a.uptime is not None and b.uptime is not None:
            if abs(a.uptime - b.uptime) <= NEAR_S:
                return True
        else:
            return True
    return False


def _line(clock: tuple[int | None, int | None]) -> KernelLine:
    seconds, uptime = clock
    return KernelLine(path="dmesg.txt", line=1, raw="", message="",
                      time=None if seconds is None else BASE + timedelta(seconds=seconds),
                      uptime=None if uptime is None else float(uptime))


def _sxid(clock: tuple[int | None, int | None]) -> SXidEvent:
    return SXidEvent(sxid=20034, switch="nvidia-nvswitch0", pci="0000:05:00.0",
                     severity="fatal", link=30, detail="LTSSM Fault Up", source=_line(clock))


def _xid(clock: tuple[int | None, int | None]) -> XidEvent:
    return XidEvent(xid=74, pci="0000:18:00.0", pid=None, process=None, detail="NVLink",
                    caused_by=None, mig_gi=None, mig_ci=None, source=_line(clock))


@HOSTILE
@given(st.lists(CLOCK, max_size=6), CLOCK)
def test_bisection_answers_as_the_pairwise_loop(sxids: list[tuple[int | None, int | None]],
                                                xid: tuple[int | None, int | None]) -> None:
    events = [_sxid(c) for c in sxids]
    assert _Clocks(events).near(_xid(xid)) == near_before(_xid(xid), events)


def test_many_fatal_sxids_and_xid74s_far_apart(tmp_path: Path) -> None:
    many = 20_000
    sxid = ("[{:.6f}] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM "
            "Fault Up\n")
    xid = ("[{:.6f}] NVRM: Xid (PCI:0000:18:00): 74, pid='<unknown>', name=<unknown>, NVLink: "
           "fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n")
    far = "".join(sxid.format(1000 + i / 1000) for i in range(many)) + \
        "".join(xid.format(900_000 + i / 1000) for i in range(many))
    report = analyse(drv_files([gpu_node("hgx-1")], {"nodes/hgx-1/dmesg.txt": far}),
                     tmp=tmp_path / "far")
    assert of(report, "DRV011")["DRV011:hgx-1/0000:05:00.0"].causes == []
    near = far + xid.format(1100.0)
    report = analyse(drv_files([gpu_node("hgx-1")], {"nodes/hgx-1/dmesg.txt": near}),
                     tmp=tmp_path / "near")
    assert of(report, "DRV011")["DRV011:hgx-1/0000:05:00.0"].causes == [
        "DRV001:hgx-1/0000:18:00.0"]


def test_many_distinct_sxid_numbers_are_counted_not_listed(tmp_path: Path) -> None:
    """One line per SXid number (0 to 19,999) on one switch: the summary listed every
    number (100,000 of them made a 5 MB summary) and the catalog cached an entry for
    each, for the life of the process (batch mode too)."""
    log = "".join(f"[{1000 + i / 1000:.6f}] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): {i}, "
                  "Non-fatal, Link 30 x\n" for i in range(20_000))
    report = analyse(drv_files([gpu_node("hgx-1")], {"nodes/hgx-1/dmesg.txt": log}), tmp=tmp_path)
    summary = of(report, "DRV011")["DRV011:hgx-1/0000:05:00.0"].summary
    listed = ", ".join(f"SXid {n} (not in the SXid catalog, non-fatal) x1" for n in range(8))
    assert f"reported 20000 SXid error(s) (1000 s after boot to 1020 s after boot) on link(s) " \
           f"30: {listed} and 19,992 other SXid number(s). Lead: " in summary
    assert catalog.lookup.cache_info().currsize <= 1024
