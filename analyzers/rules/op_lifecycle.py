"""OP006, OP007, OP010: the ClusterPolicy, driver upgrades and the driver's kernel."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.driverkernel import DRIVER_CONTAINER, DriverKernel
from analyzers.facts.operands import OperandPod
from analyzers.facts.operator_presence import STANDALONE
from analyzers.facts.preconditions import Need
from analyzers.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.refs import Link
from analyzers.rule import CannotJudge, Context, Input, Rule, cluster, node
from analyzers.rules.common import LOGS, field, node_ref
from analyzers.rules.drv_driver import SecureBootRefusedModule, secure_boot
from analyzers.rules.op_common import (
    as_evidence,
    capped,
    events_evidence,
    logs_cmd,
    logs_evidence,
    namespace,
    on_node,
    operand_evidence,
    quote,
)
from analyzers.rules.op_driverfit import named_error
from bundle import Bundle
from bundle.evidence import Locator, clip
from bundle.kube import ClusterPolicy, Node
from bundle.manifest import ManifestItem

POLICIES = "cluster/clusterpolicies.json"
_MISSING_CRD = re.compile(r"doesn.t have a resource type|no matches for kind|"
                          r"could not find the requested resource", re.IGNORECASE)


def missing_crd(bundle: Bundle) -> tuple[int, ManifestItem] | None:
    """The manifest item whose error says the ClusterPolicy CRD does not exist."""
    for index, item in enumerate(bundle.manifest.items):
        if item.path == POLICIES and item.error and _MISSING_CRD.search(item.error):
            return index, item
    return None


@dataclass(frozen=True, slots=True)
class PolicyList(Input):
    """``cluster/clusterpolicies.json``, or a collection error saying its CRD is missing
    (then the rule reports the missing CRD instead of being skipped)."""

    def present(self, bundle: Bundle) -> bool:
        return Input.present(self, bundle) or missing_crd(bundle) is not None


# ----------------------------------------------------------------------------- OP006

_NODE_REASONS = {"OperandNotReady", "DriverNotReady", "ReconcileFailed",
                 "NodeStatusExporterNotReady"}
_NFD_REASONS = {"NFDLabelsMissing", "NoGPUNodes"}


class ClusterPolicyNotReady(Rule):
    """ClusterPolicy not ready, ignored or missing.

    The ClusterPolicy is the one object the operator reconciles. The rule reports a
    policy whose ``status.state`` is ``notReady`` (with its condition reasons such as
    ``OperandNotReady``, ``DriverNotReady``, ``NFDLabelsMissing`` and the operator's
    "states not ready" log line), a duplicate policy the operator ``ignored``, a
    policy never reconciled (no status), and a cluster without ClusterPolicy: an empty
    list, or — read from the collector's error — no ClusterPolicy CRD at all.

    Why it matters:
    ``notReady`` names which operator states are stuck; a missing or ignored policy
    means the operator deploys nothing (or not what the admin edited), which no pod
    status shows.

    Remediation:
    ``kubectl get clusterpolicy -o jsonpath='{.items[*].status}'`` and the operator log
    (``kubectl -n gpu-operator logs deploy/gpu-operator --tail=100``); follow the
    first state listed as not ready to its operand pods. A missing CRD means the chart
    (or its CRDs) is not installed: ``helm -n gpu-operator list``.
    """

    id = "OP006"
    slug = "clusterpolicy-not-ready"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (PolicyList(POLICIES), LOGS)
    tags = ("operator", "clusterpolicy")

    def check(self, ctx: Context) -> Iterable[Finding]:
        ns = namespace(ctx)
        if not ctx.facts.operator_expected and not (
                ctx.bundle.has(POLICIES) and ctx.bundle.cluster.clusterpolicies):
            raise CannotJudge(STANDALONE)
        if not ctx.bundle.has(POLICIES):
            crd = missing_crd(ctx.bundle)
            if crd is not None:
                yield self._missing_crd(ns, *crd)
            return
        policies = ctx.bundle.cluster.clusterpolicies
        if not policies:
            yield self._empty(ctx, ns)
            return
        active = ctx.facts.cluster_policy
        operator_line = self._operator_line(ctx)
        for policy in policies:
            state = policy.status.state or ""
            if state == "notReady":
                yield self._not_ready(ctx, ns, policy, operator_line)
            elif state == "ignored":
                yield self._ignored(ns, policy, active)
            elif not state:
                yield self.finding(
                    policy.metadata.name,
                    f"ClusterPolicy {policy.metadata.name} has no status: the operator has "
                    "never reconciled it (is the operator pod running?).",
                    severity=Severity.MEDIUM,
                    objects=[ObjectRef(kind="ClusterPolicy", name=policy.metadata.name)],
                    evidence=[field(policy, "(no status.state)", "status")],
                    remediation=sh.lines(
                        sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "pods", "-l",
                               "app=gpu-operator", "-o", "wide"),
                        sh.cmd("kubectl", "-n", sh.namespace(ns), "logs", "deploy/gpu-operator",
                               "--tail=100")))

    def _missing_crd(self, ns: str, index: int, item: ManifestItem) -> Finding:
        error = clip(item.error or "")
        summary = ("The bundle has no ClusterPolicy list because the collector's "
                   f"'kubectl get clusterpolicies.nvidia.com' failed: {error}. That is a "
                   "collection result, not a parse gap: the clusterpolicies.nvidia.com CRD "
                   "does not exist, so the GPU Operator (or its CRDs) is not installed and "
                   "nothing deploys the operands.")
        return self.finding(
            refs.OP006.MISSING, summary, title="ClusterPolicy CRD missing",
            evidence=[Evidence(path="manifest.json", pointer=f"/items/{index}/error",
                               excerpt=error)],
            remediation=sh.lines("kubectl get crd | grep -i nvidia",
                                 sh.cmd("helm", "-n", sh.namespace(ns), "list", "-a"),
                                 sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "pods", "-o",
                                        "wide"),
                                 "# reinstall the chart (it installs the CRDs) or apply the CRDs "
                                 "of the installed chart version"))

    def _empty(self, ctx: Context, ns: str) -> Finding:
        operator = ctx.facts.operator_pods
        running = f" (operator pod: {operator[0].name})" if operator else \
            " and no operator pod runs"
        summary = (f"No ClusterPolicy exists{running}: the operator has nothing to reconcile "
                   "and deploys no operands.")
        return self.finding(
            refs.OP006.MISSING, summary, title="No ClusterPolicy",
            evidence=[Evidence(path=POLICIES, pointer="/items", excerpt="[] (empty list)")],
            remediation=sh.lines(sh.cmd("helm", "-n", sh.namespace(ns), "history",
                                        "gpu-operator"),
                                 sh.cmd("helm", "-n", sh.namespace(ns), "get", "values",
                                        "gpu-operator"),
                                 "# the chart creates the ClusterPolicy; a 'helm upgrade "
                                 "--reuse-values' recreates it"))

    @staticmethod
    def _operator_line(ctx: Context) -> Locator | None:
        found: list[Locator] = []
        for pod in ctx.facts.operator_pods:
            for log in ctx.facts.pod_logs.of(pod):
                if log.previous:
                    continue
                found += [log.locate(h) for h in log.matches("OP006")
                          if h.signature.id == "operator-clusterpolicy-not-ready"]
        return found[-1] if found else None

    def _not_ready(self, ctx: Context, ns: str, policy: ClusterPolicy,
                   operator_line: Locator | None) -> Finding:
        name = policy.metadata.name
        reasons = []
        evidence: list[Evidence] = [field(policy, "status.state: notReady", "status", "state")]
        for index, condition in enumerate(policy.status.conditions):
            failing = (condition.type == "Error" and condition.status == "True") or \
                      (condition.type == "Ready" and condition.status == "False")
            if failing:
                text = f"{condition.type}={condition.status} {condition.reason or ''}: " \
                       f"{condition.message or ''}".strip()
                reasons.append(condition.reason or condition.type)
                evidence.append(field(policy, text, "status", "conditions", index))
        if operator_line is not None:
            evidence.append(as_evidence(operator_line))
        reason_text = f" ({', '.join(sorted(set(reasons)))})" if reasons else ""
        states = ""
        if operator_line is not None and "[" in operator_line.excerpt:
            states = " Operator: " + operator_line.excerpt[operator_line.excerpt.index("["):]
            states = states.split("]")[0] + "]."
        summary = (f"ClusterPolicy {name} is notReady{reason_text}: the operator has not "
                   f"finished reconciling its operands.{states}")
        causes: list[Link] = []
        if not reasons or _NODE_REASONS & set(reasons):
            causes += [refs.OP001(n) for n in ctx.facts.gpu_nodes]
        if _NFD_REASONS & set(reasons) or not reasons:
            causes += [refs.OP003(n.name) for n in ctx.bundle.cluster.nodes]
        return self.finding(
            name, summary, objects=[ObjectRef(kind="ClusterPolicy", name=name)],
            evidence=evidence, caused_by=causes,
            remediation=sh.lines(
                "kubectl get clusterpolicy -o jsonpath='{.items[0].status.state}"
                "{\"\\n\"}{range .items[0].status.conditions[*]}{.type}={.status} "
                "{.reason}: {.message}{\"\\n\"}{end}'",
                sh.cmd("kubectl", "-n", sh.namespace(ns), "logs", "deploy/gpu-operator",
                       "--tail=100", tail=" | grep -i 'not ready'"),
                sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "ds,pods", "-o", "wide"),
                "# follow the first state listed as not ready to its pods (see OP001 per node)"))

    def _ignored(self, ns: str, policy: ClusterPolicy, active: ClusterPolicy | None) -> Finding:
        name = policy.metadata.name
        follows = f"; the operator follows {active.metadata.name}" if active is not None else ""
        summary = (f"ClusterPolicy {name} is ignored as a duplicate{follows}. Changes made "
                   "to it have no effect.")
        return self.finding(
            name, summary, severity=Severity.MEDIUM, title="Duplicate ClusterPolicy ignored",
            objects=[ObjectRef(kind="ClusterPolicy", name=name)],
            evidence=[field(policy, f"status.state: {policy.status.state or '(none)'}",
                            "status")],
            remediation=("kubectl get clusterpolicy -o custom-columns=NAME:.metadata.name,"
                         "STATE:.status.state,CREATED:.metadata.creationTimestamp\n"
                         "# keep one policy: move the wanted settings to the active one "
                         "(helm upgrade --reuse-values), then delete the duplicate"))


# ----------------------------------------------------------------------------- OP007

UPGRADE_STATE = "nvidia.com/gpu-driver-upgrade-state"
INITIAL_UNSCHEDULABLE = "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"
FAILED = "upgrade-failed"
DONE = "upgrade-done"
MIDDLE = frozenset({
    "cordon-required", "wait-for-jobs-required", "pod-deletion-required", "drain-required",
    "node-maintenance-required", "post-maintenance-required", "pod-restart-required",
    "validation-required", "uncordon-required",
})
START_ANNOTATIONS = (
    "nvidia.com/gpu-driver-upgrade-wait-for-pod-completion-start-time",
    "nvidia.com/gpu-driver-upgrade-validation-start-time",
)
STUCK_AFTER_S = 3600


def _age(obj: Node, created_at: str | None) -> float | None:
    """Seconds since the upgrade step started (from its annotations), at collection."""
    if not created_at:
        return None
    try:
        now = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    starts = []
    for key in START_ANNOTATIONS:
        value = obj.metadata.annotations.get(key, "")
        if value.isdigit():
            starts.append(datetime.fromtimestamp(int(value), tz=UTC))
    if not starts:
        return None
    return (now - max(starts)).total_seconds()


class DriverUpgradeStuck(Rule):
    """Driver upgrade stuck on a node.

    The operator's upgrade state machine labels each node
    ``nvidia.com/gpu-driver-upgrade-state``. The rule reports nodes at
    ``upgrade-failed``, nodes in a middle state (``drain-required``,
    ``validation-required`` ...; "stuck" once the step's start annotation is more than
    an hour old at collection), and nodes left cordoned (``spec.unschedulable``) after
    the upgrade finished or failed, unless they were cordoned before it. Driver
    manager lines such as ``driver is in use`` are quoted.

    Why it matters:
    A failed or stalled upgrade leaves the node without a working driver, often
    cordoned, so it takes no GPU work; the operator does not retry a failed node by
    itself.

    Remediation:
    ``kubectl get nodes -L nvidia.com/gpu-driver-upgrade-state``; read the driver pod's
    ``k8s-driver-manager`` and ``nvidia-driver-ctr`` logs; after fixing the cause,
    retry on one node with
    ``kubectl label node <node> nvidia.com/gpu-driver-upgrade-state=upgrade-required
    --overwrite`` and uncordon nodes a finished upgrade left cordoned.
    """

    id = "OP007"
    slug = "driver-upgrade-stuck"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster("nodes.json"), cluster("pods.json", optional=True),
              cluster("events.json", optional=True), LOGS,
              cluster("clusterpolicies.json", optional=True), node("host/uname.txt", optional=True))
    needs = (Need.OPERATOR,)
    tags = ("operator", "driver", "upgrade")

    def check(self, ctx: Context) -> Iterable[Finding]:
        created = ctx.bundle.manifest.created_at
        for obj in ctx.bundle.cluster.nodes:
            state = obj.labels.get(UPGRADE_STATE)
            if state is None:
                continue
            left_cordoned = obj.spec.unschedulable and state in (DONE, FAILED) and \
                obj.metadata.annotations.get(INITIAL_UNSCHEDULABLE) != "true"
            if state == FAILED or state in MIDDLE or left_cordoned:
                yield self._finding(ctx, obj, state, left_cordoned, _age(obj, created))

    def _finding(self, ctx: Context, obj: Node, state: str, left_cordoned: bool,
                 age: float | None) -> Finding:
        name = obj.name
        ns = namespace(ctx)
        driver = ctx.facts.operands.get(name, {}).get("driver")
        evidence: list[Evidence] = [field(obj, f"{UPGRADE_STATE}={state}", "metadata",
                                          "labels", UPGRADE_STATE)]
        severity = self.severity
        if state == FAILED:
            summary = f"The driver upgrade on {name} failed ({UPGRADE_STATE}=upgrade-failed)"
        elif state in MIDDLE:
            if age is not None and age > STUCK_AFTER_S:
                summary = (f"The driver upgrade on {name} is stuck at {state} for "
                           f"{age / 3600:.1f} h")
            else:
                took = f" (step started {age / 60:.0f} min before collection)" \
                    if age is not None else ""
                summary = f"The driver upgrade on {name} was at {state} when collected{took}"
                severity = Severity.MEDIUM
        else:
            summary = f"The driver upgrade on {name} is {state}"
        if obj.spec.unschedulable:
            evidence.append(field(obj, "spec.unschedulable: true", "spec", "unschedulable"))
            if left_cordoned:
                summary += "; the node is still cordoned and was not cordoned before it"
            else:
                summary += "; the node is cordoned"
        causes: list[Link] = []
        if driver is not None:
            summary += f". Driver pod {driver.pod.name}: {driver.state}"
            evidence.append(operand_evidence(driver))
            logs = list(ctx.facts.pod_logs.of(driver.pod))
            evidence += logs_evidence(logs, "OP007", cap=3, tail=False)
            evidence += logs_evidence([log for log in logs if log.container == DRIVER_CONTAINER
                                       and not log.previous], None, cap=2)
            kernel = ctx.facts.driver_kernel.get(name)
            if kernel is not None and kernel.broken:
                summary += " — the new driver cannot install on the node (see OP010)"
                causes.append(refs.OP010(name))
        events = [e for key in (("Node", "", name), ("Node", "default", name))
                  for e in ctx.facts.events_by_object.get(key, [])
                  if e.reason == "GPUDriverUpgrade"]
        evidence += events_evidence(events[-2:], 2)
        summary += "."
        lines = [f"kubectl get nodes -L {UPGRADE_STATE}", on_node(ns, name)]
        if driver is not None:
            lines += [sh.cmd("kubectl", "-n", sh.namespace(ns), "logs", sh.pod(driver.pod.name),
                             "-c", "k8s-driver-manager", "--tail=50"),
                      sh.cmd("kubectl", "-n", sh.namespace(ns), "logs", sh.pod(driver.pod.name),
                             "-c", DRIVER_CONTAINER, "--tail=100")]
        lines += ["# on the node: lsof /dev/nvidia* | awk 'NR>1{print $1,$2}' | sort -u   "
                  "# what holds the GPU"]
        if state == FAILED:
            lines += ["# after fixing the cause, retry this node only:",
                      sh.cmd("kubectl", "label", "node", sh.node(name),
                             f"{UPGRADE_STATE}=upgrade-required", "--overwrite")]
        if left_cordoned:
            lines.append(sh.cmd("kubectl", "uncordon", sh.node(name),
                                tail="   # only once its GPU pods validate again"))
        objects = [node_ref(name)]
        if driver is not None:
            objects.append(ObjectRef(kind="Pod", namespace=driver.pod.namespace,
                                     name=driver.pod.name))
        return self.finding(name, summary, severity=severity, nodes=[name], objects=objects,
                            evidence=capped(evidence, 8), remediation=sh.lines(lines),
                            caused_by=causes)


# ----------------------------------------------------------------------------- OP010

# What to look at next for the error the driver container's log names.
_BUILD_NEXT = {
    "signing": "# the kernel enforces module signatures: check 'mokutil --sb-state' and the "
               "kernel command line (lockdown=, module.sig_enforce=1) on the node; sign the "
               "module or use a signed precompiled driver image",
    "dkms": "# read the DKMS error in the driver container's log (and its make.log); the "
            "kernel is not shown to be the problem",
    "compiler": "# the container's compiler differs from the kernel's ('cat /proc/version' on "
                "the node): use a driver image for this OS release",
    "kernel": "# the build needs headers for the running kernel: check the repository access "
              "(driver.repoConfig, proxy) or use a precompiled image that exists for this "
              "kernel",
    "other": "# fix the error the driver container's log names (quoted above)",
    "generic": "# read the lines before the installer's message: 'Kernel module load error' and "
               "'Kernel messages' name the reason",
}


def _signing_without_secure_boot(ctx: Context, name: str) -> str:
    """OP010's sentence for a signature refusal that DRV004 (Secure Boot) does not own."""
    enabled, line = secure_boot(ctx, name)
    if line is not None and not enabled:
        return ("Secure Boot is off, so the kernel enforces module signatures by itself "
                "(lockdown= or module.sig_enforce=1 on its command line): the module needs "
                "a signature the kernel trusts; the kernel version is not the problem.")
    return ("The module needs a signature the kernel trusts; the kernel version is not the "
            "problem.")


class DriverKernelMismatch(Rule):
    """Driver container cannot install: no image for the node's kernel, or its module fails.

    The operator's driver pod either cannot get its image — a precompiled driver is
    tagged ``<branch>-<kernel>-<os>``, and no image exists for the node's kernel
    (``manifest unknown`` / ``not found``, pod in ``ImagePullBackOff``) — or builds the
    kernel module at start and fails. For a failed build the finding quotes the most
    specific error the container's log names, before the installer's generic hint: the
    kernel refusing the module's signature (with Secure Boot off too: ``lockdown=`` or
    ``module.sig_enforce=1``), the module's DKMS configuration, a compiler other than
    the kernel's (both versions named), no kernel packages for the running kernel. It
    says the kernel does not fit only where versions show it. The kernel comes from
    ``host/uname.txt``, else from the Node's ``status.nodeInfo.kernelVersion``.

    Why it matters:
    Without a driver every other operand on the node waits in Init; it typically
    starts right after an automatic kernel upgrade, on one node at a time.

    Remediation:
    Compare the node's kernel with the image tag
    (``kubectl get node <node> -o jsonpath='{.status.nodeInfo.kernelVersion}'``,
    ``kubectl -n gpu-operator describe pod <driver pod>``). Pin the kernel to one with a
    published image, or switch off ``driver.usePrecompiled``; for build failures read
    ``kubectl -n gpu-operator logs <driver pod> -c nvidia-driver-ctr --previous``.
    """

    id = "OP010"
    slug = "driver-kernel-mismatch"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (cluster("pods.json"), cluster("events.json", optional=True), LOGS,
              node("host/uname.txt", optional=True), cluster("clusterpolicies.json", optional=True),
              node("host/secureboot.txt", optional=True))
    needs = (Need.OPERATOR,)
    tags = ("operator", "driver", "kernel")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name, driver in sorted(ctx.facts.driver_kernel.items()):
            if driver.broken:
                operand = ctx.facts.operands.get(name, {}).get("driver")
                yield self._finding(ctx, name, driver, operand)

    def _finding(self, ctx: Context, name: str, driver: DriverKernel,
                 operand: OperandPod | None) -> Finding:
        ns = namespace(ctx)
        pod = driver.pod
        kernel = driver.kernel or "unknown"
        state = f" ({operand.state})" if operand is not None else ""
        parts = []
        if driver.pulls:
            if driver.missing_tag:
                parts.append(f"the image {driver.image} does not exist in the registry")
            else:
                parts.append(f"the image {driver.image} cannot be pulled "
                             f"({quote(driver.pulls[0].message, 160)})")
            if driver.precompiled and driver.kernel and driver.tag and \
                    driver.kernel in driver.tag:
                parts.append(f"it is the precompiled tag for the node's kernel {kernel}: no "
                             "precompiled driver was published for this kernel")
            elif driver.precompiled:
                parts.append(f"precompiled drivers are enabled and the node runs kernel "
                             f"{kernel}")
        named = None
        if driver.build_errors:
            logs = [(log.path, log.text) for log in ctx.facts.pod_logs.of(pod)
                    if log.container == DRIVER_CONTAINER]
            named = named_error(driver.build_errors, logs, kernel)
            parts.append(named.text)
        summary = f"On {name}, the driver pod {pod.name}{state} cannot install: " \
                  f"{'; '.join(parts)}. Every other operand on the node waits for it."
        causes: list[Link] = []
        if SecureBootRefusedModule.explains(ctx, name):
            summary += (" Secure Boot refuses the module for its signature: that is the "
                        "cause, not the kernel match (see DRV004).")
            causes.append(refs.DRV004(name))
        elif named is not None and named.kind == "signing":
            summary += (" " + _signing_without_secure_boot(ctx, name))
        evidence: list[Evidence] = capped([p.where for p in driver.pulls], 2)
        image_index = next((i for i, c in enumerate(pod.spec.containers)
                            if c.image == driver.image), None)
        if image_index is not None and driver.image:
            evidence.append(field(pod, f"image: {driver.image}", "spec", "containers",
                                  image_index, "image"))
        if driver.kernel_where is not None:
            evidence.append(as_evidence(driver.kernel_where))
        evidence += capped(list(dict.fromkeys([*(named.where if named else ()),
                                               *driver.build_errors])), 4)
        lines = [
            sh.cmd("kubectl", "get", "node", sh.node(name), "-o",
                   sh.raw("jsonpath='{.status.nodeInfo.kernelVersion} "
                          "{.status.nodeInfo.osImage}{\"\\n\"}'")),
            sh.cmd("kubectl", "-n", sh.namespace(ns), "describe", "pod", sh.pod(pod.name),
                   tail=" | tail -20"),
            "kubectl get clusterpolicy -o jsonpath='{.items[0].spec.driver.usePrecompiled} "
            "{.items[0].spec.driver.version}{\"\\n\"}'",
        ]
        lines += [logs_cmd(ns, log, 200) for log in ctx.facts.pod_logs.of(pod)
                  if log.container == DRIVER_CONTAINER][:2]
        if driver.pulls:
            lines.append("# pin the node to a kernel that has a published image (hold kernel "
                         "upgrades), pick a driver version/OS that is published, or set "
                         "driver.usePrecompiled=false (helm upgrade --reuse-values)")
        if named is not None:
            lines.append(_BUILD_NEXT[named.kind])
        others = sorted(n for n, d in ctx.facts.driver_kernel.items()
                        if d.broken and n != name)
        if others:
            more = f" and {len(others) - 4} more" if len(others) > 4 else ""
            lines.append(sh.note("# also affected: {nodes}{more}; fix one node first",
                                 nodes=[sh.node(n) for n in others[:4]], more=sh.raw(more)))
        objects = [node_ref(name), ObjectRef(kind="Pod", namespace=pod.namespace, name=pod.name)]
        return self.finding(name, summary, nodes=[name], objects=objects, evidence=evidence,
                            remediation=sh.lines(lines), causes=[refs.OP001(name)],
                            caused_by=causes)

