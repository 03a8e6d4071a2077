"""systemd journal entries of a node (``journalctl -o json``) for containerd
and kubelet: unit start/stop as systemd logs it, containerd 1.6 (logrus) and
kubelet (klog) lines, and the CRI traffic of the pods placed on the node."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from .core import epoch_us, hexid, iso_nano, journal_line, klog_text, plus
from .model import Host
from .scene import SandboxAttempt

# systemd catalog message ids (sd-messages.h)
MSG_STARTING = "7d4958e842da4a758f6c1cdc7b36dcc5"
MSG_STARTED = "39f53479d3a045ac8e11786248231fbf"
MSG_STOPPED = "9d1aaa27d60140bd96365438aad20286"
MSG_PROCESS_EXIT = "98e322203f7a4ed290d09fe03c09fe15"
MSG_FAILURE_RESULT = "d9b373ed55a64feb8242e02dbe79a49c"
MSG_RESTART_SCHEDULED = "5eb03494b6584870a536b337290809b3"


@dataclass
class Journal:
    """journalctl -o json for one unit of one host."""

    host: Host
    unit: str  # "containerd.service"
    entries: list[tuple[dt.datetime, dict[str, str]]] = field(default_factory=list)

    def _base(self, at: dt.datetime, priority: int) -> dict[str, str]:
        return {
            "__REALTIME_TIMESTAMP": str(epoch_us(at)),
            "PRIORITY": str(priority),
        }

    def daemon(self, at: dt.datetime, pid: int, message: str) -> None:
        """A line the service wrote to stdout/stderr (journald stores it at
        priority 6 whatever its own level says)."""
        name = self.unit.removesuffix(".service")
        fields = self._base(at, 6)
        fields.update(
            {
                "_TRANSPORT": "stdout",
                "SYSLOG_IDENTIFIER": name,
                "_PID": str(pid),
                "_SYSTEMD_UNIT": self.unit,
                "_HOSTNAME": self.host.name,
                "MESSAGE": message,
            }
        )
        self.entries.append((at, fields))

    def systemd(
        self, at: dt.datetime, message: str, *, message_id: str = "", priority: int = 6
    ) -> None:
        """A line systemd (PID 1) logged about the unit; ``journalctl -u`` shows it
        through the UNIT= field."""
        fields = self._base(at, priority)
        fields.update(
            {
                "_TRANSPORT": "journal",
                "SYSLOG_IDENTIFIER": "systemd",
                "_PID": "1",
                "_SYSTEMD_UNIT": "init.scope",
                "UNIT": self.unit,
                "_HOSTNAME": self.host.name,
                "MESSAGE": message,
            }
        )
        if message_id:
            fields["MESSAGE_ID"] = message_id
        self.entries.append((at, fields))

    def render(self) -> str:
        ordered = sorted(self.entries, key=lambda e: e[0])
        return "".join(journal_line(f) for _, f in ordered)


def containerd_text(at: dt.datetime, level: str, msg: str, **kv: str) -> str:
    """A containerd 1.x (logrus) line."""
    quoted = json.dumps(msg) if any(c in msg for c in ' ="') else msg
    extra = "".join(
        f" {k}={json.dumps(v) if any(c in v for c in ' =') else v}" for k, v in kv.items()
    )
    return f'time="{iso_nano(at)}" level={level} msg={quoted}{extra}'


def klog(at: dt.datetime, severity: str, pid: int, source: str, msg: str, **kv: str) -> str:
    """A klog line with structured key/values (``"msg" key="value"``)."""
    extra = "".join(f" {k}={json.dumps(v)}" for k, v in kv.items())
    return klog_text(at, severity, pid, source, f'"{msg}"{extra}')


def containerd_boot(j: Journal, start: dt.datetime, pid: int) -> None:
    """Unit start and containerd 1.6's start-up lines."""
    unit = "containerd.service - containerd container runtime"
    j.systemd(start, f"Starting {unit}...", message_id=MSG_STARTING)
    t = plus(start, 0.04)
    lines = [
        (
            "info",
            "starting containerd",
            {"revision": "1.6.20~ds1-1+deb12u3", "version": "1.6.20~ds1"},
        ),
        ("info", "serving...", {"address": "/run/containerd/containerd.sock.ttrpc"}),
        ("info", "serving...", {"address": "/run/containerd/containerd.sock"}),
        ("info", "containerd successfully booted in 0.061243s", {}),
        ("info", "Start recovering state", {}),
        ("info", "Start streaming server", {}),
    ]
    for i, (level, msg, kv) in enumerate(lines):
        j.daemon(plus(t, i * 0.004), pid, containerd_text(plus(t, i * 0.004), level, msg, **kv))
    j.systemd(plus(t, 0.07), f"Started {unit}.", message_id=MSG_STARTED)


def containerd_killed_by_sighup(
    j: Journal, at: dt.datetime, old_pid: int, new_pid: int, shims: list[int]
) -> dt.datetime:
    """containerd does not handle SIGHUP: it dies and systemd restarts it after
    RestartSec=5s. Returns the new start time."""
    unit = "containerd.service"
    j.systemd(
        at, f"{unit}: Sent signal SIGHUP to main process {old_pid} (containerd) on client request."
    )
    j.systemd(
        plus(at, 0.002),
        f"{unit}: Main process exited, code=killed, status=1/HUP",
        message_id=MSG_PROCESS_EXIT,
        priority=5,
    )
    j.systemd(
        plus(at, 0.003),
        f"{unit}: Failed with result 'signal'.",
        message_id=MSG_FAILURE_RESULT,
        priority=4,
    )
    j.systemd(
        plus(at, 0.004),
        f"{unit}: Unit process {shims[0]} (containerd-shim) remains running after unit stopped.",
        priority=5,
    )
    restart = plus(at, 5.01)
    j.systemd(
        restart,
        f"{unit}: Scheduled restart job, restart counter is at 1.",
        message_id=MSG_RESTART_SCHEDULED,
    )
    j.systemd(
        plus(restart, 0.001),
        "Stopped containerd.service - containerd container runtime.",
        message_id=MSG_STOPPED,
    )
    for pid in shims:
        j.systemd(
            plus(restart, 0.002),
            f"{unit}: Found left-over process {pid} (containerd-shim) in control group while "
            "starting unit. Ignoring.",
            priority=4,
        )
        j.systemd(
            plus(restart, 0.002),
            f"{unit}: This usually indicates unclean termination of a previous run, or "
            "service implementation deficiencies.",
            priority=4,
        )
    start = plus(restart, 0.004)
    containerd_boot(j, start, new_pid)
    return start


def thin(items: list[SandboxAttempt], head: int = 1, tail: int = 1) -> list[SandboxAttempt]:
    """Keep the first and last failed attempts of each pod: kubelet retries every
    10-15 s, and the samples must stay small."""
    by_pod: dict[str, list[SandboxAttempt]] = {}
    for a in items:
        by_pod.setdefault(a.pod_uid, []).append(a)
    kept: list[SandboxAttempt] = []
    for attempts in by_pod.values():
        failed = [a for a in attempts if not a.ok]
        if len(failed) > head + tail:
            failed = failed[:head] + failed[-tail:]
        kept += failed + [a for a in attempts if a.ok]
    return sorted(kept, key=lambda a: a.at)


def _sandbox_meta(a: SandboxAttempt) -> str:
    return f"&PodSandboxMetadata{{Name:{a.pod},Uid:{a.pod_uid},Namespace:{a.namespace},Attempt:0,}}"


def containerd_sandbox_lines(
    j: Journal, attempts: list[SandboxAttempt], pid_at: Callable[[dt.datetime], int]
) -> None:
    """containerd's CRI lines for each RunPodSandbox kubelet made on the node."""
    for a in thin(attempts):
        pid = pid_at(a.at)
        md = _sandbox_meta(a)
        j.daemon(a.at, pid, containerd_text(a.at, "info", f"RunPodSandbox for {md}"))
        if not a.ok:
            done = plus(a.at, 0.0012)
            text = containerd_text(
                done,
                "error",
                f"RunPodSandbox for {md} failed, error",
                error=containerd_no_runtime(),
            )
            j.daemon(done, pid, text)
            continue
        done = plus(a.at, 0.31)
        sandbox = hexid(64, "sandbox", a.pod_uid)
        j.daemon(
            done,
            pid,
            containerd_text(done, "info", f'RunPodSandbox for {md} returns sandbox id "{sandbox}"'),
        )
        for name, started in a.containers:
            cid = hexid(64, "ctr", a.pod_uid, name)
            text = containerd_text(
                started, "info", f'StartContainer for "{cid}" returns successfully'
            )
            j.daemon(started, pid_at(started), text)


def containerd_no_runtime() -> str:
    return 'failed to get sandbox runtime: no runtime for "nvidia" is configured'


def kubelet_start(j: Journal, at: dt.datetime) -> None:
    pid = j.host.kubelet_pid
    j.systemd(
        at, "Started kubelet.service - kubelet: The Kubernetes Node Agent.", message_id=MSG_STARTED
    )
    lines = [
        ("I", "server.go:530", "Kubelet version", {"kubeletVersion": "v1.37.1"}),
        (
            "I",
            "server.go:532",
            "Golang settings",
            {"GOGC": "", "GOMAXPROCS": "", "GOTRACEBACK": ""},
        ),
        ("I", "kubelet_node_status.go:75", "Attempting to register node", {"node": j.host.name}),
        ("I", "kubelet_node_status.go:78", "Successfully registered node", {"node": j.host.name}),
        ("I", "kubelet.go:2512", "Starting kubelet main sync loop", {}),
    ]
    for i, (sev, src, msg, kv) in enumerate(lines):
        t = plus(at, 0.6 + i * 0.35)
        j.daemon(t, pid, klog(t, sev, pid, src, msg, **kv))


def kubelet_sandbox_failures(j: Journal, attempts: list[SandboxAttempt]) -> None:
    """kubelet's lines for a failed RunPodSandbox (the first and the last of the
    four it writes per attempt)."""
    pid = j.host.kubelet_pid
    rpc = f"rpc error: code = Unknown desc = {containerd_no_runtime()}"
    for a in thin(attempts):
        if a.ok:
            continue
        t = plus(a.at, 0.0019)
        full = f"{a.pod}_{a.namespace}({a.pod_uid})"
        inner = f'Failed to create sandbox for pod "{full}": {rpc}'
        sync = (
            f'failed to "CreatePodSandbox" for "{full}" with CreatePodSandboxError: '
            + json.dumps(inner)
        )
        first = klog(t, "E", pid, "log.go:32", "RunPodSandbox from runtime service failed", err=rpc)
        j.daemon(t, pid, first)
        last = klog(
            t,
            "E",
            pid,
            "pod_workers.go:1324",
            "Error syncing pod, skipping",
            err=sync,
            pod=f"{a.namespace}/{a.pod}",
            podUID=a.pod_uid,
        )
        j.daemon(plus(t, 0.0002), pid, last)


def kubelet_runtime_gap(j: Journal, at: dt.datetime) -> None:
    """What kubelet logs while containerd is down for its restart."""
    pid = j.host.kubelet_pid
    err = (
        'rpc error: code = Unavailable desc = connection error: desc = "transport: Error while '
        'dialing: dial unix /run/containerd/containerd.sock: connect: connection refused"'
    )
    j.daemon(
        at,
        pid,
        klog(
            at,
            "E",
            pid,
            "log.go:32",
            "ListPodSandbox with filter from runtime service failed",
            err=err,
            filter="nil",
        ),
    )
    j.daemon(
        at,
        pid,
        klog(at, "E", pid, "generic.go:256", "GenericPLEG: Unable to retrieve pods", err=err),
    )


def kubelet_plugin_registered(j: Journal, at: dt.datetime) -> None:
    pid = j.host.kubelet_pid
    j.daemon(
        at,
        pid,
        klog(
            at,
            "I",
            pid,
            "server.go:163",
            "Got registration request from device plugin with resource",
            resourceName="nvidia.com/gpu",
        ),
    )
