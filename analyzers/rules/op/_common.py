"""Helpers shared by the OP rules: operand pod and log evidence, command snippets."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from analyzers import commands as sh
from analyzers.facts.evidence import event_evidence, field
from analyzers.facts.operands import OperandPod
from analyzers.facts.podlogs import ContainerLog
from analyzers.facts.stages import Blocked
from analyzers.results.models import Evidence
from analyzers.rule import Context
from bundle.evidence import Locator
from bundle.kube import Event, Pod

_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)\s+")


LOG_CAP = 6


POD_CAP = 4


EVENT_CAP = 3


# The DCGM exporter's setting for a separate DCGM host engine (host:port).
HOSTENGINE_ENV = "DCGM_REMOTE_HOSTENGINE_INFO"


def namespace(ctx: Context) -> str:
    return ctx.facts.operator_namespace or "gpu-operator"


def on_node(ns: str, node: str) -> str:
    return sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "pods", "-o", "wide",
                  "--field-selector", sh.join("spec.nodeName=", sh.node(node)))


def logs_cmd(ns: str, log: ContainerLog, tail: int = 50) -> str:
    previous = ("--previous",) if log.previous else ()
    return sh.cmd("kubectl", "-n", sh.namespace(ns), "logs", sh.pod(log.pod.name),
                  "-c", sh.container(log.container), *previous, f"--tail={tail}")


def hostengine_address(pod: Pod) -> str | None:
    """The separate DCGM host engine a DCGM exporter pod is set to use, if any."""
    return next((e.value for c in pod.spec.containers for e in c.env
                 if e.name == HOSTENGINE_ENV and e.value), None)


def quote(text: str, limit: int = 200) -> str:
    """A log line for a summary: without the ``kubectl logs --timestamps`` prefix and
    the trailing full stop, clipped."""
    line = _STAMP.sub("", text.strip()).rstrip(" .")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def as_evidence(item: Locator | Evidence) -> Evidence:
    if isinstance(item, Evidence):
        return item
    return Evidence(path=item.path, line=item.line, excerpt=item.excerpt, pointer=item.pointer)


def capped(items: Sequence[Locator | Evidence], cap: int) -> list[Evidence]:
    """The first ``cap`` items, then one line saying how many were left out."""
    shown = [as_evidence(i) for i in items[:cap]]
    if len(items) > cap:
        rest = items[cap]
        shown.append(Evidence(path=rest.path, excerpt=f"... and {len(items) - cap} more"))
    return shown


def operand_evidence(operand: OperandPod) -> Evidence:
    pod = operand.pod
    return field(pod, f"{pod.namespace}/{pod.name}: {operand.state}", "status")


def blocked_evidence(blocked: Blocked) -> Evidence:
    pod = blocked.pod
    where = ""
    if blocked.sandbox:
        where = " (its sandbox cannot be created)"
    elif blocked.no_sandbox:
        where = " (it never got a pod sandbox: no container has started)"
    elif blocked.container:
        kind = "init container" if blocked.init else "container"
        where = f" (in {kind} {blocked.container})"
    return field(pod, f"{pod.namespace}/{pod.name}: {blocked.operand.state}{where}",
                 *blocked.pointer)


def log_lines(log: ContainerLog, rule_id: str | None = None, per_log: int = 2,
              tail: bool = True) -> list[Locator]:
    """What a log says: its error signatures, else its markers, else its last lines."""
    found = log.matches(rule_id)
    errors = [f for f in found if f.signature.kind == "error"]
    chosen = errors or [f for f in found if f.signature.kind != "error"][-1:]
    seen: dict[int, Locator] = {}
    for hit in chosen:
        seen.setdefault(hit.line, log.locate(hit))
    lines = list(seen.values())[:per_log]
    if not lines and tail:
        lines = log.tail()
    return lines


def logs_evidence(logs: Iterable[ContainerLog], rule_id: str | None = None,
                  cap: int = LOG_CAP, tail: bool = True) -> list[Evidence]:
    found: list[Locator] = []
    for log in logs:
        found.extend(log_lines(log, rule_id, tail=tail))
    return capped(found, cap)


def warnings(events: Iterable[Event]) -> list[Event]:
    return [e for e in events if (e.type or "Warning") != "Normal"]


def events_evidence(events: Iterable[Event], cap: int = EVENT_CAP) -> list[Evidence]:
    unique: dict[tuple[str, str], Event] = {}
    for event in events:
        unique.setdefault((event.source_path, event.source_pointer), event)
    return [event_evidence(e) for e in list(unique.values())[:cap]]


def pod_list(pods: Iterable[Pod]) -> str:
    return ", ".join(sorted(p.name for p in pods))
