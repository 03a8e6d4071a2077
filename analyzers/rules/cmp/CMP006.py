"""CMP006: An init container of a GPU-stack component fails."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.pod_causes import Problem
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule
from analyzers.rules.cmp._base import POD_INPUTS, as_evidence, pod_findings, quote
from analyzers.rules.cmp._logs import first_error


class ComponentInitFails(Rule):
    """An init container of a GPU-stack component fails.

    The first init container of a stack pod that has not completed ended with a
    non-zero exit or loops in ``CrashLoopBackOff``: the rule names it, its exit (reason,
    code, signal) and the first error line of its log. Operator operands whose init
    container only waits for an earlier failing stage of their node are left to OP001.

    Why it matters:
    The pod's main container never starts until every init container succeeds.

    Remediation:
    Read the init container's log (``kubectl logs <pod> -c <init container>``) and fix
    what it checks or prepares.
    """

    id = "CMP006"
    slug = "component-init-fails"
    subject = refs.WORKLOAD
    severity = Severity.HIGH
    cause = "init-fails"
    confidence = Confidence.CONFIRMED
    inputs = POD_INPUTS
    tags = ("components",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        return pod_findings(type(self), ctx, self.cause, self.sentence, steps=self.steps,
                            extra=self.extra_evidence)

    def sentence(self, ctx: Context, shown: Problem, count: int, found: list[Problem]) -> str:
        error = first_error(ctx, shown.pod, shown.container)
        said = (f"; its log's first error: {quote(error.excerpt, 240)!r}" if error
                else "; the bundle holds no error line of it: ask next for its log "
                     f"(kubectl -n {shown.pod.namespace} logs {shown.pod.name} -c "
                     f"{shown.container})")
        return (f"init container {shown.container} fails on {count} pod(s) "
                f"({shown.detail}){said}.")

    def extra_evidence(self, ctx: Context, found: list[Problem]) -> list[Evidence]:
        error = first_error(ctx, found[0].pod, found[0].container)
        return [as_evidence(error)] if error else []

    def steps(self, ctx: Context, shown: Problem) -> list[str]:
        return [sh.cmd("kubectl", "-n", sh.namespace(shown.pod.namespace), "logs",
                       sh.pod(shown.pod.name), "-c", sh.name(shown.container or "",
                                                            "container name"))]
