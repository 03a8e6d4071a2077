"""Operand pods of the GPU Operator per node and component, with kubectl-style states."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bundle.kube import ContainerStatus, Pod

# (component, app label / pod name prefix), in the order a node comes up.
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("driver", "nvidia-driver-daemonset"),
    ("toolkit", "nvidia-container-toolkit-daemonset"),
    ("validator", "nvidia-operator-validator"),
    ("cuda-validator", "nvidia-cuda-validator"),
    ("device-plugin", "nvidia-device-plugin-daemonset"),
    ("gfd", "gpu-feature-discovery"),
    ("dcgm-exporter", "nvidia-dcgm-exporter"),
    ("dcgm", "nvidia-dcgm"),
    ("mig-manager", "nvidia-mig-manager"),
)
NFD_WORKER = "nfd-worker"
HEALTHY_STATES = frozenset({"Running", "Completed"})


def component_of(pod: Pod) -> str | None:
    """Which operand a pod is, from its ``app`` label or, failing that, its name."""
    app = pod.metadata.labels.get("app", "")
    for component, prefix in COMPONENTS:
        if app == prefix:
            return component
    for component, prefix in COMPONENTS:
        if pod.name.startswith(prefix + "-"):
            return component
    labels = pod.metadata.labels
    if labels.get("app.kubernetes.io/name") == "node-feature-discovery" and \
            labels.get("role", labels.get("app.kubernetes.io/component")) == "worker":
        return NFD_WORKER
    if "nfd-worker" in pod.name or "node-feature-discovery-worker" in pod.name:
        return NFD_WORKER
    return None


def _waiting_or_terminated(status: ContainerStatus) -> str | None:
    if status.state.waiting is not None:
        return status.state.waiting.reason or ""
    if status.state.terminated is not None:
        term = status.state.terminated
        return term.reason or f"ExitCode:{term.exit_code}"
    return None


def pod_state(pod: Pod) -> str:
    """The STATUS column of ``kubectl get pods`` (close enough to compare)."""
    if pod.status.reason:
        return pod.status.reason
    inits = pod.status.init_container_statuses
    total = len(pod.spec.init_containers) or len(inits)
    for index, status in enumerate(inits):
        term = status.state.terminated
        if term is not None and term.exit_code == 0:
            continue
        if term is not None:
            return "Init:" + (term.reason or f"ExitCode:{term.exit_code}")
        waiting = status.state.waiting
        if waiting is not None and waiting.reason not in (None, "", "PodInitializing"):
            return "Init:" + waiting.reason
        return f"Init:{index}/{total}"
    if total and not inits and pod.status.phase == "Pending":
        return f"Init:0/{total}"
    states = [s for s in (_waiting_or_terminated(c) for c in pod.status.container_statuses) if s]
    if states:
        waiting = [s for s in states if s != "Completed"]
        return waiting[0] if waiting else "Completed"
    if pod.status.phase == "Succeeded":
        return "Completed"
    return pod.status.phase or "Unknown"


@dataclass(frozen=True, slots=True)
class OperandPod:
    component: str
    pod: Pod
    state: str

    @property
    def healthy(self) -> bool:
        return self.state in HEALTHY_STATES


def operands_by_node(pods: Iterable[Pod], namespace: str | None) -> dict[str, dict[str, OperandPod]]:
    """node → component → operand pod (the least healthy one if several)."""
    result: dict[str, dict[str, OperandPod]] = {}
    for pod in pods:
        if namespace is not None and pod.namespace != namespace:
            continue
        component = component_of(pod)
        if component is None or not pod.spec.node_name:
            continue
        operand = OperandPod(component, pod, pod_state(pod))
        slot = result.setdefault(pod.spec.node_name, {})
        current = slot.get(component)
        if current is None or (current.healthy and not operand.healthy):
            slot[component] = operand
    return result


def operator_namespace(pods: Iterable[Pod], declared: str | None) -> str | None:
    """The namespace of the operator: the manifest's, else that of the app=gpu-operator pod."""
    if declared:
        return declared
    for pod in pods:
        if pod.metadata.labels.get("app") == "gpu-operator":
            return pod.namespace
    return None


def summary(operands: Mapping[str, OperandPod]) -> str:
    return ", ".join(f"{c} {o.state}" for c, o in sorted(operands.items()))
