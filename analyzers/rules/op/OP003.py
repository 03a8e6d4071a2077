"""OP003: NFD did not label a GPU node."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.evidence import field
from analyzers.facts.operands import OperandPod
from analyzers.facts.operator_presence import STANDALONE
from analyzers.refs import Link
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import CannotJudge, Context, Rule, cluster, node
from analyzers.rules.common import LOGS, PRESENT, node_ref
from analyzers.rules.op._common import logs_cmd, namespace
from analyzers.rules.op._labels import (
    PCI_LABELS,
    _nfd_daemonset,
    _nfd_workers,
    _no_gpu_node,
    gpu_signs,
    has_pci_label,
    misses,
)
from bundle import specs
from bundle.evidence import Locator, clip
from bundle.kube import DaemonSet, Node


class NfdNotLabelling(Rule):
    """NFD did not label a GPU node.

    A node shows NVIDIA GPUs (``nvidia.com/gpu.product`` label, ``nvidia.com/*``
    capacity, GPUs in nvidia-smi, or an NVIDIA VGA/3D controller in the node's
    ``host/lspci.txt``, the one sign a fresh install has before any operand ran) but
    lacks NFD's PCI label ``feature.node.kubernetes.io/pci-10de.present`` (or the
    class-vendor forms ``pci-0302_10de`` / ``pci-0300_10de``), or the NFD worker is
    not running there. The operator turns that PCI label into
    ``nvidia.com/gpu.present`` and the deploy labels; without it the node gets no
    operands, so what those operands would have provided there hangs under this
    finding: the device plugin (OP008) and, where the policy runs the toolkit, the
    nvidia runtime (RT001), the CDI spec (RT006) and the RuntimeClass handlers (RT007).
    In a layout without node files (a must-gather without driver pods) the rule says
    it judged in part when the operator reports that it finds no GPU node.

    Why it matters:
    NFD failing is silent: no error anywhere, the operand DaemonSets just skip the
    node (``DESIRED 0``) and the operator logs that it found no GPU node.

    Remediation:
    Check the label and the worker on that node:
    ``kubectl get nodes -L feature.node.kubernetes.io/pci-10de.present``,
    ``kubectl get pods -A -o wide | grep node-feature-discovery``. A worker that does
    not run there is usually kept off by a taint; one that runs but does not label
    needs its ``deviceClassWhitelist`` / label sources checked.
    """

    id = "OP003"
    slug = "nfd-not-labelling"
    severity = Severity.HIGH
    confidence = Confidence.LIKELY
    inputs = (cluster(specs.NODES), cluster(specs.PODS, optional=True),
              cluster(specs.DAEMONSETS, optional=True), node(specs.NVIDIA_SMI, optional=True),
              node(specs.LSPCI, optional=True), cluster(specs.CLUSTERPOLICIES, optional=True),
              LOGS)
    tags = ("operator", "nfd", "labels")

    def check(self, ctx: Context) -> Iterable[Finding]:
        if not ctx.facts.operator_expected:
            raise CannotJudge(STANDALONE)
        workers = _nfd_workers(ctx.facts.pods)
        nfd_ds = _nfd_daemonset(ctx.facts.daemonsets)
        operator_lines = self._operator_lines(ctx)
        unseen: list[str] = []
        for obj in ctx.facts.node_objects:
            signs = gpu_signs(ctx, obj)
            if not signs:
                if not has_pci_label(obj):
                    unseen.append(obj.name)
                continue
            labelled = has_pci_label(obj)
            worker = workers.get(obj.name)
            if labelled and (worker.healthy if worker is not None else not workers):
                continue
            yield self._finding(ctx, obj, signs, labelled, worker, bool(workers), nfd_ds,
                                operator_lines)
        nodes = ctx.facts.node_objects
        if (unseen or not nodes) and not ctx.facts.node_dirs and \
                (operator_lines or _no_gpu_node(ctx)):
            # a layout without node files (must-gather without driver pods, which lists
            # only nodes labelled as GPU nodes): the operator says it finds no GPU node,
            # and nothing shows which nodes have GPUs
            which = ", ".join(unseen[:3]) + (", …" if len(unseen) > 3 else "") if unseen \
                else "the cluster's nodes (none is in the bundle)"
            self.unjudged("the operator finds no GPU node, but no node's files were "
                          "collected (host/lspci.txt, nvidia-smi.xml): whether "
                          f"{which} have GPUs is not in the bundle")

    @staticmethod
    def _operator_lines(ctx: Context) -> list[Locator]:
        found: list[Locator] = []
        for pod in ctx.facts.operator_pods:
            for log in ctx.facts.pod_logs.of(pod):
                for hit in log.matches("OP003"):
                    if hit.signature.id == "operator-nfd-labels-missing":
                        found.append(log.locate(hit))
        return found[-1:]

    def _finding(self, ctx: Context, obj: Node, signs: list[Evidence], labelled: bool,
                 worker: OperandPod | None, workers_exist: bool, nfd_ds: DaemonSet | None,
                 operator_lines: list[Locator]) -> Finding:
        name = obj.name
        ns = namespace(ctx)
        evidence: list[Evidence] = []
        if labelled:
            summary = f"On {name}, NFD's NVIDIA PCI label is present but "
        else:
            evidence.append(field(obj, "no feature.node.kubernetes.io/pci-10de.present "
                                       "(nor pci-0302_10de / pci-0300_10de) label",
                                  "metadata", "labels"))
            summary = (f"{name} has NVIDIA GPUs ({signs[0].excerpt}) but no "
                       "feature.node.kubernetes.io/pci-10de.present label (nor the "
                       "pci-0302_10de / pci-0300_10de forms), so the operator does not "
                       "treat it as a GPU node; ")
        evidence += signs[:2]
        if worker is not None and not worker.healthy:
            summary += f"the NFD worker there ({worker.pod.name}) is {worker.state}."
            evidence.append(field(worker.pod, f"{worker.pod.namespace}/{worker.pod.name}: "
                                              f"{worker.state}", "status"))
            for log in ctx.facts.pod_logs.of(worker.pod)[:1]:
                evidence += [Evidence(path=hit.path, line=hit.line, excerpt=hit.excerpt)
                             for hit in log.tail()]
        elif worker is None and workers_exist:
            summary += "no NFD worker pod runs there"
            blocked = misses(nfd_ds, obj) if nfd_ds is not None else []
            if blocked:
                summary += f" ({'; '.join(m.text for m in blocked)})"
                evidence += [m.where for m in blocked[:2]]
            summary += "."
        elif worker is None:
            summary += "no NFD worker pod was found in the cluster."
        else:
            summary += (f"the NFD worker there ({worker.pod.name}) is {worker.state} and "
                        "still does not label NVIDIA PCI devices (check its "
                        "deviceClassWhitelist / label sources).")
        if labelled:
            summary += " The labels are no longer maintained on this node."
        evidence += [Evidence(path=h.path, line=h.line, excerpt=clip(h.excerpt))
                     for h in operator_lines]
        remediation = sh.lines(
            sh.cmd("kubectl", "get", "node", sh.node(name), "-L",
                   ",".join(PCI_LABELS) + f",{PRESENT}"),
            "kubectl get pods -A -o wide | grep -iE 'node-feature-discovery|nfd-worker'",
            sh.cmd("kubectl", "describe", "node", sh.node(name), tail=" | grep -A5 Taints"),
            [logs_cmd(ns, log) for log in ctx.facts.pod_logs.of(worker.pod)[:1]]
            if worker is not None else [],
            "# the worker must run on every GPU node; the operator's bundled NFD config "
            "labels PCI classes 0300/0302 by vendor (deviceClassWhitelist, "
            "deviceLabelFields: [vendor])",
        )
        severity = Severity.MEDIUM if labelled else self.severity
        objects = [node_ref(name)]
        if worker is not None:
            objects.append(ObjectRef(kind="Pod", namespace=worker.pod.namespace,
                                     name=worker.pod.name))
        return self.finding(name, summary, severity=severity, nodes=[name], objects=objects,
                            evidence=evidence, remediation=remediation,
                            causes=self._undeployed(ctx, obj) if not labelled else [])

    @staticmethod
    def _undeployed(ctx: Context, obj: Node) -> list[Link]:
        """What an unlabelled node lacks because no operand was deployed there: the
        DaemonSets skip it (OP002); when the operator has not marked it a GPU node at
        all, no device plugin runs (OP008) and, where the policy runs the toolkit, no
        toolkit wrote the nvidia runtime (RT001) or a CDI spec (RT006)."""
        name = obj.name
        links = [refs.link("OP002", name)]
        if obj.labels.get(PRESENT) != "true":
            links.append(refs.link("OP008", name))
            if ctx.facts.toolkit_enabled():
                links += [refs.link("RT001", name), refs.link("RT006", name)]
        return links
