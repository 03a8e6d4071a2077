"""RT004 and RT005: containerd itself — restarts, restart policy, the CRI plugin."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from analyzers import commands as sh
from analyzers.rule import Context
from bundle.textfiles import JournalEntry

# systemd's wording for a unit's life cycle, tolerant of the unit-name prefix and of
# the description suffix newer systemd versions add ("Started containerd.service - ...").
_KILLED_HUP = re.compile(r"main process exited, code=killed, status=1/HUP", re.I)


_SENT_HUP = re.compile(r"sent signal SIGHUP to main process (\d+)", re.I)


_SCHEDULED = re.compile(r"scheduled restart job, restart counter is at (\d+)", re.I)


_STARTED = re.compile(r"^Started (containerd\.service\b|containerd container runtime)", re.I)


_FAILED = re.compile(r"(start request repeated too quickly|failed with result '[^']+')", re.I)


_GAVE_UP = re.compile(r"start request repeated too quickly", re.I)


LOOP_WINDOW = timedelta(minutes=10)


LOOP_COUNT = 3


SAME_MOMENT = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class Restart:
    entry: JournalEntry
    kill: JournalEntry | None  # the SIGHUP kill line that preceded this start

    @property
    def killed_by_hup(self) -> bool:
        return self.kill is not None


def restarts(entries: list[JournalEntry]) -> tuple[list[Restart], list[JournalEntry]]:
    """containerd starts seen in its journal, and failures it did not recover from.

    systemd logs "Failed with result 'signal'" for every SIGHUP kill it then
    restarts from; such a line counts as a failure only when no start follows it.
    """
    found: list[Restart] = []
    failures: list[JournalEntry] = []
    kill: JournalEntry | None = None
    for entry in entries:
        text = entry.message
        if _KILLED_HUP.search(text) or _SENT_HUP.search(text):
            kill = kill or entry
        elif _STARTED.search(text):
            found.append(Restart(entry, kill))
            kill = None
            failures = [f for f in failures if _GAVE_UP.search(f.message)]
        elif _FAILED.search(text):
            failures.append(entry)
    return found, failures


def _pids(pairs: Iterable[tuple[str, int]]) -> list[int]:
    """containerd's own PIDs in order of appearance (its log lines, not systemd's), from
    the journal's (SYSLOG_IDENTIFIER, _PID) pairs."""
    seen: list[int] = []
    for ident, pid in pairs:
        if ident.startswith("containerd") and pid not in seen:
            seen.append(pid)
    return seen


class _Moments:
    """The times containerd restarted (each node's starts after its first), sorted once:
    finding the nodes that restarted within a minute of a node's restarts is then a
    range lookup, not a comparison with every node (a toolkit roll-out restarts
    containerd on every node at once)."""

    def __init__(self, seen: dict[str, tuple[list[Restart], list[JournalEntry]]]) -> None:
        pairs = sorted((r.entry.time, name) for name, (found, _) in seen.items()
                       for r in found[1:] if r.entry.time is not None)
        self._times = [when for when, _ in pairs]
        self._nodes = [name for _, name in pairs]

    def near(self, node_name: str, mine: list[Restart]) -> list[str]:
        """Other nodes whose containerd restarted within a minute of one of ``mine``."""
        others: set[str] = set()
        for restart in mine:
            when = restart.entry.time
            if when is None:
                continue
            start = bisect.bisect_left(self._times, when - SAME_MOMENT)
            end = bisect.bisect_right(self._times, when + SAME_MOMENT)
            others.update(self._nodes[start:end])
        others.discard(node_name)
        return sorted(others)


def _loop(times: list[datetime]) -> bool:
    times = sorted(times)
    return any(times[i + LOOP_COUNT - 1] - times[i] <= LOOP_WINDOW
               for i in range(len(times) - LOOP_COUNT + 1))


@dataclass(frozen=True, slots=True)
class _Unit:
    """The systemd unit whose process runs containerd on a node, and its ``show`` output."""

    name: str
    show: dict[str, str] | None


def _unit(ctx: Context, node_name: str) -> tuple[_Unit | None, str]:
    """The unit to judge on a node, or why there is none. ``systemctl show`` of a unit that
    does not exist prints ``Restart=no`` with ``LoadState=not-found``: such a unit is no
    evidence. On k3s, RKE2, k0s and MicroK8s containerd is a child of the distribution's
    own service, which is what restarts it."""
    where = ctx.facts.node_runtime(node_name)
    artifacts = ctx.facts.node(node_name)
    if not where.containerd:
        return None, f"{node_name} runs {where.runtime}, not containerd"
    if where.non_stock_containerd:
        for name in where.layout.units:
            show = artifacts.systemd_unit(name)
            if show is not None and show.get("LoadState", "loaded") != "not-found":
                return _Unit(name, show), ""
        return None, (f"{node_name} runs {where.layout.distribution}, whose units "
                      f"({', '.join(where.layout.units)}) were not collected")
    show = artifacts.systemd_containerd
    if show is not None and show.get("LoadState") == "not-found":
        return None, f"{node_name} has no containerd unit (LoadState=not-found)"
    return _Unit("containerd", show), ""


def _distribution_remediation(node_name: str, unit: str, weak: bool, dead: bool) -> str:
    name = sh.word(unit, "systemd unit")
    return sh.lines(
        sh.note("# on {node}: {unit} runs containerd as its child", node=sh.node(node_name),
                unit=name),
        sh.cmd("systemctl", "show", name, "-p", "Restart,RestartUSec,NRestarts,ActiveState"),
        sh.cmd("systemctl", "edit", name, tail="   # add: [Service] Restart=always") if weak
        else [],
        sh.cmd("systemctl", "start", name) if dead else [],
        "# roll toolkit changes (time-slicing, upgrades) out one node at a time")


_CRI_NAMES = ("cri", "io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime",
              "io.containerd.cri.v1.images")


def _cri_remediation(node_name: str) -> str:
    node = sh.node(node_name)
    return sh.lines(
        sh.node_shell(node),
        "containerd config dump | grep -n disabled_plugins",
        "journalctl -u containerd --no-pager | grep -iE 'cri|failed to load plugin' | tail -20",
        "# remove cri from disabled_plugins in the config containerd reads (Docker's packaged",
        "# /etc/containerd/config.toml disables it), fix the error the journal names, then",
        "# restart containerd on this node: systemctl restart containerd",
    )
