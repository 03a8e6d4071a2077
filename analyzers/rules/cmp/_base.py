"""What every pod-level CMP rule shares: one finding per workload, its nodes grouped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.facts.inventory import Workload
from analyzers.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.cmp._judge import Problem, by_workload, problems
from analyzers.rules.cmp._links import caused_by, causes
from analyzers.rules.common import LOGS, names
from analyzers.rules.op._common import quote

EVIDENCE_CAP = 4


def severity_of(workload: Workload) -> Severity:
    return Severity.HIGH if workload.gate else Severity.MEDIUM


def where(found: list[Problem]) -> str:
    """``on gpu-a, gpu-b`` or ``(not scheduled)``: the nodes of the pods."""
    nodes = sorted({p.node for p in found if p.node})
    return f"on {len(nodes)} node(s) ({names(nodes)})" if nodes else "on no node yet"


def common(found: list[Problem]) -> tuple[Problem, int]:
    """The most frequent kind's first problem, and how many pods share that kind."""
    counts = Counter(p.kind for p in found)
    kind, count = counts.most_common(1)[0]
    return next(p for p in found if p.kind == kind), count


def others(found: list[Problem], shown: Problem) -> str:
    rest = sorted({p.kind for p in found} - {shown.kind})
    return f" Other pods: {', '.join(rest)}." if rest else ""


def describe_pods(ctx: Context, workload: Workload, found: list[Problem]) -> str:
    return (f"{workload.describe()} — {workload.purpose} — has {len(found)} pod(s) "
            f"{where(found)}")


class PodCause(Rule):
    """A pod-level cause: subclasses say what the summary says for it."""

    confidence = Confidence.CONFIRMED
    inputs = (cluster("pods.json"), cluster("events.json", optional=True),
              cluster("daemonsets.json", optional=True),
              cluster("deployments.json", optional=True), LOGS)
    tags = ("components",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        for key, found in by_workload(problems(ctx, self.id)).items():
            yield self._finding(ctx, key, found)

    def sentence(self, ctx: Context, shown: Problem, count: int, found: list[Problem]) -> str:
        raise NotImplementedError

    def extra_evidence(self, ctx: Context, found: list[Problem]) -> list[Evidence]:
        return []

    def steps(self, ctx: Context, shown: Problem) -> list[str]:
        return []

    def _finding(self, ctx: Context, key: str, found: list[Problem]) -> Finding:
        workload = found[0].workload
        shown, count = common(found)
        summary = (f"{describe_pods(ctx, workload, found)} that cannot run: "
                   f"{self.sentence(ctx, shown, count, found)}{others(found, shown)}")
        evidence: list[Evidence] = []
        for problem in found[:EVIDENCE_CAP]:
            evidence.extend(problem.evidence[:2])
        evidence += self.extra_evidence(ctx, found)
        ns = sh.namespace(workload.namespace)
        remediation = sh.lines(
            "# read what Kubernetes says about the pod",
            sh.cmd("kubectl", "-n", ns, "describe", "pod", sh.pod(shown.pod.name),
                   tail=" | sed -n '/Events:/,$p'"),
            *self.steps(ctx, shown))
        objects = [ObjectRef(kind=workload.kind, namespace=workload.namespace,
                             name=workload.name)]
        objects += [ObjectRef(kind="Pod", namespace=p.pod.namespace, name=p.pod.name)
                    for p in found[:10]]
        return self.finding(key, summary, severity=severity_of(workload),
                            nodes=[p.node for p in found if p.node], objects=objects,
                            evidence=evidence, remediation=remediation,
                            causes=causes(ctx, found), caused_by=caused_by(ctx, found))


def quoted(text: str, limit: int = 300) -> str:
    return quote(text, limit)
