"""The number gate: which pending GPU pods cannot be placed, and why, from the numbers.

For each GPU resource a pending pod asks for, the write-up's arithmetic is done per node
(capacity, allocatable, sum of GPU limits of the non-terminated pods bound there, free)
and one branch is chosen from the numbers alone:

* ``not-advertised`` — no node has the resource in its capacity (device plugin not
  registered, or a resource name no plugin advertises);
* ``exceeds`` — the request is larger than every eligible node's capacity, so it can
  never fit, whatever is freed or repaired;
* ``unhealthy`` — some eligible node would fit the pod if its unhealthy devices
  (capacity above allocatable) were back;
* ``full`` — every eligible node that could hold the request has it assigned already;
* ``fits`` — some eligible node has room now (the scheduler's event is stale, or the
  pod waits for something else);
* ``blocked`` — the nodes that advertise the resource are all excluded by taints, node
  selectors or affinity (SC002's diagnosis, not a number problem).

Eligibility (taints, ``nodeSelector``, required node affinity, cordons) is decided here
too, so SC001 and SC002 agree on which nodes count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from analyzers.facts.gpu import NodeGPUs, ResourceCount, pod_gpu_request
from bundle.kube import Node, Pod, PodTemplate, Taint, Toleration

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


class Branch(StrEnum):
    NOT_ADVERTISED = "not-advertised"
    EXCEEDS = "exceeds"
    UNHEALTHY = "unhealthy"
    FULL = "full"
    FITS = "fits"
    BLOCKED = "blocked"


SHORTAGE = (Branch.NOT_ADVERTISED, Branch.EXCEEDS, Branch.UNHEALTHY, Branch.FULL)


def is_pending_gpu_pod(pod: Pod) -> bool:
    """Not bound to a node, not finished, and asking for at least one GPU resource."""
    return (not pod.spec.node_name and pod.status.phase in ("Pending", "")
            and bool(pod_gpu_request(pod)))


# ------------------------------------------------------------------ eligibility


@dataclass(frozen=True, slots=True)
class Blocker:
    """Why a node is not a candidate for a pod.

    ``kind`` is ``taint``, ``selector``, ``affinity`` or ``cordoned``; ``text`` names the
    taint or label; ``pointer`` says where it is written (on the node for a taint,
    on the pod for a selector or affinity term), relative to the object.
    """

    kind: str
    text: str
    on_node: bool
    pointer: tuple[str | int, ...]


def taint_text(taint: Taint) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def tolerates(tolerations: Sequence[Toleration], taint: Taint) -> bool:
    for toleration in tolerations:
        if toleration.effect and toleration.effect != taint.effect:
            continue
        operator = toleration.operator or "Equal"
        if operator == "Exists":
            if not toleration.key or toleration.key == taint.key:
                return True
        elif toleration.key == taint.key and (toleration.value or "") == (taint.value or ""):
            return True
    return False


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = expression.get("key")
    operator = expression.get("operator")
    raw_values = expression.get("values")
    values = [str(v) for v in raw_values] if isinstance(raw_values, list) else []
    if not isinstance(key, str):
        return True
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    # Gt/Lt without a label never match; an operator this reader does not know is not
    # claimed as a block.
    return operator not in ("Gt", "Lt")


def _expression_text(expression: Mapping[str, Any]) -> str:
    key = expression.get("key", "?")
    operator = expression.get("operator", "?")
    values = expression.get("values")
    shown = ",".join(str(v) for v in values) if isinstance(values, list) else ""
    return f"{key} {operator} ({shown})" if shown else f"{key} {operator}"


def _term_matches(term: Mapping[str, Any], node: Node) -> bool:
    expressions = term.get("matchExpressions")
    for expression in expressions if isinstance(expressions, list) else []:
        if isinstance(expression, dict) and not _expression_matches(expression, node.labels):
            return False
    fields = term.get("matchFields")
    for expression in fields if isinstance(fields, list) else []:
        if isinstance(expression, dict) and expression.get("key") == "metadata.name" \
                and not _expression_matches({**expression, "key": "name"},
                                            {"name": node.name}):
            return False
    return True


def _required_terms(pod: Pod | PodTemplate) -> list[dict[str, Any]] | None:
    affinity: Any = pod.spec.affinity
    try:
        terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
    except (KeyError, TypeError):
        return None
    if not isinstance(terms, list):
        return None
    return [t for t in terms if isinstance(t, dict)]


def blockers(pod: Pod | PodTemplate, node: Node) -> list[Blocker]:
    """Everything on ``node`` (or in ``pod``'s placement rules) that keeps the pod away; a
    DaemonSet's pod template is judged the same way."""
    found: list[Blocker] = []
    tainted_unschedulable = False
    for index, taint in enumerate(node.spec.taints):
        if taint.effect not in BLOCKING_EFFECTS:
            continue
        tainted_unschedulable |= taint.key == UNSCHEDULABLE_TAINT
        if not tolerates(pod.spec.tolerations, taint):
            found.append(Blocker("taint", taint_text(taint), True, ("spec", "taints", index)))
    if node.spec.unschedulable and not tainted_unschedulable:
        cordon = Taint(key=UNSCHEDULABLE_TAINT, effect="NoSchedule")
        if not tolerates(pod.spec.tolerations, cordon):
            found.append(Blocker("cordoned", "node is cordoned (spec.unschedulable)", True,
                                 ("spec", "unschedulable")))
    for key, value in sorted(pod.spec.node_selector.items()):
        have = node.labels.get(key)
        if have != value:
            now = f"node has {have!r}" if have is not None else "node lacks the label"
            found.append(Blocker("selector", f"nodeSelector {key}={value} ({now})", False,
                                 ("spec", "nodeSelector", key)))
    terms = _required_terms(pod)
    if terms and not any(_term_matches(term, node) for term in terms):
        shown = " OR ".join(
            " AND ".join(_expression_text(e) for e in term.get("matchExpressions", [])
                         if isinstance(e, dict)) or "(empty term)"
            for term in terms)
        found.append(Blocker("affinity", f"required node affinity {shown}", False,
                             ("spec", "affinity", "nodeAffinity",
                              "requiredDuringSchedulingIgnoredDuringExecution")))
    return found


# ------------------------------------------------------------------- the numbers


@dataclass(frozen=True, slots=True)
class NodeRow:
    """One node's numbers for one resource, as the write-up tabulates them."""

    node: str
    resource: str
    capacity: int | None
    allocatable: int | None
    assigned: int
    blockers: tuple[Blocker, ...] = ()

    @property
    def free(self) -> int:
        return (self.allocatable or 0) - self.assigned

    @property
    def unhealthy(self) -> int:
        if not self.capacity:
            return 0
        return max(self.capacity - (self.allocatable or 0), 0)

    @property
    def advertised(self) -> bool:
        return (self.capacity or 0) > 0

    @property
    def eligible(self) -> bool:
        return not self.blockers

    def cells(self) -> str:
        def shown(value: int | None) -> str:
            return "-" if value is None else str(value)

        return (f"capacity {shown(self.capacity)}, allocatable {shown(self.allocatable)}, "
                f"assigned {self.assigned}, free {max(self.free, 0) if self.advertised else 0}")

    def text(self) -> str:
        notes = []
        if self.unhealthy:
            notes.append(f"{self.unhealthy} unhealthy")
        if not self.advertised:
            notes.append("not advertised")
        if self.blockers:
            notes.append("excluded: " + "; ".join(b.text for b in self.blockers))
        tail = f" ({'; '.join(notes)})" if notes else ""
        return f"{self.node} {self.resource}: {self.cells()}{tail}"


@dataclass(frozen=True, slots=True)
class ResourceVerdict:
    resource: str
    request: int
    branch: Branch
    rows: tuple[NodeRow, ...]
    culprits: tuple[str, ...]   # nodes that make the branch (unhealthy, full, not advertising)


@dataclass(frozen=True, slots=True)
class PodVerdict:
    pod: Pod
    request: Mapping[str, int]
    resources: tuple[ResourceVerdict, ...]

    @property
    def shortages(self) -> list[ResourceVerdict]:
        return [r for r in self.resources if r.branch in SHORTAGE]

    @property
    def branch(self) -> Branch:
        """The pod's branch: its first short resource's, else blocked, else fits."""
        short = self.shortages
        if short:
            return short[0].branch
        if any(r.branch is Branch.BLOCKED for r in self.resources):
            return Branch.BLOCKED
        return Branch.FITS


def _row(node: Node, count: ResourceCount, pod: Pod) -> NodeRow:
    return NodeRow(node.name, count.resource, count.capacity, count.allocatable,
                   count.assigned, tuple(blockers(pod, node)))


def decide(request: int, rows: Sequence[NodeRow]) -> tuple[Branch, tuple[str, ...]]:
    """The branch for one resource, from the per-node rows; see the module docstring."""
    advertising = [row for row in rows if row.advertised]
    if not advertising:
        return Branch.NOT_ADVERTISED, tuple(row.node for row in rows)
    candidates = [row for row in advertising if row.eligible]
    if not candidates:
        return Branch.BLOCKED, tuple(row.node for row in advertising)
    if any(row.free >= request for row in candidates):
        return Branch.FITS, tuple(row.node for row in candidates if row.free >= request)
    could_hold = [row for row in candidates if (row.capacity or 0) >= request]
    if not could_hold:
        return Branch.EXCEEDS, tuple(row.node for row in candidates)
    healing = [row for row in could_hold
               if row.unhealthy and (row.capacity or 0) - row.assigned >= request]
    if healing:
        return Branch.UNHEALTHY, tuple(row.node for row in healing)
    return Branch.FULL, tuple(row.node for row in could_hold)


def _placement(pod: Pod, request: Mapping[str, int]) -> tuple[object, ...] | None:
    """Everything of ``pod`` its per-node rows depend on: the request, the tolerations,
    the node selector and the required node affinity. Pods with equal placements get
    equal rows (a Job's pending replicas usually do). None for an affinity nested too
    deep to write out: that pod's rows are its own."""
    try:
        terms = repr(_required_terms(pod))
    except RecursionError:
        return None
    return (tuple(sorted(request.items())),
            tuple((t.key, t.operator, t.value, t.effect) for t in pod.spec.tolerations),
            tuple(sorted(pod.spec.node_selector.items())),
            terms)


def verdicts(pods: Iterable[Pod], nodes: Iterable[Node], accounting: Mapping[str, NodeGPUs],
             gpu_nodes: Iterable[str]) -> list[PodVerdict]:
    """Per-resource verdicts for pending pods over every GPU node and every node that has
    the resource (rows sorted by node name), one per pod in order.

    The rows are built once per distinct placement (see :func:`_placement`): a queue of
    thousands of pending replicas on a large cluster would otherwise cost pods × nodes.
    """
    gpu_set = set(gpu_nodes)
    node_list = sorted(nodes, key=lambda n: n.name)
    shared: dict[tuple[object, ...], tuple[ResourceVerdict, ...]] = {}
    found: list[PodVerdict] = []
    for pod in pods:
        request = pod_gpu_request(pod)
        placement = _placement(pod, request)
        resources = shared.get(placement) if placement is not None else None
        if resources is None:
            resources = _resources(pod, request, node_list, accounting, gpu_set)
            if placement is not None:
                shared[placement] = resources
        found.append(PodVerdict(pod, request, resources))
    return found


def _resources(pod: Pod, request: Mapping[str, int], node_list: Sequence[Node],
               accounting: Mapping[str, NodeGPUs],
               gpu_set: set[str]) -> tuple[ResourceVerdict, ...]:
    results: list[ResourceVerdict] = []
    for resource, amount in sorted(request.items()):
        rows: list[NodeRow] = []
        for node in node_list:
            counts = accounting.get(node.name)
            if counts is None:
                continue
            count = counts.count(resource)
            listed = resource in counts.resources
            if not listed and node.name not in gpu_set:
                continue
            rows.append(_row(node, count, pod))
        branch, culprits = decide(amount, rows)
        results.append(ResourceVerdict(resource, amount, branch, tuple(rows), culprits))
    return tuple(results)
