"""Scenarios of issue 15 for two rules that had no sample of their own: node labelling
(OP011) and NVSwitch SXid errors (DRV011), each the root of its sample.

- ``nfd-not-labelling``: a fresh GPU Operator install with ``nfd.enabled=false`` on a
  cluster that has no Node Feature Discovery; nothing labels the GPU nodes, the operator
  finds no GPU node and deploys nothing.
- ``hgx-nvswitch-sxid``: an HGX H100 node whose NVSwitch reports a fatal SXid, echoed by
  a GPU's Xid 74, after which the host Fabric Manager exits; a second HGX node is
  healthy.

Each follows real public threads (URLs in the docstrings and in README.md); names,
versions and times are the fleet's own.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from samples.samplekit import containerd, gpuop, journal, kubeadm, oplogs
from samples.samplekit.core import at, plus
from samples.samplekit.dcgpu import L40S
from samples.samplekit.fleet import (
    Rig,
    RigState,
    Timeline,
    add_nodes,
    base_state,
    emit,
    fleet_scene,
    gpu_resources,
    install_stack,
    node_writers,
    toolkit_config,
)
from samples.samplekit.hgx import H100_SXM5_80GB, HEALTHY_FABRIC
from samples.samplekit.hgx import nvidia_smi_xml as hgx_smi_xml
from samples.samplekit.oplogs import zap_line
from samples.samplekit.pci import lspci
from samples.samplekit.podstates import after_reboot
from samples.samplekit.scene import LogLine, Scene
from samples.samplekit.workloads import add_deployment
from samples.scenarios_node import (
    PLUGIN,
    cluster,
    gpu_intro,
    healthy_stack,
    kernel_lines,
    node_rebooted,
    plugin_unhealthy,
    reboot_journals,
    timeline,
)

# ------------------------------------------------------------------ nfd-not-labelling

# The operator's requeue while no node carries an NFD label (clusterpolicy_controller.go).
NFD_POLL_S = 45.0
# ClusterPolicy states whose step builds a DaemonSet; without a GPU node each of them
# logs that it creates none and reports ready.
_DS_STATES = ("state-driver", "state-container-toolkit", "state-operator-validation",
              "state-device-plugin", "state-mps-control-daemon", "state-dcgm-exporter",
              "gpu-feature-discovery", "state-mig-manager")
_NO_NFD_STATES = {"pre-requisites": "ready", "state-operator-metrics": "ready",
                  "state-driver": "disabled", "state-container-toolkit": "ready",
                  "state-operator-validation": "ready", "state-device-plugin": "ready",
                  "state-mps-control-daemon": "ready", "state-dcgm-exporter": "ready",
                  "gpu-feature-discovery": "ready", "state-mig-manager": "ready"}


def no_nfd_reconcile(t: dt.datetime, *, first: bool = False) -> list[LogLine]:
    """One ClusterPolicy reconcile of operator v26.3 while no node has an NFD label: the
    warning, every state's step without a DaemonSet, and the 45 s poll (the messages of
    the operator's clusterpolicy_controller.go and object_controls.go)."""
    out: list[oplogs.Line] = []
    if first:
        out.append(zap_line("info", "Kubernetes version detected", version="v1.37.1"))
        out.append(zap_line("info", "Operator metrics initialized."))
    out.append(zap_line("info", "WARNING: NFD labels missing in the cluster, GPU nodes cannot "
                                "be discovered."))
    out.append(zap_line("info", "No GPU node can be found in the cluster."))
    for state in oplogs.STATES:
        status = _NO_NFD_STATES.get(state, "disabled")
        if state in _DS_STATES and status != "disabled":
            out.append(zap_line("info", "No GPU node in the cluster, do not create DaemonSets"))
        out.append(zap_line("info", "ClusterPolicy step completed",
                            **{"state:": state, "status": status}))
    out.append(zap_line("info", "No NFD label found, polling for new nodes.",
                        requeueAfter=f"{NFD_POLL_S:.0f}s"))
    return oplogs.at_lines(t, out, step=0.0021)


def no_nfd_operator_log(start: dt.datetime, until: dt.datetime) -> list[LogLine]:
    """The operator since its start: startup, the first reconciles, and the last two
    (the 45 s poll repeats them; thinned like the samples' other loops)."""
    polls = []
    t = plus(start, 1.9)
    while t < until:
        polls.append(t)
        t = plus(t, NFD_POLL_S + 0.083)
    keep = polls if len(polls) <= 4 else polls[:2] + polls[-2:]
    lines = oplogs.operator_startup(start)
    for k, when in enumerate(keep):
        lines += no_nfd_reconcile(when, first=k == 0)
    return lines


def install_without_nfd(scene: Scene, rigs: list[Rig], t: Timeline) -> None:
    """``helm install`` with ``nfd.enabled=false`` and no NFD in the cluster: the operator,
    its RuntimeClasses and ConfigMaps and the ClusterPolicy, which reports ready with the
    reason NFDLabelsMissing; no operand DaemonSet is created."""
    cp = next(r for r in rigs if r.host.control_plane)
    started = plus(t.helm_install, 2.0)
    pod = kubeadm.ran(started, boot=8.0)
    add_deployment(scene, gpuop.operator_template(), created=plus(t.helm_install, 1.9),
                   pods=[(cp.name, pod)],
                   logs=[{"gpu-operator": no_nfd_operator_log(pod.main_start,
                                                             plus(t.created, -6.0))}])
    scene.runtimeclasses += gpuop.runtime_classes(plus(t.helm_install, 16.4))
    scene.configmaps += gpuop.configmaps(plus(t.helm_install, 0.8))
    since = plus(pod.main_start, 1.95)
    policy = gpuop.cluster_policy(created=plus(t.helm_install, 1.7), toolkit=True,
                                  generation=1, ready=True, since=since)
    for condition in policy["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition["reason"] = "NFDLabelsMissing"
            condition["message"] = "No NFD labels found"
    scene.clusterpolicies.append(policy)
    values = {"driver": {"enabled": False}, "nfd": {"enabled": False}}
    scene.helm["gpu-operator"] = [gpuop.helm_revision(1, "deployed", t.helm_install,
                                                      "Install complete", values)]


def _unlabelled(scene: Scene) -> None:
    """Nodes as kubeadm and kubelet leave them: no NFD, operator or GFD label."""
    for node in scene.nodes:
        labels = node["metadata"]["labels"]
        for key in [k for k in labels
                    if k.startswith(("feature.node.kubernetes.io/", "nvidia.com/"))]:
            del labels[key]


def nfd_not_labelling(root: Path) -> None:
    """OP011. A new cluster of two L40S servers with the host driver installed. The GPU
    Operator was installed 40 minutes before collection with ``--set nfd.enabled=false``
    (the documented switch for clusters that already run NFD), but this cluster has no
    NFD: no node carries ``feature.node.kubernetes.io/pci-10de.present``, the operator
    logs ``NFD labels missing in the cluster, GPU nodes cannot be discovered`` every
    45 s, the ClusterPolicy is ready with the reason NFDLabelsMissing, and no operand
    DaemonSet exists. Only ``host/lspci.txt`` (and the host's own nvidia-smi) show the
    GPUs. The situation of https://github.com/NVIDIA/gpu-operator/issues/149 (NFD
    missing: the operator finds no node to match ``nvidia.com/gpu.present`` and deploys
    nothing), with operator v26.3's wording of the same state; GPU nodes without the PCI
    label and no operand DaemonSet as in https://github.com/NVIDIA/gpu-operator/issues/423.
    OP011 is the root; OP003 on each GPU node hangs under it, and under OP003 what was
    never deployed there (RT001, OP008, RT006; RT007 for the cluster).

    There is no healthy GPU node beside them: without NFD nothing labels any node, so
    every GPU node of the cluster is in the same state (the control plane has no GPU)."""
    end = at("2026-12-01T14:05:00Z")
    t = Timeline(cluster_init=plus(end, -2 * 86400 - 3307.4),
                 helm_install=plus(end, -2417.8), created=end)
    rigs = cluster(t, [("gpu-1", L40S, 4, "PowerEdge R760xa", "Intel"),
                       ("gpu-2", L40S, 4, "PowerEdge R760xa", "Intel")])
    scene = fleet_scene(rigs, t)
    install_without_nfd(scene, rigs, t)
    add_nodes(scene, rigs, t, resources={})
    _unlabelled(scene)
    files = {containerd.MAIN: containerd.fresh_config()}  # the toolkit never ran

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        st.cdi_files = {}
        st.host_files = {"lspci.txt": lspci(list(rig.slots), "nvidia")}
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "render-farm")


# ------------------------------------------------------------------ hgx-nvswitch-sxid

NVSWITCH0 = "0000:05:00.0"


def sxid_fatal(when: dt.datetime, link: int, engine: int) -> list[tuple[dt.datetime, str]]:
    """A fatal SXid 20034 (LTSSM Fault Up) on NVSwitch 0: the first line with its
    severity and link, then the detail lines the driver prints after it (the layout of
    leptonai/gpud's sxid README and NVIDIA/nvtrust#124)."""
    head = f"nvidia-nvswitch0: SXid (PCI:{NVSWITCH0}): 20034"
    return kernel_lines(when, [
        f"{head}, Fatal, Link {link} LTSSM Fault Up",
        f"{head}, Severity 1 Engine instance {engine} Sub-engine instance 00",
        f"{head}, Data {{0x10000000, 0x10000000, 0x00000000, 0x10000000, 0x00000000, "
        "0x00000000, 0x00000000, 0x00000000, 0x00000000}",
    ], step=0.0018)


def fm_started(j: journal.Journal, boot: dt.datetime, cutoff: dt.datetime) -> None:
    """The host Fabric Manager unit starting with the machine (systemd's lines), where
    the boot lies inside the journal window that starts at ``cutoff``."""
    if boot < cutoff:
        return
    j.systemd(plus(boot, 14.2), "Starting nvidia-fabricmanager.service - NVIDIA fabric manager "
              "service...", message_id=journal.MSG_STARTING)
    j.systemd(plus(boot, 31.7), "Started nvidia-fabricmanager.service - NVIDIA fabric manager "
              "service.", message_id=journal.MSG_STARTED)


def hgx_nvswitch_sxid(root: Path) -> None:
    """DRV011. Two HGX H100 nodes with the host driver and the host Fabric Manager. On
    hgx-1, NVSwitch 0 reports a fatal SXid 20034 (LTSSM Fault Up) on link 30 during a
    training job; 40 ms later GPU 0 reports Xid 74 (NVLink fatal error), the device
    plugin withdraws it (allocatable 7 of 8), and a second later the Fabric Manager
    service exits (its default FM_STAY_RESIDENT_ON_FAILURES=0 ends it on fabric errors).
    hgx-2 is healthy. The SXid line is the example of leptonai/gpud's sxid component
    (https://github.com/leptonai/gpud/blob/4a8de33a3f02e207f39e9023d67125592d599731/components/accelerator/nvidia/sxid/README.md),
    its detail lines laid out as in https://github.com/NVIDIA/nvtrust/issues/124; the Fabric
    Manager User Guide says a fatal SXid on a GPU's access port reaches that GPU as
    Xid 74. DRV011 is the root; DRV001 (the Xid 74) and OP005 (the fabric down) hang
    under it."""
    t = timeline("2026-11-30T23:10:00Z")
    machine = "PowerEdge XE9680"
    # both nodes came back from a firmware maintenance four days ago, so the week's
    # journals hold the Fabric Manager unit's start
    boots = {"hgx-1": plus(t.created, -4 * 86400 - 3711.2),
             "hgx-2": plus(t.created, -4 * 86400 - 3488.9)}
    rigs = cluster(t, [("hgx-1", H100_SXM5_80GB, 8, machine, "Intel"),
                       ("hgx-2", H100_SXM5_80GB, 8, machine, "Intel")], reboots=boots)
    hgx = rigs[1]
    hit = hgx.slots[0]
    scene = fleet_scene(rigs, t)
    sxid_at = at("2026-11-30T21:47:12.408213Z")
    xid_at = plus(sxid_at, 0.0407)
    plugin_logs = {"toolkit-validation": [],
                   "nvidia-device-plugin": plugin_unhealthy(plus(xid_at, 0.0391), 74, hit.uuid)}
    install_stack(scene, rigs, t, healthy_stack(t, rigs, logs={PLUGIN: {hgx.name: plugin_logs}}))
    for rig in rigs[1:]:
        after_reboot(scene, rig.host, boots[rig.name])
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, hgx_1={"nvidia.com/gpu": (8, 7)}))
    for name, boot in boots.items():
        node_rebooted(scene, name, boot)
    files = toolkit_config()
    bus = hit.pci[:-2]
    kernel = sxid_fatal(sxid_at, 30, 30) + kernel_lines(plus(xid_at, -0.0002), gpu_intro(hit)) \
        + kernel_lines(xid_at, [
            f"NVRM: Xid (PCI:{bus}): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error "
            "detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"])
    fm_exit = plus(sxid_at, 1.2864)

    def state(rig: Rig, now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        reboot_journals(st, rig.host.boot_at)
        st.smi_xml = hgx_smi_xml(list(rig.slots), now, fabric=HEALTHY_FABRIC)
        fm = journal.Journal(rig.host, "nvidia-fabricmanager.service")
        fm_started(fm, rig.host.boot_at, plus(t.created, -168 * 3600))
        st.fm_journal = fm
        if rig.name != hgx.name:
            return st
        st.dmesg_extra = kernel
        fm.systemd(fm_exit, "nvidia-fabricmanager.service: Main process exited, code=exited, "
                   "status=1/FAILURE", message_id=journal.MSG_PROCESS_EXIT, priority=5)
        fm.systemd(plus(fm_exit, 0.0004), "nvidia-fabricmanager.service: Failed with result "
                   "'exit-code'.", message_id=journal.MSG_FAILURE_RESULT, priority=4)
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "hgx-train")
