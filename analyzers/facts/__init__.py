"""Facts derived once from a bundle and shared by every rule.

Rules never re-derive these: GPU nodes, per-node GPU accounting, pods indexed by
node, operand pods per node and component, the active ClusterPolicy, events by the
object they are about, and each node's loaded runtime handlers.
"""

from __future__ import annotations

from collections import defaultdict
from functools import cached_property

from analyzers.facts import gpu, operands, runtimes
from bundle import Bundle
from bundle.kube import ClusterPolicy, Event, Node, Pod

ObjectKey = tuple[str, str, str]  # (kind, namespace, name)


class Facts:
    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self._runtime: dict[str, runtimes.RuntimeState] = {}

    @cached_property
    def nodes(self) -> dict[str, Node]:
        return {node.name: node for node in self.bundle.cluster.nodes}

    @cached_property
    def gpu_nodes(self) -> list[str]:
        return gpu.gpu_node_names(self.bundle)

    @cached_property
    def pods_by_node(self) -> dict[str, list[Pod]]:
        index: dict[str, list[Pod]] = defaultdict(list)
        for pod in self.bundle.cluster.pods:
            if pod.spec.node_name:
                index[pod.spec.node_name].append(pod)
        return dict(index)

    @cached_property
    def pods_by_key(self) -> dict[tuple[str, str], Pod]:
        return {(pod.namespace, pod.name): pod for pod in self.bundle.cluster.pods}

    @cached_property
    def accounting(self) -> dict[str, gpu.NodeGPUs]:
        return gpu.accounting(self.bundle.cluster.nodes, self.pods_by_node)

    @cached_property
    def operator_namespace(self) -> str | None:
        return operands.operator_namespace(self.bundle.cluster.pods,
                                           self.bundle.manifest.operator_namespace)

    @cached_property
    def operands(self) -> dict[str, dict[str, operands.OperandPod]]:
        return operands.operands_by_node(self.bundle.cluster.pods, self.operator_namespace)

    @cached_property
    def cluster_policy(self) -> ClusterPolicy | None:
        """The policy the operator follows: not ``ignored``, the oldest if several."""
        policies = [p for p in self.bundle.cluster.clusterpolicies
                    if (p.status.state or "") != "ignored"]
        policies.sort(key=lambda p: (p.metadata.creation_timestamp or "", p.metadata.name))
        return policies[0] if policies else None

    @cached_property
    def events_by_object(self) -> dict[ObjectKey, list[Event]]:
        index: dict[ObjectKey, list[Event]] = defaultdict(list)
        for event in self.bundle.cluster.events:
            ref = event.involved_object
            index[(ref.kind or "", ref.namespace or "", ref.name or "")].append(event)
        return dict(index)

    def pod_events(self, pod: Pod) -> list[Event]:
        return self.events_by_object.get(("Pod", pod.namespace, pod.name), [])

    def runtime(self, node: str) -> runtimes.RuntimeState:
        state = self._runtime.get(node)
        if state is None:
            state = runtimes.runtime_state(self.bundle.node(node))
            self._runtime[node] = state
        return state

    def toolkit_enabled(self) -> bool:
        """``spec.toolkit.enabled`` of the active policy; the operator's default is true."""
        policy = self.cluster_policy
        enabled = policy.component_enabled("toolkit") if policy is not None else None
        return True if enabled is None else enabled

    def runtime_cause(self, node: str) -> runtimes.Cause:
        toolkit = self.operands.get(node, {}).get("toolkit")
        return runtimes.missing_cause(
            self.runtime(node),
            toolkit_enabled=self.toolkit_enabled(),
            toolkit_running=toolkit is not None and toolkit.healthy,
        )
