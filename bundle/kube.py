"""Typed views of the Kubernetes and operator objects rules read.

Only the fields rules need are kept; everything else in the JSON is not (see
:mod:`bundle.views` for how fields are declared and read). Field names are the API's
camelCase in snake case. Quantities stay strings and are read with :func:`quantity_int`.
Evidence points back into the file with :attr:`KubeObject.source_path` and
:attr:`KubeObject.source_pointer`.
"""

from __future__ import annotations

import re
from typing import Any

from bundle.views import View, key


class KubeObject(View):
    """Base of objects read from a bundle JSON file (Kubernetes objects, Helm revisions):
    remembers the file and the JSON pointer it came from, for evidence."""

    __slots__ = ("_path", "_pointer")  # set by locate(); empty until then

    def locate(self, path: str, pointer: str) -> None:
        self._path = path
        self._pointer = pointer

    @property
    def source_path(self) -> str:
        return getattr(self, "_path", "")

    @property
    def source_pointer(self) -> str:
        return getattr(self, "_pointer", "")


class OwnerReference(View):
    kind: str = ""
    name: str = ""


class ObjectMeta(View):
    name: str = ""
    namespace: str | None = None
    uid: str | None = None
    labels: dict[str, str]
    annotations: dict[str, str]
    creation_timestamp: str | None = None
    owner_references: list[OwnerReference]


class ConfigMapMeta(ObjectMeta):
    # Every write records a time here; only ConfigMaps need it (and it is large on pods).
    managed_fields: Any = None


class Condition(View):
    type: str = ""
    status: str = ""
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class Taint(View):
    key: str = ""
    value: str | None = None
    effect: str = ""


class NodeSpec(View):
    taints: list[Taint]
    unschedulable: bool = False
    provider_id: str = key("providerID", "")  # aws://…, gce://…, azure://…: the node's cloud


class NodeSystemInfo(View):
    container_runtime_version: str = ""
    kernel_version: str = ""
    os_image: str = ""
    kubelet_version: str = ""


class NodeAddress(View):
    type: str = ""
    address: str = ""


class NodeStatus(View):
    capacity: dict[str, str]
    allocatable: dict[str, str]
    conditions: list[Condition]
    node_info: NodeSystemInfo
    addresses: list[NodeAddress]


class Node(KubeObject):
    metadata: ObjectMeta
    spec: NodeSpec
    status: NodeStatus

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels


class ResourceRequirements(View):
    limits: dict[str, str]
    requests: dict[str, str]


class EnvVar(View):
    name: str = ""
    value: str | None = None
    value_from: Any = None


class VolumeMount(View):
    name: str = ""
    mount_path: str = ""


class Container(View):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements
    env: list[EnvVar]
    volume_mounts: list[VolumeMount]
    security_context: Any = None


class Toleration(View):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None


class HostPathSource(View):
    path: str = ""


class Volume(View):
    name: str = ""
    host_path: HostPathSource | None = None


class PodSpec(View):
    node_name: str | None = None
    containers: list[Container]
    init_containers: list[Container]
    volumes: list[Volume]
    runtime_class_name: str | None = None
    node_selector: dict[str, str]
    tolerations: list[Toleration]
    affinity: Any = None


class ContainerStateDetail(View):
    reason: str | None = None
    message: str | None = None
    exit_code: int | None = None
    finished_at: Any = None


class ContainerState(View):
    waiting: ContainerStateDetail | None = None
    running: dict[str, Any] | None = None
    terminated: ContainerStateDetail | None = None


class ContainerStatus(View):
    name: str = ""
    ready: bool = False
    restart_count: int = 0
    image: str = ""
    state: ContainerState
    last_state: ContainerState


class PodStatus(View):
    phase: str = ""
    reason: str | None = None
    message: str | None = None
    conditions: list[Condition]
    container_statuses: list[ContainerStatus]
    init_container_statuses: list[ContainerStatus]
    start_time: Any = None


class Pod(KubeObject):
    metadata: ObjectMeta
    spec: PodSpec
    status: PodStatus

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


class ObjectReference(View):
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None


class EventSource(View):
    component: str | None = None
    host: str | None = None


class EventMeta(View):
    # Events are the most numerous objects (a year of them on a large cluster) and
    # carry no labels, annotations or owners that rules read.
    name: str = ""
    namespace: str | None = None
    uid: str | None = None
    creation_timestamp: str | None = None


class Event(KubeObject):
    metadata: EventMeta
    involved_object: ObjectReference
    reason: str | None = None
    message: str | None = None
    type: str | None = None
    count: int | None = None
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    event_time: str | None = None
    source: EventSource
    reporting_instance: str | None = None

    @property
    def time(self) -> str | None:
        return self.last_timestamp or self.event_time or self.first_timestamp


class DaemonSetStatus(View):
    desired: int = key("desiredNumberScheduled", 0)
    current: int = key("currentNumberScheduled", 0)
    ready: int = key("numberReady", 0)
    available: int = key("numberAvailable", 0)


class PodTemplate(View):
    metadata: ObjectMeta
    spec: PodSpec


class WorkloadSpec(View):
    template: PodTemplate


class DaemonSet(KubeObject):
    metadata: ObjectMeta
    spec: WorkloadSpec
    status: DaemonSetStatus


class Deployment(KubeObject):
    metadata: ObjectMeta
    spec: WorkloadSpec
    status: dict[str, Any]


class RuntimeClass(KubeObject):
    metadata: ObjectMeta
    handler: str = ""


class ResourceQuota(KubeObject):
    metadata: ObjectMeta
    spec: dict[str, Any]
    status: dict[str, Any]


class ConfigMap(KubeObject):
    metadata: ConfigMapMeta
    data: dict[str, str]


class PolicyStatus(View):
    state: str | None = None
    namespace: str | None = None
    conditions: list[Condition]


class ClusterPolicy(KubeObject):
    """``nvidia.com/v1`` ClusterPolicy; ``spec`` stays a mapping, read with helpers."""

    metadata: ObjectMeta
    spec: dict[str, Any]
    status: PolicyStatus

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
    metadata: ObjectMeta
    spec: dict[str, Any]
    status: PolicyStatus


class HelmRevision(KubeObject):
    """One revision of a Helm release, as the collector reduces it (snake_case keys)."""

    revision: int = 0
    status: str = ""
    chart: str = ""
    app_version: str = key("app_version", "")
    updated: str = ""
    description: str = ""
    values: dict[str, Any]

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
