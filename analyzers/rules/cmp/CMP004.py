"""CMP004: A GPU-stack component's image cannot be pulled: why, classified."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.pod_causes import Problem
from analyzers.facts.pulls import ADVICE
from analyzers.results.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule
from analyzers.rules.cmp._base import POD_INPUTS, pod_findings, quoted


class ComponentImagePull(Rule):
    """A GPU-stack component's image cannot be pulled: why, classified.

    A container or init container of a stack pod waits in ``ErrImagePull``,
    ``ImagePullBackOff`` or ``InvalidImageName``. The kubelet's ``Failed to pull image``
    event (or the waiting message) is quoted and classified: the tag or repository does
    not exist (``manifest unknown``, ``not found``), the registry refuses the
    credentials (``401 Unauthorized``, ``pull access denied``), a rate limit
    (``toomanyrequests``), or the node cannot reach the registry (``i/o timeout``,
    ``no such host``). For the operator's driver image OP010 names the missing tag and
    stays the cause.

    Why it matters:
    Without its image the component never starts, and nothing in its own logs says why.

    Remediation:
    Depending on the class: correct the image name or version; add or fix the
    ``imagePullSecret``; authenticate or mirror against rate limits; fix the node's
    DNS, proxy or firewall, or point the image at a reachable mirror.
    """

    id = "CMP004"
    slug = "component-image-pull"
    subject = refs.WORKLOAD
    severity = Severity.HIGH
    cause = "image-pull"
    confidence = Confidence.CONFIRMED
    inputs = POD_INPUTS
    tags = ("components",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        return pod_findings(type(self), ctx, self.cause, self.sentence)

    def sentence(self, ctx: Context, shown: Problem, count: int, found: list[Problem]) -> str:
        where = f"{'init container' if shown.init else 'container'} {shown.container}"
        kind = shown.kind if shown.kind != "unknown" else "a pull failure of no known kind"
        return (f"the image of {where} cannot be pulled on {count} pod(s) ({kind}: "
                f"{quoted(shown.detail)}); {ADVICE[shown.kind]}.")
