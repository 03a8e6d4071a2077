"""CMP008: A GPU-stack component is killed for memory (OOMKilled) at its limit."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.oomkill import OomKill, of_process
from analyzers.facts.pod_causes import Problem
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, node
from analyzers.rules.cmp._base import POD_INPUTS, pod_findings
from bundle import specs


def _names(problem: Problem) -> list[str]:
    """The container's name and its image's (``nvcr.io/nvidia/k8s/dcgm-exporter:4.2`` →
    ``dcgm-exporter``): what the kernel may call its process."""
    spec = problem.pod.spec
    containers = spec.init_containers if problem.init else spec.containers
    image = next((c.image for c in containers if c.name == problem.container), "")
    base = image.rpartition("/")[2].partition("@")[0].partition(":")[0]
    return [problem.container or "", base]


def _kill(ctx: Context, found: list[Problem]) -> OomKill | None:
    """The last OOM kill of the container's process on the first node that logged one."""
    for problem in found:
        if problem.node is None:
            continue
        kill = of_process(ctx.facts.oom_kills(problem.node), _names(problem))
        if kill is not None:
            return kill
    return None


def _dmesg(ctx: Context, found: list[Problem]) -> bool:
    """Whether the bundle holds the kernel log of one of the pods' nodes."""
    return any(p.node in ctx.facts.node_dirs and ctx.facts.node(p.node).has(specs.DMESG)
               for p in found if p.node)


class ComponentOomKilled(Rule):
    """A GPU-stack component is killed for memory (OOMKilled) at its limit.

    A container of a stack pod last terminated ``OOMKilled`` (exit code 137): the rule
    names the container, its memory limit and, where the node's dmesg holds the kernel's
    ``Memory cgroup out of memory: Killed process`` line for it, what it held then.
    dcgm-exporter is the usual case: its memory grows with the number of GPUs and the
    chart's default limit is too low on dense nodes (https://github.com/NVIDIA/dcgm-exporter/issues/609,
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
    subject = refs.WORKLOAD
    severity = Severity.HIGH
    cause = "oom-killed"
    confidence = Confidence.CONFIRMED
    inputs = (*POD_INPUTS, node(specs.DMESG, optional=True))
    tags = ("components",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        return pod_findings(type(self), ctx, self.cause, self.sentence, steps=self.steps,
                            extra=self.extra_evidence)

    def sentence(self, ctx: Context, shown: Problem, count: int, found: list[Problem]) -> str:
        limit = (f"its memory limit is {shown.limit}" if shown.limit
                 else "it has no memory limit, so the node itself ran out of memory")
        kill = _kill(ctx, found)
        usage = (f"the kernel killed it holding {kill.usage} (anon-rss, "
                 f"{kill.where.path} line {kill.where.line})" if kill is not None
                 else "the bundle holds no record of what it used ("
                      + ("no OOM-killer line for it in the node's dmesg" if _dmesg(ctx, found)
                         else "no kernel log of its node")
                      + "; kubectl top shows it live)")
        return (f"container {shown.container} is OOMKilled on {count} pod(s) "
                f"({shown.detail}); {limit}; {usage}.")

    def extra_evidence(self, ctx: Context, found: list[Problem]) -> list[Evidence]:
        kill = _kill(ctx, found)
        return [Evidence(path=kill.where.path, line=kill.where.line,
                         excerpt=kill.where.excerpt)] if kill is not None else []

    def steps(self, ctx: Context, shown: Problem) -> list[str]:
        return [sh.cmd("kubectl", "-n", sh.namespace(shown.pod.namespace), "top", "pod",
                       "--containers"),
                "# raise resources.limits.memory of the container above the usage seen"]
