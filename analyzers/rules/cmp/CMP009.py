"""CMP009: Pods of a GPU-stack component were evicted: the kubelet's reason."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.pod_causes import Problem
from analyzers.results.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule
from analyzers.rules.cmp._base import POD_INPUTS, pod_findings, quoted


class ComponentEvicted(Rule):
    """Pods of a GPU-stack component were evicted: the kubelet's reason.

    A stack pod has ``status.reason: Evicted``; the kubelet's message says which node
    resource ran short (``The node was low on resource: ephemeral-storage``, memory) and
    which container used the most.

    Why it matters:
    An evicted DaemonSet pod is replaced, but the node pressure that evicted it returns:
    the component comes and goes with it.

    Remediation:
    Relieve the node's pressure (disk, memory), or give the component a request that
    protects it; delete the evicted pods once the node is healthy.
    """

    id = "CMP009"
    slug = "component-evicted"
    subject = refs.WORKLOAD
    severity = Severity.MEDIUM
    cause = "evicted"
    confidence = Confidence.CONFIRMED
    inputs = POD_INPUTS
    tags = ("components",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        return pod_findings(type(self), ctx, self.cause, self.sentence)

    def sentence(self, ctx: Context, shown: Problem, count: int, found: list[Problem]) -> str:
        return f"{count} pod(s) were evicted; the kubelet says {quoted(shown.detail)!r}."
