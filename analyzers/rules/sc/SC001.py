"""SC001: Pending GPU pod: the per-node arithmetic behind "Insufficient nvidia.com/gpu"."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.scheduling import PodVerdict
from analyzers.knowledge import signatures
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import KERNEL_LINES, RUNTIME_FILES, node_ref
from analyzers.rules.sc._capacity import (
    _BRANCH_SEVERITY,
    _BRANCH_TITLES,
    _explain,
    _Explained,
    _remediation,
    _table,
)
from analyzers.rules.sc._common import (
    ROW_CAP,
    limit_evidence,
    pod_key,
    pod_ref,
    scheduling_evidence,
)
from bundle import specs
from bundle.evidence import clip, join_pointer


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
    subject = refs.POD
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.PODS), cluster(specs.NODES), cluster(specs.EVENTS, optional=True),
              cluster(specs.CLUSTERPOLICIES, optional=True),
              cluster(specs.CONFIGMAPS, optional=True), node(specs.NVIDIA_SMI, optional=True),
              *RUNTIME_FILES, *KERNEL_LINES)
    tags = ("scheduling",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        # Pods with the same placement share their resource verdicts (see
        # ``scheduling.verdicts``); each verdict is explained once.
        explained: dict[int, _Explained] = {}
        for _, verdict in sorted(ctx.facts.gate_verdicts.items()):
            if verdict.shortages:
                yield self._finding(ctx, verdict, explained)

    def _finding(self, ctx: Context, verdict: PodVerdict,
                 cache: dict[int, _Explained]) -> Finding:
        facts = ctx.facts
        pod = verdict.pod
        short = verdict.shortages
        main = short[0]
        explained = []
        for result in short:
            text = cache.get(id(result))
            if text is None:
                text = cache[id(result)] = _explain(facts, result)
            explained.append(text)
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
        culprits = sorted({n for result in short for n in result.culprits}
                          | {n for text in explained for n in text.nodes})
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
