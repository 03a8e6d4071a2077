"""CMP001: A GPU-stack DaemonSet places no pod: which label or taint keeps it off."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.evidence import field
from analyzers.facts.scheduling import blockers
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.cmp._base import severity_of
from analyzers.rules.cmp._daemonsets import prepare_inventory, standalone
from analyzers.rules.common import names
from bundle import specs
from bundle.evidence import join_pointer


class DaemonSetPlacesNoPod(Rule):
    """A GPU-stack DaemonSet places no pod: which label or taint keeps it off.

    A DaemonSet of the stack outside the operator (a standalone or managed device
    plugin, dcgm-exporter, GFD, NFD, MOFED, the DRA driver) has
    ``desiredNumberScheduled: 0`` while the cluster has GPU nodes. Its pod template's
    ``nodeSelector``, required node affinity and tolerations are read against each GPU
    node's labels and taints, and the finding names what excludes which nodes: a
    selector label no node carries, an affinity term, an untolerated taint
    (``nvidia.com/gpu:NoSchedule``), a cordon.

    Why it matters:
    No pod is ever created, so no pod, event or log says anything: the component is
    simply absent on every GPU node.

    Remediation:
    Label the GPU nodes as the selector expects, or change the DaemonSet's
    ``nodeSelector``/affinity to labels they carry; add a toleration for the taint.
    """

    id = "CMP001"
    slug = "daemonset-places-no-pod"
    subject = refs.WORKLOAD
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.DAEMONSETS), cluster(specs.NODES),
              cluster(specs.PODS, optional=True), cluster(specs.DEPLOYMENTS, optional=True))
    tags = ("components", "scheduling")
    prepares = (prepare_inventory,)

    def check(self, ctx: Context) -> Iterable[Finding]:
        gpu_nodes = [ctx.facts.nodes[n] for n in ctx.facts.gpu_nodes if n in ctx.facts.nodes]
        if not gpu_nodes:
            return
        for workload, ds in standalone(ctx):
            if ds.status.desired != 0:
                continue
            excluded: dict[str, list[str]] = defaultdict(list)
            proof: dict[str, Evidence] = {}
            template = ds.spec.template
            for node in gpu_nodes:
                for blocker in blockers(template, node):
                    excluded[blocker.text].append(node.name)
                    if blocker.text in proof:
                        continue
                    if blocker.on_node:
                        proof[blocker.text] = field(node, f"{node.name}: {blocker.text}",
                                                    *blocker.pointer)
                    else:
                        proof[blocker.text] = Evidence(
                            path=ds.source_path, excerpt=blocker.text,
                            pointer=join_pointer(ds.source_pointer, "spec", "template",
                                                 *blocker.pointer))
            if excluded:
                why = "; ".join(f"{text} on {len(on)} GPU node(s) ({names(on)})"
                                for text, on in sorted(excluded.items()))
            else:
                why = ("no nodeSelector, affinity or taint of the GPU nodes explains it "
                       "(read the DaemonSet's events)")
            summary = (f"{workload.describe()} — {workload.purpose} — places no pod "
                       f"(desiredNumberScheduled 0) while the cluster has "
                       f"{len(gpu_nodes)} GPU node(s): {why}.")
            evidence = [field(ds, "desiredNumberScheduled: 0", "status",
                              "desiredNumberScheduled"), *proof.values()]
            ns = sh.namespace(workload.namespace)
            remediation = sh.lines(
                sh.cmd("kubectl", "-n", ns, "get", "ds", sh.name(ds.metadata.name), "-o",
                       "jsonpath={.spec.template.spec.nodeSelector}{.spec.template.spec."
                       "affinity}{.spec.template.spec.tolerations}"),
                "kubectl get nodes --show-labels",
                "# label the GPU nodes as the selector expects, or change the selector;"
                " tolerate the taint")
            affected = sorted({n for on in excluded.values() for n in on})
            yield self.finding(workload.key, summary, severity=severity_of(workload),
                               nodes=affected,
                               objects=[ObjectRef(kind="DaemonSet", namespace=workload.namespace,
                                                  name=workload.name)],
                               evidence=evidence, remediation=remediation)
