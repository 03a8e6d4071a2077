"""What every pod-level CMP rule shares: one finding per workload, its nodes grouped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

from analyzers import commands as sh
from analyzers.facts.inventory import Workload
from analyzers.facts.pod_causes import Problem, by_workload, problems
from analyzers.results.models import Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.cmp._links import caused_by
from analyzers.rules.common import LOGS, names
from bundle import specs
from bundle.evidence import Locator

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


POD_INPUTS = (cluster(specs.PODS), cluster(specs.EVENTS, optional=True),
              cluster(specs.DAEMONSETS, optional=True),
              cluster(specs.DEPLOYMENTS, optional=True), LOGS)
Sentence = Callable[[Context, Problem, int, list[Problem]], str]


def _none(ctx: Context, found: list[Problem]) -> list[Evidence]:
    return []


def _no_steps(ctx: Context, shown: Problem) -> list[str]:
    return []


def pod_findings(rule: type[Rule], ctx: Context, cause: str, sentence: Sentence,
                 steps: Callable[[Context, Problem], list[str]] = _no_steps,
                 extra: Callable[[Context, list[Problem]], list[Evidence]] = _none,
                 ) -> Iterator[Finding]:
    """One finding of ``rule`` per workload whose pods have ``cause``."""
    for key, found in by_workload(problems(ctx.facts, cause)).items():
        workload = found[0].workload
        shown, count = common(found)
        summary = (f"{describe_pods(ctx, workload, found)} that cannot run: "
                   f"{sentence(ctx, shown, count, found)}{others(found, shown)}")
        evidence: list[Evidence] = []
        for problem in found[:EVIDENCE_CAP]:
            evidence.extend(problem.evidence[:2])
        evidence += extra(ctx, found)
        ns = sh.namespace(workload.namespace)
        remediation = sh.lines(
            "# read what Kubernetes says about the pod",
            sh.cmd("kubectl", "-n", ns, "describe", "pod", sh.pod(shown.pod.name),
                   tail=" | sed -n '/Events:/,$p'"),
            *steps(ctx, shown))
        objects = [ObjectRef(kind=workload.kind, namespace=workload.namespace,
                             name=workload.name)]
        objects += [ObjectRef(kind="Pod", namespace=p.pod.namespace, name=p.pod.name)
                    for p in found[:10]]
        yield rule.finding(key, summary, severity=severity_of(workload),
                           nodes=[p.node for p in found if p.node], objects=objects,
                           evidence=evidence, remediation=remediation,
                           caused_by=caused_by(ctx, found))


def quote(text: str, limit: int = 200) -> str:
    """A record's words for a summary: one line, without its trailing full stop, clipped."""
    line = " ".join(text.split()).rstrip(" .")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def quoted(text: str, limit: int = 300) -> str:
    return quote(text, limit)


def as_evidence(found: Locator) -> Evidence:
    return Evidence(path=found.path, line=found.line, excerpt=found.excerpt,
                    pointer=found.pointer)
