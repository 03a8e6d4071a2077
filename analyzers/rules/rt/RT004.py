"""RT004: containerd was restarted (SIGHUP kills, restart loops) or would not come back."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import CannotJudge, Context, Rule, node
from analyzers.rules.common import RUNTIME_FILE, node_ref
from analyzers.rules.rt._service import (
    LOOP_COUNT,
    LOOP_WINDOW,
    Restart,
    _distribution_remediation,
    _loop,
    _Moments,
    _pids,
    _Unit,
    _unit,
    restarts,
)
from bundle import specs
from bundle.textfiles import JournalEntry


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
    inputs = (node(specs.CONTAINERD_JOURNAL), node(specs.SYSTEMD_CONTAINERD, optional=True),
              node(specs.SYSTEMD_ANY, optional=True), RUNTIME_FILE)
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
        seen = {n: restarts(list(ctx.facts.node(n).journal(specs.CONTAINERD_UNIT).lifecycle))
                if u.name == "containerd" else ([], []) for n, u in units.items()}
        moments = _Moments(seen)
        for node_name, unit in units.items():
            finding = self._node(ctx, node_name, seen[node_name], moments, unit)
            if finding is not None:
                yield finding

    def _node(self, ctx: Context, node_name: str, seen: tuple[list[Restart], list[JournalEntry]],
              moments: _Moments, judged: _Unit) -> Finding | None:
        artifacts = ctx.facts.node(node_name)
        journal_path = artifacts.path(specs.CONTAINERD_JOURNAL)
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
        pids = _pids(ctx.facts.node(node_name).journal(specs.CONTAINERD_UNIT).pids)
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
        systemd_path = artifacts.path(specs.systemd(name))
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
