"""OP011: Node labelling is broken, so the operator deploys nothing on the GPU nodes."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.evidence import event_evidence
from analyzers.facts.evidence import field as object_field
from analyzers.facts.operator_presence import STANDALONE
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import CannotJudge, Context, Rule, cluster, node
from analyzers.rules.common import LOGS, PRESENT, node_ref
from analyzers.rules.op._common import capped, logs_cmd, namespace, quote
from analyzers.rules.op._labels import PCI_LABELS
from analyzers.rules.op._nfd import _CAP, SUBJECT, Labelling, labelling, nfd_role
from analyzers.rules.op._refused import describe
from bundle import specs


class NodeLabellingBroken(Rule):
    """Node labelling is broken, so the operator deploys nothing on the GPU nodes.

    The operator never looks at the hardware: it deploys operands on nodes labelled
    ``nvidia.com/gpu.present=true``, which it sets from NFD's PCI label
    ``feature.node.kubernetes.io/pci-10de.present`` (or ``pci-0302_10de`` /
    ``pci-0300_10de``). The rule fires when nodes that have NVIDIA GPUs — in
    ``host/lspci.txt``, ``nvidia-smi.xml``, ``nvidia.com/*`` capacity or the
    ``nvidia.com/gpu.product`` label — carry no PCI label; when NFD's master refuses
    GPU Feature Discovery's label namespace (``Namespace 'nvidia.com' is not
    allowed``), so no ``nvidia.com/gpu.*`` label reaches a node; or when the operator
    reports it found no GPU node (``Could not get any nodes to match
    nvidia.com/gpu.present``, ``NFD labels missing``, ``No GPU node found``, condition
    ``NFDLabelsMissing`` / ``NoGPUNodes``) while NFD is absent, not running, or its
    workers cannot reach the master. It names the reason it found: no NFD in the
    cluster, NFD pods not running, workers unable to reach the master, the namespace
    refused. OP003 (per node), OP002, OP001 and OP006 hang under it. Without the
    operator (a standalone device plugin) only the refused namespace is judged: the
    rule passes when the NFD or GFD pods' logs were read and refuse nothing, and is
    skipped when no line of them was collected.

    Why it matters:
    Nothing fails loudly: the operand DaemonSets show ``DESIRED 0`` and the operator
    waits for GPU nodes, so a fresh install looks merely slow while no GPU is ever
    offered to pods.

    Remediation:
    Compare hardware and labels (``kubectl get nodes -L
    feature.node.kubernetes.io/pci-10de.present,nvidia.com/gpu.present``), then read
    the NFD pods (``kubectl get pods -A -o wide | grep node-feature-discovery``, the
    worker's and master's logs). Install NFD (the chart's ``nfd.enabled=true``, or the
    NFD operator on OpenShift), let the worker reach the master (Service name,
    port 8080, network policy), or allow ``nvidia.com`` on the master
    (``--extra-label-ns=nvidia.com``).
    """

    id = "OP011"
    slug = "node-labelling-broken"
    severity = Severity.HIGH
    confidence = Confidence.LIKELY
    inputs = (cluster(specs.NODES), cluster(specs.PODS, optional=True), LOGS,
              cluster(specs.CLUSTERPOLICIES, optional=True),
              node(specs.LSPCI, optional=True), node(specs.NVIDIA_SMI, optional=True),
              cluster(specs.DAEMONSETS, optional=True), cluster(specs.EVENTS, optional=True))
    tags = ("operator", "nfd", "gfd", "labels")

    def check(self, ctx: Context) -> Iterable[Finding]:
        if not ctx.facts.has(specs.PODS):
            # without the pods nothing says whether NFD runs: OP003 still names the nodes
            raise CannotJudge("the pods were not collected, so NFD's state is unknown")
        picture = labelling(ctx)
        expected = ctx.facts.operator_expected
        if not expected and not picture.denied:
            if not picture.labeller_logs:
                raise CannotJudge(f"{STANDALONE}; no log line of an NFD or GFD pod was "
                                  "collected, so whether NFD's master refuses GFD's "
                                  "nvidia.com labels is not in the bundle")
            return  # without the operator the refused namespace is all there is to judge
        operator_says = bool(picture.no_gpu_node or picture.conditions)
        fires = bool(picture.denied) or (expected and (
            bool(picture.unlabelled) or (operator_says and picture.nfd_at_fault)))
        if fires:
            yield self._finding(ctx, picture, expected)

    def _finding(self, ctx: Context, picture: Labelling, expected: bool) -> Finding:
        ns = namespace(ctx)
        nodes = sorted(picture.unlabelled) if expected else []
        parts: list[str] = []
        evidence: list[Evidence] = []
        if nodes:
            first = picture.unlabelled[nodes[0]][0]
            parts.append(f"{len(nodes)} node(s) with NVIDIA GPUs carry no "
                         f"{PCI_LABELS[0]} label ({', '.join(nodes[:_CAP])}"
                         f"{', …' if len(nodes) > _CAP else ''}; {nodes[0]}: "
                         f"{first.excerpt}), so the operator sees no GPU there and "
                         "deploys nothing")
            for name in nodes[:2]:
                obj = ctx.facts.nodes[name]
                evidence.append(object_field(obj, f"{name}: no {PCI_LABELS[0]} label "
                                                  "(nor pci-0302_10de / pci-0300_10de)",
                                             "metadata", "labels"))
                evidence.append(picture.unlabelled[name][0])
        elif picture.no_gpu_node or picture.conditions:
            said = picture.no_gpu_node[0].excerpt if picture.no_gpu_node else \
                picture.conditions[0].excerpt
            parts.append(f"the operator finds no GPU node ({quote(said, 160)})")
        evidence += capped(picture.no_gpu_node, 1) + picture.conditions[:1]
        parts += self._reasons(picture, evidence, expected)
        summary = "Node labelling is broken: " + "; ".join(parts) + "."
        causes = [link for name in nodes
                  for link in (refs.link("OP003", name), refs.link("OP001", name))]
        causes += [refs.link("OP006", name) for name in picture.policies]
        refused_by = [refs.link("OP017", r.key) for r in picture.refused]
        objects = [node_ref(name) for name in nodes[:_CAP]]
        objects += [ObjectRef(kind="Pod", namespace=pod.namespace, name=pod.name)
                    for pod, _ in picture.broken[:2]]
        return self.finding(SUBJECT, summary, nodes=nodes, objects=objects,
                            evidence=evidence, causes=causes, caused_by=refused_by,
                            remediation=self._remediation(ctx, ns, picture))

    @staticmethod
    def _reasons(picture: Labelling, evidence: list[Evidence], expected: bool) -> list[str]:
        reasons: list[str] = []
        for refusal in picture.refused[:_CAP]:
            # the workers were never created: the refusal is the cause, not NFD's settings
            reasons.append(f"no NFD worker labels the nodes: {describe(refusal)} (see OP017)")
            evidence += [event_evidence(e) for e in refusal.events[-1:]]
        if expected and picture.nfd_absent and not picture.refused:
            reasons.append("no NFD master or worker pod exists in the cluster (the chart's "
                           "nfd.enabled=false without a separate NFD, or the NFD operator "
                           "not installed), so nothing writes the PCI labels")
        for pod, state in picture.broken[:_CAP]:
            reasons.append(f"NFD {nfd_role(pod)} {pod.namespace}/{pod.name} is {state}")
            evidence.append(object_field(pod, f"{pod.namespace}/{pod.name}: {state}",
                                         "status"))
        if picture.unreachable:
            log, hit = picture.unreachable[-1]
            said = hit.excerpt
            said = said[said.index("desc ="):] if "desc =" in said else said  # grpc's reason
            reasons.append(f"the NFD worker {log.pod.name} cannot reach the NFD master "
                           f"({quote(said, 160)}), so its labels are never written")
            evidence += capped([h for _, h in picture.unreachable], 2)
        if picture.denied:
            log, hit = picture.denied[0]
            reasons.append(f"NFD's master refuses the nvidia.com label namespace "
                           f"({quote(hit.excerpt, 120)}): GPU Feature Discovery's "
                           "nvidia.com/gpu.* labels never reach the nodes")
            evidence += capped([h for _, h in picture.denied], 2)
        if expected and not reasons and not picture.nfd_at_fault:
            reasons.append("NFD runs but does not label NVIDIA PCI devices (check its "
                           "worker configuration: deviceClassWhitelist, label sources)")
        return reasons

    @staticmethod
    def _remediation(ctx: Context, ns: str, picture: Labelling) -> str:
        lines: list[str] = [
            "# look first: which nodes have the labels, and where NFD runs",
            "kubectl get nodes -L " + ",".join(PCI_LABELS[:1]) + f",{PRESENT}",
            "kubectl get pods -A -o wide | grep -iE 'node-feature-discovery|nfd-'",
        ]
        shown: set[tuple[str, str]] = set()
        for log, _ in picture.unreachable[-1:] + picture.denied[:1]:
            if (log.pod.name, log.container) not in shown:
                shown.add((log.pod.name, log.container))
                lines.append(logs_cmd(log.pod.namespace, log, tail=30))
        if picture.no_gpu_node or picture.conditions:
            lines.append(sh.cmd("kubectl", "-n", sh.namespace(ns), "logs", "deploy/gpu-operator",
                                "--tail=200", tail=" | grep -iE 'nfd|gpu.present|GPU node'"))
        if picture.nfd_absent and ctx.facts.operator_expected:
            lines.append("# no NFD: install it (helm upgrade --reuse-values --set "
                         "nfd.enabled=true, or the NFD operator and a NodeFeatureDiscovery "
                         "instance on OpenShift)")
        for refusal in picture.refused[:1]:
            ds = refusal.daemonset
            lines.append(sh.cmd("kubectl", "-n", sh.namespace(ds.metadata.namespace or "default"),
                                "describe", "ds", sh.name(ds.metadata.name),
                                tail=" | sed -n '/Events:/,$p'"))
        if picture.unreachable:
            lines.append("# the worker must resolve and reach the master's Service on port 8080: "
                         "check the Service, its namespace and network policies")
        if picture.denied:
            lines.append("# allow the namespace on nfd-master: --extra-label-ns=nvidia.com "
                         "(chart value node-feature-discovery.master.extraLabelNs)")
        return sh.lines(lines)
