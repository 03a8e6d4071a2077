"""CMP008: A GPU-stack component is killed for memory (OOMKilled) at its limit."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.facts.pod_causes import Problem
from analyzers.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule
from analyzers.rules.cmp._base import POD_INPUTS, pod_findings


class ComponentOomKilled(Rule):
    """A GPU-stack component is killed for memory (OOMKilled) at its limit.

    A container of a stack pod last terminated ``OOMKilled`` (exit code 137): the rule
    names the container and its memory limit. dcgm-exporter is the usual case: its
    memory grows with the number of GPUs and the chart's default limit is too low on
    dense nodes (https://github.com/NVIDIA/dcgm-exporter/issues/609,
    https://github.com/pytorch/ci-infra/issues/1011).

    Why it matters:
    The kernel kills the container each time it reaches its cgroup limit; it crash-loops
    and its metrics or function are gone on those nodes.

    Remediation:
    Raise the container's memory limit (``resources.limits.memory``) above what it uses
    on the largest node, then watch ``kubectl top pod``.
    """

    id = "CMP008"
    slug = "component-oom-killed"
    severity = Severity.HIGH
    cause = "oom-killed"
    confidence = Confidence.CONFIRMED
    inputs = POD_INPUTS
    tags = ("components",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        return pod_findings(type(self), ctx, self.cause, self.sentence, steps=self.steps)

    def sentence(self, ctx: Context, shown: Problem, count: int, found: list[Problem]) -> str:
        limit = (f"its memory limit is {shown.limit}" if shown.limit
                 else "it has no memory limit, so the node itself ran out of memory")
        return (f"container {shown.container} is OOMKilled on {count} pod(s) "
                f"({shown.detail}); {limit}; the bundle holds no record of its usage "
                "(kubectl top).")

    def steps(self, ctx: Context, shown: Problem) -> list[str]:
        return [sh.cmd("kubectl", "-n", sh.namespace(shown.pod.namespace), "top", "pod",
                       "--containers"),
                "# raise resources.limits.memory of the container above the usage seen"]
