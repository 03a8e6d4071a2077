"""Lenient, typed views of the Kubernetes and operator objects rules read.

Only the fields rules need are typed; everything else is kept (``extra="allow"``).
Field names follow the API's camelCase through aliases. Quantities stay strings and
are read with :func:`quantity_int`; a number where a string is expected (``"nvidia.com/gpu":
8`` written by hand or by another tool) is accepted as its string.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr


class _View(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=False,
                              coerce_numbers_to_str=True)


class KubeObject(_View):
    """Base of objects read from a bundle JSON file (Kubernetes objects, Helm revisions):
    remembers the file and the JSON pointer it came from, for evidence."""

    _path: str = PrivateAttr(default="")
    _pointer: str = PrivateAttr(default="")

    def locate(self, path: str, pointer: str) -> None:
        self._path = path
        self._pointer = pointer

    @property
    def source_path(self) -> str:
        return self._path

    @property
    def source_pointer(self) -> str:
        return self._pointer


class OwnerReference(_View):
    kind: str = ""
    name: str = ""


class ObjectMeta(_View):
    name: str = ""
    namespace: str | None = None
    uid: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    creation_timestamp: str | None = Field(default=None, alias="creationTimestamp")
    owner_references: list[OwnerReference] = Field(default_factory=list, alias="ownerReferences")


class Condition(_View):
    type: str = ""
    status: str = ""
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = Field(default=None, alias="lastTransitionTime")


class Taint(_View):
    key: str = ""
    value: str | None = None
    effect: str = ""


class NodeSpec(_View):
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: bool = False


class NodeSystemInfo(_View):
    container_runtime_version: str = Field(default="", alias="containerRuntimeVersion")
    kernel_version: str = Field(default="", alias="kernelVersion")
    os_image: str = Field(default="", alias="osImage")
    kubelet_version: str = Field(default="", alias="kubeletVersion")


class NodeAddress(_View):
    type: str = ""
    address: str = ""


class NodeStatus(_View):
    capacity: dict[str, str] = Field(default_factory=dict)
    allocatable: dict[str, str] = Field(default_factory=dict)
    conditions: list[Condition] = Field(default_factory=list)
    node_info: NodeSystemInfo = Field(default_factory=NodeSystemInfo, alias="nodeInfo")
    addresses: list[NodeAddress] = Field(default_factory=list)


class Node(KubeObject):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels


class ResourceRequirements(_View):
    limits: dict[str, str] = Field(default_factory=dict)
    requests: dict[str, str] = Field(default_factory=dict)


class EnvVar(_View):
    name: str = ""
    value: str | None = None


class Container(_View):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    env: list[EnvVar] = Field(default_factory=list)


class Toleration(_View):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None


class PodSpec(_View):
    node_name: str | None = Field(default=None, alias="nodeName")
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list, alias="initContainers")
    runtime_class_name: str | None = Field(default=None, alias="runtimeClassName")
    node_selector: dict[str, str] = Field(default_factory=dict, alias="nodeSelector")
    tolerations: list[Toleration] = Field(default_factory=list)


class ContainerStateDetail(_View):
    reason: str | None = None
    message: str | None = None
    exit_code: int | None = Field(default=None, alias="exitCode")


class ContainerState(_View):
    waiting: ContainerStateDetail | None = None
    running: dict[str, Any] | None = None
    terminated: ContainerStateDetail | None = None


class ContainerStatus(_View):
    name: str = ""
    ready: bool = False
    restart_count: int = Field(default=0, alias="restartCount")
    image: str = ""
    state: ContainerState = Field(default_factory=ContainerState)
    last_state: ContainerState = Field(default_factory=ContainerState, alias="lastState")


class PodStatus(_View):
    phase: str = ""
    reason: str | None = None
    message: str | None = None
    conditions: list[Condition] = Field(default_factory=list)
    container_statuses: list[ContainerStatus] = Field(default_factory=list,
                                                      alias="containerStatuses")
    init_container_statuses: list[ContainerStatus] = Field(default_factory=list,
                                                           alias="initContainerStatuses")


class Pod(KubeObject):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or "default"

    @property
    def terminated(self) -> bool:
        """Succeeded and Failed pods hold no devices."""
        return self.status.phase in ("Succeeded", "Failed")


class ObjectReference(_View):
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None


class EventSource(_View):
    component: str | None = None
    host: str | None = None


class Event(KubeObject):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    involved_object: ObjectReference = Field(default_factory=ObjectReference,
                                             alias="involvedObject")
    reason: str | None = None
    message: str | None = None
    type: str | None = None
    count: int | None = None
    first_timestamp: str | None = Field(default=None, alias="firstTimestamp")
    last_timestamp: str | None = Field(default=None, alias="lastTimestamp")
    event_time: str | None = Field(default=None, alias="eventTime")
    source: EventSource = Field(default_factory=EventSource)
    reporting_instance: str | None = Field(default=None, alias="reportingInstance")

    @property
    def time(self) -> str | None:
        return self.last_timestamp or self.event_time or self.first_timestamp


class DaemonSetStatus(_View):
    desired: int = Field(default=0, alias="desiredNumberScheduled")
    current: int = Field(default=0, alias="currentNumberScheduled")
    ready: int = Field(default=0, alias="numberReady")
    available: int = Field(default=0, alias="numberAvailable")


class PodTemplate(_View):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)


class WorkloadSpec(_View):
    template: PodTemplate = Field(default_factory=PodTemplate)


class DaemonSet(KubeObject):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)
    status: DaemonSetStatus = Field(default_factory=DaemonSetStatus)


class Deployment(KubeObject):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)
    status: dict[str, Any] = Field(default_factory=dict)


class RuntimeClass(KubeObject):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    handler: str = ""


class ResourceQuota(KubeObject):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: dict[str, Any] = Field(default_factory=dict)
    status: dict[str, Any] = Field(default_factory=dict)


class ConfigMap(KubeObject):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    data: dict[str, str] = Field(default_factory=dict)


class PolicyStatus(_View):
    state: str | None = None
    namespace: str | None = None
    conditions: list[Condition] = Field(default_factory=list)


class ClusterPolicy(KubeObject):
    """``nvidia.com/v1`` ClusterPolicy; ``spec`` stays a mapping, read with helpers."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: dict[str, Any] = Field(default_factory=dict)
    status: PolicyStatus = Field(default_factory=PolicyStatus)

    def component_enabled(self, component: str) -> bool | None:
        """``spec.<component>.enabled``: True/False when set; None when absent.

        The operator treats an absent ``enabled`` of driver, toolkit, devicePlugin,
        gfd and migManager as true; callers decide what absence means for them.
        """
        section = self.spec.get(component)
        if not isinstance(section, dict):
            return None
        value = section.get("enabled")
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        return None


class NVIDIADriver(KubeObject):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: dict[str, Any] = Field(default_factory=dict)
    status: PolicyStatus = Field(default_factory=PolicyStatus)


class HelmRevision(KubeObject):
    """One revision of a Helm release, as the collector reduces it."""

    revision: int = 0
    status: str = ""
    chart: str = ""
    app_version: str = ""
    updated: str = ""
    description: str = ""
    values: dict[str, Any] = Field(default_factory=dict)

    def value(self, dotted: str) -> Any:
        """A user value by dotted path (``toolkit.enabled``); None when unset."""
        node: Any = self.values
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node


_QUANTITY = re.compile(r"([0-9]{1,18})(Ki|Mi|Gi|k|M|G|m)?")
_FACTORS = {"k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


def quantity_int(value: str | int | None) -> int | None:
    """Read an integer quantity such as an extended resource count ("8", "1k").

    None for anything else: fractions, unknown suffixes, non-ASCII digits, or more
    digits than any real quantity has."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    match = _QUANTITY.fullmatch(value.strip())
    if match is None:
        return None
    number, suffix = int(match[1]), match[2]
    if suffix == "m":
        return number // 1000 if number % 1000 == 0 else None
    return number * _FACTORS.get(suffix or "", 1)
