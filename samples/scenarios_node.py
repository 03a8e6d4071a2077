"""Node and driver samples: the node, the kernel and the GPU, and the operator's
driver life cycle.

- ``xid79-fallen-off-bus``: HGX A100, PCIe AER and Xid 79 on one GPU; capacity 8,
  allocatable 7; an 8-GPU pod waits.
- ``app-xids-only``: Xid 13 and 43 of one process; an application fault, the GPU stays
  in service.
- ``h100-ecc-row-remap``: HGX H100, Xid 63/94 (contained) on one GPU with a row remap
  pending, Xid 95 (uncontained) on another that needs a reset.
- ``nouveau-loaded``: after a reboot nouveau owns the GPUs; nvidia.ko probes nothing and
  is not loaded.
- ``secureboot-dkms-refused``: a firmware update turned Secure Boot on; the driver
  container's unsigned module is refused.
- ``hgx-no-fabricmanager``: HGX H100 with a host driver and no Fabric Manager after a
  driver upgrade: CUDA error 802, fabric 'In Progress'.
- ``driver-upgrade-failed``: the driver upgrade failed on a node left cordoned; another
  node's new kernel has no precompiled driver image.

Each is a fleet (``samplekit/fleet.py``): a kubeadm cluster with the GPU Operator
installed weeks before collection. Nodes that rebooted inside the log window show it
(``podstates.after_reboot``): containers restarted, journals from the boot, dmesg and
/run (CDI specs, validation files) from the new boot only.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Any

from samples.samplekit import dcgpu, gpuop, journal, oplogs
from samples.samplekit.core import at, ctime, iso, k8s_suffix, number, plus
from samples.samplekit.dcgpu import A10, L4, L40S, Card, Load, Slot
from samples.samplekit.fleet import (
    PYTORCH,
    TRITON,
    Rig,
    RigState,
    Stack,
    Timeline,
    add_nodes,
    base_state,
    control_plane,
    default_statuses,
    emit,
    fleet_scene,
    gpu_container,
    gpu_resources,
    install_stack,
    install_values,
    node_writers,
    operator_log,
    owned,
    pending_pod,
    run_pod,
    server,
    settled,
    toolkit_config,
    workload_spec,
)
from samples.samplekit.hgx import (
    A100_SXM4_80GB,
    H100_SXM5_80GB,
    HEALTHY_FABRIC,
    NO_FABRIC_MANAGER,
    Health,
)
from samples.samplekit.hgx import nvidia_smi_xml as hgx_smi_xml
from samples.samplekit.k8s import DEFAULT_TOLERATIONS, Obj, container, meta, namespace_obj, pod_spec
from samples.samplekit.oplogs import klog_line
from samples.samplekit.podstates import (
    Finished,
    Looping,
    PullFailing,
    Run,
    Running,
    after_reboot,
    crash_runs,
    custom,
)
from samples.samplekit.scene import LogLine, Scene
from samples.samplekit.smi import CUDA, DRIVER
from samples.samplekit.workloads import Outcome, Ran, Template, add_daemonset, place_pod
from samples.scenarios_runtime import driver_template, manager_lines

PLUGIN = "nvidia-device-plugin-daemonset"
GFD = "gpu-feature-discovery"
VALIDATOR = "nvidia-operator-validator"
TOOLKIT = "nvidia-container-toolkit-daemonset"
EXPORTER = "nvidia-dcgm-exporter"
MIG_MANAGER = "nvidia-mig-manager"
DRIVER_DS = "nvidia-driver-daemonset"
CP_TAINT = "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"
SMI_NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running."
)
SMI_NOT_FOUND = "nvidia-smi not found on the host nor under /run/nvidia/driver"
UNATTENDED_OFF = (
    "==> /etc/apt/apt.conf.d/20auto-upgrades <==\n"
    'APT::Periodic::Update-Package-Lists "1";\n'
    'APT::Periodic::Unattended-Upgrade "0";\n'
)


# --------------------------------------------------------------------------- helpers


def timeline(created: str) -> Timeline:
    """A cluster built five weeks, and the operator installed four weeks, before
    ``created``: the install is far outside the 168 h log window."""
    end = at(created)
    return Timeline(cluster_init=plus(end, -35 * 86400 - 2791.6),
                    helm_install=plus(end, -28 * 86400 - 4410.2), created=end)


def cluster(t: Timeline, servers: list[tuple[str, Card, int, str, str]],
            reboots: dict[str, dt.datetime] | None = None) -> list[Rig]:
    """The control plane and GPU servers (name, card, count, machine, CPU vendor);
    ``reboots`` gives the last boot of servers that rebooted inside the window."""
    boot = plus(t.cluster_init, -2217.4)
    rigs = [control_plane(boot)]
    for i, (name, card, count, machine, cpu) in enumerate(servers, start=1):
        booted = (reboots or {}).get(name, plus(boot, 37 * i))
        rigs.append(server(name, i, card, count, machine=machine, boot_at=booted,
                           cpu_vendor=cpu))
    return rigs


def healthy_stack(t: Timeline, rigs: list[Rig], **kw: object) -> Stack:
    resync = [plus(t.created, -20 * 3600 - 611.7), plus(t.created, -10 * 3600 - 612.1)]
    stack = Stack(helm=[gpuop.helm_revision(1, "deployed", t.helm_install, "Install complete",
                                            install_values())],
                  operator_log=operator_log(t, rigs, default_statuses(), resync))
    for key, value in kw.items():
        setattr(stack, key, value)
    return stack


def insufficient(gpu_nodes: int, resource: str = "nvidia.com/gpu") -> str:
    """The scheduler's FitError when no GPU node has room (reasons sorted)."""
    total = gpu_nodes + 1
    reasons = sorted([f"1 {CP_TAINT}", f"{gpu_nodes} Insufficient {resource}"])
    preempt = sorted(["1 Preemption is not helpful for scheduling",
                      f"{gpu_nodes} No preemption victims found for incoming pod"])
    return (f"0/{total} nodes are available: {', '.join(reasons)}. preemption: 0/{total} "
            f"nodes are available: {', '.join(preempt)}.")


def kernel_lines(when: dt.datetime, texts: list[str], step: float = 0.0001
                 ) -> list[tuple[dt.datetime, str]]:
    return [(plus(when, i * step), text) for i, text in enumerate(texts)]


def iso_kernel(t: dt.datetime) -> str:
    return dcgpu.iso_kernel(t)


def dmesg_text(lines: list[tuple[dt.datetime, str]]) -> str:
    return "".join(f"{iso_kernel(t)} {text}\n" for t, text in sorted(lines))


def gpu_intro(slot: Slot) -> list[str]:
    """What the driver prints once per GPU before its first Xid."""
    bus = slot.pci[:-2]
    return [f"NVRM: GPU at PCI:{bus}: {slot.uuid}", f"NVRM: GPU Board Serial Number: {slot.serial}"]


def plugin_unhealthy(when: dt.datetime, xid: int, uuid: str) -> list[LogLine]:
    """The device plugin's health check on a critical Xid (v0.19): the device is
    reported unhealthy to kubelet until the plugin restarts."""
    later = plus(when, 0.0003)
    return [
        LogLine(when, klog_line("health.go:185", f"XidCriticalError: Xid={xid} on Device={uuid}; "
                                "marking device as unhealthy.")(when)),
        LogLine(later, klog_line("server.go:301", "'nvidia.com/gpu' device marked unhealthy: "
                                 f"{uuid}")(later)),
    ]


def logrus(t: dt.datetime, msg: str, level: str = "info") -> LogLine:
    return LogLine(t, f'time="{t:%Y-%m-%dT%H:%M:%SZ}" level={level} msg="{msg}"')


def thin(lines: list[LogLine], head: int, tail: int) -> list[LogLine]:
    """Repetitive output thinned to its first and last lines (README: samples keep
    the start and the end of a loop)."""
    return lines if len(lines) <= head + tail else lines[:head] + lines[-tail:]


def every(start: dt.datetime, until: dt.datetime, period: float) -> list[dt.datetime]:
    out = []
    t = start
    while t < until:
        out.append(t)
        t = plus(t, period)
    return out


def host_driver_failing(start: dt.datetime, until: dt.datetime) -> list[LogLine]:
    """driver-validation on a host whose nvidia-smi exists but reaches no driver:
    it retries every 5 s for ever (first rounds and the last kept)."""
    rounds = []
    for t in every(start, until, 5.0 + 0.62):
        rounds.append([
            logrus(t, "Attempting to validate a pre-installed driver on the host"),
            logrus(plus(t, 0.001), "Detected a pre-installed driver on the host"),
            logrus(plus(t, 0.002), "running command chroot with args [/host nvidia-smi]"),
            LogLine(plus(t, 0.61), SMI_NO_DRIVER),
            LogLine(plus(t, 0.61), ""),
            logrus(plus(t, 0.62), "failed to validate the driver, retrying after 5 seconds",
                   "warning"),
        ])
    keep = rounds if len(rounds) <= 3 else rounds[:2] + rounds[-1:]
    return [line for r in keep for line in r]


def driver_container_wait(start: dt.datetime, until: dt.datetime) -> list[LogLine]:
    """driver-validation on a driver-container node before the driver is ready: no
    host driver, so it waits for the driver container's ready file."""
    lines = [
        logrus(start, "Attempting to validate a pre-installed driver on the host"),
        logrus(plus(start, 0.002), "No pre-installed driver detected on the host: failed to "
               "find an executable 'nvidia-smi' on the host"),
        logrus(plus(start, 0.003), "Validating containerized driver installation"),
        logrus(plus(start, 0.004), "Driver is not pre-installed on the host and is managed by "
               "GPU Operator. Checking driver container status."),
    ]
    loop = []
    for t in every(plus(start, 0.005), until, 5.0 + 0.011):
        loop += [
            logrus(t, "running command sh with args [-c stat "
                   "/run/nvidia/validations/.driver-ctr-ready]"),
            LogLine(plus(t, 0.009), "stat: cannot statx '/run/nvidia/validations/"
                    ".driver-ctr-ready': No such file or directory"),
            logrus(plus(t, 0.01), "command failed, retrying after 5 seconds"),
        ]
    return lines + thin(loop, 6, 3)


def wait_for_toolkit(start: dt.datetime, until: dt.datetime) -> list[LogLine]:
    return thin(oplogs.wait_for_toolkit(start, until), 3, 2)


def stuck_operands(rig: Rig, boot: dt.datetime, until: dt.datetime, *,
                   driver_wait: str, mig: bool = False) -> dict[str, Outcome]:
    """After a boot with no usable driver: the toolkit and the validator loop in
    driver-validation; the operands behind the toolkit wait for it. ``driver_wait``
    is ``host`` (host driver fails) or ``container`` (waits for the driver pod)."""
    lines = host_driver_failing if driver_wait == "host" else driver_container_wait
    outcomes: dict[str, Outcome] = {}
    old = plus(boot, -86400 * 20)  # the pods were created at install time
    for k, name in enumerate((TOOLKIT, VALIDATOR)):
        box = plus(boot, 41.3 + 0.7 * k)
        start = plus(box, 0.8)
        outcomes[name] = custom(old, box, {"driver-validation": Running(start)},
                                logs={"driver-validation": lines(start, until)})
    waiting = [PLUGIN, GFD, EXPORTER] + ([MIG_MANAGER] if mig else [])
    for k, name in enumerate(waiting):
        box = plus(boot, 43.1 + 0.6 * k)
        start = plus(box, 0.9)
        outcomes[name] = custom(old, box, {"toolkit-validation": Running(start)},
                                logs={"toolkit-validation": wait_for_toolkit(start, until)})
    return outcomes


def reboot_journals(st: RigState, boot: dt.datetime) -> None:
    """containerd and kubelet starting with the machine."""
    h = st.rig.host
    journal.containerd_boot(st.containerd_journal, plus(boot, 9.1), h.containerd_pid)
    journal.kubelet_start(st.kubelet_journal, plus(boot, 11.4))


def node_rebooted(scene: Scene, name: str, boot: dt.datetime) -> None:
    """The Node after its kubelet came back: Ready since shortly after the boot."""
    node = next(n for n in scene.nodes if n["metadata"]["name"] == name)
    for cond in node["status"]["conditions"]:
        if cond["type"] == "Ready":
            cond["lastTransitionTime"] = iso(plus(boot, 24.6))


def driver_ds(name: str, image: str, kernel: str | None = None) -> Template:
    """The operator's driver DaemonSet; with ``kernel``, one of the per-kernel
    DaemonSets of precompiled drivers (named and selected by kernel and OS)."""
    tpl = driver_template()
    tpl = copy.deepcopy(tpl)
    tpl.name = name
    for c in tpl.spec["containers"]:
        if c["name"] == "nvidia-driver-ctr":
            c["image"] = image
    if kernel is not None:
        tpl.spec["nodeSelector"] = {
            "nvidia.com/gpu.deploy.driver": "true",
            "feature.node.kubernetes.io/kernel-version.full": kernel,
            "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
            "feature.node.kubernetes.io/system-os_release.VERSION_ID": "24.04",
        }
        tpl.labels = {**tpl.labels, "app": name}
        tpl.selector = {"app": name}
        tpl.pod_labels = {**tpl.pod_labels, "app": name}
    return tpl


def driver_dmesg(rig: Rig, loaded: dt.datetime, extra: list[tuple[dt.datetime, str]] | None = None,
                 unsigned: bool = True) -> str:
    """The kernel lines of a driver container loading its own (unsigned) build of the
    open module at ``loaded``."""
    h = replace(rig.host, boot_at=plus(loaded, -6.12))
    text = dcgpu.dmesg_lines(h, list(rig.slots), extra or [])
    if unsigned:
        first = text.split("\n", 1)[0]
        stamp = first.split(" ", 1)[0]
        line = (f"{stamp} nvidia: module verification failed: signature and/or required key "
                "missing - tainting kernel")
        text = first + "\n" + line + "\n" + text.split("\n", 1)[1]
    return text


def unsigned_modules() -> str:
    """/proc/modules for a module built in the driver container (unsigned: E)."""
    return (
        "nvidia_uvm 2093056 0 - Live 0xffffffffc3a1e000 (OE)\n"
        "nvidia_modeset 1724416 0 - Live 0xffffffffc36c2000 (OE)\n"
        "nvidia 11980800 2 nvidia_uvm,nvidia_modeset, Live 0xffffffffc2400000 (OE)\n"
    )


def validator_pod_name(rig: Rig) -> str:
    return f"nvidia-cuda-validator-{k8s_suffix(5, 'cuda-validator', rig.name)}"


# ------------------------------------------------------------- xid79-fallen-off-bus


def xid79_fallen_off_bus(root: Path) -> None:
    """HGX A100: GPU 6 fell off the bus (PCIe AER, Xid 79); the plugin withdrew it, so
    capacity 8 / allocatable 7, and the restarted 8-GPU training pod cannot be placed."""
    t = timeline("2026-11-28T07:40:00Z")
    rigs = cluster(t, [("hgx-1", A100_SXM4_80GB, 8, "ProLiant XL675d Gen10 Plus", "AMD")])
    hgx = rigs[1]
    lost = hgx.slots[6]
    scene = fleet_scene(rigs, t)
    scene.namespaces.append(
        meta_namespace("llm", plus(t.helm_install, 2 * 86400 + 317)))
    xid_at = at("2026-11-28T03:12:51.384106Z")
    plugin_logs = {"toolkit-validation": [],
                   "nvidia-device-plugin": plugin_unhealthy(plus(xid_at, 0.0374), 79, lost.uuid)}
    install_stack(scene, rigs, t, healthy_stack(t, rigs, logs={PLUGIN: {hgx.name: plugin_logs}}))
    job = "pretrain-13b"
    pending_pod(scene, name=f"{job}-0", namespace="llm",
                spec=workload_spec(gpu_container("train", PYTORCH, {"nvidia.com/gpu": 8},
                                                 command=["torchrun"],
                                                 args=["--nproc-per-node=8", "pretrain.py",
                                                       "--resume=latest"],
                                                 cpu="96", memory="900Gi")),
                created=at("2026-11-28T06:58:12Z"), message=insufficient(1),
                last=plus(t.created, -187.4), attempts=14,
                labels={"app": job, "statefulset.kubernetes.io/pod-name": f"{job}-0"},
                owners=owned("StatefulSet", job, "llm"))
    resources = gpu_resources(rigs, hgx_1={"nvidia.com/gpu": (8, 7)})
    add_nodes(scene, rigs, t, resources=resources)
    files = toolkit_config()
    port, bus = "0000:c0:01.1", lost.pci
    device = f"10de:{lost.card.gpu.pci_device_id.lower()}"
    kernel = kernel_lines(plus(xid_at, -0.0213), [
        f"pcieport {port}: AER: Uncorrected (Fatal) error message received from {bus}",
        f"nvidia {bus}: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, "
        "(Requester ID)",
        f"nvidia {bus}:   device [{device}] error status/mask=00004000/00000000",
        f"nvidia {bus}:    [14] CmpltTO                (First)",
    ]) + kernel_lines(plus(xid_at, -0.0104), [
        f"nvidia {bus}: AER: can't recover (no error_detected callback)",
        f"pcieport {port}: AER: device recovery failed",
    ]) + kernel_lines(xid_at, [
        *gpu_intro(lost),
        f"NVRM: Xid (PCI:{bus[:-2]}): 79, GPU has fallen off the bus.",
        f"NVRM: GPU {bus}: GPU has fallen off the bus.",
        f"NVRM: GPU {bus}: GPU serial number is {lost.serial}.",
        "NVRM: A GPU crash dump has been created. If possible, please run",
        "NVRM: nvidia-bug-report.sh as root to collect this data before",
        "NVRM: the NVIDIA kernel module is unloaded.",
    ])

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        st.dmesg_extra = kernel
        st.smi_slots = tuple(s for s in rig.slots if s.index != lost.index)
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "hgx-train")


def meta_namespace(name: str, created: dt.datetime) -> Obj:
    return namespace_obj(name, created)


# ------------------------------------------------------------------- app-xids-only


def app_xids_only(root: Path) -> None:
    """One fine-tuning process hit an illegal address (Xid 13, three lines) and the
    driver reset its channel (Xid 43). The device plugin skips both; the GPU stays
    allocatable and the Job's next pod runs on it."""
    t = timeline("2026-11-26T15:10:00Z")
    rigs = cluster(t, [("gpu-1", L40S, 4, "PowerEdge R760xa", "Intel")])
    rig = rigs[1]
    slot = rig.slots[1]
    pid = 402117
    scene = fleet_scene(rigs, t)
    scene.namespaces.append(meta_namespace("ml", plus(t.helm_install, 3 * 86400 + 902)))
    xid_at = at("2026-11-26T14:02:37.551920Z")
    skip_at = plus(xid_at, 0.0291)
    skipped = []
    for k, xid in enumerate((13, 13, 13, 43)):
        when = plus(skip_at, 0.0004 * k)
        event = (f"{{Device:0xc0004a2{k}10 EventType:8 EventData:{xid} "
                 "GpuInstanceId:4294967295 ComputeInstanceId:4294967295}")
        skipped.append(LogLine(when, klog_line("health.go:160", f"Skipping event {event}")(when)))
    plugin_logs = {"toolkit-validation": [], "nvidia-device-plugin": skipped}
    install_stack(scene, rigs, t, healthy_stack(t, rigs, logs={PLUGIN: {rig.name: plugin_logs}}))

    job = "finetune-lora-7b"
    first = f"{job}-{k8s_suffix(5, 'job', 'ml', job, 1)}"
    spec = workload_spec(gpu_container("train", PYTORCH, {"nvidia.com/gpu": 1},
                                       command=["python3"], args=["finetune.py", "--lora"],
                                       cpu="8", memory="64Gi"), restart_policy="Never")
    started = at("2026-11-26T13:41:05Z")
    run = Run(plus(started, 6.3), plus(xid_at, 1.8), 1)
    traceback = [
        "Traceback (most recent call last):",
        '  File "/workspace/finetune.py", line 212, in <module>',
        "    loss.backward()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    ]
    log = oplogs.at_lines(plus(run.start, 2.4), [
        "[2026-11-26 13:41:13] loading base model meta-llama/Llama-2-7b-hf",
        "[2026-11-26 13:41:58] trainable params: 4,194,304 || all params: 6,742,609,920",
    ], step=45.0) + oplogs.at_lines(plus(xid_at, 1.2), traceback, step=0.001)
    labels = {"batch.kubernetes.io/job-name": job, "job-name": job}
    place_pod(scene, rig.host,
              metadata=meta("Pod", first, "ml", created=plus(started, -0.05), labels=labels,
                            owners=owned("Job", job, "ml", "batch/v1"),
                            generate_name=f"{job}-"),
              spec=spec,
              outcome=custom(started, plus(started, 0.42), {"train": Finished(run)},
                             logs={"train": log}))
    second = at("2026-11-26T14:02:41Z")
    again = replace_rig_load(rig, slot.index, pid + 2311)
    run_pod(scene, again, name=f"{job}-{k8s_suffix(5, 'job', 'ml', job, 2)}", namespace="ml",
            spec=spec, started=second, labels=labels,
            owners=owned("Job", job, "ml", "batch/v1"), generate_name=f"{job}-")
    rigs[1] = again
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs))
    files = toolkit_config()
    bus = slot.pci[:-2]
    kernel = kernel_lines(xid_at, [
        *gpu_intro(slot),
        f"NVRM: Xid (PCI:{bus}): 13, pid={pid}, name=python3, Graphics SM Warp Exception on "
        "(GPC 4, TPC 2, SM 1): Out Of Range Address",
        f"NVRM: Xid (PCI:{bus}): 13, pid={pid}, name=python3, Graphics SM Global Exception on "
        "(GPC 4, TPC 2, SM 1): Multiple Warp Errors",
        f"NVRM: Xid (PCI:{bus}): 13, pid={pid}, name=python3, Graphics Exception: ESR "
        "0x524648=0x2000d 0x524650=0x0 0x524644=0xd3eff2 0x52464c=0x17f",
    ]) + kernel_lines(plus(xid_at, 0.0268), [
        f"NVRM: Xid (PCI:{bus}): 43, pid={pid}, name=python3, Ch 00000008",
    ])

    def state(r: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, r, files)
        st.dmesg_extra = kernel
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "ml-dev")


def replace_rig_load(rig: Rig, index: int, pid: int) -> Rig:
    """``rig`` with a fine-tuning process on GPU ``index``."""
    gpu = rig.slots[index].card.gpu
    load = Load(util=number(71, 88, "util", rig.name, index),
                used_mib=int(gpu.memory_mib * 0.41) + number(0, 500, "mem", rig.name, index),
                power_w=round(gpu.power_limit_w * 0.63, 2), temp_c=57, pid=pid)
    slots = tuple(replace(s, load=load) if s.index == index else s for s in rig.slots)
    return replace(rig, slots=slots)


# ------------------------------------------------------------- h100-ecc-row-remap


def driver_stack(t: Timeline, rigs: list[Rig], tpl: Template, values: dict[str, Any],
                 policy: dict[str, Any], **kw: object) -> Stack:
    """The operator with its driver container (``driver.enabled`` true)."""
    statuses = default_statuses() | {"state-driver": "ready"}
    resync = [plus(t.created, -19 * 3600 - 204.9), plus(t.created, -9 * 3600 - 205.3)]
    stack = Stack(helm=[gpuop.helm_revision(1, "deployed", t.helm_install, "Install complete",
                                            values)],
                  policy_patch={"driver": {"enabled": True, **policy}},
                  templates={DRIVER_DS: tpl},
                  operator_log=operator_log(t, rigs, statuses, resync))
    for key, value in kw.items():
        setattr(stack, key, value)
    return stack


def h100_ecc_row_remap(root: Path) -> None:
    """HGX H100 with the driver container (which runs Fabric Manager): an uncorrectable
    HBM error was contained to one process (Xid 63 + 94; row remap pending) on GPU 2,
    an L2 error was not contained (Xid 95; reset required) on GPU 5. The plugin
    withdrew both GPUs: allocatable 6 of 8."""
    t = timeline("2026-11-29T10:25:00Z")
    rigs = cluster(t, [("hgx-1", H100_SXM5_80GB, 8, "PowerEdge XE9680", "Intel")])
    hgx = rigs[1]
    remapped, reset = hgx.slots[2], hgx.slots[5]
    scene = fleet_scene(rigs, t)
    t94 = at("2026-11-29T02:47:10.118203Z")
    t95 = at("2026-11-29T08:03:55.640719Z")
    plugin_logs = {"toolkit-validation": [],
                   "nvidia-device-plugin": plugin_unhealthy(plus(t94, 0.0412), 94, remapped.uuid)
                   + plugin_unhealthy(plus(t95, 0.0398), 95, reset.uuid)}
    image = f"nvcr.io/nvidia/driver:{DRIVER}-ubuntu24.04"
    tpl = driver_ds(DRIVER_DS, image)
    values = {"driver": {"version": DRIVER}}
    install_stack(scene, rigs, t, driver_stack(t, rigs, tpl, values, {"version": DRIVER},
                                               logs={PLUGIN: {hgx.name: plugin_logs}}))
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, hgx_1={"nvidia.com/gpu": (8, 6)}))
    files = toolkit_config()
    b94, b95 = remapped.pci[:-2], reset.pci[:-2]
    kernel = kernel_lines(plus(t94, -0.0002), gpu_intro(remapped)) + kernel_lines(t94, [
        f"NVRM: Xid (PCI:{b94}): 63, pid=188467, name=python3, Row Remapper: New row marked "
        "for remapping, reset gpu to activate.",
        f"NVRM: Xid (PCI:{b94}): 94, pid=188467, name=python3, Contained: SM (0x1). RST: No, "
        "D-RST: No",
    ]) + kernel_lines(plus(t95, -0.0002), gpu_intro(reset)) + kernel_lines(t95, [
        f"NVRM: Xid (PCI:{b95}): 95, pid=203358, name=python3, Uncontained: LTC TAG (0x2,0x0). "
        "RST: Yes, D-RST: No",
    ])
    health = {remapped.index: Health(dram_uncorrectable=1, remapped_unc=1, remap_pending=True),
              reset.index: Health(sram_uncorrectable=1, reset_required=True)}
    loaded = plus(t.operands_up, 9.7)

    def state(rig: Rig, now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        st.dmesg = driver_dmesg(rig, loaded, kernel)
        st.modules = unsigned_modules()
        st.unattended = UNATTENDED_OFF
        st.smi_xml = hgx_smi_xml(list(rig.slots), now, health, fabric=HEALTHY_FABRIC)
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "hgx-infer")


# ------------------------------------------------------------------ nouveau-loaded

STUCK_STATES = ["state-container-toolkit", "state-operator-validation", "state-device-plugin",
                "state-dcgm-exporter", "gpu-feature-discovery"]


def stuck_stack(t: Timeline, rigs: list[Rig], broken: str, boot: dt.datetime,
                outcomes: dict[str, Outcome], base: Stack, *, driver: bool = False) -> Stack:
    """``base`` with one node's operands replaced and the ClusterPolicy not ready since
    that node came back (``driver``: the operator runs the driver container too)."""
    hosts = [r.host for r in rigs]
    statuses = default_statuses() | {s: "notReady" for s in STUCK_STATES}
    if driver:
        statuses["state-driver"] = "notReady"
    base.operator_log = [line for line in base.operator_log if line.at < boot]
    base.operator_log += oplogs.reconcile(plus(boot, 63.8), hosts, statuses)
    base.operator_log += oplogs.reconcile(plus(t.created, -241.5), hosts, statuses)
    base.outcomes = {name: {broken: o} for name, o in outcomes.items()}
    base.ready = False
    base.not_ready = list(STUCK_STATES)
    base.since = plus(boot, 63.9)
    return base


def nouveau_dmesg(rig: Rig, boot: dt.datetime) -> str:
    """nouveau binds the A10s from the initramfs; nvidia.ko, loaded later, finds no
    device it may probe and is unloaded again."""
    lines: list[tuple[dt.datetime, str]] = []
    for i, slot in enumerate(rig.slots):
        pci = slot.pci
        t0 = plus(boot, 3.912 + 0.183 * i)
        gpu = slot.card.gpu
        lines += kernel_lines(t0, [f"nouveau {pci}: enabling device (0000 -> 0002)",
                                   f"nouveau {pci}: NVIDIA GA102 (172000a1)"], 0.0004)
        lines += kernel_lines(plus(t0, 0.067), [
            f"nouveau {pci}: bios: version {gpu.vbios.lower()}",
            f"nouveau {pci}: pmu: firmware unavailable",
            f"nouveau {pci}: fb: 24576 MiB GDDR6",
        ], 0.021)
        lines += kernel_lines(plus(t0, 0.402), [
            f"nouveau {pci}: DRM: VRAM: 24576 MiB",
            f"nouveau {pci}: DRM: GART: 536870912 MiB",
            f"nouveau {pci}: DRM: BIT table 'A' not found",
            f"nouveau {pci}: DRM: DCB version 4.1",
            f"nouveau {pci}: DRM: MM: using COPY for buffer copies",
        ], 0.0007)
        lines.append((plus(t0, 0.498), f"[drm] Initialized nouveau 1.4.0 20120801 for {pci} on "
                                        f"minor {i + 1}"))
    t1 = plus(boot, 11.604)
    count = len(rig.slots)
    lines += kernel_lines(t1, [
        "nvidia: loading out-of-tree module taints kernel.",
        "nvidia-nvlink: Nvlink Core is being initialized, major device number 508",
        *[f"NVRM: GPU {s.pci} is already bound to nouveau." for s in rig.slots],
        f"NVRM: The NVIDIA probe routine was not called for {count} device(s).",
        "NVRM: This can occur when another driver was loaded and",
        "NVRM: obtained ownership of the NVIDIA device(s).",
        "NVRM: Try unloading the conflicting kernel module (and/or",
        "NVRM: reconfigure your kernel without the conflicting",
        "NVRM: driver(s)), then try loading the NVIDIA kernel module",
        "NVRM: again.",
        "NVRM: No NVIDIA devices probed.",
        "nvidia-nvlink: Unregistered Nvlink Core, major device number 508",
    ], 0.0021)
    return dmesg_text(lines)


def nouveau_loaded(root: Path) -> None:
    """gpu-2 came back from a reboot with nouveau bound to both A10s (the blacklist was
    gone from its initramfs): the host's nvidia.ko probed nothing and is not loaded,
    nvidia-smi fails, and the operand stack waits at driver validation."""
    t = timeline("2026-11-27T11:30:00Z")
    boot = plus(t.created, -5 * 3600 - 731.4)
    machine = "ProLiant DL380 Gen11"
    rigs = cluster(t, [("gpu-1", A10, 2, machine, "Intel"), ("gpu-2", A10, 2, machine, "Intel")],
                   reboots={"gpu-2": boot})
    broken = rigs[2]
    scene = fleet_scene(rigs, t)
    outcomes = stuck_operands(broken, boot, plus(t.created, -3.2), driver_wait="host")
    install_stack(scene, rigs, t, stuck_stack(t, rigs, broken.name, boot, outcomes,
                                              healthy_stack(t, rigs)))
    after_reboot(scene, broken.host, boot)
    stale = {"nvidia.com/gfd.timestamp": str(int(plus(boot, -187.0).timestamp()))}
    resources = gpu_resources(rigs, gpu_2={"nvidia.com/gpu": (0, 0)})
    add_nodes(scene, rigs, t, resources=resources, labels={broken.name: stale})
    node_rebooted(scene, broken.name, boot)
    files = toolkit_config()

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        if rig.name != broken.name:
            return st
        reboot_journals(st, boot)
        st.dmesg = nouveau_dmesg(rig, boot)
        st.modules = "nouveau 3096576 0 - Live 0xffffffffc1e00000\n"
        st.smi_error = (9, SMI_NO_DRIVER)
        st.cdi_files = {}
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "research-k8s")


# --------------------------------------------------------- secureboot-dkms-refused


def driver_build_refused(start: dt.datetime, kernel: str) -> list[LogLine]:
    """One run of ``nvidia-driver init`` (no precompiled modules): it builds the kernel
    modules for the running kernel, unsigned, and the kernel refuses to load them."""
    short = kernel.removesuffix("-generic")
    before = oplogs.driver_install_until_build(kernel)
    built = [
        "Relinking NVIDIA driver kernel modules...",
        f"Building NVIDIA driver package nvidia-modules-{short}...",
        "Installing NVIDIA driver kernel modules...",
        "Loading ipmi and i2c_core kernel modules...",
        "Loading NVIDIA driver kernel modules...",
    ]
    refused = [
        "+ modprobe nvidia",
        "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service",
    ]
    down = [
        "Stopping NVIDIA persistence daemon...",
        "Unloading NVIDIA driver kernel modules...",
        "Unmounting NVIDIA driver rootfs...",
    ]
    return (oplogs.at_lines(start, before, step=0.83)
            + oplogs.at_lines(plus(start, 171.4), built, step=4.1)
            + oplogs.at_lines(plus(start, MODPROBE_S), refused, step=0.021)
            + oplogs.at_lines(plus(start, MODPROBE_S + 0.6), down, step=0.7))


MODPROBE_S = 171.4 + 5 * 4.1  # when a run reaches modprobe
BUILD_RUN_S = 194.3  # one failing run: unpack, headers, compile, refused modprobe, exit


def crashing_driver(boot: dt.datetime, until: dt.datetime, kernel: str
                    ) -> tuple[Outcome, tuple[Run, ...]]:
    """The driver pod after the node came back: the driver manager passes, the driver
    container builds the module, the load is refused, and kubelet backs off."""
    box = plus(boot, 40.2)
    manager = Run(plus(box, 0.7), plus(box, 2.3))
    runs = crash_runs(plus(manager.end, 1.1), until, BUILD_RUN_S)
    return custom(plus(boot, -86400 * 20), box,
                  {"k8s-driver-manager": Finished(manager),
                   "nvidia-driver-ctr": Looping(runs, plus(until, -17.3))},
                  logs={"k8s-driver-manager": manager_lines(manager.start),
                        "nvidia-driver-ctr": driver_build_refused(runs[-1].start, kernel)},
                  previous={"nvidia-driver-ctr": driver_build_refused(runs[-2].start, kernel)}
                  ), runs


def secureboot_dkms_refused(root: Path) -> None:
    """A firmware update on gpu-2 reset its UEFI settings and turned Secure Boot on. The
    driver container (no precompiled modules) builds an unsigned module at every start;
    under lockdown the kernel refuses it. gpu-1, Secure Boot off, loads the same
    unsigned module (with the kernel's verification warning)."""
    t = timeline("2026-11-25T16:45:00Z")
    boot = plus(t.created, -3 * 3600 - 488.2)
    machine = "ThinkSystem SR650 V3"
    rigs = cluster(t, [("gpu-1", L4, 2, machine, "Intel"), ("gpu-2", L4, 2, machine, "Intel")],
                   reboots={"gpu-2": boot})
    broken = rigs[2]
    scene = fleet_scene(rigs, t)
    image = f"nvcr.io/nvidia/driver:{DRIVER}-ubuntu24.04"
    tpl = driver_ds(DRIVER_DS, image)
    until = plus(t.created, -3.2)
    outcomes = stuck_operands(broken, boot, until, driver_wait="container")
    outcomes[DRIVER_DS], runs = crashing_driver(boot, until, broken.host.kernel)
    values = {"driver": {"version": DRIVER}}
    base = driver_stack(t, rigs, tpl, values, {"version": DRIVER})
    install_stack(scene, rigs, t, stuck_stack(t, rigs, broken.name, boot, outcomes, base,
                                              driver=True))
    after_reboot(scene, broken.host, boot)
    stale = {"nvidia.com/gfd.timestamp": str(int(plus(boot, -212.0).timestamp()))}
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, gpu_2={"nvidia.com/gpu": (0, 0)}),
              labels={broken.name: stale})
    node_rebooted(scene, broken.name, boot)
    files = toolkit_config()
    refused = [(plus(r.start, MODPROBE_S + 0.013),
                "Lockdown: modprobe: unsigned module loading is restricted; see man "
                "kernel_lockdown.7") for r in runs]
    loaded = plus(t.operands_up, 9.7)

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        st.unattended = UNATTENDED_OFF
        if rig.name != broken.name:
            st.dmesg = driver_dmesg(rig, loaded)
            st.modules = unsigned_modules()
            return st
        reboot_journals(st, boot)
        st.secureboot = "SecureBoot enabled\n"
        st.dmesg = dmesg_text(refused)
        st.modules = ""
        st.smi_error = (1, SMI_NOT_FOUND)
        st.cdi_files = {}
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "edge-gpu")


# ------------------------------------------------------------ hgx-no-fabricmanager


def host_driver_ok(start: dt.datetime, slots: list[Slot]) -> list[LogLine]:
    """driver-validation on a host whose driver works (eight GPUs in the table)."""
    lines = [logrus(start, "Attempting to validate a pre-installed driver on the host"),
             logrus(plus(start, 0.002), "running command chroot with args [/host nvidia-smi]")]
    table_at = plus(start, 0.84)
    lines += oplogs.at_lines(table_at, smi_table(slots, table_at))
    done = plus(start, 0.9)
    lines += [logrus(done, "Detected a pre-installed driver on the host"),
              logrus(plus(done, 0.01), "creating symlinks under /dev/char that correspond to "
                     "NVIDIA character devices")]
    return lines


def smi_table(slots: list[Slot], t: dt.datetime) -> list[str]:
    """Default ``nvidia-smi`` output of driver 570 for idle data-center GPUs."""
    def cells(a: str, b: str, c: str) -> str:
        return f"|{a:<41}|{b:<24}|{c:<22}|"

    bar = "+" + "-" * 89 + "+"
    sep = "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+"
    lines = [
        ctime(t) + "       ",
        bar,
        f"| NVIDIA-SMI {DRIVER:<23}Driver Version: {DRIVER:<15}CUDA Version: {CUDA:<9}|",
        sep.replace("+", "|", 1)[:-1] + "+",
        cells(" GPU  Name                 Persistence-M", " Bus-Id          Disp.A",
              " Volatile Uncorr. ECC"),
        cells(" Fan  Temp   Perf          Pwr:Usage/Cap", "           Memory-Usage",
              " GPU-Util  Compute M."),
        cells("", "", "               MIG M."),
        "|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|",
    ]
    for slot in slots:
        gpu = slot.card.gpu
        power = f"{int(gpu.idle_power_w)}W / {int(gpu.power_limit_w):>4}W"
        mig = "Disabled" if slot.card.mig_capable else "N/A"
        lines += [
            f"|{slot.index:>4}  {gpu.product:<31}On  |   {slot.bus_id} Off |{'0':>21} |",
            f"| N/A   {gpu.temp_c}C    P0 {power:>23} |"
            f"{'0MiB':>11} / {str(gpu.memory_mib) + 'MiB':>9} |{'0%':>8}      Default |",
            cells("", "", f"{mig:>21}"),
            sep,
        ]
    lines += [
        " " * 91,
        bar,
        f"| {'Processes:':<88}|",
        f"|{'  GPU   GI   CI              PID   Type   Process name':<78}GPU Memory |",
        f"|{'        ID   ID':<78}Usage      |",
        "|" + "=" * 89 + "|",
        f"|  {'No running processes found':<87}|",
        bar,
    ]
    assert all(len(line) == 91 for line in lines[1:]), [len(x) for x in lines]
    return lines


CUDA_RUN_S = 306.4  # cuda-validation: 60 polls 5 s apart, then it gives up
VECTOR_ADD_FAILS = ["[Vector addition of 50000 elements]",
                    "Failed to allocate device vector A (error code system not yet initialized)!"]


def cuda_validation_gave_up(start: dt.datetime, pod: str) -> list[LogLine]:
    polls = [logrus(plus(start, 0.3 + 5.0 * k), f"pod {pod} is curently in Pending phase")
             for k in range(60)]
    return thin(polls, 3, 2) + [logrus(plus(start, CUDA_RUN_S - 0.1),
                                       f"gave up waiting for pod {pod} to be available",
                                       "fatal")]


def hgx_no_fabricmanager(root: Path) -> None:
    """HGX H100 with a host driver. The driver packages were upgraded and the old
    nvidia-fabricmanager package removed with them; after the reboot nothing sets up
    the NVLink fabric. nvidia-smi works, the toolkit and the plugin come up, but every
    CUDA program fails with 'system not yet initialized' (error 802): the validator's
    cuda stage never passes, and nvidia-smi shows the fabric 'In Progress'."""
    t = timeline("2026-11-30T09:20:00Z")
    boot = plus(t.created, -6 * 3600 - 2473.6)
    rigs = cluster(t, [("hgx-1", H100_SXM5_80GB, 8, "PowerEdge XE9680", "Intel")],
                   reboots={"hgx-1": boot})
    hgx = rigs[1]
    slots = list(hgx.slots)
    scene = fleet_scene(rigs, t)
    until = plus(t.created, -3.2)
    old = plus(boot, -86400 * 20)

    # the toolkit: driver validation passes, it configures containerd and SIGHUPs it
    tk_box = plus(boot, 40.9)
    tk_dv = (plus(tk_box, 0.8), plus(tk_box, 1.9))
    tk_main = plus(tk_box, 2.4)
    tk_log, sighup = oplogs.toolkit_ctr(plus(tk_main, 0.2))
    up = plus(sighup, 5.014)
    outcomes: dict[str, Outcome] = {
        TOOLKIT: Ran(old, tk_box, (tk_dv,), tk_main, ready=plus(tk_main, 1)),
    }
    logs: dict[str, dict[str, list[LogLine]]] = {TOOLKIT: {
        "driver-validation": host_driver_ok(tk_dv[0], slots),
        "nvidia-container-toolkit-ctr": tk_log}}

    # the validator: driver and toolkit pass; cuda-validation gives up every 5 minutes
    v_box = plus(up, 6.1)
    v_drv = Run(plus(v_box, 0.8), plus(v_box, 1.9))
    v_tk = Run(plus(v_box, 2.2), plus(v_box, 3.3))
    runs = crash_runs(plus(v_box, 3.6), until, CUDA_RUN_S)
    cuda_pod = validator_pod_name(hgx)
    outcomes[VALIDATOR] = custom(
        old, v_box,
        {"driver-validation": Finished(v_drv), "toolkit-validation": Finished(v_tk),
         "cuda-validation": Looping(runs, plus(until, -41.7))},
        logs={"driver-validation": host_driver_ok(v_drv.start, slots),
              "toolkit-validation": oplogs.at_lines(v_tk.start,
                                                    smi_table(slots, v_tk.start)),
              "cuda-validation": cuda_validation_gave_up(runs[-1].start, cuda_pod)},
        previous={"cuda-validation": cuda_validation_gave_up(runs[-2].start, cuda_pod)})

    # the operands behind toolkit-ready start normally
    ready = v_tk.end
    starts: dict[str, dt.datetime] = {}
    for k, name in enumerate((PLUGIN, GFD, EXPORTER, MIG_MANAGER)):
        box = plus(up, 6.9 + 0.5 * k)
        wait = (plus(box, 0.7), plus(ready, 3.1 + 0.2 * k))
        main = plus(wait[1], 0.6)
        starts[name] = main
        outcomes[name] = Ran(old, box, (wait,), main, ready=plus(main, 1))
        logs[name] = {"toolkit-validation": wait_for_toolkit(wait[0], wait[1])}
    logs[PLUGIN]["nvidia-device-plugin"] = oplogs.device_plugin(starts[PLUGIN])
    logs[GFD][GFD] = oplogs.gfd(starts[GFD], plus(t.created, -20))
    logs[EXPORTER][EXPORTER] = oplogs.dcgm_exporter(starts[EXPORTER])

    hosts = [r.host for r in rigs]
    statuses = default_statuses() | {"state-operator-validation": "notReady"}
    base = healthy_stack(t, rigs)
    base.operator_log = [line for line in base.operator_log if line.at < boot]
    base.operator_log += oplogs.reconcile(plus(boot, 58.2), hosts, statuses)
    base.operator_log += oplogs.reconcile(plus(t.created, -1822.4), hosts, statuses)
    base.outcomes = {name: {hgx.name: o} for name, o in outcomes.items()}
    base.logs = {name: {hgx.name: lines} for name, lines in logs.items()}
    base.ready, base.not_ready, base.since = False, ["state-operator-validation"], plus(boot, 58.3)
    install_stack(scene, rigs, t, base)

    # the pod cuda-validation created on its last run: vectorAdd fails at once
    created = plus(runs[-1].start, 0.2)
    pod_runs = crash_runs(plus(created, 1.6), until, 1.3)
    add_cuda_validator_pod(scene, hgx, cuda_pod, created, pod_runs, until)
    after_reboot(scene, hgx.host, boot)
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs),
              gfd_at=plus(starts[GFD], 0.05 + oplogs.GFD_PERIOD * int(
                  ((t.created - starts[GFD]).total_seconds() - 20.05) // oplogs.GFD_PERIOD)))
    node_rebooted(scene, hgx.name, boot)
    files = toolkit_config()

    def state(rig: Rig, now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        h = rig.host
        reboot_journals(st, boot)
        new_pid = h.containerd_pid + 38117
        shims = [h.containerd_pid + 611 + 29 * k for k in range(3)]
        journal.containerd_killed_by_sighup(st.containerd_journal, sighup, h.containerd_pid,
                                            new_pid, shims)
        journal.kubelet_runtime_gap(st.kubelet_journal, plus(sighup, 1.6))
        journal.kubelet_plugin_registered(st.kubelet_journal, plus(starts[PLUGIN], 0.09))
        st.containerd_pid, st.containerd_started, st.restarts = new_pid, up, 1
        st.smi_xml = hgx_smi_xml(slots, now, fabric=NO_FABRIC_MANAGER)
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "hgx-train")


def add_cuda_validator_pod(scene: Scene, rig: Rig, name: str, created: dt.datetime,
                           runs: tuple[Run, ...], until: dt.datetime) -> None:
    """The pod the validator's cuda-validation creates (nodeName set, no scheduler):
    its init container runs vectorAdd, which fails, and restarts (OnFailure)."""
    init = container("cuda-validation", gpuop.IMG_OPERATOR, command=["sh", "-c"],
                     args=["vectorAdd"], env={"NVIDIA_VISIBLE_DEVICES": "all"},
                     privileged=True)
    main = container("nvidia-cuda-validator", gpuop.IMG_OPERATOR, command=["sh", "-c"],
                     args=["echo cuda workload validation is successful"], privileged=True)
    spec = pod_spec([main], init_containers=[init], service_account="nvidia-operator-validator",
                    runtime_class="nvidia", restart_policy="OnFailure",
                    tolerations=[dict(gpuop.GPU_TOLERATION)]
                    + [dict(x) for x in DEFAULT_TOLERATIONS])
    metadata = meta("Pod", name, gpuop.NS, created=created,
                    labels={"app": "nvidia-cuda-validator"},
                    annotations={"nvidia.cdi.k8s.io/container.cuda-validation":
                                 "management.nvidia.com/gpu=all"},
                    owners=gpuop.cluster_policy_owner(), generate_name="nvidia-cuda-validator-")
    fails = [LogLine(plus(runs[-1].start, 0.9 + 0.01 * k), text)
             for k, text in enumerate(VECTOR_ADD_FAILS)]
    before = [LogLine(plus(runs[-2].start, 0.9 + 0.01 * k), text)
              for k, text in enumerate(VECTOR_ADD_FAILS)]
    outcome = custom(created, plus(created, 0.4),
                     {"cuda-validation": Looping(runs, plus(until, -8.8))},
                     logs={"cuda-validation": fails}, previous={"cuda-validation": before})
    place_pod(scene, rig.host, metadata=metadata, spec=spec, outcome=outcome,
              via_scheduler=False)


# ----------------------------------------------------------- driver-upgrade-failed

UPGRADE_STATE = "nvidia.com/gpu-driver-upgrade-state"
OS_TAG = "ubuntu24.04"


def precompiled(kernel: str) -> tuple[str, str]:
    """(DaemonSet name, image) of the operator's precompiled driver for ``kernel``."""
    return (f"{DRIVER_DS}-{kernel}-{OS_TAG}", f"nvcr.io/nvidia/driver:570-{kernel}-{OS_TAG}")


def pull_error(image: str) -> str:
    """containerd 1.6's answer for a tag the registry does not have."""
    return (f'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": '
            f'failed to resolve reference "{image}": {image}: not found')


def upgrade_log(when: dt.datetime, node: str, pod: str) -> list[LogLine]:
    """The operator's upgrade controller giving up on a node whose drain failed."""
    err = (f'error when evicting pods/"{pod}" -n "serving": Cannot evict pod as it would '
           "violate the pod's disruption budget.")
    return oplogs.at_lines(when, [
        oplogs.zap_line("info", "Node drain started", logger="upgrade", node=node,
                        timeout="5m0s"),
        oplogs.zap_line("error", "Failed to drain node", logger="upgrade", node=node,
                        error=f"[{err}, global timeout reached: 5m0s]"),
        oplogs.zap_line("info", "Successfully changed node upgrade state label",
                        logger="upgrade", node=node, state="upgrade-failed"),
    ], step=300.2)


def driver_upgrade_failed(root: Path) -> None:
    """Precompiled driver containers on two L40S nodes. The GPU Operator upgrade to
    v26.3.3 rolled the driver pods: gpu-2 went through, but gpu-1's drain could not
    evict a serving pod its PodDisruptionBudget protects, so gpu-1 is left
    upgrade-failed and cordoned. Later unattended-upgrades gave gpu-2 kernel
    6.8.0-90-generic; after its reboot the operator's DaemonSet for that kernel asks
    for a precompiled image nobody published: ImagePullBackOff, and every operand on
    gpu-2 waits for the driver."""
    t = timeline("2026-12-01T08:15:00Z")
    upgrade = plus(t.created, -26 * 3600 - 1207.5)
    boot = plus(t.created, -4 * 3600 - 3077.2)
    machine = "PowerEdge R760xa"
    rigs = cluster(t, [("gpu-1", L40S, 2, machine, "Intel"), ("gpu-2", L40S, 2, machine, "Intel")],
                   reboots={"gpu-2": boot})
    new_kernel = "6.8.0-90-generic"
    moved = rigs[2]
    rigs[2] = Rig(replace(moved.host, kernel=new_kernel,
                          kernel_build="#91-Ubuntu SMP PREEMPT_DYNAMIC Fri Nov 20 09:41:17 UTC "
                                       "2026"), moved.slots)
    failed, moved = rigs[1], rigs[2]
    old_kernel = failed.host.kernel
    scene = fleet_scene(rigs, t)
    scene.namespaces.append(meta_namespace("serving", plus(t.helm_install, 4 * 86400 + 75)))

    until = plus(t.created, -3.2)
    outcomes = stuck_operands(moved, boot, until, driver_wait="container")
    values = {"driver": {"usePrecompiled": True, "version": "570"}}
    statuses = default_statuses() | {"state-driver": "ready"}
    resync = [plus(t.created, -30 * 3600 - 12.4), plus(t.created, -20 * 3600 - 12.8)]
    base = Stack(
        helm=[
            {**gpuop.helm_revision(1, "superseded", t.helm_install, "Install complete", values),
             "chart": "gpu-operator-v26.3.2", "app_version": "v26.3.2"},
            gpuop.helm_revision(2, "deployed", upgrade, "Upgrade complete", values),
        ],
        policy_patch={"driver": {"enabled": True, "usePrecompiled": True, "version": "570"}},
        policy_generation=2,
        operator_log=operator_log(t, rigs, statuses, resync)
        + upgrade_log(plus(upgrade, 1911.6), failed.name, "llm-serving-0"),
    )
    base = stuck_stack(t, rigs, moved.name, boot, outcomes, base, driver=True)
    install_stack(scene, rigs, t, base)

    # the per-kernel driver DaemonSets of precompiled drivers
    owners = gpuop.cluster_policy_owner()
    name88, image88 = precompiled(old_kernel)
    name90, image90 = precompiled(new_kernel)
    add_daemonset(scene, driver_ds(name88, image88, old_kernel), created=t.operands_up,
                  owners=owners, generation=2,
                  pods={failed.name: settled(plus(t.operands_up, 0.07), 1)})
    ds90 = plus(boot, 71.4)
    box = plus(ds90, 0.9)
    manager = Run(plus(box, 0.6), plus(box, 2.1))
    first_pull = plus(manager.end, 0.4)
    span = (until - first_pull).total_seconds()
    pulls = 5 + int(span // 300)
    last_pull = plus(first_pull, 75 + 300.0 * (pulls - 5))
    add_daemonset(scene, driver_ds(name90, image90, new_kernel), created=ds90, owners=owners,
                  pods={moved.name: custom(
                      plus(ds90, 0.05), box,
                      {"k8s-driver-manager": Finished(manager),
                       "nvidia-driver-ctr": PullFailing(first_pull, last_pull, pulls,
                                                        pull_error(image90), int(span // 13))},
                      logs={"k8s-driver-manager": manager_lines(manager.start)})})

    # the serving pod the PodDisruptionBudget protects, still on the cordoned node
    spec = workload_spec(gpu_container("triton", TRITON, {"nvidia.com/gpu": 2},
                                       command=["tritonserver"],
                                       args=["--model-repository=/models"], cpu="16",
                                       memory="96Gi"))
    run_pod(scene, failed, name="llm-serving-0", namespace="serving", spec=spec,
            started=plus(t.helm_install, 9 * 86400 + 3012.9),
            labels={"app": "llm-serving", "statefulset.kubernetes.io/pod-name": "llm-serving-0"},
            owners=owned("StatefulSet", "llm-serving", "serving"))
    after_reboot(scene, moved.host, boot)

    stale = {"nvidia.com/gfd.timestamp": str(int(plus(boot, -96.0).timestamp()))}
    labels = {failed.name: {UPGRADE_STATE: "upgrade-failed"},
              moved.name: {UPGRADE_STATE: "upgrade-done", **stale}}
    cordoned = plus(upgrade, 1311.3)
    taints = {failed.name: [{"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable",
                             "timeAdded": iso(cordoned)}]}
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, gpu_2={"nvidia.com/gpu": (0, 0)}),
              labels=labels, taints=taints)
    node = next(n for n in scene.nodes if n["metadata"]["name"] == failed.name)
    node["spec"]["unschedulable"] = True
    node_rebooted(scene, moved.name, boot)
    files = toolkit_config()
    loaded = plus(t.operands_up, 9.7)

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        if rig.name != moved.name:
            st.dmesg = driver_dmesg(rig, loaded)
            st.modules = unsigned_modules()
            return st
        reboot_journals(st, boot)
        pid = rig.host.containerd_pid
        for when in (first_pull, last_pull):
            ctd = st.containerd_journal
            ctd.daemon(when, pid, journal.containerd_text(when, "info",
                                                         f'PullImage "{image90}"'))
            fail = plus(when, 0.84)
            ctd.daemon(fail, pid, journal.containerd_text(
                fail, "error", f'PullImage "{image90}" failed',
                error=pull_error(image90)))
        st.dmesg = ""
        st.modules = ""
        st.smi_error = (1, SMI_NOT_FOUND)
        st.cdi_files = {}
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "infer-prod")
