"""Where the known-issues base (:mod:`analyzers.knowledge.known_issues`) meets the bundle:
every line an entry matches, with the object it belongs to.

Each source kind of an entry is read where the collector puts it:

- ``pod-log``: every collected container log (current and previous run), for entries
  whose ``container`` glob fits the container and whose ``previous`` flag fits the run;
- ``event``: every event's message, for entries whose ``reason`` glob fits its reason;
- ``pod-status``: each container's waiting/terminated reason and message (the current
  state and the last one) and the pod's own status message;
- ``journal``: the entries the node's journal scan matched (:mod:`analyzers.facts.journals`
  matches them in the same pass as the signatures);
- ``kernel``: the node's kernel records (dmesg and the kernel journal);
- ``config``: each host file the collector copied, for entries whose ``path`` glob fits
  the file's host path;
- ``helm-values``: each Helm release's latest revision: its description (the error Helm
  recorded) and its values flattened to ``key: value`` lines, a multi-line string value
  (a device plugin config) read as YAML too, for entries whose ``key`` glob fits.

A text is searched for an entry's cue (its longest needle) first, so the lines of most
texts are never split. A :class:`Sighting` says whether the line belongs to a failure
still visible (``current``: a container not ready or restarted, a Warning event, a state
message, a failed release) or only to history (a running, ready pod's log, a Normal
event): the rule reports the second kind quietly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from analyzers.facts.evidence import event_evidence, field
from analyzers.facts.kernel_events import line_evidence
from analyzers.facts.memo import per_run
from analyzers.facts.podlogs import ContainerLog
from analyzers.knowledge.known_issues import Issue, Source, fits, packaged
from analyzers.results.models import Evidence
from bundle import specs
from bundle.evidence import clip
from bundle.kube import ContainerStatus, Event, Pod

if TYPE_CHECKING:
    from analyzers.facts import Facts


@dataclass(frozen=True, slots=True)
class Sighting:
    """One entry matched in one place: the first matching line quoted, how many lines
    of that place match, and what the line belongs to."""

    issue: Issue
    evidence: Evidence
    where: str                  # in words: "log of container c of pod ns/p (previous run)"
    node: str | None
    namespace: str | None = None
    pod: str | None = None      # the pod (pod-log, pod-status, a pod's event)
    container: str | None = None
    kind: str | None = None     # the object's kind when it is not a pod (an event's object)
    name: str | None = None
    count: int = 1
    current: bool = True

    @property
    def place(self) -> str:
        """The subject part naming where it was seen: ``<namespace>/<pod>``, a node, or
        ``<namespace>/<kind>/<name>``."""
        if self.pod is not None:
            return f"{self.namespace}/{self.pod}"
        if self.name is not None:
            return "/".join(p for p in (self.namespace, self.kind, self.name) if p)
        return self.node or "cluster"


def _in_text(issues: Iterable[Issue], text: str) -> Iterator[tuple[Issue, list[tuple[int, str]]]]:
    """Each entry that matches a line of ``text``, with the (1-based number, line) of
    every matching line. The text is lowered once for the cues and split only when one
    of them occurs; an entry's matcher then runs only on the lines holding its cue."""
    lowered = text.lower()
    held = [issue for issue in issues if issue.cue in lowered]
    if not held:
        return
    lines = text.splitlines()
    # lowering makes and removes no line boundary, so line i of both is the same line
    low_lines = lowered.splitlines()
    for issue in held:
        cue = issue.cue
        found = [(number, lines[number - 1]) for number, low in enumerate(low_lines, start=1)
                 if cue in low and issue.matches(lines[number - 1])]
        if found:
            yield issue, found


def _failing(status: ContainerStatus | None) -> bool:
    if status is None:
        return False
    if status.restart_count > 0 or status.state.waiting is not None:
        return True
    terminated = status.state.terminated
    return (terminated is not None and terminated.exit_code not in (0, None)) or not status.ready


def _status_of(pod: Pod, container: str) -> ContainerStatus | None:
    for status in (*pod.status.init_container_statuses, *pod.status.container_statuses):
        if status.name == container:
            return status
    return None


def _completed_init(pod: Pod, log: ContainerLog) -> bool:
    """An init container that finished with exit code 0: what it logged on the way
    (waiting for a resource, retrying) is not a failure, and is not read."""
    status = _status_of(pod, log.container)
    terminated = status.state.terminated if status is not None else None
    return log.init and terminated is not None and terminated.exit_code == 0


@functools.cache
def _wanted(source: Source) -> Callable[..., tuple[Issue, ...]]:
    """The entries of ``source`` whose place fits a given container (and, for a log,
    run), event reason or host path, remembered per distinct key: a bundle repeats few
    of them (bounded, for a process that analyses bundle after bundle)."""
    entries = packaged(source)

    @functools.lru_cache(maxsize=4096)
    def wanted(name: str | None, previous: bool | None = None) -> tuple[Issue, ...]:
        if source is Source.POD_LOG:
            return tuple(i for i in entries if fits(i.container, name)
                         and (i.previous is None or i.previous == previous))
        if source is Source.CONFIG:
            return tuple(i for i in entries if fits(i.path, name))
        return tuple(i for i in entries if fits(i.reason, name))
    return wanted


def _pod_logs(facts: Facts) -> Iterator[Sighting]:
    fitting = _wanted(Source.POD_LOG)
    for pod in facts.pods:
        for log in facts.pod_logs.of(pod):
            wanted = fitting(log.container, log.previous)
            if not wanted or _completed_init(pod, log):
                continue
            current = log.previous or _failing(_status_of(pod, log.container))
            run = " (previous run)" if log.previous else ""
            for issue, found in _in_text(wanted, log.text):
                number, line = found[0]
                yield Sighting(
                    issue, Evidence(path=log.path, line=number, excerpt=clip(line)),
                    f"log of container {log.container} of pod {pod.namespace}/{pod.name}{run}",
                    pod.spec.node_name or None, pod.namespace, pod.name, log.container,
                    count=len(found), current=current)


def _events(facts: Facts) -> Iterator[Sighting]:
    fitting = _wanted(Source.EVENT)
    # events repeat a few messages many times: each (reason, message) is matched once
    matched: dict[tuple[str | None, str], tuple[Issue, ...]] = {}
    for event in facts.events:
        message = event.message
        if not message:
            continue
        key = (event.reason, message)
        found = matched.get(key)
        if found is None:
            lowered = message.lower()
            found = matched[key] = tuple(
                issue for issue in fitting(event.reason)
                if issue.cue in lowered and issue.matches(message))
        target = event.involved_object.name
        for issue in found:
            if fits(issue.object, target):
                yield _event_sighting(facts, issue, event)


def _event_sighting(facts: Facts, issue: Issue, event: Event) -> Sighting:
    target = event.involved_object
    evidence = event_evidence(event)
    current = (event.type or "Warning") != "Normal"
    where = f"event {event.reason} on {target.kind} {target.namespace or ''}/{target.name}"
    if target.kind == "Pod":
        pod = facts.pods_by_key.get((target.namespace or "", target.name or ""))
        node = pod.spec.node_name if pod is not None else None
        return Sighting(issue, evidence, where, node or None, target.namespace, target.name,
                        count=event.count or 1, current=current)
    node = target.name if target.kind == "Node" else None
    return Sighting(issue, evidence, where, node, target.namespace, kind=target.kind,
                    name=target.name, count=event.count or 1, current=current)


def _status_lines(pod: Pod) -> Iterator[tuple[str | None, str | None, str, tuple[Any, ...]]]:
    """(container, reason, "reason: message", pointer) of each state of the pod."""
    if pod.status.message or pod.status.reason:
        yield (None, pod.status.reason,
               f"{pod.status.reason or ''}: {pod.status.message or ''}".strip(": "),
               ("status", "message"))
    for key, statuses in (("initContainerStatuses", pod.status.init_container_statuses),
                          ("containerStatuses", pod.status.container_statuses)):
        for index, status in enumerate(statuses):
            for state_key, state in (("state", status.state), ("lastState", status.last_state)):
                for kind, detail in (("waiting", state.waiting), ("terminated", state.terminated)):
                    if detail is None or not (detail.message or detail.reason):
                        continue
                    text = f"{detail.reason or ''}: {detail.message or ''}".strip(": ")
                    yield (status.name, detail.reason, text,
                           ("status", key, index, state_key, kind, "message"))


def _pod_states(facts: Facts) -> Iterator[Sighting]:
    entries = packaged(Source.POD_STATUS)
    for pod in facts.pods:
        seen: set[str] = set()
        for container, reason, text, pointer in _status_lines(pod):
            lowered = text.lower()
            for issue in entries:
                if issue.id in seen or issue.cue not in lowered or not fits(
                        issue.reason, reason) or (issue.container is not None and not fits(
                        issue.container, container)) or not fits(issue.object, pod.name):
                    continue
                if issue.matches(text):
                    seen.add(issue.id)
                    of = f"container {container} of " if container else ""
                    yield Sighting(issue, field(pod, text, *pointer),
                                   f"status of {of}pod {pod.namespace}/{pod.name}",
                                   pod.spec.node_name or None, pod.namespace, pod.name, container)


def _journals(facts: Facts, node: str) -> Iterator[Sighting]:
    by_id = {issue.id: issue for issue in packaged(Source.JOURNAL)}
    for unit in facts.node(node).journal_units:
        scan = facts.node(node).journal(unit)
        first: dict[str, tuple[int, str]] = {}
        counts: dict[str, int] = {}
        for entry, ids in scan.known:
            for ident in ids:
                first.setdefault(ident, (entry.line, entry.message))
                counts[ident] = counts.get(ident, 0) + 1
        for ident, (line, message) in first.items():
            issue = by_id.get(ident)
            if issue is not None:
                yield Sighting(issue, Evidence(path=scan.path, line=line, excerpt=clip(message)),
                               f"journal of {unit} on node {node}", node,
                               count=counts[ident])


def _kernel(facts: Facts, node: str) -> Iterator[Sighting]:
    entries = packaged(Source.KERNEL)
    lines = facts.node(node).kernel.lines
    if not entries or not lines:
        return
    lowered = [line.message.lower() for line in lines]
    joined = "\n".join(lowered)  # one search per entry over all lines first
    for issue in entries:
        if issue.cue not in joined:
            continue
        found = [line for line, low in zip(lines, lowered, strict=True)
                 if issue.cue in low and issue.matches(line.message)]
        if found:
            yield Sighting(issue, line_evidence(found[0]), f"kernel log of node {node}",
                           node, count=len(found))


def _configs(facts: Facts, node: str) -> Iterator[Sighting]:
    entries = packaged(Source.CONFIG)
    if not entries:
        return
    fitting = _wanted(Source.CONFIG)
    for host_path, path, text in facts.node(node).host_files:
        for issue, found in _in_text(fitting(host_path), text):
            number, line = found[0]
            yield Sighting(issue, Evidence(path=path, line=number, excerpt=clip(line)),
                           f"{host_path} on node {node}", node, count=len(found))


def _flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(dotted key, ``key: value`` line) of each leaf of Helm values; a string holding a
    YAML mapping (a device plugin config under ``config.map``) is read as one too."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _flatten(inner, f"{prefix}.{key}" if prefix else str(key))
        return
    if isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _flatten(inner, f"{prefix}.{index}")
        return
    leaf = prefix.rpartition(".")[2]
    if isinstance(value, str) and "\n" in value:
        import yaml  # only for a multi-line value: analyze's start-up stays without it

        try:
            nested = yaml.safe_load(value)
        except yaml.YAMLError:
            nested = None
        if isinstance(nested, dict):
            yield from _flatten(nested, prefix)
            return
    shown = str(value).lower() if isinstance(value, bool) else str(value)
    yield prefix, f"{leaf}: {shown}"


def _helm(facts: Facts) -> Iterator[Sighting]:
    entries = packaged(Source.HELM_VALUES)
    if not entries:
        return
    for release, revisions in sorted(facts.helm_releases.items()):
        if not revisions:
            continue
        latest = max(revisions, key=lambda r: r.revision)
        current = latest.status != "deployed"
        lines: list[tuple[str, str, tuple[str, ...]]] = (
            [("", latest.description, ("description",))] if latest.description else [])
        lines += [(key, line, ("values", *key.split("."))) for key, line in
                  _flatten(latest.values)]
        for issue in entries:
            for key, line, pointer in lines:
                if (issue.key is None or fits(issue.key, key)) and \
                        issue.cue in line.lower() and issue.matches(line):
                    yield Sighting(issue, field(latest, line, *pointer),
                                   f"Helm release {release} revision {latest.revision}",
                                   None, kind="HelmRelease", name=release, current=current)
                    break


def unread(facts: Facts) -> list[str]:
    """What kinds of entries could not be matched because the bundle lacks their source
    (each a reason for the rule to say ``partial``)."""
    missing = []
    for path, kind in ((specs.EVENTS, "event"), (specs.PODS, "pod-status and pod-log")):
        if not facts.has(path):
            missing.append(f"{path} is not in the bundle: its {kind} entries were not matched")
    if facts.has(specs.PODS) and not facts.bundle.paths_under(specs.LOGS_DIR):
        missing.append("no container log is in the bundle: pod-log entries were not matched")
    nodes = sorted(facts.node_dirs)
    if not any(facts.node(n).journal_units for n in nodes):
        missing.append("no node journal is in the bundle: journal entries were not matched")
    if not any(facts.node(n).kernel.lines or facts.node(n).has(specs.DMESG) for n in nodes):
        missing.append("no node kernel log is in the bundle: kernel entries were not matched")
    return missing


@per_run
def cluster_sightings(facts: Facts) -> tuple[Sighting, ...]:
    """The sightings in what the cluster files and container logs hold (no node file is
    read): made while worker processes still parse the node files."""
    return (*_pod_logs(facts), *_events(facts), *_pod_states(facts), *_helm(facts))


@per_run
def sightings(facts: Facts) -> tuple[Sighting, ...]:
    """Every entry of the packaged base matched in the bundle, in a stable order."""
    found: list[Sighting] = list(cluster_sightings(facts))
    for node in sorted(facts.node_dirs):
        found += [*_journals(facts, node), *_kernel(facts, node), *_configs(facts, node)]
    return tuple(found)


__all__ = ["Sighting", "cluster_sightings", "sightings", "unread"]
