"""Operand pods of the GPU Operator per node and component, with kubectl-style states."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from analyzers.facts.preconditions import operator_made
from bundle.kube import ContainerStatus, Pod

# (component, app label / pod name prefix), in the order a node comes up.
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("driver", "nvidia-driver-daemonset"),
    ("driver", "nvidia-gpu-driver"),  # DaemonSets of NVIDIADriver CRs (useNvidiaDriverCRD)
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

# component_of runs for every pod of the bundle: the lookups are built once.
_BY_APP = {prefix: component for component, prefix in reversed(COMPONENTS)}  # first wins
_NAME_PREFIXES = tuple((component, prefix + "-") for component, prefix in COMPONENTS)
_ANY_NAME_PREFIX = tuple(prefix for _, prefix in _NAME_PREFIXES)


def operand_component(name: str) -> str | None:
    """The operand a DaemonSet (or pod) name of the operator belongs to, by its name."""
    component = _BY_APP.get(name)
    if component is not None:
        return component
    return next((c for c, prefix in _NAME_PREFIXES if name.startswith(prefix)), None)


def component_of(pod: Pod) -> str | None:
    """Which operand a pod is, from its ``app`` label or, failing that, its name."""
    labels = pod.metadata.labels
    component = _BY_APP.get(labels.get("app", ""))
    if component is not None:
        return component
    if pod.name.startswith(_ANY_NAME_PREFIX):
        for component, prefix in _NAME_PREFIXES:
            if pod.name.startswith(prefix):
                return component
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
    if not pod.spec.node_name and pod.status.phase in ("Pending", ""):
        return "Pending"  # not scheduled yet: no container has a status
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
        unfinished = [s for s in states if s != "Completed"]
        return unfinished[0] if unfinished else "Completed"
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


def node_of(pod: Pod) -> str | None:
    """The node a pod is bound to or, for a DaemonSet pod not yet scheduled, meant for.

    The DaemonSet controller pins each pod to its node with a required node affinity on
    ``metadata.name``; a pod that stays Pending has no ``nodeName`` but still names it.
    """
    if pod.spec.node_name:
        return pod.spec.node_name
    terms: object = pod.spec.affinity
    for key in ("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms"):
        terms = terms.get(key) if isinstance(terms, dict) else None
    for term in terms if isinstance(terms, list) else []:
        fields = term.get("matchFields") if isinstance(term, dict) else None
        for expression in fields if isinstance(fields, list) else []:
            if not isinstance(expression, dict):
                continue
            values = expression.get("values")
            if (expression.get("key") == "metadata.name" and expression.get("operator") == "In"
                    and isinstance(values, list) and len(values) == 1
                    and isinstance(values[0], str)):
                return values[0]
    return None


def operands_by_node(pods: Iterable[Pod],
                     namespace: str | None) -> dict[str, dict[str, OperandPod]]:
    """node → component → operand pod (the least healthy one if several).

    A live pod wins over a finished one (an Evicted pod left beside its replacement is
    history); among live pods the least healthy wins, among finished ones the newest.
    Pending DaemonSet pods count for the node their affinity names (see :func:`node_of`).
    Without a known operator namespace only pods the operator made count: a standalone
    device plugin in ``kube-system`` (``nvidia-device-plugin-daemonset-*`` from the
    plugin's static manifest) is no operand (see ``preconditions.operator_made``).
    """
    result: dict[str, dict[str, OperandPod]] = {}
    for pod in pods:
        if namespace is not None and pod.namespace != namespace:
            continue
        if namespace is None and not operator_made(pod, None):
            continue
        component = component_of(pod)
        node = node_of(pod)
        if component is None or not node:
            continue
        operand = OperandPod(component, pod, pod_state(pod))
        slot = result.setdefault(node, {})
        current = slot.get(component)
        if current is None or _better(operand, current):
            slot[component] = operand
    return result


def _better(new: OperandPod, current: OperandPod) -> bool:
    """Live beats finished; among live pods the unhealthy one; among finished the newest."""
    if new.pod.terminated != current.pod.terminated:
        return current.pod.terminated
    if not new.pod.terminated:
        return current.healthy and not new.healthy
    created = new.pod.metadata.creation_timestamp or ""
    return created > (current.pod.metadata.creation_timestamp or "")


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
