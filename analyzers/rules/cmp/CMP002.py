"""CMP002: A GPU-stack DaemonSet's pods are refused at creation (beyond OP017's)."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.evidence import event_evidence, field
from analyzers.facts.preconditions import operator_made, stack_component
from analyzers.results.models import Confidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.cmp._base import quote, severity_of
from analyzers.rules.cmp._daemonsets import standalone
from bundle import specs
from bundle.kube import DaemonSet


def _op017_reports(ds: DaemonSet, operator_namespace: str | None) -> bool:
    """The DaemonSets OP017 reports a refusal of (``op._refused.gpu_stack``): the
    operator's, those ``preconditions.stack_component`` knows, NFD's worker."""
    return operator_made(ds, operator_namespace) or stack_component(ds) is not None or \
        any(part in ds.metadata.name for part in ("node-feature-discovery-worker", "nfd-worker"))


class DaemonSetPodsRefused(Rule):
    """A GPU-stack DaemonSet's pods are refused at creation (beyond OP017's).

    OP017 reports the refused DaemonSets it knows by name (the operator's, a device
    plugin's, GFD's, dcgm-exporter's, NFD's); this rule reports the same record —
    ``desiredNumberScheduled`` above ``currentNumberScheduled`` and the controller's
    ``FailedCreate`` events (Pod Security admission, a PodSecurityPolicy, OpenShift's
    SCCs, a ResourceQuota, an admission webhook) — for the other DaemonSets of the
    inventory (MOFED, the DRA driver, a MIG manager, a plugin found by its image), so
    that one object never has two findings.

    Why it matters:
    A refused pod never exists: no status, no log, and the component is missing on the
    nodes it should serve.

    Remediation:
    Read the refusal (``kubectl describe ds``), then allow privileged pods and hostPath
    volumes in the namespace, raise the quota, or exempt it from the webhook.
    """

    id = "CMP002"
    slug = "daemonset-pods-refused"
    subject = refs.WORKLOAD
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.DAEMONSETS), cluster(specs.EVENTS),
              cluster(specs.PODS, optional=True), cluster(specs.DEPLOYMENTS, optional=True))
    tags = ("components", "admission")

    def check(self, ctx: Context) -> Iterable[Finding]:
        refused = ctx.facts.refused_daemonsets
        for workload, ds in standalone(ctx):
            refusal = refused.get(workload.key)
            if refusal is None or _op017_reports(ds, ctx.facts.operator_namespace):
                continue
            summary = (f"{workload.describe()} — {workload.purpose} — is missing pods: "
                       f"it cannot create them ({refusal.counts()}): {refusal.by} refuses them "
                       f"({quote(refusal.latest.message or '', 320)}).")
            events = sorted(refusal.events, key=lambda e: e.time or "", reverse=True)
            evidence = [field(ds, f"{workload.key}: {refusal.counts()}", "status"),
                        *[event_evidence(e) for e in events[:2]]]
            ns = sh.namespace(workload.namespace)
            remediation = sh.lines(
                sh.cmd("kubectl", "-n", ns, "describe", "ds", sh.name(ds.metadata.name),
                       tail=" | sed -n '/Events:/,$p'"),
                sh.cmd("kubectl", "get", "ns", ns, "--show-labels"),
                sh.cmd("kubectl", "-n", ns, "get", "resourcequota"))
            yield self.finding(workload.key, summary, severity=severity_of(workload),
                               objects=[ObjectRef(kind="DaemonSet", namespace=workload.namespace,
                                                  name=workload.name)],
                               evidence=evidence, remediation=remediation)
