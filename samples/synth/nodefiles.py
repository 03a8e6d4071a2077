"""The files of ``nodes/<name>/``: journals, dmesg, nvidia-smi XML (written by
``samplekit.smi.smi_log``, as every sample's is), systemd and host files.

Journals are ``journalctl -o json`` lines with the fields journald really writes
(cursor, boot and machine ids, cgroup, invocation id ...), so their parse cost per
byte is a real one. Besides the lines that matter (unit start-up, CRI calls of the
node's pods, sandbox failures, a SIGHUP kill and restart), each unit carries the
routine chatter of a busy node until the node's journals reach the size target.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import orjson

from samples.samplekit.smi import DRIVER, XmlNode, smi_log
from samples.synth.plan import (
    BUS_IDS,
    CREATED,
    XID_ROLES,
    NodePlan,
    Role,
    hexid,
    plus,
    uid,
)

BOOT_OFFSET = 6 * 86400  # the nodes booted six days before collection
MSG_STARTED = "39f53479d3a045ac8e11786248231fbf"
MSG_STARTING = "7d4958e842da4a758f6c1cdc7b36dcc5"
MSG_PROCESS_EXIT = "98e322203f7a4ed290d09fe03c09fe15"
MSG_FAILURE_RESULT = "d9b373ed55a64feb8242e02dbe79a49c"
MSG_RESTART_SCHEDULED = "5eb03494b6584870a536b337290809b3"
MSG_STOPPED = "9d1aaa27d60140bd96365438aad20286"


def boot_time(n: NodePlan) -> dt.datetime:
    return plus(CREATED, -BOOT_OFFSET + n.index % 300)


def gpu_uuid(seed: int, node: str, index: int) -> str:
    h = hexid(32, "gpu-uuid", seed, node, index)
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _us(t: dt.datetime) -> int:
    return round(t.timestamp() * 1_000_000)


def _nano(t: dt.datetime, extra: int) -> str:
    return f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}{extra % 1000:03d}Z"


def _json(text: str) -> str:
    return orjson.dumps(text).decode()


# --------------------------------------------------------------------------- journals

Chatter = Callable[[random.Random, dt.datetime, str, int], str]
"""Makes one routine line: (random source, time, node name, PID) -> message."""


@dataclass
class Journal:
    """``journalctl -u <unit> -o json`` of one node, built unordered, rendered in order."""

    node: NodePlan
    unit: str            # "containerd.service"
    exe: str             # "/usr/bin/containerd"
    boot_id: str
    machine_id: str
    lines: list[tuple[int, str]] = field(default_factory=list)
    size: int = 0

    def daemon(self, t: dt.datetime, pid: int, message: str, priority: int = 6) -> None:
        name = self.unit.removesuffix(".service")
        stream = hexid(32, "stream", self.node.name, self.unit, pid)
        invocation = hexid(32, "invocation", self.node.name, self.unit, pid)
        body = (
            f'"PRIORITY" : "{priority}", "SYSLOG_FACILITY" : "3", "_UID" : "0", "_GID" : "0", '
            f'"_CAP_EFFECTIVE" : "1ffffffffff", "_MACHINE_ID" : "{self.machine_id}", '
            f'"_HOSTNAME" : "{self.node.name}", "_RUNTIME_SCOPE" : "system", '
            f'"_SYSTEMD_SLICE" : "system.slice", "_TRANSPORT" : "stdout", '
            f'"_STREAM_ID" : "{stream}", "SYSLOG_IDENTIFIER" : "{name}", "_PID" : "{pid}", '
            f'"_COMM" : "{name}", "_EXE" : "{self.exe}", "_CMDLINE" : "{self.exe}", '
            f'"_SYSTEMD_CGROUP" : "/system.slice/{self.unit}", "_SYSTEMD_UNIT" : "{self.unit}", '
            f'"_SYSTEMD_INVOCATION_ID" : "{invocation}", "MESSAGE" : {_json(message)} }}\n')
        self._add(t, body)

    def systemd(self, t: dt.datetime, message: str, message_id: str = "",
                priority: int = 6) -> None:
        mid = f'"MESSAGE_ID" : "{message_id}", ' if message_id else ""
        body = (
            f'"PRIORITY" : "{priority}", "SYSLOG_FACILITY" : "3", "CODE_FILE" : '
            f'"src/core/unit.c", "CODE_LINE" : "5869", "CODE_FUNC" : "unit_log_success", '
            f'"SYSLOG_IDENTIFIER" : "systemd", "_PID" : "1", "_UID" : "0", "_GID" : "0", '
            f'"_COMM" : "systemd", "_EXE" : "/usr/lib/systemd/systemd", '
            f'"_CMDLINE" : "/sbin/init", "_CAP_EFFECTIVE" : "1ffffffffff", '
            f'"_SYSTEMD_CGROUP" : "/init.scope", "_SYSTEMD_UNIT" : "init.scope", '
            f'"_SYSTEMD_SLICE" : "-.slice", "_MACHINE_ID" : "{self.machine_id}", '
            f'"_HOSTNAME" : "{self.node.name}", "_RUNTIME_SCOPE" : "system", '
            f'"_TRANSPORT" : "journal", "UNIT" : "{self.unit}", {mid}'
            f'"INVOCATION_ID" : "{hexid(32, "inv", self.node.name, self.unit, _us(t))}", '
            f'"MESSAGE" : {_json(message)} }}\n')
        self._add(t, body)

    def _add(self, t: dt.datetime, body: str) -> None:
        self.lines.append((_us(t), body))
        self.size += len(body) + 190  # the cursor and clocks written at render time

    def render(self, boot: dt.datetime) -> Iterator[str]:
        start = _us(boot)
        self.lines.sort(key=lambda item: item[0])
        for seq, (micros, body) in enumerate(self.lines, start=1):
            mono = micros - start
            yield (f'{{ "__CURSOR" : "s={self.boot_id};i={seq:x};b={self.boot_id};m={mono:x};'
                   f't={micros:x};x={hexid(16, seq, micros)}", "__REALTIME_TIMESTAMP" : '
                   f'"{micros}", "__MONOTONIC_TIMESTAMP" : "{mono}", "_BOOT_ID" : '
                   f'"{self.boot_id}", {body}')


def _logrus(t: dt.datetime, level: str, msg: str, **kv: str) -> str:
    quoted = _json(msg) if any(c in msg for c in ' ="') else msg
    extra = "".join(f" {k}={_json(v) if any(c in v for c in ' =') else v}"
                    for k, v in kv.items())
    return f'time="{_nano(t, t.microsecond)}" level={level} msg={quoted}{extra}'


def _klog(t: dt.datetime, severity: str, pid: int, where: str, msg: str, **kv: str) -> str:
    extra = "".join(f" {k}={_json(v)}" for k, v in kv.items())
    return (f'{severity}{t:%m%d %H:%M:%S}.{t.microsecond:06d} {pid:7d} {where}] '
            f'"{msg}"{extra}')


@dataclass(frozen=True, slots=True)
class PodRef:
    """What the journals need to know of a pod bound to the node."""

    name: str
    namespace: str
    uid: str
    containers: tuple[str, ...]
    stuck: bool


def containerd_journal(n: NodePlan, seed: int, pods: list[PodRef], budget: int) -> Journal:
    boot = boot_time(n)
    rng = random.Random(f"{seed}/{n.name}/containerd")
    j = Journal(n, "containerd.service", "/usr/bin/containerd", hexid(32, "boot", n.name),
                hexid(32, "machine", n.name))
    pid = 1100 + n.index % 800
    started = plus(boot, 11.3)
    _containerd_boot(j, started, pid)
    restart = plus(CREATED, -3600 * (2 + n.index % 5)) if n.role is Role.RESTARTED else None
    new_pid = pid + 40000 + n.index % 999

    def pid_at(t: dt.datetime) -> int:
        return new_pid if restart is not None and t >= restart else pid

    if restart is not None:
        _killed_by_sighup(j, restart, pid, new_pid)
    for k, pod in enumerate(pods):
        t = plus(boot, 95 + k * 0.7)
        meta = (f"&PodSandboxMetadata{{Name:{pod.name},Uid:{pod.uid},"
                f"Namespace:{pod.namespace},Attempt:0,}}")
        j.daemon(t, pid_at(t), _logrus(t, "info", f"RunPodSandbox for {meta}"))
        if pod.stuck:
            for attempt in (plus(t, 0.001), plus(CREATED, -12 - k)):
                j.daemon(attempt, pid_at(attempt), _logrus(
                    attempt, "error", f"RunPodSandbox for {meta} failed, error",
                    error='failed to get sandbox runtime: no runtime for "nvidia" is configured'))
            continue
        sandbox = hexid(64, "sandbox", pod.uid)
        done = plus(t, 0.31)
        j.daemon(done, pid_at(done), _logrus(
            done, "info", f'RunPodSandbox for {meta} returns sandbox id "{sandbox}"'))
        for c, name in enumerate(pod.containers):
            cid = hexid(64, "ctr", pod.uid, name)
            at = plus(done, 0.5 + c)
            j.daemon(at, pid_at(at), _logrus(
                at, "info", f'CreateContainer within sandbox "{sandbox}" for container '
                f'&ContainerMetadata{{Name:{name},Attempt:0,}} returns container id "{cid}"'))
            j.daemon(plus(at, 0.2), pid_at(plus(at, 0.2)), _logrus(
                plus(at, 0.2), "info", f'StartContainer for "{cid}" returns successfully'))
    _fill(j, rng, budget, boot, pid_at, _containerd_chatter)
    return j


def _containerd_boot(j: Journal, start: dt.datetime, pid: int) -> None:
    unit = "containerd.service - containerd container runtime"
    j.systemd(start, f"Starting {unit}...", MSG_STARTING)
    t = plus(start, 0.04)
    for i, (msg, kv) in enumerate((
            ("starting containerd", {"revision": "1.6.20~ds1-1+deb12u3",
                                     "version": "1.6.20~ds1"}),
            ("loading plugin \"io.containerd.grpc.v1.cri\"...",
             {"type": "io.containerd.grpc.v1"}),
            ("serving...", {"address": "/run/containerd/containerd.sock.ttrpc"}),
            ("serving...", {"address": "/run/containerd/containerd.sock"}),
            ("containerd successfully booted in 0.061243s", {}),
            ("Start recovering state", {}), ("Start streaming server", {}))):
        at = plus(t, i * 0.004)
        j.daemon(at, pid, _logrus(at, "info", msg, **kv))
    j.systemd(plus(t, 0.07), f"Started {unit}.", MSG_STARTED)


def _killed_by_sighup(j: Journal, at: dt.datetime, old: int, new: int) -> None:
    unit = "containerd.service"
    j.systemd(at, f"{unit}: Main process exited, code=killed, status=1/HUP", MSG_PROCESS_EXIT,
              priority=5)
    j.systemd(plus(at, 0.001), f"{unit}: Failed with result 'signal'.", MSG_FAILURE_RESULT,
              priority=4)
    restart = plus(at, 5.01)
    j.systemd(restart, f"{unit}: Scheduled restart job, restart counter is at 1.",
              MSG_RESTART_SCHEDULED)
    j.systemd(plus(restart, 0.001), "Stopped containerd.service - containerd container runtime.",
              MSG_STOPPED)
    _containerd_boot(j, plus(restart, 0.004), new)


def _containerd_chatter(rng: random.Random, t: dt.datetime, node: str, pid: int) -> str:
    del pid  # logrus lines do not carry it
    cid = hexid(64, "chatter", node, rng.getrandbits(32))
    pick = rng.randrange(6)
    if pick == 0:
        return _logrus(t, "info", f'ExecSync for "{cid}" with command [/bin/sh -c '
                       'nvidia-smi --query-gpu=health --format=csv] and timeout 10 (s)')
    if pick == 1:
        return _logrus(t, "info", f'ExecSync for "{cid}" returns with exit code 0')
    if pick == 2:
        return _logrus(t, "info", "ImageUpdate event &ImageUpdate{Name:registry.example.com/"
                       f"ml/feature-etl:2026.11.{rng.randrange(9)},Labels:map[string]string"
                       "{io.cri-containerd.image: managed,},XXX_unrecognized:[],}")
    if pick == 3:
        return _logrus(t, "info", "shim disconnected", id=cid)
    if pick == 4:
        return _logrus(t, "warning", "cleaning up after shim disconnected", id=cid,
                       namespace="k8s.io")
    return _logrus(t, "info", f'Finish piping stdout of container "{cid}"')


def kubelet_journal(n: NodePlan, seed: int, pods: list[PodRef], budget: int) -> Journal:
    boot = boot_time(n)
    rng = random.Random(f"{seed}/{n.name}/kubelet")
    j = Journal(n, "kubelet.service", "/usr/bin/kubelet", hexid(32, "boot", n.name),
                hexid(32, "machine", n.name))
    pid = 2300 + n.index % 700
    start = plus(boot, 12.1)
    j.systemd(start, "Started kubelet.service - kubelet: The Kubernetes Node Agent.",
              MSG_STARTED)
    for i, (src, msg, kv) in enumerate((
            ("server.go:530", "Kubelet version", {"kubeletVersion": "v1.37.1"}),
            ("kubelet_node_status.go:75", "Attempting to register node", {"node": n.name}),
            ("kubelet.go:2512", "Starting kubelet main sync loop", {}))):
        at = plus(start, 0.6 + i * 0.3)
        j.daemon(at, pid, _klog(at, "I", pid, src, msg, **kv))
    if n.has_nvidia:
        at = plus(boot, 160)
        j.daemon(at, pid, _klog(at, "I", pid, "server.go:163", "Got registration request from "
                                "device plugin with resource", resourceName="nvidia.com/gpu"))
    rpc = ('rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for '
           '"nvidia" is configured')
    for k, pod in enumerate(pods):
        t = plus(boot, 95 + k * 0.7)
        j.daemon(t, pid, _klog(t, "I", pid, "kubelet.go:2456", "SyncLoop ADD", source="api",
                               pods=f"[{pod.namespace}/{pod.name}]"))
        if pod.stuck:
            for attempt in (plus(t, 0.002), plus(CREATED, -12 - k)):
                j.daemon(attempt, pid, _klog(attempt, "E", pid, "log.go:32",
                                             "RunPodSandbox from runtime service failed",
                                             err=rpc))
    _fill(j, rng, budget, boot, lambda _t: pid, _kubelet_chatter(pods))
    return j


def _kubelet_chatter(pods: list[PodRef]) -> Chatter:
    running = [p for p in pods if not p.stuck] or pods

    def line(rng: random.Random, t: dt.datetime, node: str, pid: int) -> str:
        pod = running[rng.randrange(len(running))]
        ref = f"{pod.namespace}/{pod.name}"
        pick = rng.randrange(5)
        if pick == 0:
            return _klog(t, "I", pid, "kubelet.go:2461", "SyncLoop (PLEG): event for pod",
                         pod=ref, event=f'{{"ID":"{pod.uid}","Type":"ContainerStarted",'
                         f'"Data":"{hexid(64, node, rng.getrandbits(32))}"}}')
        if pick == 1:
            return _klog(t, "I", pid, "prober.go:107", "Probe failed", probeType="Readiness",
                         pod=ref, podUID=pod.uid, containerName=pod.containers[0],
                         probeResult="failure", output="HTTP probe failed with statuscode: 503")
        if pick == 2:
            return _klog(t, "I", pid, "kubelet_volumes.go:163", "Cleaned up orphaned pod volumes "
                         "dir", podUID=uid("orphan", node, rng.getrandbits(32)),
                         path="/var/lib/kubelet/pods/volumes")
        if pick == 3:
            return _klog(t, "I", pid, "reconciler_common.go:245", "operationExecutor."
                         "VerifyControllerAttachedVolume started for volume \\\"kube-api-access"
                         "\\\"", pod=ref)
        return _klog(t, "E", pid, "cadvisor_stats_provider.go:522", "Partial failure issuing "
                     "cadvisor.ContainerInfoV2", err="partial failures: [\"/kubepods.slice/"
                     f"kubepods-burstable.slice/kubepods-burstable-pod{pod.uid}.slice\": "
                     "RecentStats: unable to find data in memory cache]")

    return line


def _fill(j: Journal, rng: random.Random, budget: int, boot: dt.datetime,
          pid_at: Callable[[dt.datetime], int], chatter: Chatter) -> None:
    """Routine lines spread over the window until the journal reaches ``budget`` bytes."""
    if j.size >= budget:
        return
    span = (CREATED - boot).total_seconds() - 300
    step = span / max(1, (budget - j.size) // 700)
    t = plus(boot, 200.0)
    end = plus(CREATED, -60)
    while j.size < budget and t < end:
        t = plus(t, step * (0.5 + rng.random()))
        pid = pid_at(t)
        message = chatter(rng, t, j.node.name, pid)
        j.daemon(t, pid, message, priority=3 if message.startswith("E") else 6)


def fabricmanager_journal(n: NodePlan) -> Journal:
    boot = boot_time(n)
    j = Journal(n, "nvidia-fabricmanager.service", "/usr/bin/nv-fabricmanager",
                hexid(32, "boot", n.name), hexid(32, "machine", n.name))
    start = plus(boot, 9.2)
    pid = 980 + n.index % 100
    j.systemd(start, "Starting nvidia-fabricmanager.service - NVIDIA fabric manager service...",
              MSG_STARTING)
    j.daemon(plus(start, 0.1), pid, f"Fabric Manager version is : {DRIVER}")
    j.daemon(plus(start, 0.2), pid, "Fabric Manager: Successfully configured all the available "
                                    "NVSwitches to route GPU NVLink traffic.")
    j.daemon(plus(start, 2.9), pid, "Successfully configured all the available GPUs and "
                                    "NVSwitches to route NVLink traffic.")
    j.systemd(plus(start, 3.0), "Started nvidia-fabricmanager.service - NVIDIA fabric manager "
                                "service.", MSG_STARTED)
    return j


# ------------------------------------------------------------------------------ dmesg

def dmesg(n: NodePlan, seed: int) -> str:
    t0 = plus(boot_time(n), 4.31)
    lines: list[tuple[float, str]] = [
        (0.0, "nvidia: loading out-of-tree module taints kernel."),
        (0.012, "nvidia: module license taints kernel."),
        (0.041, "nvidia-nvlink: Nvlink Core is being initialized, major device number 511"),
    ]
    for i, bus in enumerate(BUS_IDS):
        lines.append((0.05 + i * 0.002, f"nvidia {bus}: enabling device (0000 -> 0002)"))
    lines += [
        (0.096, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}  Release Build  "
                "(dvs-builder@U22-I3-AE18-23-3)  Thu Sep  4 01:54:27 UTC 2025"),
        (0.140, "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  "
                f"{DRIVER}  Release Build  (dvs-builder@U22-I3-AE18-23-3)"),
        (0.151, "[drm] [nvidia-drm] [GPU ID 0x00001b00] Loading driver"),
    ]
    for s in range(4):
        lines.append((0.2 + s * 0.01, f"nvidia-nvswitch{s}: open (major=509)"))
    xid = XID_ROLES.get(n.role)
    if xid is not None:
        lines += _xid_lines(n, seed, xid)
    out = []
    for offset, text in sorted(lines):
        t = plus(t0, offset)
        out.append(f"{t:%Y-%m-%dT%H:%M:%S},{t.microsecond:06d}+00:00 {text}\n")
    return "".join(out)


def _xid_lines(n: NodePlan, seed: int, xid: int) -> list[tuple[float, str]]:
    when = float(BOOT_OFFSET - 4 * 3600 - n.index % 3000)
    pci = n.fault_pci
    short = pci[:-2]
    uuid = gpu_uuid(seed, n.name, n.fault_gpu)
    found = [(when - 0.001, f"NVRM: GPU at PCI:{short}: {uuid}"),
             (when - 0.0005, f"NVRM: GPU Board Serial Number: 165{n.index:07d}{n.fault_gpu}")]
    if xid == 79:
        found += [
            (when, f"NVRM: Xid (PCI:{short}): 79, pid='<unknown>', name=<unknown>, GPU has "
                   "fallen off the bus."),
            (when + 0.0002, f"NVRM: GPU {pci}: GPU has fallen off the bus."),
            (when + 0.0004, "NVRM: A GPU crash dump has been created. If possible, please run"),
            (when + 0.0005, "NVRM: nvidia-bug-report.sh as root to collect this data before"),
            (when + 0.0006, "NVRM: the NVIDIA kernel module is unloaded."),
        ]
    elif xid == 48:
        found += [(when, f"NVRM: Xid (PCI:{short}): 48, pid={4000 + n.index}, name=python3, "
                         "Ch 00000008, An uncorrectable double bit error (DBE) has been detected "
                         "on GPU in the framebuffer at partition 6, subpartition 0.")]
    else:
        found += [
            (when, f"NVRM: Xid (PCI:{short}): 13, pid={4000 + n.index}, name=python3, Graphics "
                   "SM Warp Exception on (GPC 4, TPC 1, SM 0): Out Of Range Address"),
            (when + 0.0001, f"NVRM: Xid (PCI:{short}): 13, pid={4000 + n.index}, name=python3, "
                            "Graphics Exception: ESR 0x524648=0x100000e 0x524650=0x0 "
                            "0x524644=0xd3eff2 0x52464c=0x17f"),
        ]
    return found


# ------------------------------------------------------------------------ nvidia-smi

_REASONS: XmlNode = ("clocks_event_reasons", [
    (f"clocks_event_reason_{r}", "Not Active")
    for r in ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
              "hw_thermal_slowdown", "hw_power_brake_slowdown", "sync_boost",
              "sw_thermal_slowdown", "display_clocks_setting")])


def nvidia_smi_xml(n: NodePlan, seed: int) -> str:
    rng = random.Random(f"{seed}/{n.name}/smi")
    busy = n.has_nvidia
    gpus = []
    for index, bus in enumerate(BUS_IDS):
        if n.role is Role.GPU_LOST and index == n.fault_gpu:
            continue
        used = rng.randrange(52000, 78000) if busy else 0
        util = rng.randrange(35, 99) if busy else 0
        power = rng.uniform(380, 690) if busy else 71.3
        gpus.append(_h100(n, seed, index, bus, rng, busy, used, util, f"{power:.2f}"))
    return smi_log(gpus, plus(CREATED, -48), attached=n.gpus_listed)


def _h100(n: NodePlan, seed: int, index: int, bus: str, rng: random.Random, busy: bool,
          used: int, util: int, power: str) -> XmlNode:
    """One H100 SXM of an HGX board (driver 570), its counters drawn from ``rng`` in a
    fixed order so that a seed always gives the same bytes."""
    smi_bus = f"0000{bus[:-2].upper()}.0"
    bus_hex = bus[5:7].upper()
    serial = f"165{n.index:07d}{index}"
    uuid = gpu_uuid(seed, n.name, index)
    minor, board, module = index, bus[5:7] + "00", index + 1
    tx, rx = rng.randrange(1000, 90000), rng.randrange(1000, 90000)
    fb_used = used + 590  # the driver's own share besides the process
    free = 81559 - 328 - fb_used
    bar1, bar1_free = rng.randrange(4, 64), 131072 - 64
    mem_util = util // 2
    dram_corr = rng.choice((0, 0, 0, 2))
    temp = rng.randrange(30, 68) if busy else 31
    tlimit = rng.randrange(20, 50)
    mem_temp = rng.randrange(35, 72)
    cluster_uuid = f"{hexid(8, 'clu', seed)}-0000-0000-0000-000000000000"
    pid = 300000 + n.index * 8 + index if busy else 0
    return (f'gpu id="{smi_bus}"', [
            ("product_name", "NVIDIA H100 80GB HBM3"),
            ("product_brand", "NVIDIA"),
            ("product_architecture", "Hopper"),
            ("display_mode", "Disabled"),
            ("display_active", "Disabled"),
            ("persistence_mode", "Enabled"),
            ("addressing_mode", "HMM"),
            ("mig_mode", [
                ("current_mig", "Disabled"),
                ("pending_mig", "Disabled"),
            ]),
            ("mig_devices", "None"),
            ("accounting_mode", "Disabled"),
            ("accounting_mode_buffer_size", "4000"),
            ("driver_model", [
                ("current_dm", "N/A"),
                ("pending_dm", "N/A"),
            ]),
            ("serial", str(serial)),
            ("uuid", str(uuid)),
            ("minor_number", str(minor)),
            ("vbios_version", "96.00.99.00.01"),
            ("multigpu_board", "No"),
            ("board_id", f"0x{board}"),
            ("board_part_number", "692-2G520-0200-000"),
            ("gpu_part_number", "2330-885-A1"),
            ("gpu_fru_part_number", "N/A"),
            ("gpu_module_id", str(module)),
            ("inforom_version", [
                ("img_version", "G520.0200.00.05"),
                ("oem_object", "2.1"),
                ("ecc_object", "7.16"),
                ("pwr_object", "N/A"),
            ]),
            ("gpu_operation_mode", [
                ("current_gom", "N/A"),
                ("pending_gom", "N/A"),
            ]),
            ("c2c_mode", "N/A"),
            ("gpu_virtualization_mode", [
                ("virtualization_mode", "None"),
                ("host_vgpu_mode", "N/A"),
                ("vgpu_heterogeneous_mode", "N/A"),
            ]),
            ("gpu_reset_status", [
                ("reset_required", "No"),
                ("drain_and_reset_recommended", "No"),
            ]),
            ("gpu_recovery_action", "None"),
            ("gsp_firmware_version", DRIVER),
            ("pci", [
                ("pci_bus", str(bus_hex)),
                ("pci_device", "00"),
                ("pci_domain", "0000"),
                ("pci_base_class", "3"),
                ("pci_sub_class", "2"),
                ("pci_device_id", "233010DE"),
                ("pci_bus_id", smi_bus),
                ("pci_sub_system_id", "16C110DE"),
                ("pci_gpu_link_info", [
                    ("pcie_gen", [
                        ("max_link_gen", "5"),
                        ("current_link_gen", "5"),
                        ("device_current_link_gen", "5"),
                        ("max_device_link_gen", "5"),
                        ("max_host_link_gen", "5"),
                    ]),
                    ("link_widths", [
                        ("max_link_width", "16x"),
                        ("current_link_width", "16x"),
                    ]),
                ]),
                ("pci_bridge_chip", [
                    ("bridge_chip_type", "N/A"),
                    ("bridge_chip_fw", "N/A"),
                ]),
                ("replay_counter", "0"),
                ("replay_rollover_counter", "0"),
                ("tx_util", f"{tx} KB/s"),
                ("rx_util", f"{rx} KB/s"),
                ("atomic_caps_outbound", "N/A"),
                ("atomic_caps_inbound", "N/A"),
            ]),
            ("fan_speed", "N/A"),
            ("performance_state", "P0"),
            _REASONS,
            ("sparse_operation_mode", "N/A"),
            ("fb_memory_usage", [
                ("total", "81559 MiB"),
                ("reserved", "328 MiB"),
                ("used", f"{fb_used} MiB"),
                ("free", f"{free} MiB"),
            ]),
            ("bar1_memory_usage", [
                ("total", "131072 MiB"),
                ("used", f"{bar1} MiB"),
                ("free", f"{bar1_free} MiB"),
            ]),
            ("cc_protected_memory_usage", [
                ("total", "0 MiB"),
                ("used", "0 MiB"),
                ("free", "0 MiB"),
            ]),
            ("compute_mode", "Default"),
            ("utilization", [
                ("gpu_util", f"{util} %"),
                ("memory_util", f"{mem_util} %"),
                ("encoder_util", "0 %"),
                ("decoder_util", "0 %"),
                ("jpeg_util", "0 %"),
                ("ofa_util", "0 %"),
            ]),
            ("encoder_stats", [
                ("session_count", "0"),
                ("average_fps", "0"),
                ("average_latency", "0"),
            ]),
            ("fbc_stats", [
                ("session_count", "0"),
                ("average_fps", "0"),
                ("average_latency", "0"),
            ]),
            ("dram_encryption_mode", [
                ("current_dram_encryption", "N/A"),
                ("pending_dram_encryption", "N/A"),
            ]),
            ("ecc_mode", [
                ("current_ecc", "Enabled"),
                ("pending_ecc", "Enabled"),
            ]),
            ("ecc_errors", [
                ("volatile", [
                    ("sram_correctable", "0"),
                    ("sram_uncorrectable_parity", "0"),
                    ("sram_uncorrectable_secded", "0"),
                    ("dram_correctable", "0"),
                    ("dram_uncorrectable", "0"),
                ]),
                ("aggregate", [
                    ("sram_correctable", "0"),
                    ("sram_uncorrectable_parity", "0"),
                    ("sram_uncorrectable_secded", "0"),
                    ("dram_correctable", str(dram_corr)),
                    ("dram_uncorrectable", "0"),
                    ("sram_threshold_exceeded", "No"),
                ]),
                ("aggregate_uncorrectable_sram_sources", [
                    ("sram_l2", "0"),
                    ("sram_sm", "0"),
                    ("sram_microcontroller", "0"),
                    ("sram_pcie", "0"),
                    ("sram_other", "0"),
                ]),
            ]),
            ("retired_pages", [
                ("multiple_single_bit_retirement", [
                    ("retired_count", "N/A"),
                    ("retired_pagelist", "N/A"),
                ]),
                ("double_bit_retirement", [
                    ("retired_count", "N/A"),
                    ("retired_pagelist", "N/A"),
                ]),
                ("pending_blacklist", "N/A"),
                ("pending_retirement", "N/A"),
            ]),
            ("remapped_rows", [
                ("remapped_row_corr", "0"),
                ("remapped_row_unc", "0"),
                ("remapped_row_pending", "No"),
                ("remapped_row_failure", "No"),
                ("row_remapper_histogram", [
                    ("row_remapper_histogram_max", "2560 bank(s)"),
                    ("row_remapper_histogram_high", "0 bank(s)"),
                    ("row_remapper_histogram_partial", "0 bank(s)"),
                    ("row_remapper_histogram_low", "0 bank(s)"),
                    ("row_remapper_histogram_none", "0 bank(s)"),
                ]),
            ]),
            ("temperature", [
                ("gpu_temp", f"{temp} C"),
                ("gpu_temp_tlimit", f"{tlimit} C"),
                ("gpu_temp_max_tgp_threshold", "N/A"),
                ("gpu_temp_slow_tgp_threshold", "N/A"),
                ("memory_temp", f"{mem_temp} C"),
                ("gpu_temp_max_mem_tgp_threshold", "N/A"),
            ]),
            ("supported_gpu_target_temp", [
                ("gpu_target_temp_min", "N/A"),
                ("gpu_target_temp_max", "N/A"),
            ]),
            ("gpu_power_readings", [
                ("power_state", "P0"),
                ("average_power_draw", f"{power} W"),
                ("instant_power_draw", f"{power} W"),
                ("current_power_limit", "700.00 W"),
                ("requested_power_limit", "700.00 W"),
                ("default_power_limit", "700.00 W"),
                ("min_power_limit", "200.00 W"),
                ("max_power_limit", "700.00 W"),
            ]),
            ("gpu_memory_power_readings", [
                ("average_power_draw", "N/A"),
                ("instant_power_draw", "N/A"),
            ]),
            ("module_power_readings", [
                ("power_state", "P0"),
                ("average_power_draw", "N/A"),
                ("instant_power_draw", "N/A"),
            ]),
            ("clocks", [
                ("graphics_clock", "1980 MHz"),
                ("sm_clock", "1980 MHz"),
                ("mem_clock", "2619 MHz"),
                ("video_clock", "1635 MHz"),
            ]),
            ("applications_clocks", [
                ("graphics_clock", "1755 MHz"),
                ("mem_clock", "2619 MHz"),
            ]),
            ("default_applications_clocks", [
                ("graphics_clock", "1755 MHz"),
                ("mem_clock", "2619 MHz"),
            ]),
            ("max_clocks", [
                ("graphics_clock", "1980 MHz"),
                ("sm_clock", "1980 MHz"),
                ("mem_clock", "2619 MHz"),
                ("video_clock", "1770 MHz"),
            ]),
            ("max_customer_boost_clocks", [
                ("graphics_clock", "1980 MHz"),
            ]),
            ("clock_policy", [
                ("auto_boost", "N/A"),
                ("auto_boost_default", "N/A"),
            ]),
            ("fabric", [
                ("state", "Completed"),
                ("status", "Success"),
                ("cliqueId", "0"),
                ("clusterUuid", str(cluster_uuid)),
                ("health", [
                    ("bandwidth", "Full"),
                ]),
            ]),
            ("processes", [
                ("process_info", [
                    ("gpu_instance_id", "N/A"),
                    ("compute_instance_id", "N/A"),
                    ("pid", str(pid) if pid else "N/A"),
                    ("type", "C"),
                    ("process_name", "python3"),
                    ("used_memory", f"{used} MiB"),
                ]),
            ]),
            ("accounted_processes", [
            ]),
            ("capabilities", [
                ("egm", "disabled"),
            ]),
    ])


# -------------------------------------------------------------------- host and systemd

def systemctl_show(n: NodePlan) -> str:
    restarted = n.role is Role.RESTARTED
    started = plus(CREATED, -3600 * (2 + n.index % 5) + 5.02) if restarted else plus(
        boot_time(n), 11.3)
    pid = (1100 + n.index % 800) + (40000 + n.index % 999 if restarted else 0)
    day = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[started.weekday()]
    return ("Restart=always\nRestartUSec=5s\n"
            f"ExecMainStartTimestamp={day} {started:%Y-%m-%d %H:%M:%S} UTC\n"
            f"ExecMainPID={pid}\nNRestarts={1 if restarted else 0}\n"
            "ActiveState=active\nSubState=running\n")


KERNEL = "6.8.0-88-generic"


def host_files(n: NodePlan) -> list[tuple[str, str, list[str]]]:
    """(relative path, content, command) of ``host/``."""
    return [
        ("host/uname.txt", f"Linux {n.name} {KERNEL} #89-Ubuntu SMP PREEMPT_DYNAMIC Sat Oct 17 "
         "14:12:30 UTC 2026 x86_64 x86_64 x86_64 GNU/Linux\n", ["uname", "-a"]),
        ("host/os-release", 'PRETTY_NAME="Ubuntu 24.04.3 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"'
         '\nVERSION="24.04.3 LTS (Noble Numbat)"\nVERSION_CODENAME=noble\nID=ubuntu\n'
         "ID_LIKE=debian\nUBUNTU_CODENAME=noble\n", ["cat", "/etc/os-release"]),
        ("host/cmdline", f"BOOT_IMAGE=/vmlinuz-{KERNEL} root=/dev/md0 ro intel_iommu=on "
         "iommu=pt pci=realloc=off\n", ["cat", "/proc/cmdline"]),
        ("host/modules.txt",
         "nvidia_uvm 2093056 16 - Live 0xffffffffc3a1e000 (POE)\n"
         "nvidia_drm 139264 0 - Live 0xffffffffc39f1000 (POE)\n"
         "nvidia_modeset 1724416 1 nvidia_drm, Live 0xffffffffc36c2000 (POE)\n"
         "nvidia 11980800 148 nvidia_uvm,nvidia_modeset, Live 0xffffffffc2400000 (POE)\n",
         ["grep", "-E", "^(nvidia|nouveau)", "/proc/modules"]),
        ("host/secureboot.txt", "SecureBoot disabled\n", ["mokutil", "--sb-state"]),
        ("host/nvidia-ctk.txt", "/usr/bin/nvidia-ctk\nNVIDIA Container Toolkit CLI version "
         f"1.20.0\ncommit: {hexid(40, 'ctk')}\n",
         ["sh", "-c", "command -v nvidia-ctk; nvidia-ctk --version"]),
        ("host/unattended-upgrades.txt", "==> /etc/apt/apt.conf.d/20auto-upgrades <==\n"
         'APT::Periodic::Update-Package-Lists "0";\nAPT::Periodic::Unattended-Upgrade "0";\n',
         ["tail", "-n", "+1", "/etc/apt/apt.conf.d/20auto-upgrades"]),
    ]
