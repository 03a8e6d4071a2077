"""Small, readable cluster scenarios for rule tests (inline bundles)."""

from __future__ import annotations

from typing import Any

from kit.bundles import kube_list, kube_node

DUMP_WITH_NVIDIA = """version = 2
imports = ["/etc/containerd/conf.d/99-nvidia.toml"]

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
"""

DUMP_WITHOUT_NVIDIA = """version = 2
imports = []

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
"""

NVIDIA_DROPIN = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
"""

SANDBOX = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get '
           'sandbox runtime: no runtime for "nvidia" is configured')


def node(name: str, gpus: int | None = None, gpu_label: bool = True) -> dict[str, Any]:
    return kube_node(name, gpus, gpu_label=gpu_label)


def pod(name: str, node_name: str | None, *, namespace: str = "gpu-operator",
        app: str | None = None, runtime_class: str | None = None, phase: str = "Running",
        gpus: int = 0, init: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "example/image:1"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec: dict[str, Any] = {"containers": [container]}
    if node_name:
        spec["nodeName"] = node_name
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    if init:
        spec["initContainers"] = [{"name": f"init-{i}", "image": "x"} for i in range(init)]
    status: dict[str, Any] = {"phase": phase}
    if phase == "Pending" and init:
        status["initContainerStatuses"] = [
            {"name": f"init-{i}", "ready": False, "restartCount": 0,
             "state": {"waiting": {"reason": "PodInitializing"}}} for i in range(init)]
    labels = {"app": app} if app else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec, "status": status}


def event(pod_name: str, reason: str, message: str, namespace: str = "gpu-operator",
          count: int = 5) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{pod_name}.1", "namespace": namespace},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod_name},
            "reason": reason, "message": message, "type": "Warning", "count": count,
            "lastTimestamp": "2026-11-29T13:59:00Z"}


def cluster_policy(toolkit: bool | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": {"enabled": False}}
    if toolkit is not None:
        spec["toolkit"] = {"enabled": toolkit}
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"}, "spec": spec,
            "status": {"state": "notReady"}}


def runtime_class(name: str, handler: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": name}, "handler": handler or name}


def lists(**kinds: list[dict[str, Any]]) -> dict[str, Any]:
    return {f"cluster/{name}.json": kube_list(*items) for name, items in kinds.items()}
