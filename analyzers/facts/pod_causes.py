"""Why each pod of the GPU stack is not running, judged once per run (the CMP rules).

Every pod of an inventoried workload is read in the order Kubernetes runs it and given at
most one cause — the first that stops it:

- ``evicted``: ``status.reason: Evicted``, with the kubelet's message;
- ``unscheduled``: Pending without a node (the scheduler's ``FailedScheduling``
  message, else the ``PodScheduled`` condition's);
- ``image-pull``: ``ErrImagePull``, ``ImagePullBackOff``, ``InvalidImageName``, its
  ``Failed to pull image`` event classified (``facts.pulls``);
- ``cannot-start``: ``CreateContainerConfigError``, ``CreateContainerError``,
  ``RunContainerError``, ``ContainerCannotRun``, with the kubelet's message;
- ``init-fails``: an init container that fails (which one, its exit or reason);
- ``oom-killed``: a container killed for memory (``OOMKilled``: its limit);
- ``crash-loop``: a container in a crash loop (its last exit: reason, code or signal).

The operator's operand pods that only wait behind an earlier failing stage of their node
(``facts.stages``) are left to OP001: their init containers wait, they do not fail on
their own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from analyzers.facts.inventory import Workload
from analyzers.facts.memo import per_run
from analyzers.facts.operands import node_of
from analyzers.facts.pulls import classify
from analyzers.results.models import Evidence
from bundle.evidence import clip, join_pointer
from bundle.kube import ContainerStateDetail, ContainerStatus, Event, KubeObject, Pod

if TYPE_CHECKING:
    from analyzers.facts import Facts

def field(obj: KubeObject, excerpt: str, *parts: str | int) -> Evidence:
    return Evidence(path=obj.source_path, pointer=join_pointer(obj.source_pointer, *parts),
                    excerpt=clip(excerpt))


def event_evidence(event: Event) -> Evidence:
    count = f" (x{event.count})" if event.count and event.count > 1 else ""
    when = f"{event.time} " if event.time else ""
    return field(event, f"{when}{event.reason}: {event.message or ''}{count}", "message")


NO_EXIT = "no last exit recorded"
PULL = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})
START = frozenset({"CreateContainerConfigError", "CreateContainerError", "RunContainerError",
                   "ContainerCannotRun", "StartError"})
_SIGNALS = {129: "SIGHUP", 130: "SIGINT", 131: "SIGQUIT", 134: "SIGABRT", 135: "SIGBUS",
            137: "SIGKILL", 139: "SIGSEGV", 143: "SIGTERM"}


@dataclass(frozen=True, slots=True)
class Problem:
    """One pod of a workload and the one cause that stops it."""

    rule: str                      # the cause: unscheduled, image-pull, ... evicted
    workload: Workload
    pod: Pod
    node: str | None
    container: str | None
    init: bool
    kind: str                      # what groups pods of one cause: a reason, a pull class
    detail: str                    # the record's own words, for the summary
    evidence: tuple[Evidence, ...]
    limit: str | None = None       # CMP008: the container's memory limit


def exit_text(term: ContainerStateDetail) -> str:
    """``OOMKilled, exit code 137 (SIGKILL)``."""
    parts = [term.reason] if term.reason else []
    if term.reason is None and term.exit_code is None:
        return NO_EXIT
    if term.exit_code is not None:
        code = f"exit code {term.exit_code}"
        signal = _SIGNALS.get(term.exit_code)
        parts.append(f"{code} ({signal})" if signal else code)
    return ", ".join(parts) or "terminated"


def _latest(events: Iterable[Event], reason: str, needle: str = "") -> Event | None:
    found = [e for e in events if e.reason == reason and needle in (e.message or "")]
    return max(found, key=lambda e: e.time or "") if found else None


def _status_pointer(pod: Pod, init: bool, index: int) -> tuple[str | int, ...]:
    return ("status", "initContainerStatuses" if init else "containerStatuses", index)


def _container_problem(facts: Facts, workload: Workload, pod: Pod, node: str | None,
                       status: ContainerStatus, index: int, init: bool,
                       events: list[Event]) -> Problem | None:
    pointer = _status_pointer(pod, init, index)
    waiting = status.state.waiting
    reason = waiting.reason if waiting is not None else None
    last = status.last_state.terminated
    where = f"{'init container' if init else 'container'} {status.name}"

    def make(rule: str, kind: str, detail: str, *evidence: Evidence,
             limit: str | None = None) -> Problem:
        return Problem(rule, workload, pod, node, status.name, init, kind, detail,
                       tuple(evidence), limit)

    if reason in PULL:
        failed = _latest(events, "Failed", "ailed to pull image")
        message = (failed.message if failed is not None else None) or \
            (waiting.message if waiting is not None else None) or reason or ""
        said = (waiting.message if waiting is not None else None) or ""
        proof = [field(pod, f"{where}: {reason}: {said}".rstrip(": "),
                       *pointer, "state", "waiting")]
        if failed is not None:
            proof.append(event_evidence(failed))
        return make("image-pull", classify(message), message, *proof)
    if reason in START:
        message = (waiting.message if waiting is not None else None) or ""
        failed = _latest(events, "Failed")
        if not message and failed is not None:
            message = failed.message or ""
        proof = [field(pod, f"{where}: {reason}: {message}".rstrip(": "), *pointer, "state",
                       "waiting")]
        said = f"{reason}: {message}" if message else reason or ""
        return make("cannot-start", reason or "", said, *proof)
    term = status.state.terminated
    if term is not None and term.reason == "ContainerCannotRun":
        proof = [field(pod, f"{where}: {exit_text(term)}: {term.message or ''}", *pointer,
                       "state", "terminated")]
        return make("cannot-start", "ContainerCannotRun",
                    f"ContainerCannotRun: {term.message or exit_text(term)}", *proof)
    crashed = last if reason == "CrashLoopBackOff" or (last is not None and not status.ready
                                                       and status.restart_count > 0
                                                       and term is None) else None
    if term is not None and term.exit_code not in (None, 0):
        crashed = term  # between two restarts: the exit is the current state
    if reason == "CrashLoopBackOff" and crashed is None:
        crashed = ContainerStateDetail()  # the loop is recorded, its last exit is not
    if crashed is None:
        return None
    state = "lastState" if crashed is last else "state"
    proof = [field(pod, f"{where}: {reason or 'restarting'}, last {exit_text(crashed)}"
                        f"{': ' + crashed.message if crashed.message else ''}, restarts "
                        f"{status.restart_count}", *pointer, state, "terminated")]
    if crashed.reason == "OOMKilled":
        container = next((c for c in (pod.spec.init_containers if init else
                                      pod.spec.containers) if c.name == status.name), None)
        limit = container.resources.limits.get("memory") if container is not None else None
        return make("oom-killed", "OOMKilled", exit_text(crashed), *proof, limit=limit)
    if init:
        return make("init-fails", exit_text(crashed), exit_text(crashed), *proof)
    return make("crash-loop", exit_text(crashed), exit_text(crashed), *proof)


def _pod_problem(facts: Facts, workload: Workload, pod: Pod) -> Problem | None:
    node = node_of(pod)
    events = facts.pod_events(pod)
    if pod.status.reason == "Evicted":
        message = pod.status.message or "Evicted"
        return Problem("evicted", workload, pod, node, None, False, "Evicted", message,
                       (field(pod, f"Evicted: {message}", "status", "message"),))
    if pod.terminated:
        return None
    if not pod.spec.node_name and pod.status.phase in ("Pending", ""):
        scheduling = _latest(events, "FailedScheduling")
        condition = next((c for c in pod.status.conditions if c.type == "PodScheduled"
                          and c.status == "False"), None)
        if scheduling is not None:
            return Problem("unscheduled", workload, pod, node, None, False, "FailedScheduling",
                           scheduling.message or "", (event_evidence(scheduling),))
        if condition is not None and condition.message:
            index = pod.status.conditions.index(condition)
            return Problem("unscheduled", workload, pod, node, None, False, "FailedScheduling",
                           condition.message, (field(pod, f"PodScheduled False: "
                                                     f"{condition.message}", "status",
                                                     "conditions", index, "message"),))
        return None
    for index, status in enumerate(pod.status.init_container_statuses):
        term = status.state.terminated
        if term is not None and term.exit_code == 0:
            continue
        found = _container_problem(facts, workload, pod, node, status, index, True, events)
        return found  # the first init container that has not completed decides
    for index, status in enumerate(pod.status.container_statuses):
        found = _container_problem(facts, workload, pod, node, status, index, False, events)
        if found is not None:
            return found
    return None


_VALIDATORS = frozenset({"validator", "cuda-validator"})


def _waits_behind(facts: Facts, workload: Workload, pod: Pod, node: str | None) -> bool:
    """An operator operand pod on a node whose first failing stage is another pod's, or a
    validator whose check fails because an operand of its stage does (the toolkit's
    ``toolkit-validation`` fails while the toolkit itself crashes)."""
    if not workload.operator_managed or node is None:
        return False
    stages = facts.operand_stages.get(node)
    if stages is None or not stages.blocked:
        return False
    if not any(b.pod.name == pod.name for b in stages.at_first):
        return True
    return workload.component in _VALIDATORS and any(
        b.operand.component not in _VALIDATORS for b in stages.at_first)


def _untold(facts: Facts, problem: Problem) -> bool:
    """A crash of an operator operand that the record does not explain: no exit was
    recorded and its logs hold no error line. OP001 names the stage and the command to
    ask for next; a finding of its own would only repeat ``CrashLoopBackOff``."""
    return problem.workload.operator_managed and problem.rule in ("crash-loop", "init-fails") \
        and problem.kind == NO_EXIT and facts.first_error(problem.pod, problem.container) is None


@per_run
def _judge(facts: Facts) -> dict[str, list[Problem]]:
    found: dict[str, list[Problem]] = defaultdict(list)
    for workload in facts.inventory.workloads:
        for pod in workload.pods:
            problem = _pod_problem(facts, workload, pod)
            if problem is None or _untold(facts, problem) or (
                    problem.rule != "evicted" and
                    _waits_behind(facts, workload, pod, problem.node)):
                continue
            found[problem.rule].append(problem)
    return dict(found)


def problems(facts: Facts, rule: str) -> list[Problem]:
    """The pods whose cause is ``rule`` (``crash-loop`` …), judged once per run."""
    return _judge(facts).get(rule, [])


def by_workload(found: Iterable[Problem]) -> dict[str, list[Problem]]:
    """Workload key → its problems, by node."""
    grouped: dict[str, list[Problem]] = defaultdict(list)
    for problem in found:
        grouped[problem.workload.key].append(problem)
    return {key: sorted(items, key=lambda p: (p.node or "", p.pod.name))
            for key, items in sorted(grouped.items())}
