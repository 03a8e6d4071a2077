"""The first error of a crashed container's previous log, for CMP007.

Until the first-error facts (``facts.first_error``, another change) are merged, this
reads the previous instance's log (``<container>.previous.log``, else the current one)
and takes the first line the signature base knows as an error, else the first line at
error level in the usual log formats (klog ``E0101``, logrus ``level=error``/``fatal``,
``panic:``), else nothing: the log's last line is no error of its own.
"""

from __future__ import annotations

import re

from analyzers.facts.podlogs import ContainerLog
from analyzers.rule import Context
from bundle.evidence import Locator, clip
from bundle.kube import Pod

_ERROR_LEVEL = re.compile(
    r"^E\d{4} |level=(?:error|fatal|panic)\b|\"level\":\s*\"(?:error|fatal)\"|^panic: |"
    r"^(?:ERROR|FATAL|Error|Fatal)[: ]")


def _log(ctx: Context, pod: Pod, container: str) -> ContainerLog | None:
    logs = [log for log in ctx.facts.pod_logs.of(pod) if log.container == container]
    previous = [log for log in logs if log.previous]
    chosen = previous or logs
    return chosen[0] if chosen else None


def first_error(ctx: Context, pod: Pod, container: str | None) -> Locator | None:
    if container is None:
        return None
    log = _log(ctx, pod, container)
    if log is None:
        return None
    known = log.matches(errors_only=True)
    if known:
        return log.locate(min(known, key=lambda m: m.line or 0))
    for number, line in enumerate(log.text.splitlines(), start=1):
        if _ERROR_LEVEL.search(line.strip()):
            return Locator(path=log.path, line=number, excerpt=clip(line.strip()))
    return None
