"""OP002 and OP003: the labels and taints that decide where operands run."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.gpu import is_gpu_resource
from analyzers.facts.operands import NFD_WORKER, OperandPod, component_of, node_of, pod_state
from analyzers.facts.operator_presence import STANDALONE
from analyzers.facts.preconditions import Need
from analyzers.facts.scheduling import BLOCKING_EFFECTS, taint_text, tolerates
from analyzers.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.refs import Link
from analyzers.rule import CannotJudge, Context, Rule, cluster, node
from analyzers.rules.common import LOGS, field, node_ref
from analyzers.rules.op_common import capped, logs_cmd, namespace
from bundle.evidence import Locator, clip
from bundle.kube import DaemonSet, Node, Pod, quantity_int
from bundle.lspci import parse_lspci

DEPLOY = "nvidia.com/gpu.deploy."
PRESENT = "nvidia.com/gpu.present"
PCI_LABELS = (
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-0302_10de.present",
    "feature.node.kubernetes.io/pci-0300_10de.present",
)
# Deploy labels of the container workload (operator state_manager.go), MIG manager aside.
CONTAINER_DEPLOY = frozenset({
    "driver", "gpu-feature-discovery", "container-toolkit", "device-plugin", "dcgm",
    "dcgm-exporter", "node-status-exporter", "operator-validator", "mig-manager",
})
CRITICAL_DEPLOY = frozenset({"driver", "container-toolkit", "device-plugin",
                             "operator-validator"})
# Taints every DaemonSet pod tolerates (the DaemonSet controller adds these tolerations).
DAEMONSET_TOLERATED = frozenset({
    "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
    "node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/network-unavailable",
})
PAUSED = "paused-for-"
# ClusterPolicy condition reasons that say the operator found no GPU node.
NFD_REASONS = frozenset({"NFDLabelsMissing", "NoGPUNodes"})


@dataclass(frozen=True, slots=True)
class Miss:
    """Why a DaemonSet places no pod on a node."""

    kind: str            # "paused", "missing", "mismatch", "taint", "disabled"
    text: str
    where: Evidence


def _label_evidence(obj: Node, key: str, excerpt: str) -> Evidence:
    if key in obj.labels:
        return field(obj, excerpt, "metadata", "labels", key)
    return field(obj, excerpt, "metadata", "labels")


def misses(ds: DaemonSet, obj: Node) -> list[Miss]:
    """Everything that keeps ``ds`` off ``obj``: selector labels and untolerated taints."""
    found: list[Miss] = []
    spec = ds.spec.template.spec
    for key, want in sorted(spec.node_selector.items()):
        have = obj.labels.get(key)
        if have == want:
            continue
        if have is not None and have.startswith(PAUSED):
            found.append(Miss("paused", f"{key}={have}",
                              _label_evidence(obj, key, f"{key}={have}")))
        elif have == "false":
            found.append(Miss("disabled", f"{key}=false",
                              _label_evidence(obj, key, f"{key}=false")))
        elif have is None:
            found.append(Miss("missing", f"no {key} label",
                              _label_evidence(obj, key, f"(no {key} label)")))
        else:
            found.append(Miss("mismatch", f"{key}={have} (selector wants {want})",
                              _label_evidence(obj, key, f"{key}={have}")))
    for index, taint in enumerate(obj.spec.taints):
        if taint.effect not in BLOCKING_EFFECTS or taint.key in DAEMONSET_TOLERATED:
            continue
        if not tolerates(spec.tolerations, taint):
            text = f"untolerated taint {taint_text(taint)}"
            found.append(Miss("taint", text, field(obj, text, "spec", "taints", index)))
    return found


def _generic(miss: Miss) -> str:
    """A reason without the component's name, so DaemonSets with the same cause group."""
    if miss.kind == "missing" and miss.text.startswith(f"no {DEPLOY}"):
        return f"no {DEPLOY}<component> label"
    return miss.text


def _deploy_key(ds: DaemonSet) -> str | None:
    for key in sorted(ds.spec.template.spec.node_selector):
        if key.startswith(DEPLOY):
            return key
    return None


def has_pci_label(obj: Node) -> bool:
    return any(obj.labels.get(key) == "true" for key in PCI_LABELS)


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
    inputs = (cluster("daemonsets.json"), cluster("nodes.json"))
    needs = (Need.OPERATOR,)
    tags = ("operator", "scheduling")

    def check(self, ctx: Context) -> Iterable[Finding]:
        ns = ctx.facts.operator_namespace
        groups: dict[str, list[DaemonSet]] = {}
        for ds in ctx.bundle.cluster.daemonsets:
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
                causes.append(refs.OP003(name))
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


def gpu_signs(ctx: Context, obj: Node) -> list[Evidence]:
    """Evidence that a node has NVIDIA GPUs, independent of NFD's PCI label."""
    found: list[Evidence] = []
    product = obj.labels.get("nvidia.com/gpu.product")
    if product:
        found.append(field(obj, f"nvidia.com/gpu.product={product}", "metadata", "labels",
                           "nvidia.com/gpu.product"))
    for resource, value in sorted(obj.status.capacity.items()):
        if is_gpu_resource(resource) and (quantity_int(value) or 0) > 0:
            found.append(field(obj, f"capacity {resource}: {value}", "status", "capacity",
                               resource))
            break
    smi = ctx.bundle.node(obj.name).nvidia_smi
    if smi is not None and smi.gpus:
        product_name = smi.gpus[0].product_name or "GPU"
        found.append(Evidence(path=ctx.bundle.node(obj.name).path("nvidia-smi.xml"),
                              excerpt=f"nvidia-smi lists {len(smi.gpus)} GPU(s): "
                                      f"{product_name}"))
    found += _lspci_signs(ctx, obj.name)
    if obj.labels.get(PRESENT) == "true":
        found.append(field(obj, f"{PRESENT}=true", "metadata", "labels", PRESENT))
    return found


def _lspci_signs(ctx: Context, name: str) -> list[Evidence]:
    """The first NVIDIA GPU of the node's ``host/lspci.txt``: the one sign that needs
    neither the driver nor any operand, so it holds on a fresh install."""
    artifacts = ctx.bundle.node(name)
    text = artifacts.host("lspci.txt")
    gpus = [d for d in parse_lspci(text) if d.is_gpu] if text else []
    if not gpus:
        return []
    return [Evidence(path=artifacts.path("host/lspci.txt"), line=gpus[0].line,
                     excerpt=f"lspci lists {len(gpus)} NVIDIA GPU(s): {clip(gpus[0].text)}")]


def _nfd_workers(pods: Iterable[Pod]) -> dict[str, OperandPod]:
    """node → its NFD worker pod (the least healthy one if several)."""
    found: dict[str, OperandPod] = {}
    for pod in pods:
        node_name = node_of(pod)
        if node_name is None or component_of(pod) != NFD_WORKER:
            continue
        operand = OperandPod(NFD_WORKER, pod, pod_state(pod))
        current = found.get(node_name)
        if current is None or (current.healthy and not operand.healthy):
            found[node_name] = operand
    return found


def _nfd_daemonset(daemonsets: Iterable[DaemonSet]) -> DaemonSet | None:
    for ds in daemonsets:
        name = ds.metadata.name
        if "nfd-worker" in name or "node-feature-discovery-worker" in name:
            return ds
    return None


def _no_gpu_node(ctx: Context) -> bool:
    """The ClusterPolicy says the operator found no GPU node."""
    return any(condition.reason in NFD_REASONS
               for policy in ctx.bundle.cluster.clusterpolicies
               for condition in policy.status.conditions)


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
    inputs = (cluster("nodes.json"), cluster("pods.json", optional=True),
              cluster("daemonsets.json", optional=True), node("nvidia-smi.xml", optional=True),
              node("host/lspci.txt", optional=True), cluster("clusterpolicies.json", optional=True),
              LOGS)
    tags = ("operator", "nfd", "labels")

    def check(self, ctx: Context) -> Iterable[Finding]:
        if not ctx.facts.operator_expected:
            raise CannotJudge(STANDALONE)
        workers = _nfd_workers(ctx.bundle.cluster.pods)
        nfd_ds = _nfd_daemonset(ctx.bundle.cluster.daemonsets)
        operator_lines = self._operator_lines(ctx)
        unseen: list[str] = []
        for obj in ctx.bundle.cluster.nodes:
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
        nodes = ctx.bundle.cluster.nodes
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
        links = [refs.OP002(name)]
        if obj.labels.get(PRESENT) != "true":
            links.append(refs.OP008(name))
            if ctx.facts.toolkit_enabled():
                links += [refs.RT001(name), refs.RT006(name)]
        return links

