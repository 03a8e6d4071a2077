"""DRV011: NVSwitch SXid errors per node and switch, explained with the SXid catalog."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import datetime

from analyzers import commands as sh
from analyzers.knowledge import sxid as catalog
from bundle.kernel import SXidEvent, XidEvent

UNKNOWN_SWITCH = "unknown-switch"


# Xids an NVSwitch error shows up as on the GPUs behind it: a fatal SXid reaches the GPU
# as Xid 74 (NVLink error); SXids that stall NVLink traffic abort CUDA jobs with Xid 45.
GPU_XIDS = frozenset({45, 74})


# Non-fatal SXids whose catalog entry says they stall the GPU's NVLink traffic.
STALLING = frozenset({11004, 12028, 19084})


FATAL = frozenset({"fatal", "always-fatal"})


_LISTED = 8      # SXid numbers the summary lists (a hostile log can hold 10^6)


NEAR_S = 600.0   # an Xid this close in time to an SXid is taken as its echo on the GPU


def _key(event: SXidEvent) -> str:
    return event.pci or event.switch or UNKNOWN_SWITCH


def _info(event: SXidEvent) -> catalog.SXidInfo:
    return catalog.lookup(event.sxid, event.severity)


def _reports(events: Sequence[SXidEvent]) -> list[SXidEvent]:
    """The first line of each report (it prints Fatal/Non-fatal); the detail lines after
    it only when a report's first line is missing from the log."""
    first = [e for e in events if e.severity is not None]
    return first or list(events)


def _serious(event: SXidEvent) -> bool:
    info = _info(event)
    return info.kind in FATAL or event.sxid in STALLING or \
        (not info.known and event.severity == "fatal")


class _Clocks:
    """Whether an SXid of one set is close enough in time to an Xid to be its cause: by
    wall clock where both have one, else by uptime, else (no comparable clock: same log)
    always. Answered by bisection: a node's log can hold many thousands of Xid 74 lines
    and fatal SXids, and comparing every pair cost their product (6,000 of each, 5 s)."""

    def __init__(self, sxids: Sequence[SXidEvent]) -> None:
        sources = [e.source for e in sxids]
        self.times = sorted(s.time for s in sources if s.time is not None)
        untimed = [s for s in sources if s.time is None]
        # the SXids an Xid with a wall clock falls back to uptime (or to always) with
        self.untimed_uptimes = sorted(s.uptime for s in untimed if s.uptime is not None)
        self.untimed_no_uptime = any(s.uptime is None for s in untimed)
        self.any_untimed = bool(untimed)
        # the SXids an Xid without a wall clock compares by uptime (or always) with
        self.uptimes = sorted(s.uptime for s in sources if s.uptime is not None)
        self.any_no_uptime = any(s.uptime is None for s in sources)

    @staticmethod
    def _within(values: list[float], value: float) -> bool:
        """Some value within NEAR_S of ``value``: the nearest ones decide."""
        at = bisect.bisect_left(values, value)
        return any(abs(values[i] - value) <= NEAR_S for i in (at - 1, at) if 0 <= i < len(values))

    @staticmethod
    def _within_time(values: list[datetime], value: datetime) -> bool:
        at = bisect.bisect_left(values, value)
        return any(abs((values[i] - value).total_seconds()) <= NEAR_S
                   for i in (at - 1, at) if 0 <= i < len(values))

    def near(self, xid: XidEvent) -> bool:
        a = xid.source
        if a.time is not None:
            if self._within_time(self.times, a.time):
                return True
            if a.uptime is None:
                return self.any_untimed
            return self.untimed_no_uptime or self._within(self.untimed_uptimes, a.uptime)
        if a.uptime is None:
            return bool(self.times) or self.any_untimed
        return self.any_no_uptime or self._within(self.uptimes, a.uptime)


def _remediation(name: str, lead: catalog.SXidInfo, serious: bool) -> str:
    target = sh.node(name)
    action = lead.action.replace("'", "\u2019")   # a comment a shell may read as a command
    lines = [
        sh.node_shell(target),
        "dmesg --time-format iso | grep -E 'SXid|NVRM: Xid' | tail -40",
        "journalctl -u nvidia-fabricmanager --since -1d --no-pager | tail -40",
        "nvidia-smi -q | grep -i -A2 Fabric",
    ]
    if serious:
        lines += [
            sh.cmd("kubectl", "cordon", target),
            sh.cmd("kubectl", "drain", target, "--ignore-daemonsets",
                   "--delete-emptydir-data", tail="   # one node at a time"),
            f"# SXid {lead.sxid}: {action}",
        ]
    else:
        lines.append(f"# SXid {lead.sxid}: {action}")
    lines.append(f"# SXid tables: {catalog.guide()}")
    return sh.lines(lines)
