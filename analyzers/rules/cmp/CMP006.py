"""CMP006: An init container of a GPU-stack component fails."""

from __future__ import annotations

from analyzers import commands as sh
from analyzers.models import Evidence, Severity
from analyzers.rule import Context
from analyzers.rules.cmp._base import PodCause
from analyzers.rules.cmp._judge import Problem
from analyzers.rules.cmp._logs import first_error
from analyzers.rules.op._common import as_evidence, quote


class ComponentInitFails(PodCause):
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
    severity = Severity.HIGH

    def sentence(self, ctx: Context, shown: Problem, count: int, found: list[Problem]) -> str:
        error = first_error(ctx, shown.pod, shown.container)
        said = f"; its log's first error: {quote(error.excerpt, 240)!r}" if error else ""
        return (f"init container {shown.container} fails on {count} pod(s) "
                f"({shown.detail}){said}.")

    def extra_evidence(self, ctx: Context, found: list[Problem]) -> list[Evidence]:
        error = first_error(ctx, found[0].pod, found[0].container)
        return [as_evidence(error)] if error else []

    def steps(self, ctx: Context, shown: Problem) -> list[str]:
        return [sh.cmd("kubectl", "-n", sh.namespace(shown.pod.namespace), "logs",
                       sh.pod(shown.pod.name), "-c", sh.name(shown.container or "",
                                                            "container name"))]
