"""CMP003: Pods of a GPU-stack component are not scheduled: the scheduler's message."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.pod_causes import Problem
from analyzers.results.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule
from analyzers.rules.cmp._base import POD_INPUTS, pod_findings, quoted


class ComponentNotScheduled(Rule):
    """Pods of a GPU-stack component are not scheduled: the scheduler's message.

    For every workload of the GPU stack (``facts.inventory``), a pod that stays
    ``Pending`` without a node is quoted with the scheduler's last ``FailedScheduling``
    event (``0/5 nodes are available: 1 node(s) had untolerated taint ...``), else the
    ``PodScheduled`` condition's message. One finding per workload, its pods grouped.

    Why it matters:
    A DaemonSet pod is pinned to its node; when the scheduler still refuses it, the
    node lacks what the pod asks for (CPU, memory, a host port) or carries a taint the
    pod does not tolerate, and the component never starts there.

    Remediation:
    Read the scheduler's message with ``kubectl describe pod``; free the resource, add
    the toleration, or lower the pod's requests.
    """

    id = "CMP003"
    slug = "component-not-scheduled"
    subject = refs.WORKLOAD
    severity = Severity.HIGH
    cause = "unscheduled"
    confidence = Confidence.CONFIRMED
    inputs = POD_INPUTS
    tags = ("components",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        return pod_findings(type(self), ctx, self.cause, self.sentence, steps=self.steps)

    def sentence(self, ctx: Context, shown: Problem, count: int, found: list[Problem]) -> str:
        return (f"{count} pod(s) stay Pending, unscheduled; the scheduler says "
                f"{quoted(shown.detail)!r}.")

    def steps(self, ctx: Context, shown: Problem) -> list[str]:
        return [sh.cmd("kubectl", "describe", "nodes", tail=" | grep -A6 -E 'Taints|Allocated'")]
