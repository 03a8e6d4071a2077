"""Scenarios of issue 15: each rule of catalog 2 the root of its own sample, with the
symptoms it explains hanging under it in the report.

Every failure follows a real public thread (the URL is in each scenario's docstring
and in README.md); names, versions and times are the fleet's own.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from samples.samplekit import gpuop, oplogs
from samples.samplekit.core import k8s_suffix, plus
from samples.samplekit.dcgpu import A10, A100_PCIE_40GB, L4, L40S, Card, Slot
from samples.samplekit.fleet import (
    PYTORCH,
    Rig,
    RigState,
    Timeline,
    add_nodes,
    base_state,
    default_statuses,
    emit,
    fleet_scene,
    gpu_container,
    gpu_resources,
    install_stack,
    node_writers,
    owned,
    run_pod,
    toolkit_config,
    workload_spec,
)
from samples.samplekit.k8s import container
from samples.samplekit.pci import lspci
from samples.samplekit.podstates import (
    Finished,
    Looping,
    Run,
    Running,
    after_reboot,
    crash_runs,
    custom,
)
from samples.samplekit.scene import LogLine, Scene
from samples.samplekit.smi import DRIVER
from samples.samplekit.workloads import Custom
from samples.scenarios_node import (
    DRIVER_DS,
    MIG_MANAGER,
    SMI_NO_DRIVER,
    SMI_NOT_FOUND,
    UNATTENDED_OFF,
    cluster,
    dmesg_text,
    driver_dmesg,
    driver_ds,
    driver_stack,
    every,
    healthy_stack,
    iso_kernel,
    kernel_lines,
    logrus,
    node_rebooted,
    reboot_journals,
    stuck_operands,
    stuck_stack,
    timeline,
    unsigned_modules,
)
from samples.scenarios_numbers import namespaces
from samples.scenarios_runtime import driver_run, manager_lines, training_load

IMAGE = f"nvcr.io/nvidia/driver:{DRIVER}-ubuntu24.04"
RUN_S = 5.3  # one run of a driver container that stops at its first error


def looping_driver(boot: dt.datetime, until: dt.datetime, run_s: float,
                   lines: Callable[[dt.datetime], list[LogLine]]) -> Custom:
    """The driver pod after ``boot``: the manager passes, the driver container fails
    every run (``lines(start)`` is one run's log) and kubelet backs off."""
    box = plus(boot, 40.2)
    manager = Run(plus(box, 0.7), plus(box, 2.3))
    runs = crash_runs(plus(manager.end, 1.1), until, run_s)
    return custom(plus(boot, -86400 * 20), box,
                  {"k8s-driver-manager": Finished(manager),
                   "nvidia-driver-ctr": Looping(runs, plus(until, -17.3))},
                  logs={"k8s-driver-manager": manager_lines(manager.start),
                        "nvidia-driver-ctr": lines(runs[-1].start)},
                  previous={"nvidia-driver-ctr": lines(runs[-2].start)})


# ----------------------------------------------------------- host-driver-under-container

HOST_DRIVER = "535.230.02"
HOST_VERSION_FILE = (
    f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {HOST_DRIVER}  Thu Oct 16 22:11:07 UTC "
    "2025\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n")


def host_driver_under_container(root: Path) -> None:
    """OP012. gpu-2 was re-imaged from the team's workstation image, which installs
    the distribution's nvidia-driver-535-server: the host loads its own driver at boot.
    The cluster's ClusterPolicy runs the driver container, which cannot unload the
    loaded module (``Could not unload NVIDIA driver kernel modules, driver is in use``)
    and restarts for ever: the situation of NVIDIA/gpu-operator#367 (a host driver
    already loaded under the operator's driver container) and canonical/microk8s#2634.
    OP012 is the root; OP001's driver stage on gpu-2 hangs under it."""
    t = timeline("2026-12-01T08:20:00Z")
    boot = plus(t.created, -2 * 3600 - 377.9)
    machine = "PowerEdge R750xa"
    rigs = cluster(t, [("gpu-1", A10, 2, machine, "Intel"), ("gpu-2", A10, 2, machine, "Intel")],
                   reboots={"gpu-2": boot})
    broken = rigs[2]
    scene = fleet_scene(rigs, t)
    until = plus(t.created, -3.2)
    outcome = looping_driver(boot, until, RUN_S,
                             lambda start: driver_run(start, broken.host.kernel))
    base = driver_stack(t, rigs, driver_ds(DRIVER_DS, IMAGE), {"driver": {"version": DRIVER}},
                        {"version": DRIVER})
    hosts = [r.host for r in rigs]
    statuses = default_statuses() | {"state-driver": "notReady"}
    base.operator_log = [line for line in base.operator_log if line.at < boot]
    base.operator_log += oplogs.reconcile(plus(boot, 63.8), hosts, statuses)
    base.operator_log += oplogs.reconcile(plus(t.created, -241.5), hosts, statuses)
    base.outcomes = {DRIVER_DS: {broken.name: outcome}}
    base.ready = False
    base.not_ready = ["state-driver"]
    base.since = plus(boot, 63.9)
    install_stack(scene, rigs, t, base)
    after_reboot(scene, broken.host, boot)
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs))
    node_rebooted(scene, broken.name, boot)
    files = toolkit_config()
    loaded = plus(t.operands_up, 9.7)

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        st.unattended = UNATTENDED_OFF
        if rig.name != broken.name:
            st.dmesg = driver_dmesg(rig, loaded)
            st.modules = unsigned_modules()
            st.host_files = {"lspci.txt": lspci(list(rig.slots), "nvidia")}
            return st
        reboot_journals(st, boot)
        st.host_files = {"lspci.txt": lspci(list(rig.slots), "nvidia"),
                         "nvidia-driver-version.txt": HOST_VERSION_FILE}
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "vision-k8s")



# ------------------------------------------------------------- driver-build-no-headers

NEW_KERNEL = "6.8.0-90-generic"
BUILD_FAIL_S = 61.7  # unpack, package cache, the failed make, shutdown


def build_tree_missing(start: dt.datetime, kernel: str) -> list[LogLine]:
    """One run of ``nvidia-driver init`` whose mirror has no headers for ``kernel``: the
    module build stops at make's missing build tree (the wording of
    NVIDIA/gpu-operator#583, on this node's kernel)."""
    before = oplogs.driver_install_until_build(kernel)
    failed = [
        f"make[1]: *** /lib/modules/{kernel}/build: No such file or directory.  Stop.",
        "make: *** [Makefile:82: modules] Error 2",
    ]
    down = [
        "Stopping NVIDIA persistence daemon...",
        "Unloading NVIDIA driver kernel modules...",
        "Unmounting NVIDIA driver rootfs...",
    ]
    return (oplogs.at_lines(start, before, step=0.83)
            + oplogs.at_lines(plus(start, 58.4), failed, step=0.012)
            + oplogs.at_lines(plus(start, 59.3), down, step=0.7))


def driver_build_no_headers(root: Path) -> None:
    """OP015. A maintenance window upgraded gpu-2 to kernel 6.8.0-90-generic and rebooted it;
    the driver container (no precompiled modules) compiles nvidia.ko for the running
    kernel, but the site's package mirror has no headers for it yet, so make stops at
    ``/lib/modules/<kernel>/build: No such file or directory`` on every run
    (NVIDIA/gpu-operator#583; the same cause with dnf's wording in
    NVIDIA/gpu-operator#190). OP015 is the root; OP001's driver stage and, behind it,
    the operands waiting on gpu-2 hang under it."""
    t = timeline("2026-11-30T14:10:00Z")
    boot = plus(t.created, -4 * 3600 - 902.6)
    machine = "ThinkSystem SR650 V3"
    rigs = cluster(t, [("gpu-1", L4, 2, machine, "Intel"), ("gpu-2", L4, 2, machine, "Intel")],
                   reboots={"gpu-2": boot})
    rigs[2] = replace(rigs[2], host=replace(rigs[2].host, kernel=NEW_KERNEL))
    broken = rigs[2]
    scene = fleet_scene(rigs, t)
    until = plus(t.created, -3.2)
    outcomes = stuck_operands(broken, boot, until, driver_wait="container")
    outcomes[DRIVER_DS] = looping_driver(
        boot, until, BUILD_FAIL_S, lambda start: build_tree_missing(start, NEW_KERNEL))
    base = driver_stack(t, rigs, driver_ds(DRIVER_DS, IMAGE), {"driver": {"version": DRIVER}},
                        {"version": DRIVER})
    install_stack(scene, rigs, t, stuck_stack(t, rigs, broken.name, boot, outcomes, base,
                                              driver=True))
    after_reboot(scene, broken.host, boot)
    stale = {"nvidia.com/gfd.timestamp": str(int(plus(boot, -198.0).timestamp()))}
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


# -------------------------------------------------------------------- vfio-bound-gpus


def probe_not_called(when: dt.datetime, pcis: list[str], holder: str
                     ) -> list[tuple[dt.datetime, str]]:
    """nvidia.ko loading after another driver took the GPUs: it probes nothing and is
    unloaded again (the driver's own NVRM wording, as in nouveau-loaded)."""
    return kernel_lines(when, [
        "nvidia: loading out-of-tree module taints kernel.",
        "nvidia-nvlink: Nvlink Core is being initialized, major device number 508",
        *[f"NVRM: GPU {pci} is already bound to {holder}." for pci in pcis],
        f"NVRM: The NVIDIA probe routine was not called for {len(pcis)} device(s).",
        "NVRM: This can occur when another driver was loaded and",
        "NVRM: obtained ownership of the NVIDIA device(s).",
        "NVRM: Try unloading the conflicting kernel module (and/or",
        "NVRM: reconfigure your kernel without the conflicting",
        "NVRM: driver(s)), then try loading the NVIDIA kernel module",
        "NVRM: again.",
        "NVRM: No NVIDIA devices probed.",
        "nvidia-nvlink: Unregistered Nvlink Core, major device number 508",
    ], 0.0021)


VFIO_MODULES = (
    "vfio_pci 16384 0 - Live 0xffffffffc0b9c000\n"
    "vfio_pci_core 94208 1 vfio_pci, Live 0xffffffffc0b81000\n"
)


def _driver_never_loads(start: str, boot_s: float, gpu: Card, machine: str, stale_s: float,
                        ) -> tuple[Timeline, dt.datetime, Scene, list[Rig], Rig,
                                   Callable[[Rig], RigState]]:
    """Two nodes of ``gpu``; gpu-2 rebooted ``boot_s`` before the bundle and its host
    driver never loaded since, so its operands wait at driver validation, it advertises
    no GPU and GFD's last run predates the reboot by ``stale_s``. Gives the scene and a
    node state with what both nodes share (gpu-2's reboot journals included)."""
    t = timeline(start)
    boot = plus(t.created, boot_s)
    rigs = cluster(t, [("gpu-1", gpu, 2, machine, "Intel"), ("gpu-2", gpu, 2, machine, "Intel")],
                   reboots={"gpu-2": boot})
    broken = rigs[2]
    scene = fleet_scene(rigs, t)
    outcomes = stuck_operands(broken, boot, plus(t.created, -3.2), driver_wait="host")
    install_stack(scene, rigs, t, stuck_stack(t, rigs, broken.name, boot, outcomes,
                                              healthy_stack(t, rigs)))
    after_reboot(scene, broken.host, boot)
    stale = {"nvidia.com/gfd.timestamp": str(int(plus(boot, stale_s).timestamp()))}
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, gpu_2={"nvidia.com/gpu": (0, 0)}),
              labels={broken.name: stale})
    node_rebooted(scene, broken.name, boot)
    files = toolkit_config()

    def base(rig: Rig) -> RigState:
        st = base_state(scene, rig, files)
        if rig.name != broken.name:
            st.host_files = {"lspci.txt": lspci(list(rig.slots), "nvidia")}
        else:
            reboot_journals(st, boot)
        return st

    return t, boot, scene, rigs, broken, base


def vfio_bound_gpus(root: Path) -> None:
    """DRV010. gpu-2 had been lent to a virtual-machine test: its
    ``/etc/modprobe.d/vfio.conf`` (``options vfio-pci ids=10de:2236``) was left behind,
    so after the next reboot vfio-pci claims both A10s before nvidia.ko loads
    (``Kernel driver in use: vfio-pci`` as in NVIDIA/gpu-operator#1328 and
    cloud-hypervisor/cloud-hypervisor#4353). The host driver probes nothing, nvidia-smi
    fails, and the operand stack waits at driver validation. DRV010 is the root; DRV003,
    OP001's driver stage and nvidia-smi's failure hang under it."""
    t, boot, scene, rigs, broken, base = _driver_never_loads(
        "2026-11-29T16:05:00Z", -6 * 3600 - 144.8, A10, "ProLiant DL380 Gen11", -161.0)

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base(rig)
        if rig.name != broken.name:
            return st
        pcis = [slot.pci for slot in rig.slots]
        lines = [(plus(boot, 3.101), "vfio_pci: add [10de:2236[ffffffff:ffffffff]] class "
                                     "0x000000/00000000")]
        lines += probe_not_called(plus(boot, 11.604), pcis, "vfio-pci")
        st.dmesg = dmesg_text(lines)
        st.modules = VFIO_MODULES
        st.smi_error = (9, SMI_NO_DRIVER)
        st.cdi_files = {}
        st.host_files = {"lspci.txt": lspci(list(rig.slots), "vfio-pci")}
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "research-k8s")


# ------------------------------------------------------------- driver-too-old-for-gpu

OLD_BRANCH = "470.256.02"


def refused_by_branch(when: dt.datetime, slots: list[Slot]) -> list[tuple[dt.datetime, str]]:
    """The 470 driver's probe refusal for a GPU its branch does not list (the wording of
    the thread quoted in tests/rules/test_drv008.py), then the module gives up."""
    lines: list[tuple[dt.datetime, str]] = [
        (when, "nvidia: loading out-of-tree module taints kernel."),
        (plus(when, 0.0021), "nvidia-nvlink: Nvlink Core is being initialized, major device "
                             "number 508"),
    ]
    pad = " " * len(iso_kernel(when))  # dmesg indents the lines of one record
    for i, slot in enumerate(slots):
        device = slot.card.gpu.pci_device_id.lower()
        at_ = plus(when, 0.011 + 0.0003 * i)
        record = "\n".join([
            f"NVRM: The NVIDIA GPU {slot.pci} (PCI ID: 10de:{device})",
            f"{pad} NVRM: installed in this system is not supported by the",
            f"{pad} NVRM: NVIDIA {OLD_BRANCH} driver release.",
            f"{pad} NVRM: Please see 'Appendix A - Supported NVIDIA GPU Products'",
            f"{pad} NVRM: in this release's README, available on the operating system",
            f"{pad} NVRM: specific graphics driver download page at www.nvidia.com.",
        ])
        lines += [(at_, record), (plus(at_, 0.0001), f"nvidia: probe of {slot.pci} failed "
                                                    "with error -1")]
    lines += kernel_lines(plus(when, 0.02), [
        f"NVRM: The NVIDIA probe routine failed for {len(slots)} device(s).",
        "NVRM: None of the NVIDIA devices were initialized.",
        "nvidia-nvlink: Unregistered Nvlink Core, major device number 508",
    ], 0.0001)
    return lines


def driver_too_old_for_gpu(root: Path) -> None:
    """DRV008. gpu-2, a new L40S server, was installed from the cluster's old node image,
    which carries the 470 driver branch: that branch predates Ada and refuses the GPUs
    (``... is not supported by the NVIDIA 470.256.02 driver release``, the wording of
    negativo17/nvidia-driver#158 and ZaidQureshi/bam#38 on other GPUs). The module
    probes nothing, nvidia-smi fails and the operand stack waits at driver validation.
    DRV008 is the root; DRV003, OP001's driver stage and nvidia-smi's failure hang
    under it."""
    t, boot, scene, rigs, broken, base = _driver_never_loads(
        "2026-11-28T10:40:00Z", -3 * 3600 - 1208.3, L40S, "PowerEdge R760xa", -233.0)

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base(rig)
        if rig.name != broken.name:
            return st
        st.dmesg = dmesg_text(refused_by_branch(plus(boot, 9.882), list(rig.slots)))
        st.modules = ""
        st.smi_error = (9, SMI_NO_DRIVER)
        st.cdi_files = {}
        st.host_files = {"lspci.txt": lspci(list(rig.slots), None)}
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "vision-k8s")



# ---------------------------------------------------------------- mig-reconfigure-busy

MIG_PROFILE_CONFIG = "all-1g.5gb"


def mig_manager_refused(start: dt.datetime, node: str) -> list[LogLine]:
    """k8s-mig-manager asked for ``all-1g.5gb``: it stops the GPU operands, then
    mig-parted cannot reset the GPUs because a workload still holds them (the escaped
    message of ComputeCanada/puppet-magic_castle#387, the per-GPU lines of
    NVIDIA/mig-parted#181)."""
    steps = [
        f"Updating to MIG config: {MIG_PROFILE_CONFIG}",
        "Asserting that the requested configuration is present in the configuration file",
        "Selected MIG configuration is valid",
        "Getting current value of the 'nvidia.com/mig.config.state' node label",
        "Current value of 'nvidia.com/mig.config.state=success'",
        "Checking if the selected MIG config is currently applied or not",
        "Checking if the MIG mode setting in the selected config is currently applied or not",
        "If the state is 'rebooting', we expect this to always return true",
        "Changing the 'nvidia.com/mig.config.state' node label to 'pending'",
        "Shutting down all GPU clients in Kubernetes by disabling their component-specific "
        "nodeSelector labels",
        "Waiting for the device-plugin to shutdown",
        "Waiting for gpu-feature-discovery to shutdown",
        "Waiting for dcgm-exporter to shutdown",
        "Applying the MIG mode change from the selected config to the node (and double "
        "checking it took effect)",
        "If the -r option was passed, the node will be automatically rebooted if this is not "
        "successful",
    ]
    lines = [logrus(plus(start, 0.4 * i), text) for i, text in enumerate(steps)]
    t = plus(start, 0.4 * len(steps) + 2.9)
    lines.append(logrus(t, "\\nThe following GPUs could not be reset:\\n  GPU 00000000:17:00.0: "
                           "In use by another client\\n  GPU 00000000:31:00.0: In use by another "
                           "client\\n\\n2 devices are currently being used by one or more other "
                           "processes", level="error"))
    lines.append(logrus(plus(t, 0.1), "Error applying MIG configuration with hooks: error "
                                      "resetting all GPUs: exit status 255", level="error"))
    lines += [logrus(plus(t, 0.2 + 0.3 * i), text) for i, text in enumerate([
        "Restarting all GPU clients previously shutdown in Kubernetes by reenabling their "
        "component-specific nodeSelector labels",
        "Changing the 'nvidia.com/mig.config.state' node label to 'failed'",
        f"Waiting for change to 'nvidia.com/mig.config' label on {node}",
    ])]
    return lines


def mig_reconfigure_busy(root: Path) -> None:
    """OP014. An admin relabelled gpu-2 ``nvidia.com/mig.config=all-1g.5gb`` to split its
    A100s for notebooks while a two-GPU fine-tuning pod still ran there. The MIG manager
    stops the GPU operands but cannot stop the workload; the reset the MIG mode change
    needs is refused (``The following GPUs could not be reset: ... In use by another
    client``, ComputeCanada/puppet-magic_castle#387 and NVIDIA/mig-parted#181) and the
    node's ``nvidia.com/mig.config.state`` turns ``failed``. OP014 is the root, naming
    the pod; OP009's failed MIG state hangs under it."""
    t = timeline("2026-11-30T17:25:00Z")
    machine = "PowerEdge R750xa"
    rigs = cluster(t, [("gpu-1", A100_PCIE_40GB, 2, machine, "Intel"),
                       ("gpu-2", A100_PCIE_40GB, 2, machine, "Intel")])
    busy = rigs[2]
    relabelled = plus(t.created, -37 * 60 - 12.4)
    rigs[2] = replace(busy, slots=tuple(
        replace(s, load=training_load(busy.name, s.index, 31_000)) for s in busy.slots))
    busy = rigs[2]
    scene = fleet_scene(rigs, t)
    namespaces(scene, t, "ml")
    stack = healthy_stack(t, rigs, logs={MIG_MANAGER: {busy.name: {
        "nvidia-mig-manager": mig_manager_refused(plus(relabelled, 1.8), busy.name)}}})
    install_stack(scene, rigs, t, stack)
    job = "finetune-llama-8b"
    run_pod(scene, busy, name=f"{job}-0", namespace="ml",
            spec=workload_spec(gpu_container("trainer", PYTORCH, {"nvidia.com/gpu": 2},
                                             command=["torchrun"],
                                             args=["--nproc-per-node=2", "train.py"])),
            started=plus(t.created, -2 * 86400 - 5120.6),
            labels={"app": job, "statefulset.kubernetes.io/pod-name": f"{job}-0"},
            owners=owned("StatefulSet", job, "ml"))
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs),
              labels={busy.name: {"nvidia.com/mig.config": MIG_PROFILE_CONFIG,
                                  "nvidia.com/mig.config.state": "failed"}})
    files = toolkit_config()

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        return base_state(scene, rig, files)

    node_writers(scene, rigs, state)
    emit(scene, root, "a100-lab")


# ------------------------------------------------------------------- smi-no-devices

SMI_NO_DEVICES = "No devices were found"


def validator_no_devices(start: dt.datetime, until: dt.datetime) -> list[LogLine]:
    """driver-validation on a host whose nvidia-smi runs but finds no GPU: it retries
    every 5 s for ever (first rounds and the last kept)."""
    rounds = []
    for t in every(start, until, 5.0 + 0.31):
        rounds.append([
            logrus(t, "Attempting to validate a pre-installed driver on the host"),
            logrus(plus(t, 0.001), "Detected a pre-installed driver on the host"),
            logrus(plus(t, 0.002), "running command chroot with args [/host nvidia-smi]"),
            LogLine(plus(t, 0.3), SMI_NO_DEVICES),
            logrus(plus(t, 0.31), "failed to validate the driver, retrying after 5 seconds",
                   "warning"),
        ])
    keep = rounds if len(rounds) <= 3 else rounds[:2] + rounds[-1:]
    return [line for r in keep for line in r]


def smi_no_devices(root: Path) -> None:
    """DRV009. gpu-2 is a VM with two passthrough A100s; a maintenance on its hypervisor
    reset the passed-through devices under the running VM. The VM's driver stays loaded
    but nvidia-smi answers ``No devices were found`` (exit code 6), as in
    NVIDIA/gpu-operator#641 (a V100) and #653 (an A100), both VMs. The node has been up
    for weeks and its kernel ring buffer no longer holds the driver's lines, so no other
    rule can say why. The validator loops on the host's nvidia-smi and every operand
    waits. DRV009 is the root, saying it found no cause; OP001's driver stage and the
    collector's failed nvidia-smi item hang under it."""
    t = timeline("2026-11-30T11:55:00Z")
    machine = "VMware Virtual Platform"
    rigs = cluster(t, [("gpu-1", A100_PCIE_40GB, 2, machine, "Intel"),
                       ("gpu-2", A100_PCIE_40GB, 2, machine, "Intel")])
    broken = rigs[2]
    reset = plus(t.created, -9 * 3600 - 2417.3)
    scene = fleet_scene(rigs, t)
    until = plus(t.created, -3.2)
    outcomes = stuck_operands(broken, reset, until, driver_wait="host", mig=True)
    for name in ("nvidia-container-toolkit-daemonset", "nvidia-operator-validator"):
        start = plus(reset, 42.1 if name.endswith("validator") else 41.4)
        outcomes[name] = custom(plus(reset, -86400 * 20), plus(start, -0.8),
                                {"driver-validation": Running(start)},
                                logs={"driver-validation": validator_no_devices(start, until)})
    install_stack(scene, rigs, t, stuck_stack(t, rigs, broken.name, reset, outcomes,
                                              healthy_stack(t, rigs)))
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, gpu_2={"nvidia.com/gpu": (0, 0)}))
    files = toolkit_config()

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        st.host_files = {"lspci.txt": lspci(list(rig.slots), "nvidia")}
        if rig.name != broken.name:
            return st
        st.dmesg = ""  # weeks of uptime: the boot's NVRM lines have left the ring buffer
        st.smi_error = (6, SMI_NO_DEVICES)
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "vm-gpu")


# ------------------------------------------------------------------- gpus-seen-unallocated


def gpus_seen_unallocated(root: Path) -> None:
    """SC007. On gpu-2 a team runs its embedding server with ``NVIDIA_VISIBLE_DEVICES=all``
    in the pod's env and no ``nvidia.com/gpu`` limit, copied from a docker-compose file:
    the runtime gives it every GPU of the node (NVIDIA/k8s-device-plugin#87), while the
    scheduler has allocated all four L40S to a fine-tuning job. The two share the GPUs
    without the scheduler knowing. SC007 is the root (SC003 names the same workload
    beside it)."""
    t = timeline("2026-11-29T09:05:00Z")
    machine = "PowerEdge R760xa"
    rigs = cluster(t, [("gpu-1", L40S, 4, machine, "Intel"), ("gpu-2", L40S, 4, machine, "Intel")])
    shared = rigs[2]
    rigs[2] = replace(shared, slots=tuple(
        replace(s, load=training_load(shared.name, s.index, 44_000)) for s in shared.slots))
    shared = rigs[2]
    scene = fleet_scene(rigs, t)
    namespaces(scene, t, "ml", "search")
    install_stack(scene, rigs, t, healthy_stack(t, rigs))
    job = "finetune-mistral-7b"
    run_pod(scene, shared, name=f"{job}-0", namespace="ml",
            spec=workload_spec(gpu_container("trainer", PYTORCH, {"nvidia.com/gpu": 4},
                                             command=["torchrun"],
                                             args=["--nproc-per-node=4", "train.py"])),
            started=plus(t.created, -86400 - 3011.8),
            labels={"app": job, "statefulset.kubernetes.io/pod-name": f"{job}-0"},
            owners=owned("StatefulSet", job, "ml"))
    rs = "embedder-6b8f9d7c5d"
    embedder = container("embedder", "ghcr.io/huggingface/text-embeddings-inference:1.8",
                         args=["--model-id", "BAAI/bge-large-en-v1.5"],
                         env={"NVIDIA_VISIBLE_DEVICES": "all"},
                         resources={"limits": {"cpu": "4", "memory": "16Gi"},
                                    "requests": {"cpu": "4", "memory": "16Gi"}})
    run_pod(scene, shared, name=f"{rs}-{k8s_suffix(5, 'embedder', 'a')}", namespace="search",
            spec=workload_spec(embedder), started=plus(t.created, -6 * 3600 - 722.5),
            labels={"app": "embedder", "pod-template-hash": "6b8f9d7c5d"},
            owners=owned("ReplicaSet", rs, "search"), generate_name=f"{rs}-")
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs))
    files = toolkit_config()

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        return base_state(scene, rig, files)

    node_writers(scene, rigs, state)
    emit(scene, root, "search-k8s")


# ---------------------------------------------------------------- crd-older-than-chart

OLD_VERSION = "v24.3.0"
REJECTED = ('Error: UPGRADE FAILED: error validating "": error validating data: '
            '[ValidationError(ClusterPolicy.spec.driver): unknown field "kernelModuleType" in '
            'com.nvidia.v1.ClusterPolicy.spec.driver]')


def crd_older_than_chart(root: Path) -> None:
    """OP016. The operator was installed with chart v24.3.0 and upgraded in place to
    v26.3.3 with ``--reuse-values``; Helm never upgrades CRDs, so the cluster keeps the
    v24.3.0 ``clusterpolicies.nvidia.com`` schema, which predates the chart's
    ``driver.kernelModuleType``, and the upgrade fails validating the new ClusterPolicy
    (``ValidationError(ClusterPolicy.spec.driver): unknown field ...``, the wording of
    NVIDIA/gpu-operator#431 on another field; the
    API server's ``is invalid: ... Required value`` of #139 is the same cause). OP016 is
    the root; the failed release (HELM002) hangs under it."""
    t = timeline("2026-11-27T15:40:00Z")
    machine = "PowerEdge R750xa"
    rigs = cluster(t, [("gpu-1", A10, 2, machine, "Intel"), ("gpu-2", A10, 2, machine, "Intel")])
    scene = fleet_scene(rigs, t)
    stack = healthy_stack(t, rigs)
    first = stack.helm[0]
    first.update(status="superseded", chart=f"gpu-operator-{OLD_VERSION}",
                 app_version=OLD_VERSION)
    upgrade = plus(t.created, -48 * 60 - 19.6)
    stack.helm = [first, gpuop.helm_revision(2, "failed", upgrade, REJECTED,
                                             dict(first["values"]))]
    install_stack(scene, rigs, t, stack)
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs))
    files = toolkit_config()

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        return base_state(scene, rig, files)

    node_writers(scene, rigs, state)
    emit(scene, root, "vision-k8s")
