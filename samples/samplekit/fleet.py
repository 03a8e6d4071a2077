"""Small data-center clusters with multi-GPU nodes, for the samples beyond the lab.

A fleet is a kubeadm cluster (one control-plane node, GPU servers with 2-8 cards of
one model, Ubuntu 24.04, containerd 1.6, host driver 570.195.03) on which the GPU
Operator v26.3.3 was installed with ``driver.enabled=false`` more than a week
before collection: the operands have been Running since then, their logs inside
``--since=168h`` are nearly empty, and the journals hold only the last week.
Scenarios add what went wrong on top (``scenarios_runtime.py``,
``scenarios_numbers.py``).

What the collector itself leaves on a node is shown too: ``kubectl debug node/<n>``
starts a ``node-debugger-*`` pod whose sandbox appears in the journals it reads.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from . import containerd, dcgpu, gpuop, host, journal, kubeadm, oplogs
from .core import Bundle, k8s_suffix, klog_text, number, plus, uid
from .dcgpu import Card, Slot
from .k8s import (
    DEFAULT_TOLERATIONS,
    Obj,
    container,
    event_scheduler,
    meta,
    node_obj,
    owner_ref,
    pod_obj,
    pod_spec,
    status_unschedulable,
)
from .model import Host
from .scene import LogLine, SandboxAttempt, Scene, write_scene
from .workloads import Outcome, Ran, Template, add_daemonset, add_deployment, place_pod

PYTORCH = "nvcr.io/nvidia/pytorch:25.10-py3"
TRITON = "nvcr.io/nvidia/tritonserver:25.10-py3"
CUDA = "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04"
DEBUG_IMAGE = "docker.io/library/busybox:1.37"


@dataclass(frozen=True)
class Rig:
    """A node and the GPUs in it (none for the control plane)."""

    host: Host
    slots: tuple[Slot, ...] = ()

    @property
    def name(self) -> str:
        return self.host.name


def server(
    name: str,
    index: int,
    card: Card,
    count: int,
    *,
    machine: str,
    boot_at: dt.datetime,
    cpu_vendor: str = "AMD",
    cpus: int = 64,
    memory_ki: int = 528_195_124,
) -> Rig:
    """A GPU server ``name`` (pod CIDR ``10.244.<index>.0/24``) with ``count`` cards."""
    slots = tuple(dcgpu.install(name, card, count))
    h = Host(
        name=name,
        ip=f"10.20.0.{10 + index}",
        pod_cidr_index=index,
        cpus=cpus,
        memory_ki=memory_ki,
        storage_ki=1_874_802_328,
        machine_product=machine,
        cpu_vendor=cpu_vendor,
        boot_at=boot_at,
        containerd_pid=number(1100, 1400, "containerd-pid", name),
        kubelet_pid=number(1800, 2100, "kubelet-pid", name),
        gpu=slots[0].gpu,
        extra_pci_vendors=("14e4", "15b3") if cpu_vendor == "AMD" else ("8086", "15b3"),
    )
    return Rig(h, slots)


def control_plane(boot_at: dt.datetime) -> Rig:
    return Rig(
        Host(
            name="cp-1",
            ip="10.20.0.10",
            pod_cidr_index=0,
            cpus=8,
            memory_ki=32_774_416,
            storage_ki=205_314_024,
            machine_product="PowerEdge R660xs",
            cpu_vendor="Intel",
            boot_at=boot_at,
            containerd_pid=903,
            kubelet_pid=1187,
            control_plane=True,
            extra_pci_vendors=("8086", "14e4"),
        )
    )


@dataclass(frozen=True)
class Timeline:
    """When the cluster was built, the operator installed, and the bundle collected."""

    cluster_init: dt.datetime
    helm_install: dt.datetime
    created: dt.datetime

    def joined(self, rigs: list[Rig]) -> dict[str, dt.datetime]:
        return {
            r.name: plus(self.cluster_init, 0 if r.host.control_plane else 170 + 50 * i)
            for i, r in enumerate(rigs)
        }

    @property
    def operands_up(self) -> dt.datetime:
        return plus(self.helm_install, 17.2)


def fleet_scene(rigs: list[Rig], t: Timeline) -> Scene:
    """The cluster before anything GPU-specific: kubeadm, flannel, CoreDNS."""
    scene = Scene(hosts=[r.host for r in rigs], created_at=t.created,
                  version=kubeadm.version_json())
    kubeadm.namespaces(scene, t.cluster_init, plus(t.helm_install, 0.5), plus(t.cluster_init, 80))
    kubeadm.control_plane(scene, t.cluster_init)
    kubeadm.node_daemonsets(scene, t.cluster_init, t.joined(rigs))
    return scene


# ----------------------------------------------------------------------- the operator


def deep_merge(into: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            deep_merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)
    return into


def set_env(tpl: Template, container_name: str, **env: str) -> Template:
    """A copy of ``tpl`` with environment values of one container replaced or added."""
    out = copy.deepcopy(tpl)
    for c in out.spec.get("initContainers", []) + out.spec["containers"]:
        if c["name"] != container_name:
            continue
        entries = c.setdefault("env", [])
        for key, value in env.items():
            for entry in entries:
                if entry["name"] == key:
                    entry["value"] = value
                    break
            else:
                entries.append({"name": key, "value": value})
    return out


def with_config_manager(tpl: Template, main: str, default_key: str) -> Template:
    """What the operator does to the device plugin and GFD when ``devicePlugin.config``
    names a ConfigMap: an init container copies the node's config key into place,
    a sidecar follows the ``nvidia.com/device-plugin.config`` node label."""
    out = copy.deepcopy(tpl)

    def manager(name: str, oneshot: bool) -> Obj:
        env = {
            "ONESHOT": "true" if oneshot else "false",
            "KUBECONFIG": "",
            "NODE_NAME": "",
            "NODE_LABEL": "nvidia.com/device-plugin.config",
            "CONFIG_FILE_SRCDIR": "/available-configs",
            "CONFIG_FILE_DST": "/config/config.yaml",
            "DEFAULT_CONFIG": default_key,
            "FALLBACK_STRATEGIES": "empty",
            "SEND_SIGNAL": "false" if oneshot else "true",
            "SIGNAL": "" if oneshot else "1",
            "PROCESS_TO_SIGNAL": "" if oneshot else main,
        }
        return container(name, gpuop.IMG_PLUGIN, command=["config-manager"], env=env,
                         privileged=True)

    out.spec["initContainers"] = out.spec.get("initContainers", []) + [
        manager("config-manager-init", True)
    ]
    out.spec["containers"] = out.spec["containers"] + [manager("config-manager", False)]
    out.spec["shareProcessNamespace"] = True
    return set_env(out, out.spec["containers"][0]["name"], CONFIG_FILE="/config/config.yaml")


def tolerating(tpl: Template, tolerations: list[Obj]) -> Template:
    if not tolerations:
        return tpl
    out = copy.deepcopy(tpl)
    out.spec["tolerations"] = out.spec.get("tolerations", []) + copy.deepcopy(tolerations)
    return out


def settled(start: dt.datetime, inits: int) -> Ran:
    """An operand pod that came up at install time and has run since."""
    return kubeadm.ran(start, inits=inits, boot=6.5)


STANDARD_OPERANDS = (
    "nvidia-container-toolkit-daemonset",
    "nvidia-operator-validator",
    "nvidia-device-plugin-daemonset",
    "nvidia-dcgm-exporter",
    "gpu-feature-discovery",
)


@dataclass
class Stack:
    """How the GPU Operator looks in a fleet: policy, history and operand outcomes."""

    policy_patch: dict[str, Any] = field(default_factory=dict)
    helm: list[dict[str, Any]] = field(default_factory=list)
    skip: frozenset[str] = frozenset()  # operand DaemonSets the policy does not deploy
    # operand name -> node -> outcome, replacing the settled pod there
    outcomes: dict[str, dict[str, Outcome]] = field(default_factory=dict)
    logs: dict[str, dict[str, dict[str, list[LogLine]]]] = field(default_factory=dict)
    templates: dict[str, Template] = field(default_factory=dict)  # replaced templates
    generations: dict[str, int] = field(default_factory=dict)
    ready: bool = True
    not_ready: list[str] = field(default_factory=list)
    statuses: dict[str, str] | None = None  # operator's per-state status in its log
    policy_generation: int = 1
    since: dt.datetime | None = None  # the ClusterPolicy's last condition change
    tolerations: list[Obj] = field(default_factory=list)  # for tainted GPU nodes
    operator_log: list[LogLine] = field(default_factory=list)


def default_statuses() -> dict[str, str]:
    out = {
        s: "ready"
        for s in (
            "pre-requisites",
            "state-operator-metrics",
            "state-container-toolkit",
            "state-operator-validation",
            "state-device-plugin",
            "state-mps-control-daemon",
            "state-dcgm-exporter",
            "gpu-feature-discovery",
            "state-mig-manager",
        )
    }
    return out


GFD_LAST_RUN_S = -41.0  # GFD's last labelling run before collection


def gfd_rounds(last: dt.datetime, keep: int = 2) -> list[LogLine]:
    """The tail of a long-running GFD's log: its one-minute loop, last ``keep`` rounds."""
    out: list[LogLine] = []
    for k in range(keep - 1, -1, -1):
        t = plus(last, -oplogs.GFD_PERIOD * k)
        out.append(LogLine(t, oplogs.klog_plain(t, "main.go:281", "Creating Labels")))
        s = plus(t, 0.31)
        out.append(LogLine(s, oplogs.klog_plain(s, "main.go:294", "Sleeping for 1m0s")))
    return out


def install_stack(scene: Scene, rigs: list[Rig], t: Timeline, stack: Stack) -> None:
    """NFD, the operator, RuntimeClasses, ConfigMaps, ClusterPolicy, Helm history and
    the operand DaemonSets, with settled pods unless ``stack.outcomes`` says otherwise."""
    cp = next(r for r in rigs if r.host.control_plane)
    gpu_rigs = [r for r in rigs if r.slots]
    nfd = {role: tolerating(tpl, stack.tolerations) for role, tpl in gpuop.nfd_templates().items()}
    workers: dict[str, Outcome] = {
        r.name: kubeadm.ran(plus(t.helm_install, 2.1 + 0.4 * i), boot=5.2)
        for i, r in enumerate(rigs)
    }
    add_daemonset(scene, nfd["worker"], created=plus(t.helm_install, 2), pods=workers)
    master = kubeadm.ran(plus(t.helm_install, 2.0), boot=4.8)
    gc = kubeadm.ran(plus(t.helm_install, 2.0), boot=5.5)
    add_deployment(scene, nfd["master"], created=plus(t.helm_install, 1.9),
                   pods=[(cp.name, master)])
    add_deployment(scene, nfd["gc"], created=plus(t.helm_install, 1.9),
                   pods=[(gpu_rigs[0].name, gc)])
    add_deployment(
        scene,
        gpuop.operator_template(),
        created=plus(t.helm_install, 1.9),
        pods=[(cp.name, kubeadm.ran(plus(t.helm_install, 2.0), boot=8.0))],
        logs=[{"gpu-operator": stack.operator_log}],
    )
    scene.runtimeclasses += gpuop.runtime_classes(plus(t.helm_install, 16.4))
    scene.configmaps += gpuop.configmaps(plus(t.helm_install, 0.8))

    templates = gpuop.operand_templates() | stack.templates
    owners = gpuop.cluster_policy_owner()
    mig_nodes = [r for r in gpu_rigs if r.slots[0].card.mig_capable]
    names = list(STANDARD_OPERANDS) + ["nvidia-device-plugin-mps-control-daemon",
                                       "nvidia-mig-manager"]
    for extra in stack.templates:
        if extra not in names:
            names.insert(0, extra)
    for name in names:
        if name in stack.skip:
            continue
        tpl = tolerating(templates[name], stack.tolerations)
        inits = len(tpl.spec.get("initContainers", []))
        if name == "nvidia-device-plugin-mps-control-daemon":
            targets: list[Rig] = []
        elif name == "nvidia-mig-manager":
            targets = mig_nodes
        else:
            targets = gpu_rigs
        pods: dict[str, Outcome] = {}
        logs = dict(stack.logs.get(name, {}))
        for i, r in enumerate(targets):
            override = stack.outcomes.get(name, {}).get(r.name)
            pods[r.name] = override or settled(plus(t.operands_up, 0.05 + 0.02 * i), inits)
            if name == "gpu-feature-discovery" and r.name not in logs:
                logs[r.name] = {name: gfd_rounds(plus(t.created, GFD_LAST_RUN_S))}
        add_daemonset(
            scene,
            tpl,
            created=t.operands_up,
            owners=owners,
            pods=pods,
            logs=logs,
            generation=stack.generations.get(name, 1),
        )

    policy = gpuop.cluster_policy(
        created=plus(t.helm_install, 1.7),
        toolkit=True,
        generation=stack.policy_generation,
        ready=stack.ready,
        since=stack.since or plus(t.helm_install, 95.3),
        not_ready_states=stack.not_ready,
    )
    deep_merge(policy["spec"], stack.policy_patch)
    policy["spec"]["daemonsets"]["tolerations"] += copy.deepcopy(stack.tolerations)
    scene.clusterpolicies.append(policy)
    scene.helm["gpu-operator"] = stack.helm


def install_values(**extra: Any) -> dict[str, Any]:
    """User-supplied values of a host-driver install, plus ``extra``."""
    return deep_merge({"driver": {"enabled": False}}, extra)


def operator_log(t: Timeline, rigs: list[Rig], statuses: dict[str, str],
                 resync: list[dt.datetime]) -> list[LogLine]:
    """The operator's reconciles inside the log window (controller-runtime resyncs every
    10 h, and on every watched change)."""
    hosts = [r.host for r in rigs]
    out: list[LogLine] = []
    for when in resync:
        out += oplogs.reconcile(when, hosts, statuses)
    return out


# ----------------------------------------------------------------------------- nodes


def gfd_labels(rig: Rig, when: dt.datetime, **override: str) -> dict[str, str]:
    labels = gpuop.gfd_labels(rig.host, when)
    labels["nvidia.com/gpu.count"] = str(len(rig.slots))
    labels["nvidia.com/mig.capable"] = "true" if rig.slots[0].card.mig_capable else "false"
    labels.update(override)
    return labels


def add_nodes(
    scene: Scene,
    rigs: list[Rig],
    t: Timeline,
    *,
    resources: Mapping[str, Mapping[str, tuple[int | None, int | None]]],
    labels: Mapping[str, Mapping[str, str]] | None = None,
    taints: Mapping[str, list[Obj]] | None = None,
    gfd_at: dt.datetime | None = None,
) -> None:
    """Node objects. ``resources`` gives per node each advertised resource's
    (capacity, allocatable); a resource not listed is absent from the Node."""
    joined = t.joined(rigs)
    gfd_at = gfd_at or plus(t.created, GFD_LAST_RUN_S)
    for r in rigs:
        h = r.host
        node_labels = {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": h.name,
            "kubernetes.io/os": "linux",
        }
        if h.control_plane:
            node_labels["node-role.kubernetes.io/control-plane"] = ""
            node_labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
        node_labels |= gpuop.nfd_labels(h) | gpuop.operator_labels(h)
        if r.slots and r.slots[0].card.mig_capable:
            node_labels["nvidia.com/gpu.deploy.mig-manager"] = "true"
            node_labels["nvidia.com/mig.config"] = "all-disabled"
            node_labels["nvidia.com/mig.config.state"] = "success"
        if r.slots:
            node_labels |= gfd_labels(r, gfd_at)
        node_labels |= dict((labels or {}).get(h.name, {}))
        mac = ":".join(f"{number(0, 255, 'vtep', h.name, i):02x}" for i in range(6))
        annotations = {
            "flannel.alpha.coreos.com/backend-data": f'{{"VNI":1,"VtepMAC":"{mac}"}}',
            "flannel.alpha.coreos.com/backend-type": "vxlan",
            "flannel.alpha.coreos.com/kube-subnet-manager": "true",
            "flannel.alpha.coreos.com/public-ip": h.ip,
            "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///var/run/containerd/containerd.sock",
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        }
        node = node_obj(
            h,
            created=joined[h.name],
            labels=node_labels,
            annotations=annotations,
            gpus=None,
            ready_at=plus(joined[h.name], 26),
            heartbeat=plus(t.created, -7),
        )
        status = node["status"]
        for resource, (cap, alloc) in sorted(resources.get(h.name, {}).items()):
            if cap is not None:
                status["capacity"][resource] = str(cap)
            if alloc is not None:
                status["allocatable"][resource] = str(alloc)
        status["capacity"] = dict(sorted(status["capacity"].items()))
        status["allocatable"] = dict(sorted(status["allocatable"].items()))
        extra_taints = (taints or {}).get(h.name)
        if extra_taints:
            node["spec"]["taints"] = node["spec"].get("taints", []) + extra_taints
        scene.nodes.append(node)


def gpu_resources(rigs: list[Rig], **per_node: Mapping[str, tuple[int | None, int | None]]
                  ) -> dict[str, dict[str, tuple[int | None, int | None]]]:
    """``nvidia.com/gpu`` = number of cards on every GPU node, unless ``per_node``
    (keyed by node name with ``-`` written ``_``) says otherwise."""
    out: dict[str, dict[str, tuple[int | None, int | None]]] = {}
    for r in rigs:
        if not r.slots:
            continue
        given = per_node.get(r.name.replace("-", "_"))
        out[r.name] = dict(given) if given is not None else {
            "nvidia.com/gpu": (len(r.slots), len(r.slots))
        }
    return out


# ------------------------------------------------------------------------ workloads


def gpu_container(name: str, image: str, resources: Mapping[str, int], *,
                  command: list[str] | None = None, args: list[str] | None = None,
                  cpu: str = "16", memory: str = "128Gi") -> Obj:
    """A container with GPU limits (requests equal, as the API server defaults them)."""
    limits = {"cpu": cpu, "memory": memory} | {k: str(v) for k, v in resources.items()}
    return container(name, image, command=command, args=args,
                     resources={"limits": limits, "requests": dict(limits)})


def workload_spec(c: Obj, *, tolerations: list[Obj] | None = None,
                  node_selector: dict[str, str] | None = None,
                  restart_policy: str = "Always") -> Obj:
    return pod_spec(
        [c],
        tolerations=(tolerations or []) + [dict(x) for x in DEFAULT_TOLERATIONS],
        node_selector=node_selector,
        restart_policy=restart_policy,
    )


def owned(kind: str, name: str, namespace: str, api: str = "apps/v1") -> list[Obj]:
    return [owner_ref(api, kind, name, uid(kind, namespace, name))]


def run_pod(scene: Scene, rig: Rig, *, name: str, namespace: str, spec: Obj,
            started: dt.datetime, labels: dict[str, str] | None = None,
            owners: list[Obj] | None = None, generate_name: str | None = None) -> Obj:
    """A workload pod scheduled at ``started`` and Running since."""
    sandbox = plus(started, 0.42)
    main = plus(sandbox, 3.7 + 9 * (number(0, 100, "pull", namespace, name) / 100))
    outcome = Ran(started, sandbox, (), main, ready=plus(main, 1))
    metadata = meta("Pod", name, namespace, created=plus(started, -0.05), labels=labels,
                    owners=owners, generate_name=generate_name)
    return place_pod(scene, rig.host, metadata=metadata, spec=spec, outcome=outcome)


def pending_pod(scene: Scene, *, name: str, namespace: str, spec: Obj, created: dt.datetime,
                message: str, last: dt.datetime, attempts: int,
                labels: dict[str, str] | None = None,
                owners: list[Obj] | None = None) -> Obj:
    """A pod the scheduler keeps rejecting with ``message`` (FailedScheduling with a
    series: the events.k8s.io recorder folds repeats into one event)."""
    metadata = meta("Pod", name, namespace, created=created, labels=labels, owners=owners)
    pod = pod_obj(metadata, spec, status_unschedulable(spec, plus(created, 0.02), message))
    scene.pods.append(pod)
    scene.events.append(
        event_scheduler(pod, "FailedScheduling", message, first=plus(created, 0.02),
                        action="Scheduling", warning=True, series=(attempts, last))
    )
    for c in spec["containers"]:
        scene.log(namespace, name, c["name"], [])  # unscheduled: kubectl logs prints nothing
    return pod


def prune_logs(scene: Scene) -> None:
    """Keep the logs the collector takes: every container in the operator namespace,
    and GPU-requesting pods elsewhere that are not Running."""
    keep_pods = set()
    for pod in scene.pods:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        if ns == scene.operator_namespace:
            keep_pods.add((ns, name))
            continue
        wants = any(
            k.startswith("nvidia.com/")
            for c in pod["spec"]["containers"]
            for k in c.get("resources", {}).get("limits", {})
        )
        if wants and pod["status"].get("phase") != "Running":
            keep_pods.add((ns, name))
    scene.logs = [log for log in scene.logs if (log.namespace, log.pod) in keep_pods]


# ----------------------------------------------------------------------- node files


@dataclass
class RigState:
    """What the collector finds on one GPU node; journals are filled by the scenario."""

    rig: Rig
    config_files: dict[str, str]
    containerd_journal: journal.Journal
    kubelet_journal: journal.Journal
    dmesg_extra: list[tuple[dt.datetime, str]] = field(default_factory=list)
    smi_slots: tuple[Slot, ...] | None = None  # what nvidia-smi can still see
    containerd_started: dt.datetime | None = None
    containerd_pid: int | None = None
    restarts: int = 0
    cdi: bool = True  # the device plugin wrote its CDI spec
    # Overrides for nodes whose driver or GPUs are not healthy (None: the default file).
    dmesg: str | None = None  # the whole filtered dmesg.txt
    smi_xml: str | None = None  # the whole nvidia-smi.xml
    smi_error: tuple[int, str] | None = None  # nvidia-smi failed: (exit code, message)
    modules: str | None = None  # host/modules.txt
    secureboot: str | None = None  # host/secureboot.txt (mokutil --sb-state)
    unattended: str | None = None  # host/unattended-upgrades.txt
    fm_journal: journal.Journal | None = None  # the nvidia-fabricmanager unit exists
    cdi_files: dict[str, str] | None = None  # file name under /var/run/cdi -> content
    # format 1.1 host files (name under host/ -> content), written after the others
    host_files: dict[str, str] = field(default_factory=dict)


_DUMPS: dict[tuple[tuple[str, str], ...], str] = {}


def config_dump(files: dict[str, str]) -> str:
    """``containerd config dump`` of these files (run once per distinct set)."""
    key = tuple(sorted(files.items()))
    if key not in _DUMPS:
        _DUMPS[key] = containerd.config_dump(files)
    return _DUMPS[key]


def toolkit_config() -> dict[str, str]:
    """``config.toml`` and ``conf.d/99-nvidia.toml`` as the toolkit left them."""
    fresh = containerd.fresh_config()
    return containerd.toolkit_files(fresh, config_dump({containerd.MAIN: fresh}))


def base_state(scene: Scene, rig: Rig, files: dict[str, str]) -> RigState:
    """Journals with the node's CRI traffic inside the window (from the pods placed on
    it) and the collector's own debug pod."""
    h = rig.host
    ctd = journal.Journal(h, "containerd.service")
    kubelet = journal.Journal(h, "kubelet.service")
    cutoff = plus(scene.created_at, -168 * 3600)
    attempts = [a for a in scene.sandbox_attempts.get(h.name, []) if a.at >= cutoff]
    journal.containerd_sandbox_lines(ctd, attempts, lambda _t: h.containerd_pid)
    journal.kubelet_sandbox_failures(kubelet, attempts)
    return RigState(rig, files, ctd, kubelet)


def debug_pod(state: RigState, when: dt.datetime) -> None:
    """``kubectl debug node/<n>``: the collector's pod, seen by the node it runs on."""
    h = state.rig.host
    name = f"node-debugger-{h.name}-{k8s_suffix(5, 'debugger', h.name, when.isoformat())}"
    pod_uid = uid("Pod", "default", name)
    attempt = SandboxAttempt(when, name, "default", pod_uid, "runc", ok=True,
                             containers=[("debugger", plus(when, 1.37))])
    pid = state.containerd_pid or h.containerd_pid
    journal.containerd_sandbox_lines(state.containerd_journal, [attempt], lambda _t: pid)
    k = state.kubelet_journal
    t = plus(when, -0.21)
    line = klog_text(t, "I", h.kubelet_pid, "kubelet.go:2484",
                     f'"SyncLoop ADD" source="api" pods=["default/{name}"]')
    k.daemon(t, h.kubelet_pid, line)


def _cdi_plugin_json(slots: tuple[Slot, ...]) -> str:
    """/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json for every card of the node."""
    spec = {
        "cdiVersion": "0.5.0",
        "kind": "k8s.device-plugin.nvidia.com/gpu",
        "devices": [
            {
                "name": s.uuid,
                "containerEdits": {
                    "deviceNodes": [
                        {"path": f"/dev/nvidia{s.index}", "hostPath": f"/dev/nvidia{s.index}"}
                    ]
                },
            }
            for s in slots
        ],
        "containerEdits": host._cdi_edits(),
    }
    return json.dumps(spec, separators=(",", ":"))


def write_rig(bundle: Bundle, state: RigState) -> None:
    """Every node path of bundle-format.md for a multi-GPU node."""
    rig = state.rig
    h = rig.host
    base = f"nodes/{h.name}"

    def add(path: str, content: str, command: list[str]) -> None:
        bundle.add(f"{base}/{path}", content, command, node=h.name)

    add("containerd/config-dump.toml", config_dump(state.config_files),
        ["containerd", "config", "dump"])
    add("containerd/version.txt", containerd.version_text(), ["containerd", "--version"])
    add("containerd/files/etc/containerd/config.toml", state.config_files[containerd.MAIN],
        ["cat", containerd.MAIN])
    for path in sorted(p for p in state.config_files if p != containerd.MAIN):
        add(f"containerd/files{path}", state.config_files[path], ["cat", path])
    add("journal/containerd.jsonl", state.containerd_journal.render(),
        ["journalctl", "-u", "containerd", "-o", "json", "--since", "-168h"])
    add("journal/kubelet.jsonl", state.kubelet_journal.render(),
        ["journalctl", "-u", "kubelet", "-o", "json", "--since", "-168h"])
    if state.fm_journal is not None:
        add("journal/nvidia-fabricmanager.jsonl", state.fm_journal.render(),
            ["journalctl", "-u", "nvidia-fabricmanager", "-o", "json", "--since", "-168h"])
    dmesg = state.dmesg
    if dmesg is None:
        dmesg = dcgpu.dmesg_lines(h, list(rig.slots), state.dmesg_extra)
    add("dmesg.txt", dmesg, ["dmesg", "--time-format", "iso"])
    if state.smi_error is not None:
        code, message = state.smi_error
        bundle.fail(f"{base}/nvidia-smi.xml", ["nvidia-smi", "-q", "-x"], message,
                    exit_code=code, node=h.name)
    elif state.smi_xml is not None:
        add("nvidia-smi.xml", state.smi_xml, ["nvidia-smi", "-q", "-x"])
    else:
        seen = state.smi_slots if state.smi_slots is not None else rig.slots
        add("nvidia-smi.xml", dcgpu.nvidia_smi_xml(list(seen), bundle.now(), len(rig.slots)),
            ["nvidia-smi", "-q", "-x"])
    add(
        "systemd/containerd.txt",
        host.systemctl_show(
            state.containerd_pid or h.containerd_pid,
            state.containerd_started or plus(h.boot_at, 9.1),
            state.restarts,
        ),
        ["systemctl", "show", "containerd", "-p",
         "Restart,RestartUSec,NRestarts,ActiveState,SubState,ExecMainPID,ExecMainStartTimestamp"],
    )
    add("host/uname.txt", host.uname(h), ["uname", "-a"])
    add("host/os-release", host.os_release(h), ["cat", "/etc/os-release"])
    add("host/cmdline", host.cmdline(h).replace("quiet splash vt.handoff=7", "iommu=pt"),
        ["cat", "/proc/cmdline"])
    modules = state.modules if state.modules is not None else host.proc_modules()
    add("host/modules.txt", modules, ["grep", "-E", "^(nvidia|nouveau)", "/proc/modules"])
    add("host/secureboot.txt", state.secureboot or "SecureBoot disabled\n",
        ["mokutil", "--sb-state"])
    bundle.fail(
        f"{base}/host/nvidia-ctk.txt",
        ["sh", "-c", "command -v nvidia-ctk; nvidia-ctk --version"],
        "sh: 1: nvidia-ctk: not found",
        exit_code=127,
        node=h.name,
    )
    add("host/unattended-upgrades.txt", state.unattended or host.unattended_upgrades(),
        ["tail", "-n", "+1", "/etc/apt/apt.conf.d/20auto-upgrades",
         "/etc/apt/apt.conf.d/50unattended-upgrades"])
    cdi = {"management.nvidia.com-gpu.yaml": host.cdi_management_yaml()}
    if state.cdi:
        cdi["k8s.device-plugin.nvidia.com-gpu.json"] = _cdi_plugin_json(rig.slots)
    if state.cdi_files is not None:
        cdi = dict(state.cdi_files)
    if not cdi:
        bundle.fail(f"{base}/cdi", ["sh", "-c", "ls /etc/cdi/* /var/run/cdi/*"],
                    "ls: cannot access '/etc/cdi/*': No such file or directory\n"
                    "ls: cannot access '/var/run/cdi/*': No such file or directory",
                    exit_code=2, node=h.name)
    for name, content in sorted(cdi.items()):
        add(f"cdi/{name}", content, ["cat", f"/var/run/cdi/{name}"])
    for name, content in sorted(state.host_files.items()):
        add(f"host/{name}", content, HOST_FILE_COMMANDS[name])


# The collector's commands for the format 1.1 host files a scenario may add.
HOST_FILE_COMMANDS = {
    "lspci.txt": ["lspci", "-nnk", "-d", "10de:"],
    "nvidia-driver-version.txt": ["cat", "/proc/driver/nvidia/version"],
}


StateOf = Callable[[Rig, dt.datetime], RigState]


def node_writers(scene: Scene, rigs: list[Rig], state_of: StateOf) -> None:
    for r in rigs:
        if r.slots:
            scene.node_writers[r.name] = partial(_write, state_of, r)


def _write(state_of: StateOf, rig: Rig, bundle: Bundle) -> None:
    state = state_of(rig, bundle.now())
    debug_pod(state, plus(bundle.now(), -2.6))
    write_rig(bundle, state)


def emit(scene: Scene, root: Path, context: str, redaction: dict[str, int] | None = None) -> None:
    bundle = Bundle(
        root,
        created_at=scene.created_at,
        context=context,
        server_version=kubeadm.K8S,
        operator_namespace=gpuop.NS,
        options={"since": "168h", "log_tail_lines": 5000, "node_mode": "debug-pod", "redact": True},
        redaction_counts=redaction or {"env-values": 0, "configmap-values": 0, "helm-values": 0},
    )
    prune_logs(scene)
    write_scene(scene, bundle)
    bundle.write_manifest()


