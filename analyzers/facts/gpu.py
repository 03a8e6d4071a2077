"""GPU nodes and per-node accounting of every GPU extended resource.

Accounting is the write-up's arithmetic: for each node and each ``nvidia.com/*``
resource, capacity and allocatable from the Node, and the sum of GPU limits of the
non-terminated pods bound there (init containers counted as the scheduler does).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bundle import Bundle
from bundle.kube import Container, Node, Pod, quantity_int
from bundle.reader import NODES_JSON

GPU_RESOURCE_PREFIX = "nvidia.com/"
GPU_LABELS = (
    ("nvidia.com/gpu.present", "true"),
    ("feature.node.kubernetes.io/pci-10de.present", "true"),
    ("feature.node.kubernetes.io/pci-0302_10de.present", "true"),
    ("feature.node.kubernetes.io/pci-0300_10de.present", "true"),
)


def is_gpu_resource(name: str) -> bool:
    return name.startswith(GPU_RESOURCE_PREFIX)


def container_gpus(container: Container) -> dict[str, int]:
    """GPU amounts of one container per resource: its limit, else its request (what the
    scheduler counts); zero and unreadable amounts left out."""
    found: dict[str, int] = {}
    limits = container.resources.limits
    for name, raw in limits.items():
        if is_gpu_resource(name) and (amount := quantity_int(raw)):
            found[name] = amount
    for name, raw in container.resources.requests.items():
        if name not in limits and is_gpu_resource(name) and (amount := quantity_int(raw)):
            found[name] = amount
    return found


def pod_gpu_request(pod: Pod) -> dict[str, int]:
    """Effective GPU request per resource: max(largest init container, sum of app containers)."""
    total: dict[str, int] = defaultdict(int)
    for container in pod.spec.containers:
        for name, amount in container_gpus(container).items():
            total[name] += amount
    for container in pod.spec.init_containers:
        for name, amount in container_gpus(container).items():
            total[name] = max(total[name], amount)
    return {name: amount for name, amount in total.items() if amount}


@dataclass(frozen=True, slots=True)
class ResourceCount:
    """One node's numbers for one GPU resource name. None means "not on the Node"."""

    resource: str
    capacity: int | None
    allocatable: int | None
    assigned: int

    @property
    def free(self) -> int:
        return (self.allocatable or 0) - self.assigned

    @property
    def unhealthy(self) -> int:
        if self.capacity is None:
            return 0
        return max(self.capacity - (self.allocatable or 0), 0)


@dataclass(frozen=True, slots=True)
class NodeGPUs:
    node: str
    resources: Mapping[str, ResourceCount]
    pods: tuple[str, ...]  # "namespace/name" of non-terminated pods holding GPUs here

    def count(self, resource: str = "nvidia.com/gpu") -> ResourceCount:
        return self.resources.get(resource, ResourceCount(resource, None, None, 0))


def _labelled_gpu(node: Node) -> bool:
    return any(node.labels.get(key) == value for key, value in GPU_LABELS)


def gpu_node_names(bundle: Bundle) -> list[str]:
    """Nodes with GPUs: by labels, by advertised GPU resources, or by nvidia-smi output.

    When ``cluster/nodes.json`` could not be read (whole or in part), every node
    directory counts: the collector gathers node files only from the nodes it chose as
    GPU nodes, so the bundle still says which they are."""
    names: set[str] = set()
    for node in bundle.cluster.nodes:
        advertised = any(is_gpu_resource(r) and (quantity_int(v) or 0) > 0
                         for r, v in node.status.capacity.items())
        if _labelled_gpu(node) or advertised:
            names.add(node.name)
    for name in bundle.node_names:
        smi = bundle.node(name).nvidia_smi
        if smi is not None and smi.gpus:
            names.add(name)
    if NODES_JSON in bundle.damaged():
        names.update(bundle.node_names)
    return sorted(names)


def accounting(nodes: Iterable[Node], pods_by_node: Mapping[str, list[Pod]]) -> dict[str, NodeGPUs]:
    result: dict[str, NodeGPUs] = {}
    for node in nodes:
        assigned: dict[str, int] = defaultdict(int)
        holders: list[str] = []
        for pod in pods_by_node.get(node.name, []):
            if pod.terminated:
                continue
            request = pod_gpu_request(pod)
            if request:
                holders.append(f"{pod.namespace}/{pod.name}")
            for name, amount in request.items():
                assigned[name] += amount
        names = {r for r in (*node.status.capacity, *node.status.allocatable) if is_gpu_resource(r)}
        names |= set(assigned)
        resources = {
            name: ResourceCount(
                resource=name,
                capacity=quantity_int(node.status.capacity.get(name)),
                allocatable=quantity_int(node.status.allocatable.get(name)),
                assigned=assigned.get(name, 0),
            )
            for name in sorted(names)
        }
        result[node.name] = NodeGPUs(node.name, resources, tuple(sorted(holders)))
    return result


def count(value: str | int | None) -> int | None:
    """A Kubernetes quantity (a capacity, a label's count) as a whole number; None where
    it is none."""
    return quantity_int(value)
