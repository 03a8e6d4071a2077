"""CMP007: A GPU-stack component crashes in a loop: its last exit and first error."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.pod_causes import Problem
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule
from analyzers.rules.cmp._base import POD_INPUTS, as_evidence, pod_findings, quote
from analyzers.rules.cmp._logs import first_error


class ComponentCrashLoop(Rule):
    """A GPU-stack component crashes in a loop: its last exit and first error.

    A container of a stack pod is in ``CrashLoopBackOff`` (or restarts and is not ready):
    the rule quotes its last termination (reason, exit code or signal: ``Error, exit code
    1``, ``exit code 139 (SIGSEGV)``) and the first error line of the previous
    instance's log. A container killed for memory is CMP008's.

    Why it matters:
    The component starts and dies over and over; what killed it is in the previous
    instance's log, not in the current one.

    Remediation:
    Read the previous log (``kubectl logs --previous``) from its first error on.
    """

    id = "CMP007"
    slug = "component-crash-loop"
    subject = refs.WORKLOAD
    severity = Severity.HIGH
    cause = "crash-loop"
    confidence = Confidence.CONFIRMED
    inputs = POD_INPUTS
    tags = ("components",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        return pod_findings(type(self), ctx, self.cause, self.sentence, steps=self.steps,
                            extra=self.extra_evidence)

    def sentence(self, ctx: Context, shown: Problem, count: int, found: list[Problem]) -> str:
        error = first_error(ctx, shown.pod, shown.container)
        said = (f"; the previous log's first error: {quote(error.excerpt, 240)!r}" if error
                else "; the bundle holds no error line of it: ask next for its previous log "
                     f"(kubectl -n {shown.pod.namespace} logs {shown.pod.name} -c "
                     f"{shown.container} --previous)")
        return (f"container {shown.container} crashes in a loop on {count} pod(s) "
                f"(last: {shown.detail}){said}.")

    def extra_evidence(self, ctx: Context, found: list[Problem]) -> list[Evidence]:
        error = first_error(ctx, found[0].pod, found[0].container)
        return [as_evidence(error)] if error else []

    def steps(self, ctx: Context, shown: Problem) -> list[str]:
        return [sh.cmd("kubectl", "-n", sh.namespace(shown.pod.namespace), "logs",
                       sh.pod(shown.pod.name), "-c", sh.name(shown.container or "",
                                                            "container name"), "--previous")]
