"""SC005: GPU pods rejected by kubelet at admission (UnexpectedAdmissionError)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.evidence import event_evidence
from analyzers.facts.evidence import field as obj_field
from analyzers.facts.gpu import pod_gpu_request
from analyzers.refs import Link
from analyzers.results.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import KERNEL_LINES, names, node_ref
from analyzers.rules.sc._admission import CLUSTER_SUBJECT, _Admission, _admission_remediation
from analyzers.rules.sc._common import (
    EXAMPLE_CAP,
    device_fault_links,
    pod_key,
    pod_ref,
    status_message_matches,
    workload_subject,
)
from bundle import specs


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
    Fix the node first (the linked Xid / device-plugin finding), then review the failed
    pods (``kubectl get pods -A --field-selector=status.phase=Failed``) and delete them
    per namespace (``kubectl delete pods -n <ns> --field-selector=status.phase=Failed``):
    kubelet does not retry them, and a controller starts its pods again.
    """

    id = "SC005"
    slug = "admission-allocate-failed"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.PODS), cluster(specs.EVENTS, optional=True),
              cluster(specs.NODES, optional=True), node(specs.NVIDIA_SMI, optional=True),
              *KERNEL_LINES)
    tags = ("admission",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        groups: dict[str, _Admission] = defaultdict(_Admission)
        known = ctx.facts.pods_by_key
        for pod in ctx.facts.pods:
            hits = status_message_matches(pod, "SC005")
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
        for event in ctx.facts.events:
            message = event.message or ""
            hits = [m for m in ctx.facts.event_signatures(event) if "SC005" in m.signature.rules]
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
        links: list[Link] = []
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
            links += fault_links + [refs.link("OP008", subject)]
            evidence += fault_ev
        links += [refs.link("SC006", s) for s in sorted(group.shared_subjects)]
        objects = ([node_ref(subject)] if on_node else []) + [
            pod_ref(p) for p in list(group.pods.values())[:EXAMPLE_CAP] if p is not None]
        return self.finding(subject, summary, nodes=[subject] if on_node else [],
                            objects=objects, evidence=evidence, caused_by=links,
                            remediation=_admission_remediation(subject if on_node else None))
