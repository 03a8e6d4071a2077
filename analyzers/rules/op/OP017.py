"""OP017: A GPU-stack DaemonSet cannot create its pods: creating them is refused."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.evidence import event_evidence, field
from analyzers.facts.refusals import CreateRefusal
from analyzers.refs import Link
from analyzers.results.models import Confidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.op._refused import describe, gpu_stack, plugin_links
from bundle import specs


class DaemonSetRefused(Rule):
    """A GPU-stack DaemonSet cannot create its pods: creating them is refused.

    For the operator's DaemonSets and those of a standalone device plugin,
    dcgm-exporter, GPU Feature Discovery, a managed driver installer or NFD, the rule
    reports a DaemonSet whose ``desiredNumberScheduled`` is above its
    ``currentNumberScheduled`` while the DaemonSet controller records ``FailedCreate``:
    Pod Security admission (``violates PodSecurity "baseline:latest": hostPath
    volumes``), a PodSecurityPolicy, OpenShift's SecurityContextConstraints, a
    ResourceQuota (``exceeded quota``) or an admission webhook (``denied the
    request``). It quotes the refusal.

    Why it matters:
    A refused pod never exists: no pod status, no log, nothing in ``kubectl get
    pods``. What the pod should have done (label nodes, advertise GPUs, install the
    toolkit) simply does not happen, and other symptoms point at its configuration
    instead of the admission that stopped it.

    Remediation:
    Read the refusal first: ``kubectl -n <ns> describe ds <name>`` (Events), the
    namespace's Pod Security labels (``kubectl get ns <ns> --show-labels``), its
    quotas (``kubectl -n <ns> get resourcequota``) and the webhooks
    (``kubectl get validatingwebhookconfigurations``). The GPU stack needs hostPath
    volumes and privileged containers: label its namespace
    ``pod-security.kubernetes.io/enforce=privileged``, or exempt it from the policy or
    webhook that refuses it.
    """

    id = "OP017"
    slug = "daemonset-refused"
    subject = refs.DAEMONSET
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.DAEMONSETS), cluster(specs.EVENTS),
              # which refused DaemonSet is a device plugin, and the nodes left without one
              cluster(specs.PODS, optional=True), cluster(specs.DEPLOYMENTS, optional=True))
    tags = ("operator", "admission")

    def check(self, ctx: Context) -> Iterable[Finding]:
        ns = ctx.facts.operator_namespace
        for key, refusal in sorted(ctx.facts.refused_daemonsets.items()):
            if gpu_stack(refusal.daemonset, ns):
                yield self._finding(key, refusal, plugin_links(ctx, refusal))

    def _finding(self, key: str, refusal: CreateRefusal, causes: list[Link]) -> Finding:
        ds = refusal.daemonset
        namespace = ds.metadata.namespace or "default"
        summary = (f"In the GPU stack, {describe(refusal)}. The refused pods never exist, so "
                   "no pod status or log shows it and what they should do does not happen.")
        events = sorted(refusal.events, key=lambda e: e.time or "", reverse=True)
        evidence = [field(ds, f"{key}: {refusal.counts()}", "status"),
                    *[event_evidence(e) for e in events[:2]]]
        remediation = sh.lines(
            "# read the refusal first",
            sh.cmd("kubectl", "-n", sh.namespace(namespace), "describe", "ds",
                   sh.name(ds.metadata.name), tail=" | sed -n '/Events:/,$p'"),
            sh.cmd("kubectl", "get", "ns", sh.namespace(namespace), "--show-labels"),
            sh.cmd("kubectl", "-n", sh.namespace(namespace), "get", "resourcequota"),
            "kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations",
            "# the GPU stack needs hostPath volumes and privileged containers: allow them in "
            "this namespace",
            sh.note("# (e.g. kubectl label ns {ns} pod-security.kubernetes.io/enforce=privileged"
                    " --overwrite), or exempt it from the refusing policy or webhook",
                    ns=sh.namespace(namespace)),
        )
        return self.finding(key, summary,
                            objects=[ObjectRef(kind="DaemonSet", namespace=namespace,
                                               name=ds.metadata.name)],
                            evidence=evidence, remediation=remediation, causes=causes)
