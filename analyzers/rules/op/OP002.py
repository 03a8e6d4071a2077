"""OP002: Operand DaemonSets schedule nothing on a GPU node."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.evidence import field
from analyzers.facts.preconditions import Need
from analyzers.refs import Link
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import PRESENT, node_ref
from analyzers.rules.op._common import capped, namespace
from analyzers.rules.op._labels import (
    CONTAINER_DEPLOY,
    CRITICAL_DEPLOY,
    DEPLOY,
    PAUSED,
    PCI_LABELS,
    Miss,
    _deploy_key,
    _generic,
    has_pci_label,
    misses,
)
from bundle import specs
from bundle.kube import DaemonSet, Node


class OperandsNotScheduled(Rule):
    """Operand DaemonSets schedule nothing on a GPU node.

    Each operand DaemonSet selects nodes by ``nvidia.com/gpu.deploy.<component>=true``,
    which the operator sets only on nodes it sees as GPU nodes
    (``nvidia.com/gpu.present=true``, itself derived from NFD's PCI label). A GPU node
    gets no operand pod when that label is missing, when it was left at a
    ``paused-for-*`` value by the driver manager or MIG manager (e.g.
    ``nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change``), or when the node
    has a taint the DaemonSet does not tolerate. Deploy labels set to ``false`` (or
    ``nvidia.com/gpu.deploy.operands=false``) are an admin's choice and not reported.

    Why it matters:
    Nothing fails and nothing logs an error: the DaemonSet simply shows ``DESIRED 0``
    (or one fewer), so the node silently runs no device plugin and advertises no GPU.

    Remediation:
    Compare the node's labels and taints with the DaemonSets' selectors and
    tolerations: ``kubectl get node <node> --show-labels``,
    ``kubectl describe node <node> | grep -A3 Taints``,
    ``kubectl -n gpu-operator get ds -o wide``. Restore a paused label only after the
    MIG change or driver upgrade that set it is finished; add tolerations through the
    ClusterPolicy (``daemonsets.tolerations``), one node at a time.
    """

    id = "OP002"
    slug = "operands-not-scheduled"
    severity = Severity.HIGH
    confidence = Confidence.LIKELY
    inputs = (cluster(specs.DAEMONSETS), cluster(specs.NODES))
    needs = (Need.OPERATOR,)
    tags = ("operator", "scheduling")

    def check(self, ctx: Context) -> Iterable[Finding]:
        ns = ctx.facts.operator_namespace
        groups: dict[str, list[DaemonSet]] = {}
        for ds in ctx.facts.daemonsets:
            if ns is not None and ds.metadata.namespace != ns:
                continue
            key = _deploy_key(ds)
            if key is not None and key[len(DEPLOY):] in CONTAINER_DEPLOY:
                groups.setdefault(key, []).append(ds)
        if not groups:
            return
        for name in ctx.facts.gpu_nodes:
            obj = ctx.facts.nodes.get(name)
            if obj is None or obj.labels.get(DEPLOY + "operands") == "false":
                continue
            if obj.labels.get("nvidia.com/gpu.workload.config", "container") != "container":
                continue
            skipped = self._skipped(obj, groups)
            if skipped:
                yield self._finding(ctx, obj, skipped)

    @staticmethod
    def _skipped(obj: Node, groups: dict[str, list[DaemonSet]]
                 ) -> list[tuple[str, DaemonSet, list[Miss]]]:
        found = []
        for key, sets in sorted(groups.items()):
            component = key[len(DEPLOY):]
            value = obj.labels.get(key)
            paused = value is not None and value.startswith(PAUSED)
            if component == "mig-manager" and not paused and \
                    obj.labels.get("nvidia.com/mig.capable") != "true":
                continue
            reasons = [misses(ds, obj) for ds in sets]
            if any(not r for r in reasons) or any(m.kind == "disabled" for r in reasons
                                                    for m in r):
                continue
            best = min(range(len(sets)), key=lambda i: len(reasons[i]))
            found.append((component, sets[best], reasons[best]))
        return found

    def _finding(self, ctx: Context, obj: Node,
                 skipped: list[tuple[str, DaemonSet, list[Miss]]]) -> Finding:
        name = obj.name
        ns = namespace(ctx)
        grouped: dict[tuple[str, ...], list[str]] = {}
        for _, ds, found in skipped:
            key = tuple(_generic(m) for m in found)
            grouped.setdefault(key, []).append(ds.metadata.name)
        parts = [f"{', '.join(sets)} ({'; '.join(reasons)})"
                 for reasons, sets in grouped.items()]
        kinds = {m.kind for _, _, found in skipped for m in found}
        summary = (f"On {name}, {len(skipped)} operand DaemonSet(s) place no pod: "
                   f"{'; '.join(parts)}.")
        causes: list[Link] = []
        if "missing" in kinds and obj.labels.get(PRESENT) != "true":
            summary += (f" The operator has not labelled {name} as a GPU node "
                        f"({PRESENT} is not 'true'), so it set no deploy labels")
            if not has_pci_label(obj):
                summary += "; NFD's NVIDIA PCI label is missing too (see OP003)"
                causes.append(refs.link("OP003", name))
            summary += "."
        if "paused" in kinds:
            summary += (" A paused-for-* value is left behind by a driver upgrade or MIG "
                        "change that did not finish (see OP007/OP009).")
        evidence: list[Evidence] = []
        seen: set[tuple[str, str | None]] = set()
        for _, _, found in skipped:
            for miss in found:
                where = (miss.where.path, miss.where.pointer)
                if where not in seen:
                    seen.add(where)
                    evidence.append(miss.where)
        evidence = capped(evidence, 5)
        for _, ds, _ in skipped[:3]:
            selector = ", ".join(f"{k}={v}" for k, v in
                                 sorted(ds.spec.template.spec.node_selector.items()))
            evidence.append(field(ds, f"{ds.metadata.name} desired "
                                      f"{ds.status.desired}, nodeSelector {selector}",
                                  "status", "desiredNumberScheduled"))
        critical = any(c in CRITICAL_DEPLOY for c, _, _ in skipped)
        objects = [node_ref(name)] + [ObjectRef(kind="DaemonSet", namespace=ds.metadata.namespace,
                                                name=ds.metadata.name) for _, ds, _ in skipped]
        return self.finding(
            name, summary, severity=self.severity if critical else Severity.MEDIUM,
            nodes=[name], objects=objects, evidence=evidence,
            remediation=self._remediation(name, ns, skipped, kinds), caused_by=causes,
        )

    @staticmethod
    def _remediation(name: str, ns: str, skipped: list[tuple[str, DaemonSet, list[Miss]]],
                     kinds: set[str]) -> str:
        node, namespace = sh.node(name), sh.namespace(ns)
        lines = [
            "# look first",
            sh.cmd("kubectl", "get", "node", node, "-o", "json",
                   tail=" | jq -r '.metadata.labels | to_entries[] | "
                   "select(.key|startswith(\"nvidia.com/gpu\")) | \"\\(.key)=\\(.value)\"'"),
            sh.cmd("kubectl", "describe", "node", node, tail=" | grep -A5 Taints"),
            sh.cmd("kubectl", "-n", namespace, "get", "ds", "-o", "wide"),
        ]
        if "paused" in kinds:
            paused = sorted({m.text for _, _, found in skipped for m in found
                             if m.kind == "paused"})
            lines += [
                sh.cmd("kubectl", "get", "node", node, "-L",
                       "nvidia.com/mig.config.state,nvidia.com/gpu-driver-upgrade-state"),
                sh.cmd("kubectl", "-n", namespace, "logs", "-l", "app=nvidia-mig-manager",
                       "-c", "nvidia-mig-manager", "--tail=50"),
                "# once the MIG change / driver upgrade is really over, restore the label:",
            ]
            lines += [sh.cmd("kubectl", "label", "node", node,
                             sh.join(sh.label_key(text.split("=")[0]), "=true"), "--overwrite")
                      for text in paused[:3]]
        if "missing" in kinds:
            lines += [
                sh.cmd("kubectl", "get", "node", node, "-L", f"{PRESENT},{PCI_LABELS[0]}"),
                sh.cmd("kubectl", "-n", namespace, "logs", "deploy/gpu-operator", "--tail=100",
                       tail=" | grep -i label"),
            ]
        if "taint" in kinds:
            lines.append("# tolerate the taint in the ClusterPolicy (daemonsets.tolerations, "
                         "helm upgrade --reuse-values) or remove it from the node")
        return sh.lines(lines)
