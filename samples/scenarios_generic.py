"""Scenarios of issue 27: failures no specific rule names, which only the generic layer —
the Kubernetes record and a component's first error — explains.

``driver-build-compile-error``: gpu-2 moved to a newer hardware-enablement kernel; the
driver container compiles nvidia.ko for it and gcc stops at an incompatible-pointer
error in nvidia-drm (the wording of NVIDIA/gpu-operator#264, on this fleet's driver and
kernel). No signature knows that wording: CMP020 quotes it with its step, OP001's
driver stage hangs under it.

``exporter-oomkilled``: the DCGM exporter of gpu-2 (8 GPUs) is killed at its 512Mi
memory limit every few minutes (NVIDIA/dcgm-exporter#609, #702; pytorch/ci-infra#1011:
the 8-GPU nodes go over where the smaller ones do not). Its log stops without an error;
the kernel's OOM line names the process and its memory (#702's wording).

``plugin-daemonset-refused``: the operator runs with ``devicePlugin.enabled=false`` and
the team installed the device plugin's Helm chart into a namespace that enforces the
``baseline`` Pod Security level: the DaemonSet controller cannot create a pod
(``violates PodSecurity "baseline:latest": hostPath volumes``, the wording of
grafana/agent#3373), so no node advertises nvidia.com/gpu.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import replace
from pathlib import Path

from samples.samplekit import gpuop, oplogs
from samples.samplekit.core import at, k8s_suffix, plus
from samples.samplekit.dcgpu import A10, L4, L40S
from samples.samplekit.fleet import (
    PYTORCH,
    Rig,
    RigState,
    Stack,
    add_nodes,
    base_state,
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
    toolkit_config,
    workload_spec,
)
from samples.samplekit.k8s import daemonset_obj, event_core, meta, namespace_obj
from samples.samplekit.podstates import Finished, Looping, Run, after_reboot, crash_runs, custom
from samples.samplekit.scene import LogLine
from samples.samplekit.smi import DRIVER
from samples.scenarios_causes import IMAGE, looping_driver
from samples.scenarios_node import (
    DRIVER_DS,
    EXPORTER,
    SMI_NOT_FOUND,
    UNATTENDED_OFF,
    cluster,
    dmesg_text,
    driver_dmesg,
    driver_ds,
    driver_stack,
    healthy_stack,
    logrus,
    node_rebooted,
    reboot_journals,
    stuck_operands,
    stuck_stack,
    timeline,
    unsigned_modules,
)
from samples.scenarios_numbers import insufficient, namespaces

# ------------------------------------------------------------ driver-build-compile-error

HWE_KERNEL = "6.17.0-8-generic"
COMPILE_FAIL_S = 74.2  # unpack, package cache, headers, the failed compile, shutdown
DRM_SOURCE = f"/usr/src/nvidia-{DRIVER}/kernel/nvidia-drm/nvidia-drm-gem-user-memory.c"


def compile_fails(start: dt.datetime, kernel: str) -> list[LogLine]:
    """One run of ``nvidia-driver init`` whose module does not compile for ``kernel``:
    gcc's error in nvidia-drm (NVIDIA/gpu-operator#264), then the exit trap's shutdown."""
    before = oplogs.driver_install_until_build(kernel)
    failed = [
        f"{DRM_SOURCE}: In function '__nv_drm_gem_user_memory_prime_get_sg_table':",
        f"{DRM_SOURCE}:63:48: error: passing argument 1 of 'drm_prime_pages_to_sg' from "
        "incompatible pointer type [-Werror=incompatible-pointer-types]",
        "cc1: some warnings being treated as errors",
    ]
    down = [
        "Stopping NVIDIA persistence daemon...",
        "Unloading NVIDIA driver kernel modules...",
        "Unmounting NVIDIA driver rootfs...",
    ]
    return (oplogs.at_lines(start, before, step=0.83)
            + oplogs.at_lines(plus(start, 71.6), failed, step=0.004)
            + oplogs.at_lines(plus(start, 73.1), down, step=0.7))


def driver_build_compile_error(root: Path) -> None:
    """See the module docstring."""
    t = timeline("2026-12-01T10:40:00Z")
    boot = plus(t.created, -3 * 3600 - 517.9)
    machine = "ThinkSystem SR650 V3"
    rigs = cluster(t, [("gpu-1", L4, 2, machine, "Intel"), ("gpu-2", L4, 2, machine, "Intel")],
                   reboots={"gpu-2": boot})
    rigs[2] = replace(rigs[2], host=replace(rigs[2].host, kernel=HWE_KERNEL))
    broken = rigs[2]
    scene = fleet_scene(rigs, t)
    until = plus(t.created, -2.7)
    outcomes = stuck_operands(broken, boot, until, driver_wait="container")
    outcomes[DRIVER_DS] = looping_driver(
        boot, until, COMPILE_FAIL_S, lambda start: compile_fails(start, HWE_KERNEL))
    base = driver_stack(t, rigs, driver_ds(DRIVER_DS, IMAGE), {"driver": {"version": DRIVER}},
                        {"version": DRIVER})
    install_stack(scene, rigs, t, stuck_stack(t, rigs, broken.name, boot, outcomes, base,
                                              driver=True))
    after_reboot(scene, broken.host, boot)
    stale = {"nvidia.com/gfd.timestamp": str(int(plus(boot, -241.0).timestamp()))}
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, gpu_2={"nvidia.com/gpu": (0, 0)}),
              labels={broken.name: stale})
    node_rebooted(scene, broken.name, boot)
    files = toolkit_config()
    loaded = plus(t.operands_up, 9.7)

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        st.unattended = UNATTENDED_OFF
        if rig.name != broken.name:
            st.dmesg = driver_dmesg(rig, loaded)
            st.modules = unsigned_modules()
            return st
        reboot_journals(st, boot)
        st.dmesg = dmesg_text([])
        st.modules = ""
        st.smi_error = (1, SMI_NOT_FOUND)
        st.cdi_files = {}
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "inference-edge")


# -------------------------------------------------------------------- exporter-oomkilled

EXPORTER_LIMIT = {"limits": {"memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}}
OOM_RUN_S = 612.4  # from the exporter's start to the kill, on the 8-GPU node
OOM_PID = 3833171


def exporter_until_killed(start: dt.datetime) -> list[LogLine]:
    """One run of dcgm-exporter 4.x on eight GPUs: it starts and serves, its memory grows
    with every scrape, and the kernel kills it at the limit — its log ends without an error
    (the lines of NVIDIA/dcgm-exporter#409 and #412)."""
    return [
        logrus(start, "Starting dcgm-exporter"),
        logrus(plus(start, 0.5), "DCGM successfully initialized!"),
        logrus(plus(start, 0.6), "Collecting DCP Metrics"),
        logrus(plus(start, 0.6), "Falling back to metric file "
                                 "'/etc/dcgm-exporter/dcp-metrics-included.csv'"),
        logrus(plus(start, 0.7), "Initializing system entities of type: GPU"),
        logrus(plus(start, 2.1), "Initializing system entities of type: NvSwitch"),
        logrus(plus(start, 2.3), "Initializing system entities of type: NvLink"),
        logrus(plus(start, 2.9), "Kubernetes metrics collection enabled!"),
        logrus(plus(start, 2.9), "Pipeline starting"),
        logrus(plus(start, 3.0), "Starting webserver"),
    ]


def oom_kill_line(pid: int) -> str:
    """The kernel's record of the kill (NVIDIA/dcgm-exporter#702's wording)."""
    return (f"Memory cgroup out of memory: Killed process {pid} (dcgm-exporter) "
            "total-vm:4478432kB, anon-rss:517656kB, file-rss:47148kB, shmem-rss:0kB, UID:0 "
            "pgtables:1636kB oom_score_adj:-997")


def exporter_oomkilled(root: Path) -> None:
    """See the module docstring."""
    t = timeline("2026-12-01T16:05:00Z")
    machine = "ThinkSystem SR675 V3"
    rigs = cluster(t, [("gpu-1", L40S, 8, machine, "AMD"), ("gpu-2", L40S, 8, machine, "AMD")])
    broken: Rig = rigs[2]
    scene = fleet_scene(rigs, t)
    until = plus(t.created, -6.3)
    box = plus(t.created, -2 * 3600 - 944.1)
    check = Run(plus(box, 0.8), plus(box, 1.5))
    runs = tuple(replace(run, exit_code=137, reason="OOMKilled")
                 for run in crash_runs(plus(check.end, 1.1), until, OOM_RUN_S))
    exporter = custom(plus(box, -0.3), box,
                      {"toolkit-validation": Finished(check),
                       EXPORTER: Looping(runs, plus(until, -21.4))},
                      logs={EXPORTER: exporter_until_killed(runs[-1].start)},
                      previous={EXPORTER: exporter_until_killed(runs[-2].start)})
    template = copy.deepcopy(gpuop.operand_templates()[EXPORTER])
    for c in template.spec["containers"]:
        if c["name"] == EXPORTER:
            c["resources"] = copy.deepcopy(EXPORTER_LIMIT)
    stack = healthy_stack(t, rigs)
    statuses = default_statuses() | {"state-dcgm-exporter": "notReady"}
    hosts = [r.host for r in rigs]
    stack.operator_log = [line for line in stack.operator_log if line.at < box]
    stack.operator_log += oplogs.reconcile(plus(box, 58.7), hosts, statuses)
    stack.operator_log += oplogs.reconcile(plus(t.created, -201.3), hosts, statuses)
    stack.outcomes = {EXPORTER: {broken.name: exporter}}
    stack.templates = {EXPORTER: template}
    stack.policy_patch = {"dcgmExporter": {"resources": copy.deepcopy(EXPORTER_LIMIT)}}
    stack.ready = False
    stack.not_ready = ["state-dcgm-exporter"]
    stack.since = plus(box, 58.8)
    install_stack(scene, rigs, t, stack)
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs))
    files = toolkit_config()
    kills = [(run.end, oom_kill_line(OOM_PID + 7919 * i)) for i, run in enumerate(runs[-3:])]

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        if rig.name == broken.name:
            st.dmesg_extra = kills
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "train-hopper")


# --------------------------------------------------------------- plugin-daemonset-refused

PLUGIN_NS = "nvidia-device-plugin"
PLUGIN_DS = "nvdp-nvidia-device-plugin"
PLUGIN_LABELS = {"app.kubernetes.io/instance": "nvdp",
                 "app.kubernetes.io/name": "nvidia-device-plugin"}


def refused_message(pod: str) -> str:
    """The DaemonSet controller's FailedCreate under Pod Security ``baseline`` (the
    wording of grafana/agent#3373 and redhat-best-practices-for-k8s/certsuite#547)."""
    return (f'Error creating: pods "{pod}" is forbidden: violates PodSecurity '
            '"baseline:latest": hostPath volumes (volumes "device-plugin")')


def plugin_daemonset_refused(root: Path) -> None:
    """See the module docstring."""
    t = timeline("2026-12-01T12:20:00Z")
    machine = "ProLiant DL380 Gen11"
    rigs = cluster(t, [("gpu-1", A10, 4, machine, "Intel"), ("gpu-2", A10, 4, machine, "Intel")])
    scene = fleet_scene(rigs, t)
    namespaces(scene, t, "research")
    installed = plus(t.created, -5 * 3600 - 1216.4)
    scene.namespaces.append(namespace_obj(PLUGIN_NS, plus(installed, -3.1), labels={
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": "latest"}))
    validator = gpuop.operand_templates()["nvidia-operator-validator"]
    validator.spec["initContainers"] = [c for c in validator.spec["initContainers"]
                                        if c["name"] != "plugin-validation"]
    values = install_values(devicePlugin={"enabled": False})
    statuses = default_statuses()
    statuses.pop("state-device-plugin")
    statuses.pop("state-mps-control-daemon")
    resync = [plus(t.created, -16 * 3600 - 12.7), plus(t.created, -6 * 3600 - 13.0)]
    stack = Stack(
        policy_patch={"devicePlugin": {"enabled": False}},
        helm=[gpuop.helm_revision(1, "deployed", t.helm_install, "Install complete", values)],
        skip=frozenset({"nvidia-device-plugin-daemonset",
                        "nvidia-device-plugin-mps-control-daemon"}),
        templates={"nvidia-operator-validator": validator},
        operator_log=operator_log(t, rigs, statuses, resync),
    )
    install_stack(scene, rigs, t, stack)
    plugin = gpuop.operand_templates()["nvidia-device-plugin-daemonset"]
    spec = copy.deepcopy(plugin.spec)
    spec.pop("runtimeClassName", None)
    spec.pop("initContainers", None)
    spec["serviceAccountName"] = PLUGIN_DS
    ds_meta = meta("DaemonSet", PLUGIN_DS, PLUGIN_NS, created=installed,
                   labels={**PLUGIN_LABELS, "app.kubernetes.io/managed-by": "Helm",
                           "app.kubernetes.io/version": "0.19.3",
                           "helm.sh/chart": "nvidia-device-plugin-0.19.3"},
                   annotations={"deprecated.daemonset.template.generation": "1",
                                "meta.helm.sh/release-name": "nvdp",
                                "meta.helm.sh/release-namespace": PLUGIN_NS},
                   generation=1)
    gpu_hosts = [r.name for r in rigs if r.slots]
    ds = daemonset_obj(ds_meta, selector=PLUGIN_LABELS, template_labels=PLUGIN_LABELS,
                       spec=spec, desired=len(gpu_hosts), ready=0)
    ds["status"]["currentNumberScheduled"] = 0
    ds["status"].pop("updatedNumberScheduled", None)
    scene.daemonsets.append(ds)
    for i in range(3):
        pod = f"{PLUGIN_DS}-{k8s_suffix(5, 'refused', PLUGIN_DS, i)}"
        first = plus(installed, 0.4 + 0.02 * i)
        last = plus(t.created, -91.5 + 0.03 * i) if i == 2 else None
        scene.events.append(event_core(ds, "FailedCreate", refused_message(pod),
                                       component="daemonset-controller", first=first,
                                       last=last, count=19 if i == 2 else 1, warning=True))
    pending_pod(scene, name="vit-finetune-0", namespace="research",
                spec=workload_spec(gpu_container("train", PYTORCH, {"nvidia.com/gpu": 1},
                                                 command=["python"],
                                                 args=["finetune.py", "--model=vit-l"],
                                                 cpu="8", memory="48Gi")),
                created=at("2026-12-01T07:31:52Z"), message=insufficient(),
                last=plus(t.created, -118.4), attempts=12,
                labels={"app": "vit-finetune",
                        "statefulset.kubernetes.io/pod-name": "vit-finetune-0"},
                owners=owned("StatefulSet", "vit-finetune", "research"))
    add_nodes(scene, rigs, t, resources={r.name: {} for r in rigs if r.slots})
    files = toolkit_config()

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        st.cdi = False  # no device plugin ran, so no k8s.device-plugin.nvidia.com spec
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "research-k8s")
