"""CMP003: Pods of a GPU-stack component are not scheduled: the scheduler's message."""

from __future__ import annotations

from analyzers import commands as sh
from analyzers.models import Severity
from analyzers.rule import Context
from analyzers.rules.cmp._base import PodCause, quoted
from analyzers.rules.cmp._judge import Problem


class ComponentNotScheduled(PodCause):
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
    severity = Severity.HIGH

    def sentence(self, ctx: Context, shown: Problem, count: int, found: list[Problem]) -> str:
        return (f"{count} pod(s) stay Pending, unscheduled; the scheduler says "
                f"{quoted(shown.detail)!r}.")

    def steps(self, ctx: Context, shown: Problem) -> list[str]:
        return [sh.cmd("kubectl", "describe", "nodes", tail=" | grep -A6 -E 'Taints|Allocated'")]
