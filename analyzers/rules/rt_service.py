"""RT004 and RT005: containerd itself — restarts, restart policy, the CRI plugin."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from analyzers import commands as sh
from analyzers.facts.journals import journal_scan
from analyzers.facts.preconditions import Need
from analyzers.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import CannotJudge, Context, Rule, node
from analyzers.rules.common import RUNTIME_FILE, node_ref
from bundle.textfiles import JournalEntry, parse_key_values

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


class ContainerdRestarts(Rule):
    """containerd was restarted (SIGHUP kills, restart loops) or would not come back.

    The Container Toolkit's default restart method sends containerd SIGHUP, which
    containerd does not handle: the process dies and systemd restarts it — only
    because the unit says ``Restart=always``. The rule reads the containerd journal
    (SIGHUP kills, ``Scheduled restart job``, ``Started``, PID changes, restart
    loops) and ``systemctl show containerd``.

    Why it matters:
    Each restart interrupts every container start on the node, and a unit whose
    ``Restart`` is not ``always`` stays dead after the toolkit's SIGHUP (systemd
    treats SIGHUP as a clean exit for ``on-failure``), taking the node out of service.

    Remediation:
    Check the unit and its history first:
      systemctl show containerd -p Restart,NRestarts,ActiveState
      journalctl -u containerd --since -7d | grep -E 'Started|Stopped|signal|restart'
    Make ``Restart=always`` a drop-in (``systemctl edit containerd``), and roll
    toolkit changes (time-slicing, upgrades) out one node at a time.
    """

    id = "RT004"
    slug = "containerd-restarts"
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (node("journal/containerd.jsonl"), node("systemd/containerd.txt", optional=True),
              node("systemd/*", optional=True), RUNTIME_FILE)
    needs = (Need.CONTAINERD,)
    tags = ("runtime", "containerd")

    def check(self, ctx: Context) -> Iterable[Finding]:
        units: dict[str, _Unit] = {}
        unjudged: dict[str, str] = {}
        for node_name in ctx.facts.gpu_nodes:
            unit, why = _unit(ctx, node_name)
            if unit is None:
                unjudged[node_name] = why
            else:
                units[node_name] = unit
        if not units and unjudged:
            reasons = sorted(set(unjudged.values()))
            raise CannotJudge(f"no GPU node runs containerd under a unit that exists: "
                              f"{'; '.join(reasons[:3])}")
        # restarts() reads life-cycle lines only: the shared scan keeps those (facts/journals)
        seen = {n: restarts(list(journal_scan(ctx.bundle, n, "containerd").lifecycle))
                if u.name == "containerd" else ([], []) for n, u in units.items()}
        moments = _Moments(seen)
        for node_name, unit in units.items():
            finding = self._node(ctx, node_name, seen[node_name], moments, unit)
            if finding is not None:
                yield finding

    def _node(self, ctx: Context, node_name: str, seen: tuple[list[Restart], list[JournalEntry]],
              moments: _Moments, judged: _Unit) -> Finding | None:
        artifacts = ctx.bundle.node(node_name)
        journal_path = artifacts.path("journal/containerd.jsonl")
        found, failures = seen
        unit = judged.show or {}
        policy = unit.get("Restart")
        state = unit.get("ActiveState")
        restart_times = [r.entry.time for r in found if r.entry.time is not None]
        looping = _loop(restart_times)
        hups = [r for r in found if r.killed_by_hup]
        weak_policy = policy is not None and policy != "always"
        dead = state is not None and state not in ("active", "reloading", "activating")
        # The first start in the window is the boot; only later ones are restarts.
        restarted = len(found) > 1 or bool(hups)
        if not restarted and not failures and not weak_policy and not dead:
            return None
        severity = Severity.LOW
        if looping or failures:
            severity = Severity.HIGH
        if weak_policy:
            severity = Severity.HIGH
        if dead:
            severity = Severity.CRITICAL
        parts = []
        if restarted:
            when = ", ".join(r.entry.time.strftime("%Y-%m-%d %H:%M:%S") for r in found[:4]
                             if r.entry.time is not None)
            parts.append(f"containerd started {len(found)} time(s) in the journal ({when}"
                         f"{', …' if len(found) > 4 else ''}), {len(hups)} after a SIGHUP kill")
        pids = _pids(journal_scan(ctx.bundle, node_name, "containerd").pids)
        if len(pids) > 1:
            chain = " → ".join(map(str, pids[:5]))
            parts.append(f"its PID changed {len(pids) - 1} time(s) ({chain})")
        together = moments.near(node_name, found[1:])
        if together:
            parts.append(f"{', '.join(together)} restarted within the same minute: a change "
                         "re-ran the toolkit on several nodes at once")
        if looping:
            parts.append(f"{LOOP_COUNT}+ restarts within {int(LOOP_WINDOW.total_seconds() // 60)} "
                         "minutes: a restart loop")
        if failures:
            parts.append(f"systemd reported failure: {failures[0].message}")
        name = judged.name
        if weak_policy:
            subject = "the unit" if name == "containerd" else f"the {name} unit, which runs " \
                "containerd,"
            parts.append(f"{subject} has Restart={policy}, so a SIGHUP from the toolkit would "
                         "leave containerd dead")
        if dead:
            what = "containerd" if name == "containerd" else f"{name} (it runs containerd)"
            parts.append(f"{what} is {state} ({unit.get('SubState', '?')}) at collection "
                         "time")
        evidence = []
        for restart in (hups or found[1:])[:3]:
            if restart.kill is not None:
                evidence.append(Evidence(path=journal_path, line=restart.kill.line,
                                         excerpt=restart.kill.message))
            evidence.append(Evidence(path=journal_path, line=restart.entry.line,
                                     excerpt=restart.entry.message))
        evidence += [Evidence(path=journal_path, line=e.line, excerpt=e.message)
                     for e in failures[:2]]
        systemd_path = artifacts.path(f"systemd/{name}.txt")
        if weak_policy or dead:
            evidence.append(Evidence(path=systemd_path, excerpt=f"Restart={policy} "
                                     f"ActiveState={state}"))
        if name != "containerd":
            return self.finding(node_name, f"On {node_name}, " + "; ".join(parts) + ".",
                                severity=severity, nodes=[node_name],
                                objects=[node_ref(node_name)], evidence=evidence,
                                remediation=_distribution_remediation(node_name, name,
                                                                      weak_policy, dead))
        remediation = sh.lines(
            sh.note("# on {node}", node=sh.node(node_name)),
            "systemctl show containerd -p Restart,RestartUSec,NRestarts,ActiveState\n"
            "journalctl -u containerd --since -7d | grep -E 'Started|Stopped|signal|restart'\n"
            + ("# make systemd restart containerd after the toolkit's SIGHUP:\n"
               "mkdir -p /etc/systemd/system/containerd.service.d\n"
               "printf '[Service]\\nRestart=always\\nRestartSec=5\\n' > "
               "/etc/systemd/system/containerd.service.d/restart.conf\n"
               "systemctl daemon-reload\n" if weak_policy else "")
            + ("systemctl start containerd && systemctl status containerd --no-pager\n"
               if dead else "")
            + "# roll toolkit changes (time-slicing, upgrades) out one node at a time")
        return self.finding(node_name, f"On {node_name}, " + "; ".join(parts) + ".",
                            severity=severity, nodes=[node_name], objects=[node_ref(node_name)],
                            evidence=evidence, remediation=remediation)


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
    artifacts = ctx.bundle.node(node_name)
    if not where.containerd:
        return None, f"{node_name} runs {where.runtime}, not containerd"
    if where.non_stock_containerd:
        for name in where.layout.units:
            text = artifacts.text(f"systemd/{name}.txt")
            show = parse_key_values(text) if text is not None else None
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


class CriPluginDisabled(Rule):
    """containerd's CRI plugin is disabled or failed to load.

    ``disabled_plugins`` in the loaded configuration names ``cri`` (a default of
    some distribution packages that target Docker) or the CRI plugin failed to
    load according to the containerd journal.

    Why it matters:
    Without the CRI plugin kubelet cannot talk to containerd at all: the node is
    NotReady or no pod sandbox can be created, GPU or not.

    Remediation:
    On the node: ``containerd config dump | grep disabled_plugins``; remove ``cri``
    from ``disabled_plugins`` in ``/etc/containerd/config.toml`` (Docker's packaged
    config disables it), fix the error the journal names, and restart containerd.
    """

    id = "RT005"
    slug = "cri-plugin-disabled"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (node("containerd/config-dump.toml"), node("journal/containerd.jsonl", optional=True))
    needs = (Need.CONTAINERD,)
    tags = ("runtime", "containerd")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for node_name in ctx.bundle.node_names:
            if not ctx.facts.node_runtime(node_name).containerd:
                # Docker's own containerd ships with CRI disabled: normal where the kubelet
                # talks to Docker (or CRI-O), and no claim about the node's CRI
                continue
            artifacts = ctx.bundle.node(node_name)
            evidence: list[Evidence] = []
            dump = artifacts.config_dump or {}
            disabled = [str(p) for p in dump.get("disabled_plugins", []) or []
                        if str(p) in _CRI_NAMES]
            if disabled:
                dump_path = artifacts.path("containerd/config-dump.toml")
                text = artifacts.config_dump_text or ""
                line = next((i for i, raw in enumerate(text.splitlines(), 1)
                             if raw.strip().startswith("disabled_plugins")), None)
                evidence.append(Evidence(path=dump_path, line=line,
                                         excerpt=f"disabled_plugins = {disabled}"))
            journal_path = artifacts.path("journal/containerd.jsonl")
            for entry, found in journal_scan(ctx.bundle, node_name, "containerd").matches:
                if any("RT005" in m.signature.rules for m in found):
                    evidence.append(Evidence(path=journal_path, line=entry.line,
                                             excerpt=entry.message))
                    if len(evidence) >= 4:
                        break
            if not evidence:
                continue
            why = (f"disabled_plugins lists {', '.join(disabled)}" if disabled
                   else "the journal shows the CRI plugin failing to load")
            cri = ctx.facts.node_cri(node_name)
            if cri.cri is None:
                # the claim rests on containerd being the CRI, which nothing here says
                yield self.finding(
                    node_name, f"On {node_name}, containerd runs without its CRI plugin: "
                    f"{why}. Whether containerd is this node's CRI is not known ({cri.basis}): "
                    "if it is, kubelet cannot create pods through it; Docker's own containerd "
                    "runs like this normally.", severity=Severity.MEDIUM,
                    confidence=Confidence.LIKELY, nodes=[node_name],
                    objects=[node_ref(node_name)], evidence=evidence,
                    remediation=_cri_remediation(node_name))
                continue
            yield self.finding(node_name, f"On {node_name}, containerd runs without its CRI "
                               f"plugin: {why}. kubelet cannot create pods through it.",
                               nodes=[node_name], objects=[node_ref(node_name)],
                               evidence=evidence, remediation=_cri_remediation(node_name))


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
