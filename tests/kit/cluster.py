"""Inline GPU Operator clusters for the OP rule tests.

``Cluster`` starts healthy (every operand Running or Completed on every GPU node, a
ready ClusterPolicy, containerd with the nvidia runtime) and each test breaks one
thing. Container states are written as short strings:

``done`` terminated with exit code 0 · ``running`` · ``error`` terminated with exit
code 1 · ``waiting:<Reason>[:<message>]`` · ``new`` no status yet (not started).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kit.bundles import kube_list, kube_node, smi_log
from kit.objects import DUMP_WITH_NVIDIA

NS = "gpu-operator"
DEPLOY = ("driver", "gpu-feature-discovery", "container-toolkit", "device-plugin",
          "dcgm-exporter", "operator-validator")
VALIDATOR_INITS = ("driver-validation", "toolkit-validation", "cuda-validation",
                   "plugin-validation")
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# (app label, init containers, main containers, runtimeClassName)
OPERANDS: dict[str, tuple[tuple[str, ...], tuple[str, ...], str | None]] = {
    "nvidia-driver-daemonset": (("k8s-driver-manager",), ("nvidia-driver-ctr",), None),
    "nvidia-container-toolkit-daemonset": (("driver-validation",),
                                           ("nvidia-container-toolkit-ctr",), None),
    "nvidia-operator-validator": (VALIDATOR_INITS, ("nvidia-operator-validator",), "nvidia"),
    "nvidia-device-plugin-daemonset": (("toolkit-validation",), ("nvidia-device-plugin",),
                                       "nvidia"),
    "gpu-feature-discovery": (("toolkit-validation",), ("gpu-feature-discovery",), "nvidia"),
    "nvidia-dcgm-exporter": (("toolkit-validation",), ("nvidia-dcgm-exporter",), "nvidia"),
    "nvidia-dcgm": (("toolkit-validation",), ("nvidia-dcgm-ctr",), "nvidia"),
    "nvidia-cuda-validator": (("cuda-validation",), ("nvidia-cuda-validator",), "nvidia"),
    "nvidia-mig-manager": (("toolkit-validation",), ("nvidia-mig-manager",), "nvidia"),
}
# Operands every healthy GPU node runs in these tests.
DEFAULT_APPS = ("nvidia-driver-daemonset", "nvidia-container-toolkit-daemonset",
                "nvidia-operator-validator", "nvidia-device-plugin-daemonset",
                "gpu-feature-discovery", "nvidia-dcgm-exporter")
APP_DEPLOY = {
    "nvidia-driver-daemonset": "driver",
    "nvidia-container-toolkit-daemonset": "container-toolkit",
    "nvidia-operator-validator": "operator-validator",
    "nvidia-device-plugin-daemonset": "device-plugin",
    "gpu-feature-discovery": "gpu-feature-discovery",
    "nvidia-dcgm-exporter": "dcgm-exporter",
}


def state(spec: str) -> dict[str, Any]:
    kind, _, rest = spec.partition(":")
    if kind == "done":
        return {"terminated": {"exitCode": 0, "reason": "Completed"}}
    if kind == "error":
        return {"terminated": {"exitCode": 1, "reason": "Error"}}
    if kind == "running":
        return {"running": {"startedAt": "2026-11-29T13:00:00Z"}}
    if kind == "waiting":
        reason, _, message = rest.partition(":")
        detail = {"reason": reason}
        if message:
            detail["message"] = message
        return {"waiting": detail}
    raise ValueError(spec)


def pod_name(app: str, node: str) -> str:
    return f"{app}-{node}"


def operand_pod(app: str, node: str, *, inits: dict[str, str] | None = None,
                mains: dict[str, str] | None = None, phase: str | None = None,
                image: str | None = None, env: dict[str, str] | None = None,
                restarts: int = 0, bound: bool = True) -> dict[str, Any]:
    """An operand pod on ``node``; unspecified containers are done (inits) / running."""
    init_names, main_names, runtime = OPERANDS[app]
    inits = inits or {}
    mains = mains or {}
    spec: dict[str, Any] = {
        "initContainers": [{"name": n, "image": "nvcr.io/nvidia/gpu-operator:v26.3.3"}
                           for n in init_names],
        "containers": [{"name": n, "image": image or f"nvcr.io/nvidia/{app}:1",
                        "env": [{"name": k, "value": v} for k, v in (env or {}).items()]}
                       for n in main_names],
        "tolerations": [GPU_TOLERATION],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
    }
    if bound:
        spec["nodeName"] = node
    if runtime:
        spec["runtimeClassName"] = runtime
    init_statuses: list[dict[str, Any]] = []
    for name in init_names:
        wanted = inits.get(name, "done")
        if wanted == "new":
            continue
        init_statuses.append({"name": name, "ready": wanted == "done", "restartCount": 0,
                              "state": state(wanted)})
    main_statuses: list[dict[str, Any]] = []
    for name in main_names:
        wanted = mains.get(name, "running" if not any(v != "done" for v in inits.values())
                           else "waiting:PodInitializing")
        if wanted == "new":
            continue
        main_statuses.append({"name": name, "ready": wanted == "running",
                              "restartCount": restarts, "state": state(wanted)})
    running = all(s["state"].get("running") for s in main_statuses) and main_statuses
    status: dict[str, Any] = {"phase": phase or ("Running" if running else "Pending"),
                              "initContainerStatuses": init_statuses,
                              "containerStatuses": main_statuses}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name(app, node), "namespace": NS,
                         "labels": {"app": app}},
            "spec": spec, "status": status}


def gpu_node(name: str, *, gpus: int = 1, labels: dict[str, str] | None = None,
             drop: tuple[str, ...] = (), taints: list[dict[str, str]] | None = None,
             unschedulable: bool = False, annotations: dict[str, str] | None = None,
             kernel: str = "5.15.0-100-generic") -> dict[str, Any]:
    node_labels = {
        "kubernetes.io/hostname": name,
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
        "nvidia.com/gpu.count": str(gpus),
        **{f"nvidia.com/gpu.deploy.{d}": "true" for d in DEPLOY},
    }
    node_labels.update(labels or {})
    for key in drop:
        node_labels.pop(key, None)
    return kube_node(name, gpus or None, other={"cpu": "64", "pods": "110"},
                     labels=node_labels, hostname=False, gpu_label=False,
                     annotations=annotations or {}, taints=taints or [],
                     unschedulable=unschedulable,
                     node_info={"kernelVersion": kernel, "osImage": "Ubuntu 22.04.5 LTS",
                                "containerRuntimeVersion": "containerd://1.7.27"})


def nfd_worker(node: str, wanted: str = "running") -> dict[str, Any]:
    """An NFD worker pod (as the operator's bundled NFD chart names it) on ``node``."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"gpu-operator-node-feature-discovery-worker-{node}",
                         "namespace": NS,
                         "labels": {"app.kubernetes.io/name": "node-feature-discovery",
                                    "role": "worker"}},
            "spec": {"nodeName": node, "containers": [{"name": "worker", "image": "nfd"}]},
            "status": {"phase": "Running" if wanted == "running" else "Pending",
                       "containerStatuses": [{"name": "worker", "ready": wanted == "running",
                                              "restartCount": 4, "state": state(wanted)}]}}


def plain_node(name: str) -> dict[str, Any]:
    return kube_node(name, other={"cpu": "8"}, gpu_label=False)


def daemonset(app: str, *, tolerations: list[dict[str, str]] | None = None,
              desired: int = 2, selector: dict[str, str] | None = None) -> dict[str, Any]:
    node_selector = selector if selector is not None else \
        {f"nvidia.com/gpu.deploy.{APP_DEPLOY[app]}": "true"}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": app, "namespace": NS, "labels": {"app": app}},
            "spec": {"template": {"metadata": {"labels": {"app": app}},
                                  "spec": {"nodeSelector": node_selector,
                                           "tolerations": tolerations or [GPU_TOLERATION],
                                           "containers": [{"name": "c", "image": "x"}]}}},
            "status": {"desiredNumberScheduled": desired, "currentNumberScheduled": desired,
                       "numberReady": desired}}


def event(pod: str, reason: str, message: str, *, kind: str = "Pod",
          namespace: str = NS, type_: str = "Warning") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{pod}.{reason.lower()}", "namespace": namespace},
            "involvedObject": {"kind": kind, "namespace": namespace if kind == "Pod" else "",
                               "name": pod},
            "reason": reason, "message": message, "type": type_, "count": 7,
            "lastTimestamp": "2026-11-29T13:59:00Z"}


def cluster_policy(name: str = "cluster-policy", *, state_: str | None = "ready",
                   conditions: list[dict[str, str]] | None = None,
                   spec: dict[str, Any] | None = None,
                   created: str = "2026-11-01T00:00:00Z") -> dict[str, Any]:
    status: dict[str, Any] = {}
    if state_ is not None:
        status["state"] = state_
    if conditions:
        status["conditions"] = conditions
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
            "metadata": {"name": name, "creationTimestamp": created},
            "spec": spec or {"driver": {"enabled": True}, "toolkit": {"enabled": True}},
            "status": status}


def smi_xml(gpus: list[dict[str, str]], driver: str = "570.148.08") -> str:
    """nvidia-smi -q -x with one <gpu> per dict: bus, uuid, product, brand, device_id,
    mig (current_mig text), fabric_state, fabric_status (absent keys are left out)."""
    blocks = []
    for gpu in gpus:
        parts = [f'    <gpu id="{gpu.get("bus", "00000000:3B:00.0")}">',
                 f"        <product_name>{gpu.get('product', 'NVIDIA A100-SXM4-40GB')}"
                 "</product_name>",
                 f"        <product_brand>{gpu.get('brand', 'NVIDIA')}</product_brand>"]
        if "mig" in gpu:
            parts += ["        <mig_mode>",
                      f"            <current_mig>{gpu['mig']}</current_mig>",
                      f"            <pending_mig>{gpu['mig']}</pending_mig>",
                      "        </mig_mode>"]
        parts.append(f"        <uuid>{gpu.get('uuid', 'GPU-11111111-2222-3333-4444-555555555555')}"
                     "</uuid>")
        parts += ["        <pci>",
                  f"            <pci_device_id>{gpu.get('device_id', '20B010DE')}</pci_device_id>",
                  f"            <pci_bus_id>{gpu.get('bus', '00000000:3B:00.0')}</pci_bus_id>",
                  "        </pci>"]
        if "fabric_state" in gpu:
            parts += ["        <fabric>",
                      f"            <state>{gpu['fabric_state']}</state>",
                      f"            <status>{gpu.get('fabric_status', 'N/A')}</status>",
                      "        </fabric>"]
        parts.append("    </gpu>")
        blocks.append("".join(part + "\n" for part in parts))
    return smi_log(blocks, driver=driver, indent="    ")


def stamp(lines: list[str], start: int = 0) -> str:
    """Log text as ``kubectl logs --timestamps`` writes it."""
    return "".join(f"2026-11-29T13:{(start + i) // 60:02d}:{(start + i) % 60:02d}."
                   f"000000000Z {line}\n" for i, line in enumerate(lines))


@dataclass
class Cluster:
    gpu_nodes: tuple[str, ...] = ("gpu-a", "gpu-b")
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    daemonsets: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    policies: list[dict[str, Any]] | None = None
    configmaps: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, Any] = field(default_factory=dict)
    failed: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.nodes["cp-1"] = plain_node("cp-1")
        for name in self.gpu_nodes:
            self.nodes[name] = gpu_node(name)
            for app in DEFAULT_APPS:
                self.put(operand_pod(app, name))
            self.files[f"nodes/{name}/containerd/config-dump.toml"] = DUMP_WITH_NVIDIA
            self.files[f"nodes/{name}/host/uname.txt"] = (
                f"Linux {name} 5.15.0-100-generic #110-Ubuntu SMP Fri Mar 1 10:00:00 UTC 2024 "
                "x86_64 x86_64 x86_64 GNU/Linux\n")
        for app in DEFAULT_APPS:
            self.daemonsets[app] = daemonset(app, desired=len(self.gpu_nodes))
        if self.policies is None:
            self.policies = [cluster_policy()]

    def put(self, pod: dict[str, Any]) -> None:
        self.pods[pod["metadata"]["name"]] = pod

    def log(self, app: str, node: str, container: str, lines: list[str], *,
            previous: bool = False) -> str:
        suffix = ".previous.log" if previous else ".log"
        path = f"logs/{NS}/{pod_name(app, node)}/{container}{suffix}"
        self.files[path] = stamp(lines)
        return path

    def bundle_files(self) -> dict[str, Any]:
        files = dict(self.files)
        files["cluster/nodes.json"] = kube_list(*self.nodes.values())
        files["cluster/pods.json"] = kube_list(*self.pods.values())
        files["cluster/daemonsets.json"] = kube_list(*self.daemonsets.values())
        files["cluster/events.json"] = kube_list(*self.events)
        files["cluster/configmaps.json"] = kube_list(*self.configmaps)
        files["cluster/runtimeclasses.json"] = kube_list(
            {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
             "metadata": {"name": "nvidia"}, "handler": "nvidia"})
        if self.policies is not None:
            files["cluster/clusterpolicies.json"] = kube_list(*self.policies)
        return files

