"""CMP005: A GPU-stack component's container cannot be created or started."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.pod_causes import Problem
from analyzers.results.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule
from analyzers.rules.cmp._base import POD_INPUTS, pod_findings, quoted


class ComponentCannotStart(Rule):
    """A GPU-stack component's container cannot be created or started.

    A container of a stack pod waits in ``CreateContainerConfigError`` (a ConfigMap,
    Secret or key it references does not exist), ``CreateContainerError`` or
    ``RunContainerError`` (the runtime refuses it: a missing binary, a mount, the
    ``nvidia`` runtime), or ended ``ContainerCannotRun``. The kubelet's message is quoted.

    Why it matters:
    The container never runs, so it has no log: the kubelet's message is the only
    record of why.

    Remediation:
    Create the object the message names, or fix the mount or runtime it names; the
    kubelet retries by itself.
    """

    id = "CMP005"
    slug = "component-cannot-start"
    subject = refs.WORKLOAD
    severity = Severity.HIGH
    cause = "cannot-start"
    confidence = Confidence.CONFIRMED
    inputs = POD_INPUTS
    tags = ("components",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        return pod_findings(type(self), ctx, self.cause, self.sentence)

    def sentence(self, ctx: Context, shown: Problem, count: int, found: list[Problem]) -> str:
        where = f"{'init container' if shown.init else 'container'} {shown.container}"
        return f"{where} cannot start on {count} pod(s): {quoted(shown.detail)}."
