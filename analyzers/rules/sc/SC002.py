"""SC002: Pending GPU pod kept off every GPU node by taints, node selectors or affinity."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.facts.evidence import field as obj_field
from analyzers.facts.scheduling import Branch, ResourceVerdict
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import names, node_ref
from analyzers.rules.sc._common import pod_key, pod_ref, scheduling_evidence
from bundle import specs
from bundle.kube import Pod, Taint


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
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.PODS), cluster(specs.NODES), cluster(specs.EVENTS, optional=True))
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
        lines = [
            "kubectl get nodes -o custom-columns=N:.metadata.name,TAINTS:.spec.taints",
            sh.cmd("kubectl", "get", "pod", sh.pod(pod.name), "-n", sh.namespace(pod.namespace),
                   "-o", sh.raw("jsonpath='{.spec.tolerations}{\"\\n\"}{.spec.nodeSelector}"
                                "{\"\\n\"}{.spec.affinity}'"))]
        if taint is not None:
            taint_key = sh.label_key(taint.key, "taint key")
            effect = sh.word(taint.effect, "taint effect")
            toleration = (sh.note("#   tolerations: [{{key: {key}, operator: Equal, value: "
                                  "{value}, effect: {effect}}}]", key=taint_key, effect=effect,
                                  value=sh.label_value(taint.value, "taint value"))
                          if taint.value else
                          sh.note("#   tolerations: [{{key: {key}, operator: Exists, effect: "
                                  "{effect}}}]", key=taint_key, effect=effect))
            lines += ["# to let the pod onto the tainted GPU nodes, add to its spec:", toleration]
        lines.append("# or correct the nodeSelector/affinity to labels the GPU nodes carry")
        remediation = sh.lines(lines)
        return self.finding(pod_key(pod), summary, nodes=nodes_all,
                            objects=[pod_ref(pod)] + [node_ref(n) for n in nodes_all[:10]],
                            evidence=evidence, remediation=remediation)
