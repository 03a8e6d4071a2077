"""SC004: A ResourceQuota on GPUs is used up, or the API server refused pods over it."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.facts.evidence import event_evidence
from analyzers.facts.evidence import field as obj_field
from analyzers.facts.gpu import container_gpus
from analyzers.results.models import Confidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import EVENT_CAP, names
from analyzers.rules.sc._common import containers_of, pod_key
from analyzers.rules.sc._quota import _QUOTA_NAME, _Quota
from bundle import specs


class GpuQuotaExhausted(Rule):
    """A ResourceQuota on GPUs is used up, or the API server refused pods over it.

    Reads each ResourceQuota's ``hard`` and ``used`` for ``requests.nvidia.com/*`` (and
    ``nvidia.com/*``) keys, and ``exceeded quota`` events that name an NVIDIA resource.

    Why it matters:
    A quota refusal happens before scheduling: the pod object is never created, so
    there is no Pending pod, no node is involved, and it looks like "the GPUs are gone"
    although the nodes have free GPUs. It is a policy limit, not a capacity problem.

    Remediation:
    ``kubectl describe resourcequota -n <namespace>`` shows hard and used; free GPUs held
    by finished or idle workloads in that namespace, or raise the quota with the
    cluster owner.
    """

    id = "SC004"
    slug = "gpu-quota-exhausted"
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.RESOURCEQUOTAS), cluster(specs.EVENTS, optional=True),
              cluster(specs.PODS, optional=True))
    tags = ("admission",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        quotas: dict[tuple[str, str], _Quota] = {}
        for found in ctx.facts.gpu_quotas:
            if not found.exhausted or found.hard is None:
                continue
            quota, namespace, key = found.quota, found.namespace, found.key
            limit, taken = found.hard, found.used or 0
            entry = quotas.setdefault((namespace, quota.metadata.name),
                                      _Quota(namespace, quota.metadata.name))
            entry.exhausted.append((key, limit, taken))
            entry.evidence.append(obj_field(quota, f"{namespace}/{quota.metadata.name} "
                                                   f"{key}: used {taken} of hard {limit}",
                                            found.section, "hard", key))
        for event in ctx.facts.events_for(self.id):
            hit = _QUOTA_NAME.search(event.message or "")
            if hit is None:
                continue
            namespace = event.involved_object.namespace or event.metadata.namespace or "default"
            entry = quotas.setdefault((namespace, hit.group(1)), _Quota(namespace, hit.group(1)))
            entry.events.append(event)
        for _, entry in sorted(quotas.items()):
            yield self._finding(ctx, entry)

    def _finding(self, ctx: Context, entry: _Quota) -> Finding:
        subject = f"{entry.namespace}/{entry.name}"
        parts = []
        if entry.exhausted:
            parts.append("; ".join(f"{key} used {used} of {hard}"
                                   for key, hard, used in entry.exhausted))
        refused = sum(e.count or 1 for e in entry.events)
        if entry.events:
            targets = names({e.involved_object.name or "?" for e in entry.events}, 3)
            parts.append(f"the API server refused {refused} pod creation(s) over it "
                         f"(from {targets})")
        in_namespace = ctx.facts.pods_by_namespace.get(entry.namespace, [])
        holders = sorted(pod_key(p) for p in in_namespace if not p.terminated
                         and any(container_gpus(c) for _, _, c in containers_of(p)))
        held = f" GPUs are held by {names(holders, 4)}." if holders else ""
        summary = (f"ResourceQuota {subject} caps GPUs and is exhausted: "
                   f"{'; '.join(parts)}. New GPU pods in {entry.namespace} are refused before "
                   f"they reach the scheduler, whatever the nodes have free.{held}")
        evidence = entry.evidence + [event_evidence(e) for e in entry.events[:EVENT_CAP]]
        ns = sh.namespace(entry.namespace)
        remediation = sh.lines(
            sh.cmd("kubectl", "describe", "resourcequota",
                   sh.name(entry.name, "ResourceQuota name"), "-n", ns),
            sh.cmd("kubectl", "get", "pods", "-n", ns, "-o",
                   sh.raw("custom-columns=N:.metadata.name,PHASE:.status.phase,"
                          "GPU:.spec.containers[*].resources.limits.nvidia\\.com/gpu")),
            "# free GPUs held by idle or finished workloads, or raise the quota")
        return self.finding(subject, summary,
                            severity=Severity.MEDIUM if entry.events else Severity.LOW,
                            objects=[ObjectRef(kind="ResourceQuota", namespace=entry.namespace,
                                               name=entry.name)],
                            evidence=evidence, remediation=remediation)
