"""Issue 14 samples: the runtime gate on k3s, RKE2, k0s, MicroK8s and OpenShift (CRI-O).

Each is a small cluster of one distribution (a control-plane node and two GPU nodes
with two L40S each, host driver) on which the GPU Operator v26.3.3 was installed the
day before collection. ``gpu-2`` shows the failure that distribution's users report;
``gpu-1`` is healthy beside it. The GPU nodes are written as the 1.1 node collector
writes them (``samplekit/distro.py``: ``runtime.json``, the distribution's containerd
file, templates, imports and log, or CRI-O's configuration; systemd units with
``LoadState``).

- ``k3s-toolkit-default-config``: the values set only ``CONTAINERD_SOCKET`` (as in
  https://github.com/NVIDIA/nvidia-container-toolkit/issues/982), so the toolkit
  edits ``/etc/containerd/config.toml`` and ``conf.d/99-nvidia.toml`` while k3s runs
  containerd from ``/var/lib/rancher/k3s/agent/etc/containerd/config.toml``
  (https://github.com/NVIDIA/gpu-operator/issues/415). On gpu-1 the admin restarted
  k3s-agent, and k3s found the toolkit's ``nvidia-container-runtime`` under
  ``/usr/local/nvidia/toolkit`` and added the runtimes itself; gpu-2 still runs the
  configuration generated before the toolkit existed.
- ``rke2-template-go-directives``: ``CONTAINERD_CONFIG`` names RKE2's
  ``config.toml.tmpl``, as the operator documents. gpu-1's template is plain TOML (a
  copy of the generated file) and the toolkit added the runtime to it; gpu-2's
  template extends ``{{ template "base" . }}``, and the toolkit dies at it:
  ``keys cannot contain { character``
  (https://github.com/NVIDIA/gpu-operator/issues/623,
  https://github.com/NVIDIA/gpu-operator/issues/673).
- ``k0s-toolkit-default-paths``: no toolkit values at all on k0s
  (https://github.com/NVIDIA/gpu-operator/issues/413: toolkit Running, operands in
  Init, ``no runtime for "nvidia" is configured``); the toolkit edits
  ``/etc/containerd`` while k0s runs ``/etc/k0s/containerd.toml``, which imports the
  CRI configuration k0s merges from ``/etc/k0s/containerd.d/*.toml`` into
  ``/run/k0s/containerd-cri.toml``. gpu-1 has the admin's ``containerd.d/nvidia.toml``
  (k0s' runtime documentation, https://docs.k0sproject.io/stable/runtime/); gpu-2 not.
- ``microk8s-toolkit-edits-generated-config``: ``CONTAINERD_CONFIG`` names
  ``/var/snap/microk8s/current/args/containerd.toml``, which MicroK8s rebuilds from
  ``containerd-template.toml`` at every containerd start: the toolkit's edit is gone
  after the restart it triggers itself (https://github.com/NVIDIA/gpu-operator/issues/173,
  https://github.com/canonical/microk8s/issues/3959). gpu-1 has the runtime in its
  template, added by hand before the operator; gpu-2 has the stock template.
- ``openshift-crio-no-nvidia-handler``: on OpenShift the toolkit installs CRI-O's OCI
  hook and no ``nvidia`` handler (https://github.com/NVIDIA/gpu-operator/pull/1796);
  the operands run through the hook on both nodes, but an application pod on gpu-2
  that names ``runtimeClassName: nvidia`` is refused: ``failed to find runtime handler
  nvidia from runtime list map[crun:… runc:…]``
  (https://github.com/NVIDIA/gpu-operator/issues/1298).
"""

from __future__ import annotations

import copy
import datetime as dt
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from samples.samplekit import containerd, gpuop, journal, kubeadm, oplogs
from samples.samplekit.core import at, hexid, number, plus
from samples.samplekit.dcgpu import L40S
from samples.samplekit.distro import DistroState, Flavor, node_fields, node_writers, pid_of
from samples.samplekit.fleet import (
    PYTORCH,
    Rig,
    Stack,
    Timeline,
    add_nodes,
    control_plane,
    default_statuses,
    emit,
    fleet_scene,
    gpu_container,
    gpu_resources,
    install_stack,
    install_values,
    operator_log,
    owned,
    pending_pod,
    run_pod,
    server,
    workload_spec,
)
from samples.samplekit.journal import Journal
from samples.samplekit.k8s import meta, namespace_obj
from samples.samplekit.podstates import Finished, Looping, Run, crash_runs, custom
from samples.samplekit.scene import LogLine, Scene
from samples.samplekit.workloads import Outcome, Ran, Stuck, place_pod

TOOLKIT = "nvidia-container-toolkit-daemonset"
TOOLKIT_CTR = "nvidia-container-toolkit-ctr"
# The operands that run with runtimeClassName nvidia (the toolkit itself does not).
NVIDIA_OPERANDS = ("nvidia-operator-validator", "nvidia-device-plugin-daemonset",
                   "gpu-feature-discovery", "nvidia-dcgm-exporter")
CRI = containerd.CRI
TOOLKIT_BIN = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
K8S = kubeadm.K8S
MACHINE = "PowerEdge R760xa"


# --------------------------------------------------------------------------- the time


def day_old(created: str) -> Timeline:
    """A cluster built five weeks before collection; the operator installed 26 h before."""
    end = at(created)
    return Timeline(cluster_init=plus(end, -35 * 86400 - 2791.6),
                    helm_install=plus(end, -26 * 3600 - 1417.3), created=end)


def rigs_of(t: Timeline) -> list[Rig]:
    boot = plus(t.cluster_init, -2217.4)
    return [control_plane(boot)] + [
        server(f"gpu-{i}", i, L40S, 2, machine=MACHINE, boot_at=plus(boot, 37 * i),
               cpu_vendor="Intel") for i in (1, 2)]


def recovered(scheduled: dt.datetime, fixed: dt.datetime, inits: int) -> Ran:
    """An operand stuck without a sandbox from ``scheduled`` until the runtime got the
    handler at ``fixed``, running since."""
    ran = kubeadm.ran(plus(fixed, 4.7), inits=inits, boot=6.5)
    return replace(ran, scheduled=scheduled, stuck_since=scheduled, stuck_until=fixed)


def operand_inits(name: str) -> int:
    return len(gpuop.operand_templates()[name].spec.get("initContainers", []))


def toolkit_ran(t: Timeline, i: int) -> tuple[Ran, dict[str, list[LogLine]]]:
    """The toolkit pod of a node (index ``i``) and its logs: it believes it succeeded."""
    ran = kubeadm.ran(plus(t.operands_up, 0.05 + 0.02 * i), inits=1, boot=6.5)
    drv = ran.init_runs[0][0]
    ctr, _ = oplogs.toolkit_ctr(ran.main_start)
    return ran, {"driver-validation": oplogs.driver_validation(drv, L40S.gpu),
                 TOOLKIT_CTR: ctr}


def stuck_operands(t: Timeline, node: str, i: int) -> dict[str, dict[str, Outcome]]:
    return {name: {node: Stuck(plus(t.operands_up, 0.05 + 0.02 * i))} for name in NVIDIA_OPERANDS}


def recovered_operands(t: Timeline, node: str, i: int, fixed: dt.datetime
                       ) -> dict[str, dict[str, Outcome]]:
    return {name: {node: recovered(plus(t.operands_up, 0.05 + 0.02 * i), fixed,
                                   operand_inits(name))} for name in NVIDIA_OPERANDS}


def merge(*parts: dict[str, dict[str, Outcome]]) -> dict[str, dict[str, Outcome]]:
    out: dict[str, dict[str, Outcome]] = {}
    for part in parts:
        for name, nodes in part.items():
            out.setdefault(name, {}).update(nodes)
    return out


def env_list(**env: str) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in env.items()]


def stack_for(t: Timeline, rigs: list[Rig], env: list[dict[str, str]] | None,
              **kw: Any) -> Stack:
    """The operator as installed 26 h ago with ``toolkit.env`` = ``env``, reporting the
    operand states of the failing node not ready."""
    values = install_values(**({"toolkit": {"env": env}} if env else {}))
    statuses = default_statuses() | {s: "notReady" for s in (
        "state-operator-validation", "state-device-plugin", "state-dcgm-exporter",
        "gpu-feature-discovery")}
    resync = [plus(t.helm_install, 61.3), plus(t.created, -14 * 3600 - 611.7),
              plus(t.created, -4 * 3600 - 612.1)]
    stack = Stack(
        policy_patch={"toolkit": {"env": env}} if env else {},
        helm=[gpuop.helm_revision(1, "deployed", t.helm_install, "Install complete", values)],
        operator_log=operator_log(t, rigs, statuses, resync),
        ready=False,
        not_ready=["state-operator-validation", "state-device-plugin", "state-dcgm-exporter",
                   "gpu-feature-discovery"],
        since=plus(t.helm_install, 61.4),
    )
    for key, value in kw.items():
        setattr(stack, key, value)
    return stack


# ------------------------------------------------------------------- containerd files


def toolkit_default_files() -> dict[str, str]:
    """What the toolkit (file mode, no config found) leaves under /etc/containerd: a
    config.toml that imports conf.d, and 99-nvidia.toml with its three runtimes."""
    runtimes = {}
    for name, suffix in (("nvidia", ""), ("nvidia-cdi", ".cdi"), ("nvidia-legacy", ".legacy")):
        runtimes[name] = {"privileged_without_host_devices": False, "runtime_engine": "",
                          "runtime_root": "", "runtime_type": "io.containerd.runc.v2",
                          "options": {"BinaryName": TOOLKIT_BIN + suffix}}
    drop_in = {"version": 2, "plugins": {CRI: {"enable_cdi": True,
                                               "containerd": {"runtimes": runtimes}}}}
    top = {"imports": ["/etc/containerd/conf.d/*.toml"], "version": 2}
    return {containerd.MAIN: containerd.toml_dumps(top),
            containerd.DROP_IN: containerd.toml_dumps(drop_in)}


def rancher_generated(program: str, nvidia: bool) -> str:
    """``config.toml`` as k3s/RKE2 render their built-in template (containerd 1.7
    layout, version 2), with the runtimes they detect on the host."""
    data = f"/var/lib/rancher/{program}"
    cni = ""
    if program == "k3s":
        cni = (f'\n[plugins."{CRI}".cni]\n  bin_dir = "{data}/data/cni"\n'
               f'  conf_dir = "{data}/agent/etc/cni/net.d"\n')
    text = (
        f"\n# File generated by {program}. DO NOT EDIT. Use config.toml.tmpl instead.\n"
        "version = 2\n\n"
        '[plugins."io.containerd.internal.v1.opt"]\n'
        f'  path = "{data}/agent/containerd"\n'
        f'[plugins."{CRI}"]\n'
        '  stream_server_address = "127.0.0.1"\n'
        '  stream_server_port = "10010"\n'
        "  enable_selinux = false\n"
        "  enable_unprivileged_ports = true\n"
        "  enable_unprivileged_icmp = true\n"
        '  sandbox_image = "index.docker.io/rancher/mirrored-pause:3.6"\n\n'
        f'[plugins."{CRI}".containerd]\n'
        '  snapshotter = "overlayfs"\n'
        "  disable_snapshot_annotations = true\n"
        f"{cni}\n\n"
        f'[plugins."{CRI}".containerd.runtimes.runc]\n'
        '  runtime_type = "io.containerd.runc.v2"\n\n'
        f'[plugins."{CRI}".containerd.runtimes.runc.options]\n'
        "  SystemdCgroup = true\n\n"
    )
    if nvidia:
        for name, suffix in (("nvidia", ""), ("nvidia-cdi", ".cdi")):
            text += (f'\n[plugins."{CRI}".containerd.runtimes."{name}"]\n'
                     '  runtime_type = "io.containerd.runc.v2"\n'
                     f'[plugins."{CRI}".containerd.runtimes."{name}".options]\n'
                     f'  BinaryName = "{TOOLKIT_BIN}{suffix}"\n')
    return text


def with_toolkit_runtimes(text: str) -> str:
    """A plain-TOML file after the toolkit added its runtimes in place (go-toml
    re-serialises the whole file: comments dropped, keys sorted)."""
    tree = tomllib.loads(text)
    runtimes = tree["plugins"][CRI]["containerd"].setdefault("runtimes", {})
    for name, suffix in (("nvidia", ""), ("nvidia-cdi", ".cdi"), ("nvidia-legacy", ".legacy")):
        runtime = copy.deepcopy(runtimes["runc"])
        runtime["options"] = {"BinaryName": TOOLKIT_BIN + suffix, "SystemdCgroup": True}
        runtimes[name] = runtime
    tree["plugins"][CRI]["enable_cdi"] = True
    return containerd.toml_dumps(tree)


# --------------------------------------------------------------------------- the nodes


def runtime_journal(rig: Rig, unit: str, scene: Scene) -> Journal:
    """containerd's CRI lines for the node's sandbox attempts inside the window."""
    j = Journal(rig.host, unit)
    cutoff = plus(scene.created_at, -168 * 3600)
    attempts = [a for a in scene.sandbox_attempts.get(rig.name, []) if a.at >= cutoff]
    journal.containerd_sandbox_lines(j, attempts, lambda _t: pid_of(rig, "containerd"))
    return j


def kubelet_journal(rig: Rig, unit: str, scene: Scene) -> Journal:
    j = Journal(rig.host, unit)
    cutoff = plus(scene.created_at, -168 * 3600)
    attempts = [a for a in scene.sandbox_attempts.get(rig.name, []) if a.at >= cutoff]
    journal.kubelet_sandbox_failures(j, attempts)
    return j


def started_line(j: Journal, when: dt.datetime, description: str) -> None:
    j.systemd(when, f"Started {j.unit} - {description}.")


def finish(scene: Scene, root: Path, context: str, flavor: Flavor, server_flavor: Flavor
           ) -> None:
    node_fields(scene, {n["metadata"]["name"]: server_flavor if n["metadata"]["name"] == "cp-1"
                        else flavor for n in scene.nodes})
    emit(scene, root, context)


def with_pending_trainer(scene: Scene, rigs: list[Rig], t: Timeline, namespace: str) -> None:
    """gpu-1 is busy with a fine-tuning job; a second job waits for GPUs gpu-2 never
    advertised."""
    big = {"nvidia.com/gpu": 2}
    run_pod(scene, rigs[1], name="finetune-0", namespace=namespace,
            spec=workload_spec(gpu_container("trainer", PYTORCH, big, command=["torchrun"],
                                             args=["--nproc-per-node=2", "/workspace/ft.py"])),
            started=plus(t.created, -2 * 3600 - 127.4),
            labels={"app": "finetune", "apps.kubernetes.io/pod-index": "0",
                    "statefulset.kubernetes.io/pod-name": "finetune-0"},
            owners=owned("StatefulSet", "finetune", namespace))
    message = ("0/3 nodes are available: 1 node(s) had untolerated taint "
               "{node-role.kubernetes.io/control-plane: }, 2 Insufficient nvidia.com/gpu. "
               "preemption: 0/3 nodes are available: 1 Preemption is not helpful for "
               "scheduling, 2 No preemption victims found for incoming pod.")
    created = plus(t.created, -3600 - 412.9)
    pending_pod(scene, name="eval-0", namespace=namespace,
                spec=workload_spec(gpu_container("eval", PYTORCH, big, command=["python"],
                                                 args=["/workspace/eval.py"])),
                created=created, message=message, last=plus(t.created, -63.2), attempts=9,
                labels={"app": "eval", "apps.kubernetes.io/pod-index": "0",
                        "statefulset.kubernetes.io/pod-name": "eval-0"},
                owners=owned("StatefulSet", "eval", namespace))


# ------------------------------------------------------------------------------- k3s

K3S_DIR = "/var/lib/rancher/k3s/agent/etc/containerd"
K3S = Flavor(
    distribution="k3s", runtime="containerd", kubelet_version=f"{K8S}+k3s1",
    runtime_version="containerd://1.7.29-k3s1", config=f"{K3S_DIR}/config.toml",
    socket="/run/k3s/containerd/containerd.sock",
    binary="/var/lib/rancher/k3s/data/current/bin/containerd",
    processes=(("k3s-agent", "/usr/local/bin/k3s agent"),),
    signals=("process k3s-agent (pid {k3s-agent})", "directory /var/lib/rancher/k3s",
             f"containerd process (pid {{containerd}}) --config {K3S_DIR}/config.toml",
             "containerd process (pid {containerd}) --address /run/k3s/containerd/containerd.sock"),
    units=("k3s-agent",),
    kubelet_files=(("/var/lib/rancher/k3s/agent/etc/kubelet.conf.d/00-k3s-defaults.conf",
                    "apiVersion: kubelet.config.k8s.io/v1beta1\ncgroupDriver: systemd\n"
                    "clusterDNS:\n- 10.43.0.10\nclusterDomain: cluster.local\n"
                    "containerRuntimeEndpoint: unix:///run/k3s/containerd/containerd.sock\n"
                    "kind: KubeletConfiguration\n"),),
    templates=(f"{K3S_DIR}/config.toml.tmpl", f"{K3S_DIR}/config-v3.toml.tmpl"),
    log_file="/var/lib/rancher/k3s/agent/containerd/containerd.log",
    kubelet_unit="k3s-agent",
    cgroup_driver="systemd (/var/lib/rancher/k3s/agent/etc/kubelet.conf.d/00-k3s-defaults.conf)",
    labels={"node.kubernetes.io/instance-type": "k3s"},
)


def k3s_toolkit_default_config(root: Path) -> None:
    """See the module docstring."""
    t = day_old("2026-11-30T15:40:00Z")
    rigs = rigs_of(t)
    scene = fleet_scene(rigs, t)
    fixed = plus(t.created, -3 * 3600 - 1288.6)  # `systemctl restart k3s-agent` on gpu-1
    env = env_list(CONTAINERD_SOCKET="/run/k3s/containerd/containerd.sock")
    tk1, logs1 = toolkit_ran(t, 0)
    tk2, logs2 = toolkit_ran(t, 1)
    stack = stack_for(t, rigs, env,
                      outcomes=merge(recovered_operands(t, "gpu-1", 0, fixed),
                                     stuck_operands(t, "gpu-2", 1),
                                     {TOOLKIT: {"gpu-1": tk1, "gpu-2": tk2}}),
                      logs={TOOLKIT: {"gpu-1": logs1, "gpu-2": logs2}})
    install_stack(scene, rigs, t, stack)
    scene.namespaces.append(_namespace("ml", t))
    with_pending_trainer(scene, rigs, t, "ml")
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, gpu_2={}))
    toolkit = toolkit_default_files()

    def state(rig: Rig, _now: dt.datetime) -> DistroState:
        healthy = rig.name == "gpu-1"
        files = {K3S.config: rancher_generated("k3s", nvidia=healthy)} | toolkit
        kubelet = kubelet_journal(rig, "k3s-agent.service", scene)
        start = fixed if healthy else plus(rig.host.boot_at, 21.4)
        started_line(kubelet, start, "Lightweight Kubernetes")
        return DistroState(rig, K3S, files, runtime_journal(rig, "k3s-agent.service", scene),
                           kubelet, {"k3s-agent": start}, cdi=healthy)

    node_writers(scene, rigs, state)
    finish(scene, root, "k3s-lab", K3S, K3S)


def _namespace(name: str, t: Timeline) -> Any:
    return namespace_obj(name, plus(t.cluster_init, 86400 * 2))


# ------------------------------------------------------------------------------ RKE2

RKE2_DIR = "/var/lib/rancher/rke2/agent/etc/containerd"
RKE2 = Flavor(
    distribution="rke2", runtime="containerd", kubelet_version=f"{K8S}+rke2r1",
    runtime_version="containerd://1.7.29-k3s1", config=f"{RKE2_DIR}/config.toml",
    socket="/run/k3s/containerd/containerd.sock", binary="/var/lib/rancher/rke2/bin/containerd",
    processes=(("rke2", "/usr/local/bin/rke2 agent"),
               ("kubelet", "kubelet --volume-plugin-dir=/var/lib/kubelet/volumeplugins "
                           "--file-check-frequency=5s --sync-frequency=30s "
                           "--config-dir=/var/lib/rancher/rke2/agent/etc/kubelet.conf.d "
                           "--containerd=/run/k3s/containerd/containerd.sock "
                           "--container-runtime-endpoint="
                           "unix:///run/k3s/containerd/containerd.sock "
                           "--kubeconfig=/var/lib/rancher/rke2/agent/kubelet.kubeconfig "
                           "--node-labels= --read-only-port=0")),
    signals=("process rke2 (pid {rke2})", "directory /var/lib/rancher/rke2",
             "kubelet --container-runtime-endpoint=unix:///run/k3s/containerd/containerd.sock",
             f"containerd process (pid {{containerd}}) --config {RKE2_DIR}/config.toml",
             "containerd process (pid {containerd}) --address /run/k3s/containerd/containerd.sock"),
    units=("rke2-agent",),
    kubelet_files=(("/var/lib/rancher/rke2/agent/etc/kubelet.conf.d/00-rke2-defaults.conf",
                    "apiVersion: kubelet.config.k8s.io/v1beta1\ncgroupDriver: systemd\n"
                    "clusterDNS:\n- 10.43.0.10\nclusterDomain: cluster.local\n"
                    "kind: KubeletConfiguration\n"),),
    templates=(f"{RKE2_DIR}/config.toml.tmpl", f"{RKE2_DIR}/config-v3.toml.tmpl"),
    log_file="/var/lib/rancher/rke2/agent/containerd/containerd.log",
    kubelet_unit="rke2-agent",
    cgroup_driver="systemd (/var/lib/rancher/rke2/agent/etc/kubelet.conf.d/"
                  "00-rke2-defaults.conf)",
    labels={"node.kubernetes.io/instance-type": "rke2"},
)
# the lab's pull-through cache, added below RKE2's own template
RKE2_TEMPLATE_EXTRA = (f'\n[plugins."{CRI}".registry.mirrors."docker.io"]\n'
                       '  endpoint = ["https://mirror.lab.internal:5000"]\n')
# The parse error the toolkit logs for a template starting with a Go directive
# (https://github.com/NVIDIA/gpu-operator/issues/623).
TEMPLATE_FATAL = ("Error: unable to load config: failed to load config: (1, 1): parsing error: "
                  "keys cannot contain { character")
TOOLKIT_RUN_S = 1.7


def toolkit_template_run(start: dt.datetime) -> list[LogLine]:
    lines = oplogs.logrus_lines(start, [
        "Starting nvidia-ctk-installer",
        "Initializing",
        "Installing NVIDIA container toolkit to '/usr/local/nvidia/toolkit'",
        "Removing existing NVIDIA container toolkit installation",
        "Creating directory '/usr/local/nvidia/toolkit'",
        "Installing NVIDIA container toolkit config "
        "'/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml'",
        "Generating CDI spec for management containers",
        "Starting 'setup' for containerd",
    ], step=0.12)
    end = plus(start, TOOLKIT_RUN_S)
    lines.append(LogLine(end, f'time="{end:%Y-%m-%dT%H:%M:%SZ}" level=fatal '
                              f'msg="{TEMPLATE_FATAL}"'))
    return lines


def rke2_template_go_directives(root: Path) -> None:
    """See the module docstring."""
    t = day_old("2026-11-30T11:20:00Z")
    rigs = rigs_of(t)
    scene = fleet_scene(rigs, t)
    env = env_list(CONTAINERD_CONFIG=f"{RKE2_DIR}/config.toml.tmpl",
                   CONTAINERD_SOCKET="/run/k3s/containerd/containerd.sock",
                   CONTAINERD_RUNTIME_CLASS="nvidia", CONTAINERD_SET_AS_DEFAULT="true")
    tk1, logs1 = toolkit_ran(t, 0)
    # gpu-1: the toolkit's SIGHUP stopped RKE2's containerd; rke2-agent restarted and
    # rendered the edited template
    fixed = plus(tk1.main_start, 1.45 + 6.2)
    sched = plus(t.operands_up, 0.07)
    box = plus(sched, 0.41)
    check = Run(plus(box, 0.6), plus(box, 1.9))
    until = plus(t.created, -3.9)
    runs = crash_runs(plus(check.end, 0.8), until, TOOLKIT_RUN_S)
    tk2 = custom(sched, box, {"driver-validation": Finished(check),
                              TOOLKIT_CTR: Looping(runs, plus(until, -26.1))},
                 logs={"driver-validation": oplogs.driver_validation(check.start, L40S.gpu),
                       TOOLKIT_CTR: toolkit_template_run(runs[-1].start)},
                 previous={TOOLKIT_CTR: toolkit_template_run(runs[-2].start)})
    stack = stack_for(t, rigs, env,
                      outcomes=merge(recovered_operands(t, "gpu-1", 0, fixed),
                                     stuck_operands(t, "gpu-2", 1),
                                     {TOOLKIT: {"gpu-1": tk1, "gpu-2": tk2}}),
                      logs={TOOLKIT: {"gpu-1": logs1}})
    stack.not_ready = ["state-container-toolkit", *stack.not_ready]
    install_stack(scene, rigs, t, stack)
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, gpu_2={}))
    base = rancher_generated("rke2", nvidia=False)
    tmpl_plain = with_toolkit_runtimes(base)
    tmpl_go = '{{ template "base" . }}\n' + RKE2_TEMPLATE_EXTRA

    def state(rig: Rig, _now: dt.datetime) -> DistroState:
        healthy = rig.name == "gpu-1"
        if healthy:
            files = {RKE2.config: tmpl_plain, RKE2.templates[0]: tmpl_plain}
        else:
            files = {RKE2.config: base + RKE2_TEMPLATE_EXTRA, RKE2.templates[0]: tmpl_go}
        unit = Journal(rig.host, "rke2-agent.service")
        start = fixed if healthy else plus(rig.host.boot_at, 23.8)
        started_line(unit, start, "Rancher Kubernetes Engine v2 (agent)")
        ctd = runtime_journal(rig, "rke2-agent.service", scene)
        return DistroState(rig, RKE2, files, ctd, unit, {"rke2-agent": start},
                           {"rke2-agent": 1 if healthy else 0}, cdi=healthy)

    node_writers(scene, rigs, state)
    finish(scene, root, "rke2-gpu", RKE2, RKE2)


# ------------------------------------------------------------------------------- k0s

K0S_CONFIG = "/etc/k0s/containerd.toml"
K0S_CRI = "/run/k0s/containerd-cri.toml"
K0S = Flavor(
    distribution="k0s", runtime="containerd", kubelet_version=f"{K8S}+k0s",
    runtime_version="containerd://1.7.29", config=K0S_CONFIG, socket="/run/k0s/containerd.sock",
    binary="/var/lib/k0s/bin/containerd",
    processes=(("k0s", "/usr/local/bin/k0s worker --token-file=/etc/k0s/k0stoken"),
               ("kubelet", "/var/lib/k0s/bin/kubelet --root-dir=/var/lib/k0s/kubelet "
                           "--config=/var/lib/k0s/kubelet-config.yaml "
                           "--kubeconfig=/var/lib/k0s/kubelet.conf "
                           "--containerd=/run/k0s/containerd.sock --v=1 "
                           "--runtime-cgroups=/system.slice/containerd.service "
                           "--cert-dir=/var/lib/k0s/kubelet/pki")),
    signals=("process k0s (pid {k0s})", "directory /var/lib/k0s", "directory /etc/k0s",
             "/var/lib/k0s/kubelet-config.yaml: container runtime endpoint "
             "unix:///run/k0s/containerd.sock",
             f"containerd process (pid {{containerd}}) --config {K0S_CONFIG}",
             "containerd process (pid {containerd}) --address /run/k0s/containerd.sock"),
    units=("k0sworker",),
    kubelet_files=(("/var/lib/k0s/kubelet-config.yaml",
                    "apiVersion: kubelet.config.k8s.io/v1beta1\ncgroupDriver: cgroupfs\n"
                    "containerRuntimeEndpoint: unix:///run/k0s/containerd.sock\n"
                    "kind: KubeletConfiguration\n"),),
    kubelet_unit="k0sworker", containerd_unit="k0sworker",
    cgroup_driver="cgroupfs (/var/lib/k0s/kubelet-config.yaml)",
    labels={"node.k0sproject.io/role": "worker"},
)
# k0s' managed placeholder (the pre-1.30 wording k0s still recognises)
K0S_MANAGED = (
    "# k0s_managed=true\n"
    "# This is a placeholder configuration for k0s managed containerD. \n"
    "# If you wish to override the config, remove the first line and replace this file with "
    "your custom configuration.\n"
    "# For reference see https://github.com/containerd/containerd/blob/main/docs/man/"
    "containerd-config.toml.5.md\n"
    "version = 2\n"
    "imports = [\n"
    f'\t"{K0S_CRI}",\n'
    "]\n"
)


def k0s_cri(nvidia: bool) -> str:
    """``/run/k0s/containerd-cri.toml``: k0s' CRI settings merged with the CRI parts of
    ``/etc/k0s/containerd.d/*.toml`` (go-toml, cgroupfs)."""
    runtimes: dict[str, Any] = {"runc": {"runtime_type": "io.containerd.runc.v2",
                                         "options": {"SystemdCgroup": False}}}
    if nvidia:
        runtimes["nvidia"] = {"runtime_type": "io.containerd.runc.v2",
                              "options": {"BinaryName": TOOLKIT_BIN, "SystemdCgroup": False}}
    tree = {"version": 2, "plugins": {CRI: {
        "sandbox_image": "quay.io/k0sproject/pause:3.10.1",
        "containerd": {"runtimes": runtimes}}}}
    return containerd.toml_dumps(tree)


def k0s_toolkit_default_paths(root: Path) -> None:
    """See the module docstring."""
    t = day_old("2026-11-29T17:05:00Z")
    rigs = rigs_of(t)
    scene = fleet_scene(rigs, t)
    fixed = plus(t.created, -5 * 3600 - 904.2)  # nvidia.toml added, k0sworker restarted
    tk1, logs1 = toolkit_ran(t, 0)
    tk2, logs2 = toolkit_ran(t, 1)
    stack = stack_for(t, rigs, None,
                      outcomes=merge(recovered_operands(t, "gpu-1", 0, fixed),
                                     stuck_operands(t, "gpu-2", 1),
                                     {TOOLKIT: {"gpu-1": tk1, "gpu-2": tk2}}),
                      logs={TOOLKIT: {"gpu-1": logs1, "gpu-2": logs2}})
    install_stack(scene, rigs, t, stack)
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, gpu_2={}))
    toolkit = toolkit_default_files()

    def state(rig: Rig, _now: dt.datetime) -> DistroState:
        healthy = rig.name == "gpu-1"
        files = {K0S_CONFIG: K0S_MANAGED, K0S_CRI: k0s_cri(nvidia=healthy)} | toolkit
        j = runtime_journal(rig, "k0sworker.service", scene)
        journal.kubelet_sandbox_failures(j, [a for a in scene.sandbox_attempts.get(rig.name, [])
                                             if a.at >= plus(t.created, -168 * 3600)])
        start = fixed if healthy else plus(rig.host.boot_at, 19.1)
        started_line(j, start, "k0s - Zero Friction Kubernetes")
        return DistroState(rig, K0S, files, j, j, {"k0sworker": start}, cdi=healthy)

    node_writers(scene, rigs, state)
    finish(scene, root, "k0s-gpu", K0S, K0S)


# -------------------------------------------------------------------------- MicroK8s

SNAP_ARGS = "/var/snap/microk8s/current/args"
# containerd's --config names the snap revision's directory, which node.sh reports
SNAP_REV_ARGS = "/var/snap/microk8s/8248/args"
MICROK8S = Flavor(
    distribution="microk8s", runtime="containerd", kubelet_version=f"{K8S}",
    runtime_version="containerd://1.7.29", config=f"{SNAP_REV_ARGS}/containerd.toml",
    socket="/var/snap/microk8s/common/run/containerd.sock",
    binary="/snap/microk8s/current/bin/containerd",
    processes=(("kubelite", "/snap/microk8s/8248/kubelite --scheduler-args-file="
                            "/var/snap/microk8s/8248/args/kube-scheduler "
                            "--controller-manager-args-file=/var/snap/microk8s/8248/args/"
                            "kube-controller-manager --proxy-args-file=/var/snap/microk8s/8248/"
                            "args/kube-proxy --kubelet-args-file=/var/snap/microk8s/8248/args/"
                            "kubelet --apiserver-args-file=/var/snap/microk8s/8248/args/"
                            "kube-apiserver --kubeconfig-file=/var/snap/microk8s/8248/"
                            "credentials/client.config --start-control-plane=false"),),
    signals=("process kubelite (pid {kubelite})", "directory /var/snap/microk8s",
             "/var/snap/microk8s/current/args/kubelet: container runtime endpoint "
             "${{SNAP_COMMON}}/run/containerd.sock",
             "containerd process (pid {containerd}) --config "
             "/var/snap/microk8s/8248/args/containerd.toml",
             "containerd process (pid {containerd}) --address "
             "/var/snap/microk8s/common/run/containerd.sock"),
    units=("snap.microk8s.daemon-containerd", "snap.microk8s.daemon-kubelite"),
    kubelet_files=((f"{SNAP_ARGS}/kubelet",
                    "--kubeconfig=${SNAP_DATA}/credentials/kubelet.config\n"
                    "--cert-dir=${SNAP_DATA}/certs\n"
                    "--client-ca-file=${SNAP_DATA}/certs/ca.crt\n"
                    "--anonymous-auth=false\n"
                    "--root-dir=${SNAP_COMMON}/var/lib/kubelet\n"
                    "--fail-swap-on=false\n"
                    "--eviction-hard=\"memory.available<100Mi,nodefs.available<1Gi,"
                    "imagefs.available<1Gi\"\n"
                    "--container-runtime-endpoint=${SNAP_COMMON}/run/containerd.sock\n"
                    "--containerd=${SNAP_COMMON}/run/containerd.sock\n"
                    "--node-labels=\"microk8s.io/cluster=true,node.kubernetes.io/"
                    "microk8s-worker=microk8s-worker\"\n"
                    "--authentication-token-webhook=true\n"
                    "--read-only-port=0\n"),),
    templates=(f"{SNAP_REV_ARGS}/containerd-template.toml",),
    kubelet_unit="snap.microk8s.daemon-kubelite",
    containerd_unit="snap.microk8s.daemon-containerd",
    cgroup_driver="not set",
    labels={"microk8s.io/cluster": "true",
            "node.kubernetes.io/microk8s-worker": "microk8s-worker"},
)


def microk8s_template(nvidia: bool) -> str:
    """MicroK8s' ``containerd-template.toml`` (its variables are filled in at every
    containerd start); gpu-1's carries the runtime an admin added by hand."""
    extra = ""
    if nvidia:
        extra = (f'\n    [plugins."{CRI}".containerd.runtimes.nvidia]\n'
                 '      runtime_type = "io.containerd.runc.v2"\n\n'
                 f'      [plugins."{CRI}".containerd.runtimes.nvidia.options]\n'
                 f'        BinaryName = "{TOOLKIT_BIN}"\n')
    return (
        "# Use config version 2 to enable new configuration fields.\n"
        "version = 2\n"
        "oom_score = 0\n\n"
        "[grpc]\n  uid = 0\n  gid = 0\n  max_recv_message_size = 16777216\n"
        "  max_send_message_size = 16777216\n\n"
        '[debug]\n  address = ""\n  uid = 0\n  gid = 0\n\n'
        '[metrics]\n  address = "127.0.0.1:1338"\n  grpc_histogram = false\n\n'
        '[cgroup]\n  path = ""\n\n'
        "# The 'plugins.\"io.containerd.grpc.v1.cri\"' table contains all of the server "
        "options.\n"
        f'[plugins."{CRI}"]\n\n'
        '  stream_server_address = "127.0.0.1"\n'
        '  stream_server_port = "0"\n'
        "  enable_selinux = false\n"
        '  sandbox_image = "registry.k8s.io/pause:3.10"\n'
        "  stats_collect_period = 10\n"
        "  enable_tls_streaming = false\n"
        "  max_container_log_line_size = 16384\n\n"
        f'  [plugins."{CRI}".containerd]\n\n'
        '    snapshotter = "${SNAPSHOTTER}"\n'
        "    no_pivot = false\n"
        '    default_runtime_name = "${RUNTIME}"\n\n'
        f'    [plugins."{CRI}".containerd.runtimes.runc]\n'
        '      runtime_type = "${RUNTIME_TYPE}"\n\n'
        f'    [plugins."{CRI}".containerd.runtimes.nvidia-container-runtime]\n'
        '      runtime_type = "${RUNTIME_TYPE}"\n\n'
        f'      [plugins."{CRI}".containerd.runtimes.nvidia-container-runtime.options]\n'
        '        BinaryName = "nvidia-container-runtime"\n'
        f"{extra}\n"
        f'  [plugins."{CRI}".cni]\n'
        '    bin_dir = "${SNAP_DATA}/opt/cni/bin"\n'
        '    conf_dir = "${SNAP_DATA}/args/cni-network"\n\n'
        f'  [plugins."{CRI}".registry]\n'
        '    config_path = "${SNAP_DATA}/args/certs.d"\n'
    )


def microk8s_render(template: str) -> str:
    """containerd.toml as MicroK8s writes it from the template at containerd's start."""
    for key, value in (("${SNAPSHOTTER}", "overlayfs"), ("${RUNTIME_TYPE}",
                                                         "io.containerd.runc.v2"),
                       ("${RUNTIME}", "runc"), ("${SNAP_DATA}", "/var/snap/microk8s/8248")):
        template = template.replace(key, value)
    return template


def microk8s_toolkit_edits_generated_config(root: Path) -> None:
    """See the module docstring."""
    t = day_old("2026-11-30T08:50:00Z")
    rigs = rigs_of(t)
    scene = fleet_scene(rigs, t)
    env = env_list(CONTAINERD_CONFIG=f"{SNAP_ARGS}/containerd.toml",
                   CONTAINERD_SOCKET="/var/snap/microk8s/common/run/containerd.sock",
                   CONTAINERD_RUNTIME_CLASS="nvidia", CONTAINERD_SET_AS_DEFAULT="true")
    tk1, logs1 = toolkit_ran(t, 0)
    tk2, logs2 = toolkit_ran(t, 1)
    # the toolkit's SIGHUP stops containerd; snapd restarts it, and MicroK8s writes
    # containerd.toml from the template again: gpu-1's template has the runtime
    fixed = plus(tk1.main_start, 1.45 + 5.1)
    stack = stack_for(t, rigs, env,
                      outcomes=merge(recovered_operands(t, "gpu-1", 0, fixed),
                                     stuck_operands(t, "gpu-2", 1),
                                     {TOOLKIT: {"gpu-1": tk1, "gpu-2": tk2}}),
                      logs={TOOLKIT: {"gpu-1": logs1, "gpu-2": logs2}})
    install_stack(scene, rigs, t, stack)
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, gpu_2={}))
    restarted = {"gpu-1": fixed, "gpu-2": plus(tk2.main_start, 1.45 + 5.3)}

    def state(rig: Rig, _now: dt.datetime) -> DistroState:
        template = microk8s_template(nvidia=rig.name == "gpu-1")
        files = {MICROK8S.config: microk8s_render(template), MICROK8S.templates[0]: template}
        ctd = runtime_journal(rig, "snap.microk8s.daemon-containerd.service", scene)
        started_line(ctd, restarted[rig.name],
                     "Service for snap application microk8s.daemon-containerd")
        kubelet = kubelet_journal(rig, "snap.microk8s.daemon-kubelite.service", scene)
        kubelite = plus(rig.host.boot_at, 24.2)
        return DistroState(rig, MICROK8S, files, ctd, kubelet,
                           {"snap.microk8s.daemon-containerd": restarted[rig.name],
                            "snap.microk8s.daemon-kubelite": kubelite},
                           {"snap.microk8s.daemon-containerd": 1}, cdi=rig.name == "gpu-1")

    node_writers(scene, rigs, state)
    finish(scene, root, "microk8s-gpu", MICROK8S, MICROK8S)


# --------------------------------------------------------------------- OpenShift/CRI-O

RHCOS_KERNEL = "5.14.0-570.52.1.el9_6.x86_64"
RHCOS_BUILD = "#1 SMP PREEMPT_DYNAMIC Wed Oct 15 12:15:16 EDT 2025"
OPENSHIFT = Flavor(
    distribution="openshift", runtime="cri-o", kubelet_version="v1.33.5",
    runtime_version="cri-o://1.33.5-3.rhaos4.20.gitd0ea985.el9", config="/etc/crio/crio.conf",
    socket="/var/run/crio/crio.sock", binary="/usr/bin/crio",
    processes=(("kubelet", "/usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf "
                           "--bootstrap-kubeconfig=/etc/kubernetes/kubeconfig "
                           "--kubeconfig=/var/lib/kubelet/kubeconfig "
                           "--container-runtime-endpoint=/var/run/crio/crio.sock "
                           "--runtime-cgroups=/system.slice/crio.service "
                           "--node-labels=node-role.kubernetes.io/worker,"
                           "node.openshift.io/os_id=rhcos --minimum-container-ttl-duration=6m0s "
                           "--volume-plugin-dir=/etc/kubernetes/kubelet-plugins/volume/exec "
                           "--cloud-provider= --hostname-override= --provider-id= "
                           "--register-with-taints= --system-reserved=cpu=500m,memory=1Gi,"
                           "ephemeral-storage=1Gi --v=2"),),
    signals=("directory /etc/machine-config-daemon", "/etc/os-release names RHCOS/OpenShift",
             "kubelet --container-runtime-endpoint=/var/run/crio/crio.sock"),
    units=("crio", "kubelet"),
    kubelet_files=(("/etc/kubernetes/kubelet.conf",
                    '{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/'
                    'v1beta1","cgroupDriver":"systemd","containerRuntimeEndpoint":'
                    '"/var/run/crio/crio.sock","systemReserved":{"cpu":"500m",'
                    '"ephemeral-storage":"1Gi","memory":"1Gi"}}\n'),),
    kubelet_unit="kubelet",
    cgroup_driver="systemd (/etc/kubernetes/kubelet.conf)",
    selinux="Enforcing\n",
    labels={"node.openshift.io/os_id": "rhcos", "node-role.kubernetes.io/worker": ""},
    os_image="Red Hat Enterprise Linux CoreOS 9.6.20251023-0 (Plow)",
    cmdline=(f"BOOT_IMAGE=(hd0,gpt3)/boot/ostree/rhcos-{hexid(64, 'ostree')}/vmlinuz-"
             f"{RHCOS_KERNEL} ignition.platform.id=metal "
             f"ostree=/ostree/boot.1/rhcos/{hexid(64, 'ostree')}/0 root=UUID="
             "4f0d3c6e-91a2-4b7e-8f1d-2c5a9e3b7d10 rw rootflags=prjquota "
             "boot=UUID=8c2e5b1a-6d3f-4e9b-a7c4-1f0e2d3b4a59 systemd.unified_cgroup_hierarchy=1 "
             "cgroup_no_v1=all psi=0\n"),
)
CRIO_DEFAULTS = "/etc/crio/crio.conf.d/00-default"
HOOK = "/etc/containers/oci/hooks.d/oci-nvidia-hook.json"
# CRI-O's refusal (https://github.com/NVIDIA/gpu-operator/issues/1298)
CRIO_REFUSAL = ("Failed to create pod sandbox: rpc error: code = Unknown desc = failed to find "
                "runtime handler nvidia from runtime list map[crun:0xc000305680 "
                "runc:0xc000305980]")


def crio_dump() -> str:
    """``crio status config`` of an OpenShift worker, shortened to the runtime tables and
    what surrounds them."""
    return (
        "[crio]\n"
        '  root = "/var/lib/containers/storage"\n'
        '  runroot = "/run/containers/storage"\n'
        '  storage_driver = "overlay"\n'
        '  log_dir = "/var/log/crio/pods"\n'
        '  version_file = "/var/run/crio/version"\n'
        "  [crio.api]\n"
        '    listen = "/var/run/crio/crio.sock"\n'
        "  [crio.runtime]\n"
        '    default_runtime = "crun"\n'
        "    selinux = true\n"
        '    cgroup_manager = "systemd"\n'
        '    conmon_cgroup = "pod"\n'
        '    hooks_dir = ["/etc/containers/oci/hooks.d", "/run/containers/oci/hooks.d", '
        '"/usr/share/containers/oci/hooks.d"]\n'
        "    [crio.runtime.runtimes.crun]\n"
        '      runtime_path = "/usr/bin/crun"\n'
        '      runtime_type = "oci"\n'
        '      runtime_root = "/run/crun"\n'
        '      monitor_path = "/usr/libexec/crio/conmon"\n'
        "      allowed_annotations = [\"io.containers.trace-syscall\"]\n"
        "    [crio.runtime.runtimes.runc]\n"
        '      runtime_path = "/usr/bin/runc"\n'
        '      runtime_type = "oci"\n'
        '      runtime_root = "/run/runc"\n'
        '      monitor_path = "/usr/libexec/crio/conmon"\n'
        "  [crio.image]\n"
        '    pause_image = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:'
        f'{number(10**15, 10**16, "pause")}"\n'
        '    pause_image_auth_file = "/var/lib/kubelet/config.json"\n'
        "  [crio.network]\n"
        '    network_dir = "/etc/kubernetes/cni/net.d/"\n'
        '    plugin_dirs = ["/var/lib/cni/bin"]\n'
        "  [crio.metrics]\n"
        "    enable_metrics = true\n"
        "    metrics_port = 9537\n"
    )


CRIO_00_DEFAULT = (
    "[crio]\n"
    'internal_wipe = true\n'
    'internal_repair = false\n\n'
    "[crio.api]\n"
    "stream_address = \"\"\n"
    "stream_port = \"10010\"\n\n"
    "[crio.runtime]\n"
    "selinux = true\n"
    'conmon = ""\n'
    'conmon_cgroup = "pod"\n'
    'default_env = [\n    "NSS_SDB_USE_CACHE=no",\n]\n'
    'default_runtime = "crun"\n'
    'log_level = "info"\n'
    'cgroup_manager = "systemd"\n'
    'hooks_dir = [\n    "/etc/containers/oci/hooks.d",\n    "/run/containers/oci/hooks.d",\n'
    '    "/usr/share/containers/oci/hooks.d",\n]\n'
    "manage_ns_lifecycle = true\n"
    'absent_mount_sources_to_reject = [\n    "/etc/hostname",\n]\n\n'
    "[crio.runtime.runtimes.runc]\n"
    'runtime_root = "/run/runc"\n\n'
    "[crio.runtime.runtimes.crun]\n"
    'runtime_root = "/run/crun"\n'
)
HOOK_JSON = (
    '{\n    "version": "1.0.0",\n    "hook": {\n        "path": '
    '"/usr/local/nvidia/toolkit/nvidia-container-runtime-hook",\n        "args": '
    '["nvidia-container-runtime-hook", "prestart"],\n        "env": [\n            '
    '"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"\n        ]\n    },\n'
    '    "when": {\n        "always": true,\n        "commands": [".*"]\n    },\n'
    '    "stages": ["prestart"]\n}\n'
)


def hook_operands() -> dict[str, Any]:
    """The operands as the operator renders them for CRI-O with the hook: no
    runtimeClassName, and the toolkit told to set up CRI-O."""
    templates = gpuop.operand_templates()
    out = {}
    for name in NVIDIA_OPERANDS:
        tpl = copy.deepcopy(templates[name])
        tpl.spec.pop("runtimeClassName", None)
        out[name] = tpl
    tpl = copy.deepcopy(templates[TOOLKIT])
    ctr = tpl.spec["containers"][0]
    ctr["env"] = [e for e in ctr["env"] if e["name"] != "RUNTIME"
                  and not e["name"].startswith(("CONTAINERD_", "RUNTIME_"))]
    ctr["env"] += [{"name": "RUNTIME", "value": "crio"},
                   {"name": "CRIO_CONFIG_MODE", "value": "hook"}]
    out[TOOLKIT] = tpl
    return out


def toolkit_hook_log(start: dt.datetime) -> list[LogLine]:
    return oplogs.logrus_lines(start, [
        "Starting nvidia-ctk-installer",
        "Initializing",
        "Installing NVIDIA container toolkit to '/usr/local/nvidia/toolkit'",
        "Installing NVIDIA container toolkit config "
        "'/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml'",
        "Starting 'setup' for crio",
        "Installing prestart hook",
        "Completed 'setup' for crio",
        "Waiting for signal",
    ], step=0.12)


def openshift_crio_no_nvidia_handler(root: Path) -> None:
    """See the module docstring."""
    t = day_old("2026-11-30T13:10:00Z")
    rigs = [replace(r, host=replace(r.host, kernel=RHCOS_KERNEL, kernel_build=RHCOS_BUILD,
                                    os_pretty=OPENSHIFT.os_image)) for r in rigs_of(t)]
    scene = fleet_scene(rigs, t)
    toolkit_logs = {}
    for i, r in enumerate(rigs[1:]):
        ran = kubeadm.ran(plus(t.operands_up, 0.05 + 0.02 * i), inits=1, boot=6.5)
        toolkit_logs[r.name] = {"driver-validation": oplogs.driver_validation(
            ran.init_runs[0][0], L40S.gpu), TOOLKIT_CTR: toolkit_hook_log(ran.main_start)}
    stack = Stack(
        policy_patch={"operator": {"defaultRuntime": "crio"},
                      "cdi": {"enabled": False, "default": False}},
        helm=[gpuop.helm_revision(1, "deployed", t.helm_install, "Install complete",
                                  install_values(operator={"defaultRuntime": "crio"},
                                                 cdi={"enabled": False}))],
        operator_log=operator_log(t, rigs, default_statuses(),
                                  [plus(t.created, -14 * 3600 - 611.7)]),
        templates=hook_operands(),
        logs={TOOLKIT: toolkit_logs},
    )
    install_stack(scene, rigs, t, stack)
    # without CDI the operator creates the nvidia RuntimeClass only
    scene.runtimeclasses = [rc for rc in scene.runtimeclasses
                            if rc["metadata"]["name"] == "nvidia"]
    scene.namespaces.append(_namespace("mig-lab", t))
    # the application of gpu-operator#1298, pinned to gpu-2, with runtimeClassName nvidia
    spec = workload_spec(gpu_container("mig-setup", "registry.example.com/lab/mig-setup:2.3",
                                       {"nvidia.com/gpu": 1}, command=["/usr/bin/mig-setup"],
                                       cpu="2", memory="4Gi"),
                         node_selector={"kubernetes.io/hostname": "gpu-2"})
    spec["runtimeClassName"] = "nvidia"
    created = plus(t.created, -2 * 3600 - 311.6)
    pod = place_pod(scene, rigs[2].host,
                    metadata=meta("Pod", "mig-setup-7d9c6b5f4-x2kqp", "mig-lab", created=created,
                                  labels={"app": "mig-setup", "pod-template-hash": "7d9c6b5f4"},
                                  owners=owned("ReplicaSet", "mig-setup-7d9c6b5f4", "mig-lab"),
                                  generate_name="mig-setup-7d9c6b5f4-"),
                    spec=spec, outcome=Stuck(plus(created, 0.03)))
    for event in scene.events:
        if event.get("involvedObject", {}).get("uid") == pod["metadata"]["uid"] and \
                event.get("reason") == "FailedCreatePodSandBox":
            event["message"] = CRIO_REFUSAL
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs))

    def state(rig: Rig, _now: dt.datetime) -> DistroState:
        crio = Journal(rig.host, "crio.service")
        kubelet = Journal(rig.host, "kubelet.service")
        boot = plus(rig.host.boot_at, 17.3)
        return DistroState(rig, OPENSHIFT, {}, crio, kubelet, {"crio": boot, "kubelet": boot},
                           crio_dump=crio_dump(),
                           crio_files={CRIO_DEFAULTS: CRIO_00_DEFAULT, HOOK: HOOK_JSON},
                           cdi=False, cdi_management=False)  # CDI is off

    node_writers(scene, rigs, state)
    finish(scene, root, "ocp-gpu", OPENSHIFT, OPENSHIFT)
