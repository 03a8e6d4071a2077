"""CMP010: A GPU-stack DaemonSet's pods are not ready and no pod record says why."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.evidence import event_evidence, field
from analyzers.facts.pod_causes import problems
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.cmp._base import severity_of
from analyzers.rules.cmp._daemonsets import standalone
from analyzers.rules.common import LOGS
from bundle import specs

POD_CAUSES = ("unscheduled", "image-pull", "cannot-start", "init-fails", "crash-loop",
              "oom-killed", "evicted")


class DaemonSetNotReady(Rule):
    """A GPU-stack DaemonSet's pods are not ready and no pod record says why.

    For a DaemonSet of the stack outside the operator with ``numberReady`` below
    ``currentNumberScheduled``, when none of its pods has a cause of CMP003–CMP009
    (the pods were not collected, or run without becoming ready): the rule quotes the
    pods' ``Unhealthy`` probe events when there are some, and otherwise says what the
    bundle lacks.

    Why it matters:
    An unready pod takes no part: a device plugin that never becomes ready advertises
    nothing, an exporter serves no metrics.

    Remediation:
    Read the pods' probe failures and logs (``kubectl describe pod``, ``kubectl logs``).
    """

    id = "CMP010"
    slug = "daemonset-not-ready"
    subject = refs.WORKLOAD
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.DAEMONSETS), cluster(specs.PODS, optional=True),
              cluster(specs.EVENTS, optional=True), cluster(specs.DEPLOYMENTS, optional=True),
              LOGS)
    tags = ("components",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        explained = {p.workload.key for cause in POD_CAUSES
                     for p in problems(ctx.facts, cause)}
        for workload, ds in standalone(ctx):
            status = ds.status
            if status.ready >= status.current or workload.key in explained:
                continue
            probes = [e for pod in workload.pods for e in ctx.facts.pod_events(pod)
                      if e.reason == "Unhealthy"]
            probes.sort(key=lambda e: e.time or "", reverse=True)
            if probes:
                why = f"their probes fail: {probes[0].message or ''}".rstrip(": ")
            elif not workload.pods:
                why = "the bundle holds none of its pods, so nothing says why"
            else:
                why = "its pods run but do not report ready, and no event says why"
            summary = (f"{workload.describe()} — {workload.purpose} — has "
                       f"{status.ready} of {status.current} pod(s) ready: {why}.")
            evidence: list[Evidence] = [field(ds, f"current {status.current}, ready "
                                                  f"{status.ready}", "status")]
            evidence += [event_evidence(e) for e in probes[:2]]
            ns = sh.namespace(workload.namespace)
            remediation = sh.lines(
                sh.cmd("kubectl", "-n", ns, "get", "pods", "-o", "wide"),
                sh.cmd("kubectl", "-n", ns, "describe", "ds", sh.name(ds.metadata.name)))
            yield self.finding(workload.key, summary, severity=severity_of(workload),
                               nodes=[p.spec.node_name for p in workload.pods
                                      if p.spec.node_name],
                               objects=[ObjectRef(kind="DaemonSet", namespace=workload.namespace,
                                                  name=workload.name)],
                               evidence=evidence, remediation=remediation)
