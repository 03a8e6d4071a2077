"""CFG001: GPU Operator release support status, and operands from another release."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.facts.preconditions import Need
from analyzers.knowledge.releases import SupportStatus
from analyzers.knowledge.releases import support as support_of
from analyzers.results.models import Confidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.cfg._base import _STATUS_MEANING, _STATUS_SEVERITY, _operand_mismatches
from analyzers.rules.common import running_operator
from bundle import specs


class OperatorSupportStatus(Rule):
    """GPU Operator release support status, and operands from another release.

    Reads the running operator version from the operator Deployment's image tag (else
    the operator pod's image, else the Helm release's app version) and looks it up in
    the release table (``analyzers/data/operator_releases.toml``: Supported, Deprecated,
    End of Support). Operand images in the operator namespace whose versions do not
    belong to that release (``analyzers/data/operand_versions.toml``, only where the
    table knows them) are listed too.

    Why it matters:
    An End-of-Support operator gets no fixes, not even for CVEs, and many known
    problems are fixed only in later lines. Operand images left from another release
    (a partial upgrade, a stale pin in the ClusterPolicy) run combinations NVIDIA never
    tested.

    Remediation:
    Check ``helm -n gpu-operator history gpu-operator`` and the ClusterPolicy's per-component
    ``version`` fields; upgrade one release line at a time (NVIDIA supports upgrades
    within a line or to the next one), with ``--reuse-values``, one node pool at a time.
    """

    id = "CFG001"
    slug = "operator-support-status"
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (
        cluster(specs.DEPLOYMENTS),
        cluster(specs.PODS, optional=True),
        cluster(specs.HELM_RELEASES, optional=True),
    )
    needs = (Need.OPERATOR,)
    tags = ("versions",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        found = running_operator(ctx)
        if found is None:
            return
        text, source_evidence, subject, where = found
        support = support_of(text)
        if support is None:
            return
        mismatches = _operand_mismatches(ctx, support.version)
        if support.status is SupportStatus.SUPPORTED and not mismatches:
            return
        parts = [f"The GPU Operator runs {support.version} (from the {where}); "
                 f"{support.note}: {_STATUS_MEANING[support.status]}."]
        if mismatches:
            listed = "; ".join(text for text, _ in mismatches[:6])
            more = f" and {len(mismatches) - 6} more" if len(mismatches) > 6 else ""
            parts.append(f"Operand images that do not belong to that release: {listed}{more}. "
                         "A version pinned on purpose in the ClusterPolicy "
                         "(spec.<component>.version) is a choice; otherwise an upgrade "
                         "stopped half way.")
        severity = _STATUS_SEVERITY[support.status]
        namespace = sh.namespace(ctx.facts.operator_namespace or "gpu-operator")
        remediation = sh.lines(
            sh.cmd("helm", "-n", namespace, "list", sh.raw(";"), "helm", "-n", namespace,
                   "history", sh.raw("<release>")),
            sh.cmd("kubectl", "-n", namespace, "get", "pods", "-o",
                   sh.raw("jsonpath='{range .items[*]}{.metadata.name}{\"\\t\"}"
                          "{.spec.containers[*].image}{\"\\n\"}{end}'")),
            "kubectl get clusterpolicy -o yaml | grep -nE '^\\s+version:'",
            "# upgrade one release line at a time, keeping values:",
            sh.cmd("helm", "upgrade", sh.raw("<release>"), "nvidia/gpu-operator", "-n", namespace,
                   "--version", sh.raw("<next>"), "--reuse-values"))
        evidence = [source_evidence] + [ev for _, ev in mismatches[:6]]
        yield self.finding(subject, " ".join(parts), severity=severity,
                           objects=[ObjectRef(kind="Deployment",
                                              namespace=subject.split("/", 1)[0],
                                              name=subject.split("/", 1)[1])],
                           evidence=evidence, remediation=remediation)
