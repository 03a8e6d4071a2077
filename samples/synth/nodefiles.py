"""The files of ``nodes/<name>/``: journals, dmesg, nvidia-smi XML, systemd and host files.

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

DRIVER = "570.195.03"
CUDA = "12.8"
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

_GPU_XML = """\t<gpu id="{bus}">
\t\t<product_name>NVIDIA H100 80GB HBM3</product_name>
\t\t<product_brand>NVIDIA</product_brand>
\t\t<product_architecture>Hopper</product_architecture>
\t\t<display_mode>Disabled</display_mode>
\t\t<display_active>Disabled</display_active>
\t\t<persistence_mode>Enabled</persistence_mode>
\t\t<addressing_mode>HMM</addressing_mode>
\t\t<mig_mode>
\t\t\t<current_mig>Disabled</current_mig>
\t\t\t<pending_mig>Disabled</pending_mig>
\t\t</mig_mode>
\t\t<mig_devices>None</mig_devices>
\t\t<accounting_mode>Disabled</accounting_mode>
\t\t<accounting_mode_buffer_size>4000</accounting_mode_buffer_size>
\t\t<driver_model>
\t\t\t<current_dm>N/A</current_dm>
\t\t\t<pending_dm>N/A</pending_dm>
\t\t</driver_model>
\t\t<serial>{serial}</serial>
\t\t<uuid>{uuid}</uuid>
\t\t<minor_number>{minor}</minor_number>
\t\t<vbios_version>96.00.99.00.01</vbios_version>
\t\t<multigpu_board>No</multigpu_board>
\t\t<board_id>0x{board}</board_id>
\t\t<board_part_number>692-2G520-0200-000</board_part_number>
\t\t<gpu_part_number>2330-885-A1</gpu_part_number>
\t\t<gpu_fru_part_number>N/A</gpu_fru_part_number>
\t\t<gpu_module_id>{module}</gpu_module_id>
\t\t<inforom_version>
\t\t\t<img_version>G520.0200.00.05</img_version>
\t\t\t<oem_object>2.1</oem_object>
\t\t\t<ecc_object>7.16</ecc_object>
\t\t\t<pwr_object>N/A</pwr_object>
\t\t</inforom_version>
\t\t<gpu_operation_mode>
\t\t\t<current_gom>N/A</current_gom>
\t\t\t<pending_gom>N/A</pending_gom>
\t\t</gpu_operation_mode>
\t\t<c2c_mode>N/A</c2c_mode>
\t\t<gpu_virtualization_mode>
\t\t\t<virtualization_mode>None</virtualization_mode>
\t\t\t<host_vgpu_mode>N/A</host_vgpu_mode>
\t\t\t<vgpu_heterogeneous_mode>N/A</vgpu_heterogeneous_mode>
\t\t</gpu_virtualization_mode>
\t\t<gpu_reset_status>
\t\t\t<reset_required>No</reset_required>
\t\t\t<drain_and_reset_recommended>No</drain_and_reset_recommended>
\t\t</gpu_reset_status>
\t\t<gpu_recovery_action>None</gpu_recovery_action>
\t\t<gsp_firmware_version>{driver}</gsp_firmware_version>
\t\t<pci>
\t\t\t<pci_bus>{bus_hex}</pci_bus>
\t\t\t<pci_device>00</pci_device>
\t\t\t<pci_domain>0000</pci_domain>
\t\t\t<pci_base_class>3</pci_base_class>
\t\t\t<pci_sub_class>2</pci_sub_class>
\t\t\t<pci_device_id>233010DE</pci_device_id>
\t\t\t<pci_bus_id>{bus}</pci_bus_id>
\t\t\t<pci_sub_system_id>16C110DE</pci_sub_system_id>
\t\t\t<pci_gpu_link_info>
\t\t\t\t<pcie_gen>
\t\t\t\t\t<max_link_gen>5</max_link_gen>
\t\t\t\t\t<current_link_gen>5</current_link_gen>
\t\t\t\t\t<device_current_link_gen>5</device_current_link_gen>
\t\t\t\t\t<max_device_link_gen>5</max_device_link_gen>
\t\t\t\t\t<max_host_link_gen>5</max_host_link_gen>
\t\t\t\t</pcie_gen>
\t\t\t\t<link_widths>
\t\t\t\t\t<max_link_width>16x</max_link_width>
\t\t\t\t\t<current_link_width>16x</current_link_width>
\t\t\t\t</link_widths>
\t\t\t</pci_gpu_link_info>
\t\t\t<pci_bridge_chip>
\t\t\t\t<bridge_chip_type>N/A</bridge_chip_type>
\t\t\t\t<bridge_chip_fw>N/A</bridge_chip_fw>
\t\t\t</pci_bridge_chip>
\t\t\t<replay_counter>0</replay_counter>
\t\t\t<replay_rollover_counter>0</replay_rollover_counter>
\t\t\t<tx_util>{tx} KB/s</tx_util>
\t\t\t<rx_util>{rx} KB/s</rx_util>
\t\t\t<atomic_caps_outbound>N/A</atomic_caps_outbound>
\t\t\t<atomic_caps_inbound>N/A</atomic_caps_inbound>
\t\t</pci>
\t\t<fan_speed>N/A</fan_speed>
\t\t<performance_state>P0</performance_state>
{reasons}\t\t<sparse_operation_mode>N/A</sparse_operation_mode>
\t\t<fb_memory_usage>
\t\t\t<total>81559 MiB</total>
\t\t\t<reserved>328 MiB</reserved>
\t\t\t<used>{used} MiB</used>
\t\t\t<free>{free} MiB</free>
\t\t</fb_memory_usage>
\t\t<bar1_memory_usage>
\t\t\t<total>131072 MiB</total>
\t\t\t<used>{bar1} MiB</used>
\t\t\t<free>{bar1_free} MiB</free>
\t\t</bar1_memory_usage>
\t\t<cc_protected_memory_usage>
\t\t\t<total>0 MiB</total>
\t\t\t<used>0 MiB</used>
\t\t\t<free>0 MiB</free>
\t\t</cc_protected_memory_usage>
\t\t<compute_mode>Default</compute_mode>
\t\t<utilization>
\t\t\t<gpu_util>{util} %</gpu_util>
\t\t\t<memory_util>{mem_util} %</memory_util>
\t\t\t<encoder_util>0 %</encoder_util>
\t\t\t<decoder_util>0 %</decoder_util>
\t\t\t<jpeg_util>0 %</jpeg_util>
\t\t\t<ofa_util>0 %</ofa_util>
\t\t</utilization>
\t\t<encoder_stats>
\t\t\t<session_count>0</session_count>
\t\t\t<average_fps>0</average_fps>
\t\t\t<average_latency>0</average_latency>
\t\t</encoder_stats>
\t\t<fbc_stats>
\t\t\t<session_count>0</session_count>
\t\t\t<average_fps>0</average_fps>
\t\t\t<average_latency>0</average_latency>
\t\t</fbc_stats>
\t\t<dram_encryption_mode>
\t\t\t<current_dram_encryption>N/A</current_dram_encryption>
\t\t\t<pending_dram_encryption>N/A</pending_dram_encryption>
\t\t</dram_encryption_mode>
\t\t<ecc_mode>
\t\t\t<current_ecc>Enabled</current_ecc>
\t\t\t<pending_ecc>Enabled</pending_ecc>
\t\t</ecc_mode>
\t\t<ecc_errors>
\t\t\t<volatile>
\t\t\t\t<sram_correctable>0</sram_correctable>
\t\t\t\t<sram_uncorrectable_parity>0</sram_uncorrectable_parity>
\t\t\t\t<sram_uncorrectable_secded>0</sram_uncorrectable_secded>
\t\t\t\t<dram_correctable>0</dram_correctable>
\t\t\t\t<dram_uncorrectable>0</dram_uncorrectable>
\t\t\t</volatile>
\t\t\t<aggregate>
\t\t\t\t<sram_correctable>0</sram_correctable>
\t\t\t\t<sram_uncorrectable_parity>0</sram_uncorrectable_parity>
\t\t\t\t<sram_uncorrectable_secded>0</sram_uncorrectable_secded>
\t\t\t\t<dram_correctable>{dram_corr}</dram_correctable>
\t\t\t\t<dram_uncorrectable>0</dram_uncorrectable>
\t\t\t\t<sram_threshold_exceeded>No</sram_threshold_exceeded>
\t\t\t</aggregate>
\t\t\t<aggregate_uncorrectable_sram_sources>
\t\t\t\t<sram_l2>0</sram_l2>
\t\t\t\t<sram_sm>0</sram_sm>
\t\t\t\t<sram_microcontroller>0</sram_microcontroller>
\t\t\t\t<sram_pcie>0</sram_pcie>
\t\t\t\t<sram_other>0</sram_other>
\t\t\t</aggregate_uncorrectable_sram_sources>
\t\t</ecc_errors>
\t\t<retired_pages>
\t\t\t<multiple_single_bit_retirement>
\t\t\t\t<retired_count>N/A</retired_count>
\t\t\t\t<retired_pagelist>N/A</retired_pagelist>
\t\t\t</multiple_single_bit_retirement>
\t\t\t<double_bit_retirement>
\t\t\t\t<retired_count>N/A</retired_count>
\t\t\t\t<retired_pagelist>N/A</retired_pagelist>
\t\t\t</double_bit_retirement>
\t\t\t<pending_blacklist>N/A</pending_blacklist>
\t\t\t<pending_retirement>N/A</pending_retirement>
\t\t</retired_pages>
\t\t<remapped_rows>
\t\t\t<remapped_row_corr>0</remapped_row_corr>
\t\t\t<remapped_row_unc>0</remapped_row_unc>
\t\t\t<remapped_row_pending>No</remapped_row_pending>
\t\t\t<remapped_row_failure>No</remapped_row_failure>
\t\t\t<row_remapper_histogram>
\t\t\t\t<row_remapper_histogram_max>2560 bank(s)</row_remapper_histogram_max>
\t\t\t\t<row_remapper_histogram_high>0 bank(s)</row_remapper_histogram_high>
\t\t\t\t<row_remapper_histogram_partial>0 bank(s)</row_remapper_histogram_partial>
\t\t\t\t<row_remapper_histogram_low>0 bank(s)</row_remapper_histogram_low>
\t\t\t\t<row_remapper_histogram_none>0 bank(s)</row_remapper_histogram_none>
\t\t\t</row_remapper_histogram>
\t\t</remapped_rows>
\t\t<temperature>
\t\t\t<gpu_temp>{temp} C</gpu_temp>
\t\t\t<gpu_temp_tlimit>{tlimit} C</gpu_temp_tlimit>
\t\t\t<gpu_temp_max_tgp_threshold>N/A</gpu_temp_max_tgp_threshold>
\t\t\t<gpu_temp_slow_tgp_threshold>N/A</gpu_temp_slow_tgp_threshold>
\t\t\t<memory_temp>{mem_temp} C</memory_temp>
\t\t\t<gpu_temp_max_mem_tgp_threshold>N/A</gpu_temp_max_mem_tgp_threshold>
\t\t</temperature>
\t\t<supported_gpu_target_temp>
\t\t\t<gpu_target_temp_min>N/A</gpu_target_temp_min>
\t\t\t<gpu_target_temp_max>N/A</gpu_target_temp_max>
\t\t</supported_gpu_target_temp>
\t\t<gpu_power_readings>
\t\t\t<power_state>P0</power_state>
\t\t\t<average_power_draw>{power} W</average_power_draw>
\t\t\t<instant_power_draw>{power} W</instant_power_draw>
\t\t\t<current_power_limit>700.00 W</current_power_limit>
\t\t\t<requested_power_limit>700.00 W</requested_power_limit>
\t\t\t<default_power_limit>700.00 W</default_power_limit>
\t\t\t<min_power_limit>200.00 W</min_power_limit>
\t\t\t<max_power_limit>700.00 W</max_power_limit>
\t\t</gpu_power_readings>
\t\t<gpu_memory_power_readings>
\t\t\t<average_power_draw>N/A</average_power_draw>
\t\t\t<instant_power_draw>N/A</instant_power_draw>
\t\t</gpu_memory_power_readings>
\t\t<module_power_readings>
\t\t\t<power_state>P0</power_state>
\t\t\t<average_power_draw>N/A</average_power_draw>
\t\t\t<instant_power_draw>N/A</instant_power_draw>
\t\t</module_power_readings>
\t\t<clocks>
\t\t\t<graphics_clock>1980 MHz</graphics_clock>
\t\t\t<sm_clock>1980 MHz</sm_clock>
\t\t\t<mem_clock>2619 MHz</mem_clock>
\t\t\t<video_clock>1635 MHz</video_clock>
\t\t</clocks>
\t\t<applications_clocks>
\t\t\t<graphics_clock>1755 MHz</graphics_clock>
\t\t\t<mem_clock>2619 MHz</mem_clock>
\t\t</applications_clocks>
\t\t<default_applications_clocks>
\t\t\t<graphics_clock>1755 MHz</graphics_clock>
\t\t\t<mem_clock>2619 MHz</mem_clock>
\t\t</default_applications_clocks>
\t\t<max_clocks>
\t\t\t<graphics_clock>1980 MHz</graphics_clock>
\t\t\t<sm_clock>1980 MHz</sm_clock>
\t\t\t<mem_clock>2619 MHz</mem_clock>
\t\t\t<video_clock>1770 MHz</video_clock>
\t\t</max_clocks>
\t\t<max_customer_boost_clocks>
\t\t\t<graphics_clock>1980 MHz</graphics_clock>
\t\t</max_customer_boost_clocks>
\t\t<clock_policy>
\t\t\t<auto_boost>N/A</auto_boost>
\t\t\t<auto_boost_default>N/A</auto_boost_default>
\t\t</clock_policy>
\t\t<fabric>
\t\t\t<state>Completed</state>
\t\t\t<status>Success</status>
\t\t\t<cliqueId>0</cliqueId>
\t\t\t<clusterUuid>{cluster_uuid}</clusterUuid>
\t\t\t<health>
\t\t\t\t<bandwidth>Full</bandwidth>
\t\t\t</health>
\t\t</fabric>
\t\t<processes>
\t\t\t<process_info>
\t\t\t\t<gpu_instance_id>N/A</gpu_instance_id>
\t\t\t\t<compute_instance_id>N/A</compute_instance_id>
\t\t\t\t<pid>{pid}</pid>
\t\t\t\t<type>C</type>
\t\t\t\t<process_name>python3</process_name>
\t\t\t\t<used_memory>{proc_used} MiB</used_memory>
\t\t\t</process_info>
\t\t</processes>
\t\t<accounted_processes>
\t\t</accounted_processes>
\t\t<capabilities>
\t\t\t<egm>disabled</egm>
\t\t</capabilities>
\t</gpu>
"""


_REASONS = "".join(
    f"\t\t\t<clocks_event_reason_{r}>Not Active</clocks_event_reason_{r}>\n"
    for r in ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
              "hw_thermal_slowdown", "hw_power_brake_slowdown", "sync_boost",
              "sw_thermal_slowdown", "display_clocks_setting"))
_REASONS = f"\t\t<clocks_event_reasons>\n{_REASONS}\t\t</clocks_event_reasons>\n"


def nvidia_smi_xml(n: NodePlan, seed: int) -> str:
    rng = random.Random(f"{seed}/{n.name}/smi")
    at = plus(CREATED, -48)
    day = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[at.weekday()]
    month = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
             "Dec")[at.month - 1]
    parts = [
        '<?xml version="1.0" ?>\n'
        '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'
        "<nvidia_smi_log>\n"
        f"\t<timestamp>{day} {month} {at.day:2d} {at:%H:%M:%S} {at.year}</timestamp>\n"
        f"\t<driver_version>{DRIVER}</driver_version>\n"
        f"\t<cuda_version>{CUDA}</cuda_version>\n"
        f"\t<attached_gpus>{n.gpus_listed}</attached_gpus>\n"]
    busy = n.has_nvidia
    for index, bus in enumerate(BUS_IDS):
        if n.role is Role.GPU_LOST and index == n.fault_gpu:
            continue
        smi_bus = f"0000{bus[:-2].upper()}.0"
        used = rng.randrange(52000, 78000) if busy else 0
        util = rng.randrange(35, 99) if busy else 0
        power = rng.uniform(380, 690) if busy else 71.3
        parts.append(_GPU_XML.format(
            reasons=_REASONS, bus=smi_bus, bus_hex=bus[5:7].upper(),
            serial=f"165{n.index:07d}{index}",
            uuid=gpu_uuid(seed, n.name, index), minor=index, board=bus[5:7] + "00",
            module=index + 1, driver=DRIVER, tx=rng.randrange(1000, 90000),
            rx=rng.randrange(1000, 90000), used=used + 590, free=81559 - 328 - used - 590,
            bar1=rng.randrange(4, 64), bar1_free=131072 - 64, util=util,
            mem_util=util // 2, dram_corr=rng.choice((0, 0, 0, 2)),
            temp=rng.randrange(30, 68) if busy else 31, tlimit=rng.randrange(20, 50),
            mem_temp=rng.randrange(35, 72), power=f"{power:.2f}",
            cluster_uuid=f"{hexid(8, 'clu', seed)}-0000-0000-0000-000000000000",
            pid=300000 + n.index * 8 + index if busy else 0,
            proc_used=used).replace("<pid>0</pid>", "<pid>N/A</pid>"))
    parts.append("</nvidia_smi_log>\n")
    return "".join(parts)


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
