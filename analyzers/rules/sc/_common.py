"""Helpers shared by the SC rules: pods, limits, evidence, device-fault links."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from analyzers import refs
from analyzers.facts import Facts
from analyzers.facts.evidence import event_evidence
from analyzers.facts.evidence import field as obj_field
from analyzers.facts.gpu import container_gpus
from analyzers.facts.kernel_events import line_evidence
from analyzers.knowledge import signatures
from analyzers.refs import Link
from analyzers.results.models import Evidence, ObjectRef
from bundle.kube import Container, Event, Pod

T = TypeVar("T")


ROW_CAP = 10


EXAMPLE_CAP = 3


# Xids the device plugin ignores by default: they never make a device unhealthy.
APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})


LOST_SIGNALS = ("fallen_off_bus", "gpu_lost", "rm_init_adapter_failed")


def pod_key(pod: Pod) -> str:
    return refs.POD.of(pod.namespace, pod.name)


def pod_ref(pod: Pod) -> ObjectRef:
    return ObjectRef(kind="Pod", namespace=pod.namespace, name=pod.name)


def workload_subject(pod: Pod) -> str:
    """``namespace/<owner>`` for a controller's pods (they fail alike), else the pod."""
    owners = pod.metadata.owner_references
    if owners and owners[0].name:
        return f"{pod.namespace}/{owners[0].name}"
    return pod_key(pod)


@dataclass
class WorkloadGroup(Generic[T]):
    """The pods of one workload in which a rule found something, their nodes, and what
    was found, pod after pod."""

    pods: list[Pod] = field(default_factory=list)
    nodes: set[str] = field(default_factory=set)
    found: list[T] = field(default_factory=list)


def by_workload(pods: Iterable[tuple[Pod, list[T]]]) -> list[tuple[str, WorkloadGroup[T]]]:
    """Pods with something found, grouped by :func:`workload_subject`, by subject: pods of
    one controller fail alike and make one finding."""
    groups: dict[str, WorkloadGroup[T]] = defaultdict(WorkloadGroup)
    for pod, found in pods:
        if not found:
            continue
        group = groups[workload_subject(pod)]
        group.pods.append(pod)
        if pod.spec.node_name:
            group.nodes.add(pod.spec.node_name)
        group.found.extend(found)
    return sorted(groups.items(), key=lambda item: item[0])


def containers_of(pod: Pod) -> Iterator[tuple[str, int, Container]]:
    for index, container in enumerate(pod.spec.init_containers):
        yield "initContainers", index, container
    for index, container in enumerate(pod.spec.containers):
        yield "containers", index, container


def limit_evidence(pod: Pod, resource: str) -> Evidence | None:
    for section, index, container in containers_of(pod):
        amount = container_gpus(container).get(resource)
        if amount:
            where = "limits" if resource in container.resources.limits else "requests"
            return obj_field(pod, f"{pod_key(pod)} container {container.name} {where} "
                                  f"{resource}: {amount}",
                             "spec", section, index, "resources", where, resource)
    return None


def device_fault_links(facts: Facts, node_name: str) -> tuple[list[Link], list[Evidence]]:
    """DRV001/DRV002 ids for the node's faulty GPUs, from the kernel log alone.

    From ``facts.kernel_events``; an Xid the device plugin ignores (application errors)
    does not make a device unhealthy and is not linked.
    """
    kernel = facts.kernel_events.get(node_name)
    if kernel is None:
        return [], []
    links: list[Link] = []
    evidence: list[Evidence] = []
    for event in kernel.xids:
        if event.xid in APPLICATION_XIDS:
            continue
        links.append(refs.link("DRV001", node_name, kernel.key(event.pci)))
        if len(evidence) < 2:
            evidence.append(line_evidence(event.source))
    for signal in kernel.signals:
        if signal.kind in LOST_SIGNALS:
            links.append(refs.link("DRV002", node_name, kernel.key(signal.pci)))
            if len(evidence) < 3:
                evidence.append(line_evidence(signal.source))
    return sorted(set(links)), evidence


def scheduling_evidence(facts: Facts, pod: Pod) -> tuple[list[Evidence], list[Event]]:
    """The pod's FailedScheduling events (Insufficient ones first), else its
    PodScheduled condition message."""
    events = [e for e in facts.pod_events(pod) if e.reason == "FailedScheduling"]
    insufficient = [e for e in events
                    if any("SC001" in m.signature.rules for m in facts.event_signatures(e))]
    ordered = insufficient + [e for e in events if e not in insufficient]
    evidence = [event_evidence(e) for e in ordered[:2]]
    if not evidence:
        for index, condition in enumerate(pod.status.conditions):
            if condition.type == "PodScheduled" and condition.message:
                evidence.append(obj_field(pod, f"PodScheduled {condition.reason or ''}: "
                                               f"{condition.message}",
                                          "status", "conditions", index, "message"))
                break
    return evidence, insufficient


def status_message_matches(pod: Pod, rule_id: str) -> list[signatures.SignatureMatch]:
    if not pod.status.message:
        return []
    return [m for m in signatures.match(pod.status.message, "pod-status")
            if rule_id in m.signature.rules]
