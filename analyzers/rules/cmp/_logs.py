"""The first error of a failing container's logs, for CMP006 and CMP007.

``facts.first_error`` finds it (the previous instance's log before the current one,
harmless wordings skipped); this turns it into the summary's words and the evidence.
"""

from __future__ import annotations

from analyzers.rule import Context
from bundle.evidence import Locator
from bundle.kube import Pod


def first_error(ctx: Context, pod: Pod, container: str | None) -> Locator | None:
    """The error line itself (its step, when known, is in :func:`step`)."""
    if container is None:
        return None
    found = ctx.facts.first_error(pod, container)
    return found.where if found is not None else None

