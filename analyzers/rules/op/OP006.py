"""OP006: ClusterPolicy not ready, ignored or missing."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.evidence import field
from analyzers.facts.operator_presence import STANDALONE
from analyzers.refs import Link
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import CannotJudge, Context, Rule
from analyzers.rules.common import LOGS
from analyzers.rules.op._common import (
    as_evidence,
    namespace,
)
from analyzers.rules.op._lifecycle import (
    _NFD_REASONS,
    _NODE_REASONS,
    POLICIES,
    POLICY_LIST,
)
from bundle import specs
from bundle.evidence import Locator, clip
from bundle.kube import ClusterPolicy
from bundle.manifest import ManifestItem


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
    subject = refs.POLICY_OR_MISSING
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (POLICY_LIST, LOGS)
    tags = ("operator", "clusterpolicy")

    def check(self, ctx: Context) -> Iterable[Finding]:
        ns = namespace(ctx)
        if not ctx.facts.operator_expected and not (
                ctx.facts.has(POLICIES) and ctx.facts.clusterpolicies):
            raise CannotJudge(STANDALONE)
        if not ctx.facts.has(POLICIES):
            crd = POLICY_LIST.failed_as_expected(ctx.facts.manifest.items)
            if crd is not None:
                yield self._missing_crd(ns, *crd)
            return
        policies = ctx.facts.clusterpolicies
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
            refs.MISSING, summary, title="ClusterPolicy CRD missing",
            evidence=[Evidence(path=specs.MANIFEST, pointer=f"/items/{index}/error",
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
            refs.MISSING, summary, title="No ClusterPolicy",
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
            causes += [refs.link("OP001", n) for n in ctx.facts.gpu_nodes]
        if _NFD_REASONS & set(reasons) or not reasons:
            causes += [refs.link("OP003", n.name) for n in ctx.facts.node_objects]
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
