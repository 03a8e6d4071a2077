"""Where each GPU node's operand stack stops, in the validator's order.

The operator enforces an order with init containers: the validator checks driver,
toolkit, cuda and plugin in turn; the toolkit waits for driver validation; the device
plugin, GFD, DCGM and the MIG manager wait for toolkit validation. One broken layer
leaves every layer above it waiting, so the useful answer per node is the *first*
stage that fails, not the list of pods that are not Running.

A failing pod is placed at the stage of the container it is stuck in (an init
container named ``driver-validation`` waits for the driver, whatever pod it is in);
a pod whose sandbox cannot be created because the ``nvidia`` runtime handler is
missing is placed at the toolkit stage, since registering that handler is the
toolkit's job.

Events expire after an hour and some bundles (NVIDIA's must-gather) carry none, so a
pod that never got a sandbox is also recognised from its own state: bound to a node,
yet no container of it ever started (every status still ``waiting`` in
``PodInitializing`` or ``ContainerCreating``, no restart, no earlier run), or the
kubelet's ``PodReadyToStartContainers`` (earlier ``PodHasNetwork``) condition is
``False``. Such a pod is never blamed on the container it would run first: its init
container ``driver-validation`` never ran, so the driver stage is not what stops it.
It is placed at the toolkit stage when it asks for a RuntimeClass (the handler is the
toolkit's), else at the pod-sandbox stage (the node's runtime or network), which comes
before every GPU stage.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum

from analyzers.facts.operands import COMPONENTS, OperandPod
from analyzers.knowledge import signatures
from bundle.kube import ContainerStatus, Event, Pod


class Stage(IntEnum):
    SANDBOX = -1
    DRIVER = 0
    TOOLKIT = 1
    CUDA = 2
    PLUGIN = 3
    OPERANDS = 4

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    Stage.SANDBOX: "pod sandbox",
    Stage.DRIVER: "driver",
    Stage.TOOLKIT: "toolkit",
    Stage.CUDA: "cuda",
    Stage.PLUGIN: "plugin",
    Stage.OPERANDS: "other operands",
}

# Containers that belong to one stage wherever they run.
CONTAINER_STAGE: Mapping[str, Stage] = {
    "k8s-driver-manager": Stage.DRIVER,
    "nvidia-driver-ctr": Stage.DRIVER,
    "driver-validation": Stage.DRIVER,
    "nvidia-fs-validation": Stage.DRIVER,
    "gdrcopy-validation": Stage.DRIVER,
    "nvidia-container-toolkit-ctr": Stage.TOOLKIT,
    "toolkit-validation": Stage.TOOLKIT,
    "cuda-validation": Stage.CUDA,
    "nvidia-cuda-validator": Stage.CUDA,
    "plugin-validation": Stage.PLUGIN,
    "nvidia-device-plugin": Stage.PLUGIN,
    "nvidia-device-plugin-ctr": Stage.PLUGIN,
    # A sidecar of the driver pod that loads an add-on module after the driver: the
    # driver itself runs in nvidia-driver-ctr, and no validator waits for the add-on.
    "nvidia-peermem-ctr": Stage.OPERANDS,
}
# What a driver pod's sidecar loads (for the sentence that says it is not the driver).
SIDECARS: Mapping[str, str] = {
    "nvidia-peermem-ctr": "the GPUDirect RDMA module (nvidia-peermem)",
}
COMPONENT_STAGE: Mapping[str, Stage] = {
    "driver": Stage.DRIVER,
    "toolkit": Stage.TOOLKIT,
    "cuda-validator": Stage.CUDA,
    "device-plugin": Stage.PLUGIN,
}
# Where each stage's story is told: (component, container) pairs whose logs to read.
STAGE_LOGS: Mapping[Stage, tuple[tuple[str, str], ...]] = {
    Stage.DRIVER: (("validator", "driver-validation"), ("toolkit", "driver-validation"),
                   ("driver", "k8s-driver-manager"), ("driver", "nvidia-driver-ctr")),
    Stage.TOOLKIT: (("validator", "toolkit-validation"),
                    ("toolkit", "nvidia-container-toolkit-ctr")),
    Stage.CUDA: (("validator", "cuda-validation"), ("cuda-validator", "cuda-validation"),
                 ("cuda-validator", "nvidia-cuda-validator")),
    Stage.PLUGIN: (("validator", "plugin-validation"), ("device-plugin", "nvidia-device-plugin"),
                   ("device-plugin", "nvidia-device-plugin-ctr")),
    Stage.OPERANDS: (),
    Stage.SANDBOX: (),
}
_ORDER = {component: index for index, (component, _) in enumerate(COMPONENTS)}


@dataclass(frozen=True, slots=True)
class Blocked:
    """One failing operand pod and the stage it is stuck at.

    ``container`` is the container it is stuck in (None when it has none to name);
    ``pointer`` the JSON pointer parts of that container's status inside the pod;
    ``sandbox`` the events saying its sandbox cannot get the ``nvidia`` runtime;
    ``no_sandbox`` whether the pod's own state shows it never got a sandbox.
    """

    operand: OperandPod
    stage: Stage
    container: str | None
    init: bool
    pointer: tuple[str | int, ...]
    sandbox: tuple[Event, ...]
    no_sandbox: bool = False

    @property
    def pod(self) -> Pod:
        return self.operand.pod

    @property
    def sandboxless(self) -> bool:
        """The pod has no sandbox: events say so, or its own state does."""
        return bool(self.sandbox) or self.no_sandbox


@dataclass(frozen=True, slots=True)
class NodeStages:
    node: str
    row: Mapping[str, OperandPod]
    blocked: tuple[Blocked, ...]

    @property
    def first(self) -> Stage | None:
        return min((b.stage for b in self.blocked), default=None)

    @property
    def at_first(self) -> tuple[Blocked, ...]:
        first = self.first
        return tuple(b for b in self.blocked if b.stage == first)

    @property
    def sandbox(self) -> tuple[Blocked, ...]:
        return tuple(b for b in self.blocked if b.sandboxless)


# Event wordings of a sandbox the runtime cannot create because the handler the pod's
# RuntimeClass names is not configured (analyzers/data/signatures.toml; the event wordings
# of the catalog rule they feed, which tests/test_fact_wordings.py checks).
NO_HANDLER_WORDINGS = frozenset({
    "sandbox-no-runtime", "sandbox-no-runtime-crio", "sandbox-runtimehandler-not-supported",
})


def sandbox_errors(pod: Pod, events: list[Event]) -> tuple[Event, ...]:
    """Events of ``pod`` saying the runtime handler it needs is not configured."""
    return tuple(e for e in events if e.message and any(
        m.signature.id in NO_HANDLER_WORDINGS for m in signatures.match(e.message, "event")))


# Waiting reasons of a container the kubelet has not created yet (no sandbox to put it in).
_NOT_CREATED = frozenset({"", "PodInitializing", "ContainerCreating"})
# The kubelet's condition saying the sandbox and its network are up (1.29+; 1.25-1.28).
_SANDBOX_CONDITIONS = ("PodReadyToStartContainers", "PodHasNetwork")
_OTHER_SANDBOX_REASONS = frozenset({"FailedCreatePodSandBox"})


def never_got_sandbox(pod: Pod) -> bool:
    """The pod's own state shows it never got a sandbox (see the module docstring)."""
    if not pod.spec.node_name or pod.status.phase not in ("Pending", ""):
        return False
    for condition in pod.status.conditions:
        if condition.type in _SANDBOX_CONDITIONS and condition.status in ("True", "False"):
            return condition.status == "False"
    statuses = [*pod.status.init_container_statuses, *pod.status.container_statuses]
    if not statuses:
        return False  # nothing to judge by: a pod the kubelet has not reported on yet
    for status in statuses:
        state, last = status.state, status.last_state
        if status.restart_count or state.running is not None or state.terminated is not None:
            return False
        if last.running is not None or last.terminated is not None:
            return False
        if state.waiting is not None and (state.waiting.reason or "") not in _NOT_CREATED:
            return False  # ImagePullBackOff and the like come after the sandbox
    return True


def _stuck(pod: Pod) -> tuple[str | None, bool, tuple[str | int, ...]]:
    """The container a pod is stuck in: (name, is init container, status pointer)."""
    if not pod.spec.node_name:
        return None, False, ("status",)  # not scheduled: no container to blame
    inits = pod.status.init_container_statuses
    for index, status in enumerate(inits):
        term = status.state.terminated
        if term is not None and term.exit_code == 0:
            continue
        return status.name, True, ("status", "initContainerStatuses", index)
    if pod.spec.init_containers and not inits:
        return pod.spec.init_containers[0].name, True, ("spec", "initContainers", 0)
    statuses = pod.status.container_statuses
    for index, status in enumerate(statuses):
        if not _running(status):
            return status.name, False, ("status", "containerStatuses", index)
    if pod.spec.containers:
        return pod.spec.containers[0].name, False, ("spec", "containers", 0)
    return None, False, ("status",)


def _running(status: ContainerStatus) -> bool:
    term = status.state.terminated
    return status.state.running is not None or (term is not None and term.exit_code == 0)


def blocked_at(operand: OperandPod, events: list[Event]) -> Blocked:
    pod = operand.pod
    container, init, pointer = _stuck(pod)
    sandbox = sandbox_errors(pod, events)
    no_sandbox = never_got_sandbox(pod)
    if sandbox:
        stage = Stage.TOOLKIT
    elif no_sandbox:
        other = any(e.reason in _OTHER_SANDBOX_REASONS for e in events)
        stage = Stage.TOOLKIT if pod.spec.runtime_class_name and not other else Stage.SANDBOX
    elif container is not None and container in CONTAINER_STAGE:
        stage = CONTAINER_STAGE[container]
    else:
        stage = COMPONENT_STAGE.get(operand.component, Stage.OPERANDS)
    return Blocked(operand, stage, container, init, pointer, sandbox, no_sandbox)


def node_stages(node: str, row: Mapping[str, OperandPod],
                events_of: Callable[[Pod], list[Event]]) -> NodeStages:
    blocked = [blocked_at(operand, events_of(operand.pod))
               for operand in row.values() if not operand.healthy]
    blocked.sort(key=lambda b: (b.stage, _ORDER.get(b.operand.component, len(_ORDER)),
                                b.pod.name))
    return NodeStages(node, row, tuple(blocked))
