"""SC: the number gate — scheduling and admission of GPU pods."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from analyzers import signatures
from analyzers.facts import Facts
from analyzers.facts.gpu import is_gpu_resource, pod_gpu_request
from analyzers.facts.operands import component_of
from analyzers.facts.scheduling import Branch, NodeRow, PodVerdict, ResourceVerdict
from analyzers.facts.sharing import SharingConfig, configmap_changed, pod_started
from analyzers.models import Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import EVENT_CAP, event_evidence, names, node_ref
from analyzers.rules.common import field as obj_field
from bundle.evidence import clip, join_pointer
from bundle.kube import Container, Event, Pod, Taint, quantity_int

ROW_CAP = 10
EXAMPLE_CAP = 3
# Xids the device plugin ignores by default: they never make a device unhealthy.
APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})
LOST_SIGNALS = ("fallen_off_bus", "gpu_lost", "rm_init_adapter_failed")


# ----------------------------------------------------------------- shared helpers


def pod_key(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"


def pod_ref(pod: Pod) -> ObjectRef:
    return ObjectRef(kind="Pod", namespace=pod.namespace, name=pod.name)


def workload_subject(pod: Pod) -> str:
    """``namespace/<owner>`` for a controller's pods (they fail alike), else the pod."""
    owners = pod.metadata.owner_references
    if owners and owners[0].name:
        return f"{pod.namespace}/{owners[0].name}"
    return pod_key(pod)


def container_limits(container: Container) -> dict[str, int]:
    """GPU amounts of one container (limit, else request; zero and unreadable dropped)."""
    found: dict[str, int] = {}
    for name in set(container.resources.limits) | set(container.resources.requests):
        if not is_gpu_resource(name):
            continue
        raw = container.resources.limits.get(name, container.resources.requests.get(name))
        amount = quantity_int(raw)
        if amount:
            found[name] = amount
    return found


def _containers(pod: Pod) -> Iterator[tuple[str, int, Container]]:
    for index, container in enumerate(pod.spec.init_containers):
        yield "initContainers", index, container
    for index, container in enumerate(pod.spec.containers):
        yield "containers", index, container


def limit_evidence(pod: Pod, resource: str) -> Evidence | None:
    for section, index, container in _containers(pod):
        amount = container_limits(container).get(resource)
        if amount:
            where = "limits" if resource in container.resources.limits else "requests"
            return obj_field(pod, f"{pod_key(pod)} container {container.name} {where} "
                                  f"{resource}: {amount}",
                             "spec", section, index, "resources", where, resource)
    return None


def device_fault_links(facts: Facts, node_name: str) -> tuple[list[str], list[Evidence]]:
    """DRV001/DRV002 ids for the node's faulty GPUs, from the kernel log alone.

    Uses ``facts.kernel_events`` when that fact exists; an Xid the device plugin ignores
    (application errors) does not make a device unhealthy and is not linked.
    """
    kernel_events: Any = getattr(facts, "kernel_events", None)
    if not isinstance(kernel_events, dict):
        return [], []
    kernel = kernel_events.get(node_name)
    if kernel is None:
        return [], []
    links: list[str] = []
    evidence: list[Evidence] = []
    for event in getattr(kernel, "xids", ()):
        if getattr(event, "xid", None) in APPLICATION_XIDS:
            continue
        links.append(f"DRV001:{node_name}/{kernel.key(event.pci)}")
        if len(evidence) < 2:
            evidence.append(_kernel_evidence(event.source))
    for signal in getattr(kernel, "signals", ()):
        if getattr(signal, "kind", None) in LOST_SIGNALS:
            links.append(f"DRV002:{node_name}/{kernel.key(signal.pci)}")
            if len(evidence) < 3:
                evidence.append(_kernel_evidence(signal.source))
    return sorted(set(links)), evidence


def _kernel_evidence(line: Any) -> Evidence:
    return Evidence(path=str(getattr(line, "path", "")), line=getattr(line, "line", None),
                    excerpt=clip(str(getattr(line, "raw", "") or getattr(line, "message", ""))))


def scheduling_evidence(facts: Facts, pod: Pod) -> tuple[list[Evidence], list[Event]]:
    """The pod's FailedScheduling events (Insufficient ones first), else its
    PodScheduled condition message."""
    events = [e for e in facts.pod_events(pod) if e.reason == "FailedScheduling"]
    insufficient = [e for e in events if e.message and any(
        "SC001" in m.signature.rules for m in signatures.match(e.message, "event"))]
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


def _status_message_matches(pod: Pod, rule_id: str) -> list[signatures.SignatureMatch]:
    if not pod.status.message:
        return []
    return [m for m in signatures.match(pod.status.message, "pod-status")
            if rule_id in m.signature.rules]


# ------------------------------------------------------------------------ SC001

_BRANCH_TITLES = {
    Branch.NOT_ADVERTISED: "GPU resource not advertised by any node",
    Branch.UNHEALTHY: "GPU pod pending: unhealthy devices (capacity > allocatable)",
    Branch.FULL: "GPU pod pending: every node that could hold it is full",
    Branch.EXCEEDS: "GPU pod pending: request exceeds every node's allocatable",
}
_BRANCH_SEVERITY = {
    Branch.NOT_ADVERTISED: Severity.HIGH,
    Branch.UNHEALTHY: Severity.HIGH,
    Branch.FULL: Severity.MEDIUM,
    Branch.EXCEEDS: Severity.MEDIUM,
}


def _table(rows: Iterable[NodeRow]) -> str:
    listed = list(rows)
    shown = []
    for row in listed[:ROW_CAP]:
        cells = "/".join("-" if v is None else str(v)
                         for v in (row.capacity, row.allocatable, row.assigned))
        free = max(row.free, 0) if row.advertised else 0
        extra = []
        if row.unhealthy:
            extra.append(f"{row.unhealthy} unhealthy")
        if row.blockers:
            extra.append("excluded")
        note = f" ({', '.join(extra)})" if extra else ""
        shown.append(f"{row.node} {cells}/{free}{note}")
    more = f" and {len(listed) - ROW_CAP} more" if len(listed) > ROW_CAP else ""
    return ", ".join(shown) + more


def _advertised_elsewhere(facts: Facts, resource: str) -> dict[str, list[str]]:
    """Other nvidia.com/* resources with capacity on some node → those nodes."""
    found: dict[str, list[str]] = defaultdict(list)
    for name, counts in sorted(facts.accounting.items()):
        for other, count in counts.resources.items():
            if other != resource and (count.capacity or 0) > 0:
                found[other].append(name)
    return dict(found)


def _advertises_nothing(facts: Facts, node_name: str) -> bool:
    counts = facts.accounting.get(node_name)
    return counts is None or not any((c.capacity or 0) > 0 for c in counts.resources.values())


@dataclass
class _Explained:
    text: str
    links: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)


def _explain_not_advertised(facts: Facts, result: ResourceVerdict) -> _Explained:
    resource = result.resource
    silent = [n for n in result.culprits if _advertises_nothing(facts, n)]
    out = _Explained("")
    for node_name in silent:
        out.links.append(f"OP008:{node_name}")
        if facts.runtime(node_name).has_nvidia is False:
            out.links.append(f"RT001:{node_name}")
    parts = [f"no node advertises {resource} (capacity absent or 0"
             + (f" on {names(result.culprits)})" if result.culprits else ")")]
    if silent:
        no_runtime = [n for n in silent if f"RT001:{n}" in out.links]
        parts.append(f"{names(silent)} advertise no NVIDIA resource at all: the device plugin "
                     "is not registered with kubelet there (or was gone for more than the "
                     "5-minute grace period)")
        if no_runtime:
            parts.append(f"containerd on {names(no_runtime)} has no nvidia runtime, so the "
                         "device plugin pod itself cannot start (RT001)")
    elsewhere = _advertised_elsewhere(facts, resource)
    if elsewhere:
        offered = "; ".join(f"{name} on {names(nodes, 3)}"
                            for name, nodes in sorted(elsewhere.items()))
        parts.append(f"nodes advertise other NVIDIA resources instead ({offered}), so the "
                     f"pod names a resource nobody offers")
        shared = _sharing_hint(facts, resource, elsewhere)
        if shared:
            parts.append(shared)
    out.text = "; ".join(parts)
    return out


def _sharing_hint(facts: Facts, resource: str, elsewhere: dict[str, list[str]]) -> str:
    setup = facts.gpu_sharing
    if resource.endswith(".shared") and resource.removesuffix(".shared") in elsewhere:
        renaming = any(c.rename_by_default for c in setup.configs.values())
        return ("the '.shared' name only exists when the sharing config sets "
                "renameByDefault: true" + ("" if renaming else
                                           ", and no sharing config the ClusterPolicy "
                                           "names does"))
    if resource.startswith("nvidia.com/mig-") and "nvidia.com/gpu" in elsewhere:
        return ("per-profile MIG resources (nvidia.com/mig-<profile>) exist only with the "
                "'mixed' MIG strategy; with 'single' MIG devices are advertised as "
                "nvidia.com/gpu, and with MIG disabled there are none")
    return ""


def _explain_unhealthy(facts: Facts, result: ResourceVerdict) -> _Explained:
    out = _Explained("")
    parts = []
    rows = {row.node: row for row in result.rows}
    for node_name in result.culprits:
        row = rows[node_name]
        if row.allocatable == 0:
            parts.append(f"{node_name} keeps capacity {row.capacity} but allocatable is 0: "
                         "the device plugin disconnected (kubelet keeps capacity for a "
                         "5-minute grace period) or every device failed its health check")
            out.links.append(f"OP008:{node_name}")
        else:
            parts.append(f"{node_name} has capacity {row.capacity} but allocatable "
                         f"{row.allocatable}: {row.unhealthy} device(s) marked unhealthy")
        links, evidence = device_fault_links(facts, node_name)
        out.links += links
        out.evidence += evidence
    best = max((rows[n] for n in result.culprits),
               key=lambda r: (r.capacity or 0) - r.assigned)
    parts.append(f"with its devices healthy {best.node} would have "
                 f"{(best.capacity or 0) - best.assigned} free for the request of "
                 f"{result.request}")
    out.text = "; ".join(parts)
    return out


def _explain_full(facts: Facts, result: ResourceVerdict) -> _Explained:
    out = _Explained("")
    rows = {row.node: row for row in result.rows}
    shown = []
    for node_name in result.culprits:
        row = rows[node_name]
        shown.append(f"{node_name} {row.assigned} of {row.allocatable} assigned")
        for idle in facts.idle_gpus.get(node_name, []):
            out.links.append(f"DRV007:{idle.subject}")
    holders = sorted({p for n in result.culprits
                      for p in (facts.accounting[n].pods if n in facts.accounting else ())})
    text = (f"every node that could hold {result.request} {result.resource} is really full "
            f"({'; '.join(shown[:ROW_CAP])}); held by {names(holders, 4)}")
    idle_count = len(out.links)
    if idle_count:
        text += (f"; {idle_count} of those GPUs show ~0 % utilisation while holding memory "
                 "(DRV007)")
    out.text = text
    return out


def _explain_exceeds(result: ResourceVerdict) -> _Explained:
    rows = [r for r in result.rows if r.advertised and r.eligible]
    biggest = max(rows, key=lambda r: r.capacity or 0)
    return _Explained(
        f"it asks for {result.request} {result.resource} but the largest eligible node, "
        f"{biggest.node}, has capacity {biggest.capacity} and allocatable "
        f"{biggest.allocatable}: the request exceeds every node's allocatable, so it can "
        "never fit, whatever is freed or repaired")


def _explain(facts: Facts, result: ResourceVerdict) -> _Explained:
    if result.branch is Branch.NOT_ADVERTISED:
        return _explain_not_advertised(facts, result)
    if result.branch is Branch.UNHEALTHY:
        return _explain_unhealthy(facts, result)
    if result.branch is Branch.FULL:
        return _explain_full(facts, result)
    return _explain_exceeds(result)


def _remediation(branch: Branch, resource: str, namespace: str) -> str:
    escaped = resource.replace(".", "\\.")
    look = ("kubectl get nodes -o custom-columns=N:.metadata.name,"
            f"CAP:.status.capacity.{escaped},ALLOC:.status.allocatable.{escaped}\n")
    if branch is Branch.NOT_ADVERTISED:
        return look + (
            f"kubectl -n {namespace} get pods -o wide -l app=nvidia-device-plugin-daemonset\n"
            f"kubectl -n {namespace} logs -l app=nvidia-device-plugin-daemonset --tail=50\n"
            "# fix the layer below the device plugin first (runtime, toolkit, driver); the\n"
            "# resource reappears when the plugin registers with kubelet again.\n"
            "# If another NVIDIA resource is advertised instead, request that name.")
    if branch is Branch.UNHEALTHY:
        return look + (
            f"kubectl -n {namespace} logs -l app=nvidia-device-plugin-daemonset --tail=200 "
            "| grep -iE 'xid|unhealthy'\n"
            "dmesg --time-format iso | grep -iE 'NVRM|Xid' | tail -50     # on the node\n"
            "nvidia-smi -q | grep -iE 'Pending|Remapp|Recovery'            # on the node\n"
            "# Follow the Xid's recommended action (reset or reboot the GPU, one node at a\n"
            "# time: cordon and drain first); allocatable returns when the plugin sees the\n"
            "# device healthy again.")
    if branch is Branch.FULL:
        return look + (
            "kubectl get pods -A -o wide --field-selector=status.phase=Running | grep <node>\n"
            "kubectl describe node <node> | sed -n '/Allocated resources/,/Events/p'\n"
            "# Really full: wait, free GPUs held by idle pods, add nodes, or use\n"
            "# priority/preemption. Sharing (time-slicing) adds slots, not memory.")
    return look + (
        "kubectl get pod <pod> -n <ns> -o jsonpath='{.spec.containers[*].resources.limits}'\n"
        "# Lower the request to what one node has, or split the work across pods: a pod's\n"
        "# GPUs must all come from one node.")


class InsufficientGPU(Rule):
    """Pending GPU pod: the per-node arithmetic behind "Insufficient nvidia.com/gpu".

    For each pending pod asking for a GPU resource (``nvidia.com/gpu``, a MIG profile
    ``nvidia.com/mig-<profile>``, a renamed shared resource such as
    ``nvidia.com/gpu.shared``), compare per node its capacity, allocatable and the sum of
    GPU limits of the non-terminated pods bound there, and say which branch holds:
    not advertised anywhere (device plugin not registered), capacity above allocatable
    (unhealthy devices), really full, or a request larger than any node offers. The
    branch is decided from the numbers; the scheduler's event is quoted, never trusted.

    Why it matters:
    The scheduler writes "Insufficient nvidia.com/gpu" for every one of these causes.
    Each needs a different fix — repair the plugin or runtime, reset a faulty GPU, add
    capacity, or change the request — so reading the event alone sends people the
    wrong way.

    Remediation:
    Compare each node's capacity and allocatable
    (``kubectl get nodes -o custom-columns=N:.metadata.name,``
    ``CAP:.status.capacity.nvidia\\.com/gpu,ALLOC:.status.allocatable.nvidia\\.com/gpu``)
    with the pods bound to it, then follow the branch named in the finding.
    """

    id = "SC001"
    slug = "insufficient-gpu"
    severity = Severity.HIGH
    inputs = (cluster("pods.json"), cluster("nodes.json"), cluster("events.json", optional=True))
    tags = ("scheduling",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        for _, verdict in sorted(ctx.facts.gate_verdicts.items()):
            if verdict.shortages:
                yield self._finding(ctx, verdict)

    def _finding(self, ctx: Context, verdict: PodVerdict) -> Finding:
        facts = ctx.facts
        pod = verdict.pod
        short = verdict.shortages
        main = short[0]
        explained = [_explain(facts, result) for result in short]
        event_ev, insufficient = scheduling_evidence(facts, pod)
        asks = ", ".join(f"{r.request} {r.resource}" for r in short)
        parts = [f"{text.text}. Per node (capacity/allocatable/assigned/free): "
                 f"{_table(result.rows) or 'no GPU node in the bundle'}."
                 for result, text in zip(short, explained, strict=True)]
        if len(short) == 1:
            body = f": {parts[0]}"
        else:
            body = ". " + " ".join(f"{result.resource}: {part}"
                                   for result, part in zip(short, parts, strict=True))
        said = ""
        if insufficient and insufficient[0].message:
            hit = [m for m in signatures.match(insufficient[0].message, "event")
                   if "SC001" in m.signature.rules]
            quoted = insufficient[0].message[hit[0].span[0]:hit[0].span[1]] if hit else ""
            quoted = quoted.rstrip(".")
            said = (f" The scheduler's event says '{quoted}'; the numbers say: "
                    f"{main.branch.value}.")
        summary = f"Pod {pod_key(pod)} asks for {asks} and cannot be placed{body}{said}"
        evidence: list[Evidence] = list(event_ev)
        for result in short:
            limit = limit_evidence(pod, result.resource)
            if limit is not None:
                evidence.append(limit)
        nodes_by_name = facts.nodes
        for result in short:
            for row in result.rows[:ROW_CAP]:
                node = nodes_by_name.get(row.node)
                if node is None:
                    continue
                if row.allocatable is not None:
                    pointer = join_pointer(node.source_pointer, "status", "allocatable",
                                           result.resource)
                elif row.capacity is not None:
                    pointer = join_pointer(node.source_pointer, "status", "capacity",
                                           result.resource)
                else:  # the resource is not on the Node at all: point at its capacity
                    pointer = join_pointer(node.source_pointer, "status", "capacity")
                evidence.append(Evidence(path=node.source_path, pointer=pointer,
                                         excerpt=clip(row.text())))
        for text in explained:
            evidence += text.evidence
        culprits = sorted({n for result in short for n in result.culprits})
        objects = [pod_ref(pod)] + [node_ref(n) for n in culprits[:10]]
        namespace = facts.operator_namespace or "gpu-operator"
        return self.finding(
            pod_key(pod), summary,
            severity=_BRANCH_SEVERITY[main.branch],
            title=_BRANCH_TITLES[main.branch],
            nodes=culprits, objects=objects, evidence=evidence,
            remediation=_remediation(main.branch, main.resource, namespace),
            caused_by=[link for text in explained for link in text.links],
        )


# ------------------------------------------------------------------------ SC002


class PlacementBlocked(Rule):
    """Pending GPU pod kept off every GPU node by taints, node selectors or affinity.

    For each pending pod asking for a GPU resource, every node that advertises that
    resource is checked against the pod's tolerations, ``nodeSelector`` and required
    node affinity (and cordons). When no such node admits the pod, the finding names
    the taint or label that each node fails on.

    Why it matters:
    The GPUs exist and are free, but the pod may not go there; adding GPUs or
    repairing devices will not help. The scheduler's event only counts nodes
    ("3 node(s) had untolerated taint"), it does not say which pod field to change.

    Remediation:
    Compare ``kubectl describe node <gpu-node> | grep -A5 Taints`` and the node's labels
    with the pod's ``tolerations``, ``nodeSelector`` and ``affinity``; add the missing
    toleration or fix the selector (GPU nodes are usually tainted on purpose).
    """

    id = "SC002"
    slug = "gpu-placement-blocked"
    severity = Severity.MEDIUM
    inputs = (cluster("pods.json"), cluster("nodes.json"), cluster("events.json", optional=True))
    tags = ("scheduling",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        for _, verdict in sorted(facts.gate_verdicts.items()):
            blocked = [r for r in verdict.resources if r.branch is Branch.BLOCKED]
            if blocked:
                yield self._finding(ctx, verdict.pod, blocked)

    def _finding(self, ctx: Context, pod: Pod, blocked: list[ResourceVerdict]) -> Finding:
        facts = ctx.facts
        by_text: dict[str, list[str]] = defaultdict(list)
        evidence: list[Evidence] = []
        seen: set[str] = set()
        taint: Taint | None = None
        for result in blocked:
            for row in result.rows:
                if not row.advertised:
                    continue
                node = facts.nodes.get(row.node)
                for blocker in row.blockers:
                    by_text[f"{blocker.kind} {blocker.text}"].append(row.node)
                    if taint is None and blocker.kind == "taint" and node is not None:
                        taint = node.spec.taints[int(blocker.pointer[2])]
                    key = blocker.text if not blocker.on_node else f"{row.node}:{blocker.text}"
                    if key in seen or len(evidence) >= 6:
                        continue
                    seen.add(key)
                    if blocker.on_node and node is not None:
                        evidence.append(obj_field(node, f"{row.node}: {blocker.text}",
                                                  *blocker.pointer))
                    elif not blocker.on_node:
                        evidence.append(obj_field(pod, f"{pod_key(pod)}: {blocker.text}",
                                                  *blocker.pointer))
        event_ev, _ = scheduling_evidence(facts, pod)
        evidence = event_ev + evidence
        reasons = "; ".join(f"{text} on {names(set(nodes), 4)}"
                            for text, nodes in sorted(by_text.items()))
        asks = ", ".join(f"{r.request} {r.resource}" for r in blocked)
        nodes_all = sorted({n for r in blocked for n in r.culprits})
        summary = (f"Pod {pod_key(pod)} asks for {asks}, and every node that advertises it "
                   f"({names(nodes_all)}) excludes the pod: {reasons}.")
        remediation = (
            "kubectl get nodes -o custom-columns=N:.metadata.name,TAINTS:.spec.taints\n"
            f"kubectl get pod {pod.name} -n {pod.namespace} -o jsonpath="
            "'{.spec.tolerations}{\"\\n\"}{.spec.nodeSelector}{\"\\n\"}{.spec.affinity}'\n")
        if taint is not None:
            toleration = (f"{{key: {taint.key}, operator: Equal, value: {taint.value}, "
                          f"effect: {taint.effect}}}" if taint.value else
                          f"{{key: {taint.key}, operator: Exists, effect: {taint.effect}}}")
            remediation += ("# to let the pod onto the tainted GPU nodes, add to its spec:\n"
                            f"#   tolerations: [{toleration}]\n")
        remediation += "# or correct the nodeSelector/affinity to labels the GPU nodes carry"
        return self.finding(pod_key(pod), summary, nodes=nodes_all,
                            objects=[pod_ref(pod)] + [node_ref(n) for n in nodes_all[:10]],
                            evidence=evidence, remediation=remediation)


# ------------------------------------------------------------------------ SC003

HIDDEN_VALUES = frozenset({"void", "none", ""})
_IMAGE_HINTS = ("nvidia", "nvcr.io", "cuda")


def _nvidia_image(image: str) -> bool:
    lowered = image.lower()
    return any(hint in lowered for hint in _IMAGE_HINTS)


def _privileged(container: Container) -> bool:
    context = (container.model_extra or {}).get("securityContext")
    return isinstance(context, dict) and context.get("privileged") is True


def _is_operand(facts: Facts, pod: Pod) -> bool:
    """The operator's own pods in its namespace (they see GPUs on purpose)."""
    if pod.namespace != (facts.operator_namespace or "gpu-operator"):
        return False
    owners = {o.kind for o in pod.metadata.owner_references}
    labels = pod.metadata.labels
    return (component_of(pod) is not None or "DaemonSet" in owners
            or labels.get("app") == "gpu-operator"
            or "node-feature-discovery" in labels.get("app.kubernetes.io/name", "")
            or labels.get("app.kubernetes.io/managed-by") == "gpu-operator")


@dataclass
class _Bypass:
    pods: list[Pod] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    nodes: set[str] = field(default_factory=set)


class GpuAccessOutsideScheduler(Rule):
    """Containers reach GPUs without an nvidia.com limit, or fail for lack of one.

    Flags containers that set ``NVIDIA_VISIBLE_DEVICES`` (to anything but ``void`` or
    ``none``) or run privileged from an NVIDIA image without any ``nvidia.com/*`` limit,
    and containers without a limit whose logs show ``nvidia-smi`` missing or unable to
    reach the driver. The GPU Operator's own operand pods are left out. Pods of one
    controller are reported together (subject ``namespace/<owner>``).

    Why it matters:
    A container that sees GPUs the scheduler did not give it bypasses accounting and
    isolation: it can use a GPU another pod was allocated, and node numbers no longer
    describe reality. The opposite case — a workload that needs a GPU but asks for
    none — just fails, because only allocated containers get the driver injected.

    Remediation:
    Give every container that uses a GPU a ``resources.limits`` entry for
    ``nvidia.com/gpu`` (or the MIG/shared resource) and remove ``NVIDIA_VISIBLE_DEVICES``
    and ``privileged`` from workloads; monitoring agents are the usual, deliberate exception.
    """

    id = "SC003"
    slug = "gpu-access-outside-scheduler"
    severity = Severity.MEDIUM
    inputs = (cluster("pods.json"),)
    tags = ("scheduling", "isolation")

    def check(self, ctx: Context) -> Iterable[Finding]:
        groups: dict[str, _Bypass] = defaultdict(_Bypass)
        for pod in ctx.bundle.cluster.pods:
            if pod.terminated or _is_operand(ctx.facts, pod):
                continue
            found = list(self._pod_reasons(ctx, pod))
            if not found:
                continue
            group = groups[workload_subject(pod)]
            group.pods.append(pod)
            if pod.spec.node_name:
                group.nodes.add(pod.spec.node_name)
            for reason, evidence in found:
                group.reasons[reason] = group.reasons.get(reason, 0) + 1
                if len(group.evidence) < 4 and all(
                        e.excerpt != evidence.excerpt for e in group.evidence):
                    group.evidence.append(evidence)
        for subject, group in sorted(groups.items()):
            yield self._finding(subject, group)

    def _pod_reasons(self, ctx: Context, pod: Pod) -> Iterator[tuple[str, Evidence]]:
        for section, index, container in _containers(pod):
            if container_limits(container):
                continue
            where = f"{pod_key(pod)} container {container.name}"
            for env_index, env in enumerate(container.env):
                if env.name != "NVIDIA_VISIBLE_DEVICES":
                    continue
                value = env.value
                from_ref = (env.model_extra or {}).get("valueFrom")
                if value is None and from_ref is None:
                    continue
                if value is not None and value.strip().lower() in HIDDEN_VALUES:
                    continue
                shown = value if value is not None else "(set from valueFrom)"
                yield ("sets NVIDIA_VISIBLE_DEVICES without a GPU limit",
                       obj_field(pod, f"{where}: NVIDIA_VISIBLE_DEVICES={shown}, no "
                                      "nvidia.com limit",
                                 "spec", section, index, "env", env_index))
            if _privileged(container) and _nvidia_image(container.image):
                yield ("runs privileged from an NVIDIA image without a GPU limit",
                       obj_field(pod, f"{where}: privileged, image {container.image}, no "
                                      "nvidia.com limit",
                                 "spec", section, index, "securityContext", "privileged"))
            path = ctx.bundle.logs.get((pod.namespace, pod.name, container.name))
            text = ctx.bundle.read_text(path) if path else None
            if path and text:
                hits = [m for m in signatures.match(text, "log", container=container.name)
                        if "SC003" in m.signature.rules]
                if hits:
                    yield ("needs a GPU (nvidia-smi fails in its log) but has no GPU limit",
                           Evidence(path=path, line=hits[0].line, excerpt=clip(hits[0].text)))

    def _finding(self, subject: str, group: _Bypass) -> Finding:
        pods = sorted(group.pods, key=pod_key)
        what = "; ".join(f"{reason} ({count} container(s))"
                         for reason, count in sorted(group.reasons.items()))
        listed = names((pod_key(p) for p in pods), EXAMPLE_CAP)
        where = f" on {names(group.nodes, 4)}" if group.nodes else ""
        summary = (f"{len(pods)} pod(s) of {subject}{where} reach GPUs outside the scheduler's "
                   f"accounting or lack the limit that would give them one: {what}. "
                   f"Pods: {listed}.")
        first = pods[0]
        remediation = (
            f"kubectl get pod {first.name} -n {first.namespace} -o jsonpath="
            "'{range .spec.containers[*]}{.name} {.resources.limits} {.env}{\"\\n\"}{end}'\n"
            "# give the container resources.limits: {nvidia.com/gpu: 1} and drop\n"
            "# NVIDIA_VISIBLE_DEVICES / privileged; the device plugin sets the variable for\n"
            "# the devices it allocates.")
        return self.finding(subject, summary, nodes=sorted(group.nodes),
                            objects=[pod_ref(p) for p in pods[:10]],
                            evidence=group.evidence, remediation=remediation)


# ------------------------------------------------------------------------ SC004

_QUOTA_NAME = re.compile(r"exceeded quota: ([^,\s]+)", re.IGNORECASE)


@dataclass
class _Quota:
    namespace: str
    name: str
    exhausted: list[tuple[str, int, int]] = field(default_factory=list)  # key, hard, used
    events: list[Event] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)


class GpuQuotaExhausted(Rule):
    """A ResourceQuota on GPUs is used up, or the API server refused pods over it.

    Reads each ResourceQuota's ``hard`` and ``used`` for ``requests.nvidia.com/*`` (and
    ``nvidia.com/*``) keys, and ``exceeded quota`` events that name an NVIDIA resource.

    Why it matters:
    A quota refusal happens before scheduling: the pod object is never created, so
    there is no Pending pod, no node is involved, and it looks like "the GPUs are gone"
    although the nodes have free GPUs. It is a policy limit, not a capacity problem.

    Remediation:
    ``kubectl describe resourcequota -n <namespace>`` shows hard and used; free GPUs held
    by finished or idle workloads in that namespace, or raise the quota with the
    cluster owner.
    """

    id = "SC004"
    slug = "gpu-quota-exhausted"
    severity = Severity.MEDIUM
    inputs = (cluster("resourcequotas.json"), cluster("events.json", optional=True))
    tags = ("admission",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        quotas: dict[tuple[str, str], _Quota] = {}
        for quota in ctx.bundle.cluster.resourcequotas:
            namespace = quota.metadata.namespace or "default"
            status = quota.status if isinstance(quota.status, dict) else {}
            hard = status.get("hard") or quota.spec.get("hard") or {}
            used = status.get("used") or {}
            source = "status" if status.get("hard") else "spec"
            for key, raw in sorted(hard.items()) if isinstance(hard, dict) else []:
                if "nvidia.com/" not in key:
                    continue
                limit = quantity_int(raw)
                taken = quantity_int(used.get(key)) if isinstance(used, dict) else None
                if limit is None or (taken or 0) < limit:
                    continue
                entry = quotas.setdefault((namespace, quota.metadata.name),
                                          _Quota(namespace, quota.metadata.name))
                entry.exhausted.append((key, limit, taken or 0))
                entry.evidence.append(obj_field(quota, f"{namespace}/{quota.metadata.name} "
                                                       f"{key}: used {taken or 0} of hard {limit}",
                                                source, "hard", key))
        for event in ctx.bundle.cluster.events:
            if not event.message or not any("SC004" in m.signature.rules
                                            for m in signatures.match(event.message, "event")):
                continue
            hit = _QUOTA_NAME.search(event.message)
            if hit is None:
                continue
            namespace = event.involved_object.namespace or event.metadata.namespace or "default"
            entry = quotas.setdefault((namespace, hit.group(1)), _Quota(namespace, hit.group(1)))
            entry.events.append(event)
        for _, entry in sorted(quotas.items()):
            yield self._finding(ctx, entry)

    def _finding(self, ctx: Context, entry: _Quota) -> Finding:
        subject = f"{entry.namespace}/{entry.name}"
        parts = []
        if entry.exhausted:
            parts.append("; ".join(f"{key} used {used} of {hard}"
                                   for key, hard, used in entry.exhausted))
        refused = sum(e.count or 1 for e in entry.events)
        if entry.events:
            targets = names({e.involved_object.name or "?" for e in entry.events}, 3)
            parts.append(f"the API server refused {refused} pod creation(s) over it "
                         f"(from {targets})")
        holders = sorted(pod_key(p) for p in ctx.bundle.cluster.pods
                         if p.namespace == entry.namespace and not p.terminated
                         and any(container_limits(c) for _, _, c in _containers(p)))
        held = f" GPUs are held by {names(holders, 4)}." if holders else ""
        summary = (f"ResourceQuota {subject} caps GPUs and is exhausted: "
                   f"{'; '.join(parts)}. New GPU pods in {entry.namespace} are refused before "
                   f"they reach the scheduler, whatever the nodes have free.{held}")
        evidence = entry.evidence + [event_evidence(e) for e in entry.events[:EVENT_CAP]]
        remediation = (f"kubectl describe resourcequota {entry.name} -n {entry.namespace}\n"
                       f"kubectl get pods -n {entry.namespace} -o custom-columns=N:.metadata.name,"
                       "PHASE:.status.phase,GPU:.spec.containers[*].resources.limits."
                       "nvidia\\.com/gpu\n"
                       "# free GPUs held by idle or finished workloads, or raise the quota")
        return self.finding(subject, summary,
                            severity=Severity.MEDIUM if entry.events else Severity.LOW,
                            objects=[ObjectRef(kind="ResourceQuota", namespace=entry.namespace,
                                               name=entry.name)],
                            evidence=evidence, remediation=remediation)


# ------------------------------------------------------------------------ SC005

_REQUESTED = re.compile(r"unavailable for ([\w./-]+)\. Requested: ?(\d+), Available: ?(\d+)")
_UNHEALTHY_RES = re.compile(r"cannot allocate unhealthy devices ([\w./-]+)")
CLUSTER_SUBJECT = "cluster"


def _admission_kind(text: str) -> str:
    """A short, countable description of one admission failure message."""
    hit = _REQUESTED.search(text)
    if hit:
        return f"{hit.group(1)} requested {hit.group(2)}, available {hit.group(3)}"
    hit = _UNHEALTHY_RES.search(text)
    if hit:
        return f"{hit.group(1)}: only unhealthy devices left"
    if "maximum request size for shared resources" in text:
        return "more than 1 slot of a shared GPU requested"
    return "device allocation failed"


@dataclass
class _Admission:
    pods: dict[str, Pod | None] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    shared_subjects: set[str] = field(default_factory=set)

    def add(self, key: str, pod: Pod | None, text: str, evidence: Evidence) -> None:
        if key in self.pods:
            return
        self.pods[key] = pod
        kind = _admission_kind(text)
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if len(self.evidence) < EXAMPLE_CAP:
            self.evidence.append(evidence)


class AdmissionAllocateFailed(Rule):
    """GPU pods rejected by kubelet at admission (UnexpectedAdmissionError).

    Counts pods that ended ``Failed`` with ``UnexpectedAdmissionError`` / ``Allocate
    failed`` (``requested number of devices unavailable ... Requested: N, Available:
    M``, ``cannot allocate unhealthy devices``), and such events, grouped into one
    finding per node (or one for the cluster when the node is unknown), with a count
    and a few examples.

    Why it matters:
    The scheduler placed the pod but kubelet had fewer healthy devices than the pod
    asked for — typically just after a device went unhealthy or the device plugin
    restarted. The pod is not retried; a controller keeps creating replacements that
    fail the same way, and Failed pods pile up by the thousand.

    Remediation:
    Fix the node first (the linked Xid / device-plugin finding), then delete the failed
    pods: ``kubectl get pods -A --field-selector=status.phase=Failed`` to review them,
    and ``kubectl delete pods -n <ns> --field-selector=status.phase=Failed``.
    """

    id = "SC005"
    slug = "admission-allocate-failed"
    severity = Severity.HIGH
    inputs = (cluster("pods.json"), cluster("events.json", optional=True))
    tags = ("admission",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        groups: dict[str, _Admission] = defaultdict(_Admission)
        known = {(p.namespace, p.name): p for p in ctx.bundle.cluster.pods}
        for pod in ctx.bundle.cluster.pods:
            hits = _status_message_matches(pod, "SC005")
            if pod.status.reason != "UnexpectedAdmissionError" and not hits:
                continue
            text = pod.status.message or pod.status.reason or ""
            if not pod_gpu_request(pod) and "nvidia.com/" not in text:
                continue  # another vendor's device plugin
            group = groups[pod.spec.node_name or CLUSTER_SUBJECT]
            group.add(pod_key(pod), pod, text,
                      obj_field(pod, f"{pod_key(pod)} {pod.status.phase} "
                                     f"{pod.status.reason or ''}: {text}", "status", "message"))
            if any(m.signature.id == "dp-shared-request-too-large" for m in hits):
                group.shared_subjects.add(workload_subject(pod))
        for event in ctx.bundle.cluster.events:
            message = event.message or ""
            hits = [m for m in signatures.match(message, "event") if "SC005" in m.signature.rules]
            if event.reason != "UnexpectedAdmissionError" and not hits:
                continue
            ref = event.involved_object
            owner = known.get((ref.namespace or "", ref.name or ""))
            if "nvidia.com/" not in message and (owner is None or not pod_gpu_request(owner)):
                continue  # another vendor's device plugin
            node_name = (owner.spec.node_name if owner is not None else None) or event.source.host
            key = f"{ref.namespace}/{ref.name}"
            group = groups[node_name or CLUSTER_SUBJECT]
            group.add(key, owner, message, event_evidence(event))
            if owner is not None and any(m.signature.id == "dp-shared-request-too-large"
                                         for m in hits):
                group.shared_subjects.add(workload_subject(owner))
        for subject, group in sorted(groups.items()):
            yield self._finding(ctx, subject, group)

    def _finding(self, ctx: Context, subject: str, group: _Admission) -> Finding:
        facts = ctx.facts
        total = len(group.pods)
        kinds = ", ".join(f"{kind} ×{count}" for kind, count in
                          sorted(group.kinds.items(), key=lambda kv: (-kv[1], kv[0])))
        examples = names(group.pods, EXAMPLE_CAP)
        on_node = subject != CLUSTER_SUBJECT
        where = f"On {subject}, " if on_node else "In the cluster (node not recorded), "
        summary = (f"{where}{total} pod(s) were rejected by kubelet at admission "
                   f"(UnexpectedAdmissionError, not retried): {kinds}. Examples: {examples}.")
        links: list[str] = []
        evidence = list(group.evidence)
        if on_node:
            counts = facts.accounting.get(subject)
            if counts is not None:
                now = "; ".join(f"{c.resource} capacity {c.capacity}, allocatable "
                                f"{c.allocatable}" for c in counts.resources.values()
                                if c.capacity is not None or c.allocatable is not None)
                if now:
                    summary += f" The node now shows {now}."
            fault_links, fault_ev = device_fault_links(facts, subject)
            links += fault_links + [f"OP008:{subject}"]
            evidence += fault_ev
        links += [f"SC006:{s}" for s in sorted(group.shared_subjects)]
        objects = ([node_ref(subject)] if on_node else []) + [
            pod_ref(p) for p in list(group.pods.values())[:EXAMPLE_CAP] if p is not None]
        return self.finding(subject, summary, nodes=[subject] if on_node else [],
                            objects=objects, evidence=evidence, caused_by=links)


# ------------------------------------------------------------------------ SC006


@dataclass
class _SharedMisuse:
    pods: list[Pod] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    nodes: set[str] = field(default_factory=set)


def _pod_configs(facts: Facts, pod: Pod) -> list[SharingConfig]:
    setup = facts.gpu_sharing
    if pod.spec.node_name:
        config = setup.for_node(facts.nodes.get(pod.spec.node_name))
        return [config] if config is not None else []
    return list(setup.configs.values())


class SharedGpuMisuse(Rule):
    """Shared-GPU misuse: more than one slot of a time-sliced GPU, or a stale config.

    Reads the device-plugin config the ClusterPolicy names
    (``devicePlugin.config.name``; per node the key from the
    ``nvidia.com/device-plugin.config`` label, else ``devicePlugin.config.default``).
    Flags containers asking for more than 1 of a shared resource when
    ``failRequestsGreaterThanOne`` is on (always on for MPS), pods rejected with
    ``maximum request size for shared resources is 1``, and a config ConfigMap changed
    after the device plugin pods started (the operator does not watch it).

    Why it matters:
    Asking for 2 slots of a time-sliced GPU does not give two GPUs' worth of anything:
    the slots share one device's memory and compute. With
    ``failRequestsGreaterThanOne`` the plugin refuses such pods at admission and they
    are never retried. A config edited after the plugin started is not in effect.

    Remediation:
    Request 1 slot (or a dedicated GPU), then delete the failed pods. After editing the
    sharing ConfigMap, restart the device plugin pods one node at a time.
    """

    id = "SC006"
    slug = "shared-gpu-misuse"
    severity = Severity.MEDIUM
    inputs = (
        cluster("pods.json"),
        cluster("configmaps.json", optional=True),
        cluster("clusterpolicies.json", optional=True),
        cluster("events.json", optional=True),
    )
    tags = ("sharing",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        groups: dict[str, _SharedMisuse] = defaultdict(_SharedMisuse)
        for pod in ctx.bundle.cluster.pods:
            found = list(self._misuse(ctx, pod))
            if not found:
                continue
            group = groups[workload_subject(pod)]
            group.pods.append(pod)
            if pod.spec.node_name:
                group.nodes.add(pod.spec.node_name)
            for line, evidence in found:
                if line not in group.lines:
                    group.lines.append(line)
                if len(group.evidence) < 4:
                    group.evidence.append(evidence)
        for subject, group in sorted(groups.items()):
            yield self._request_finding(subject, group)
        stale = self._stale_config(ctx)
        if stale is not None:
            yield stale

    def _misuse(self, ctx: Context, pod: Pod) -> Iterator[tuple[str, Evidence]]:
        facts = ctx.facts
        rejected = [m for m in _status_message_matches(pod, "SC006")
                    if m.signature.id == "dp-shared-request-too-large"]
        events = [e for e in facts.pod_events(pod) if e.message and any(
            m.signature.id == "dp-shared-request-too-large"
            for m in signatures.match(e.message, "event"))]
        if pod.terminated and not rejected and not events:
            return
        configs = _pod_configs(facts, pod)
        for section, index, container in _containers(pod):
            for resource, amount in sorted(container_limits(container).items()):
                if amount <= 1:
                    continue
                for config in configs:
                    shared = config.shared(resource)
                    if shared is None or not config.fail_requests_greater_than_one:
                        continue
                    where = "limits" if resource in container.resources.limits else "requests"
                    yield (f"container {container.name} asks for {amount} {resource}, a "
                           f"{config.strategy} resource with {shared.replicas} replicas per "
                           f"GPU and failRequestsGreaterThanOne on (config key "
                           f"'{config.key}')",
                           obj_field(pod, f"{pod_key(pod)} container {container.name} {where} "
                                          f"{resource}: {amount}",
                                     "spec", section, index, "resources", where, resource))
                    break
        for match in rejected:
            yield ("the device plugin rejected it: maximum request size for shared "
                   "resources is 1",
                   obj_field(pod, f"{pod_key(pod)}: {match.text}", "status", "message"))
        for event in events[:1]:
            yield ("the device plugin rejected it: maximum request size for shared "
                   "resources is 1", event_evidence(event))

    def _request_finding(self, subject: str, group: _SharedMisuse) -> Finding:
        pods = sorted(group.pods, key=pod_key)
        summary = (f"{len(pods)} pod(s) of {subject} ask for more than one slot of a shared "
                   f"GPU: {'; '.join(group.lines)}. Slots of a time-sliced or MPS GPU share "
                   "one device; with failRequestsGreaterThanOne the plugin refuses the "
                   f"allocation and the pod is not retried. Pods: "
                   f"{names((pod_key(p) for p in pods), EXAMPLE_CAP)}.")
        remediation = ("# lower the request to 1 slot (or request a dedicated GPU), then delete "
                       "the failed pods:\n"
                       f"kubectl get pods -n {pods[0].namespace} "
                       "--field-selector=status.phase=Failed\n"
                       f"kubectl delete pod {pods[0].name} -n {pods[0].namespace}")
        return self.finding(subject, summary, nodes=sorted(group.nodes),
                            objects=[pod_ref(p) for p in pods[:10]], evidence=group.evidence,
                            remediation=remediation)

    def _stale_config(self, ctx: Context) -> Finding | None:
        facts = ctx.facts
        configmap = facts.gpu_sharing.configmap
        if configmap is None:
            return None
        changed = configmap_changed(configmap)
        if changed is None:
            return None
        when, where = changed
        stale: list[tuple[str, Pod, str]] = []
        for node_name, operand in sorted(facts.operands.items()):
            plugin = operand.get("device-plugin")
            if plugin is None:
                continue
            started = pod_started(plugin.pod, prefer="device-plugin")
            if started is not None and started < when:
                stale.append((node_name, plugin.pod, started.isoformat()))
        if not stale:
            return None
        namespace = configmap.metadata.namespace or facts.operator_namespace or "gpu-operator"
        subject = f"{namespace}/{configmap.metadata.name}"
        nodes = [n for n, _, _ in stale]
        pointer = join_pointer(configmap.source_pointer, "metadata", *where.split("/"))
        evidence = [Evidence(path=configmap.source_path, pointer=pointer,
                             excerpt=f"ConfigMap {subject} last changed {when.isoformat()}")]
        for node_name, plugin_pod, began in stale[:EVENT_CAP]:
            evidence.append(obj_field(plugin_pod, f"{pod_key(plugin_pod)} on {node_name} "
                                                  f"started {began}",
                                      "status", "containerStatuses"))
        summary = (f"The device-plugin config ConfigMap {subject} changed at "
                   f"{when.isoformat()}, after the device plugin started on {names(nodes)}. "
                   "The operator does not watch this ConfigMap, so those plugins still run "
                   "the old sharing config until they restart.")
        remediation = (f"kubectl -n {namespace} get cm {configmap.metadata.name} -o yaml\n"
                       "# restart the plugin one node at a time and check the new slot count:\n"
                       f"kubectl -n {namespace} delete pod -l app=nvidia-device-plugin-daemonset "
                       f"--field-selector spec.nodeName={nodes[0]}\n"
                       f"kubectl get node {nodes[0]} -o jsonpath="
                       "'{.status.allocatable.nvidia\\.com/gpu}'")
        return self.finding(subject, summary, severity=Severity.LOW, nodes=nodes,
                            objects=[ObjectRef(kind="ConfigMap", namespace=namespace,
                                               name=configmap.metadata.name)],
                            evidence=evidence, remediation=remediation)


RULES: list[type[Rule]] = [InsufficientGPU, PlacementBlocked, GpuAccessOutsideScheduler,
                           GpuQuotaExhausted, AdmissionAllocateFailed, SharedGpuMisuse]
