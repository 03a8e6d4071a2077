"""The incident timeline: Kubernetes events, containerd restarts, Xid lines and pod state
changes on one time axis, folded so that a big cluster still reads as a story.

Folding: records of the same kind and reason within the same five minutes become one
point (``count`` occurrences, ``subjects`` objects, ``node_count`` nodes). The cap keeps
warnings before normal records, then the newest. The incident window is the run of
warning points with no gap over :data:`WINDOW_GAP` that holds the most occurrences.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from weakref import WeakKeyDictionary

from analyzers.facts import Facts
from analyzers.facts.journals import journal_scan
from analyzers.results.overview_models import Timeline, TimelinePoint
from bundle import specs
from bundle.kernel import XidEvent
from bundle.kube import ContainerStateDetail, Pod
from bundle.textfiles import JournalEntry

POINT_CAP = 400
FOLD = timedelta(minutes=5)
WINDOW_GAP = timedelta(minutes=30)
RESTART_GAP = timedelta(minutes=2)
TEXT_CAP = 300
NODE_SAMPLE = 5

# systemd's wording for a unit's life cycle (any systemd since 219, with or without the
# unit-name prefix and the description suffix newer versions add).
_UNIT_WORDS: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"sent signal SIGHUP to main process", re.I), "SIGHUP sent", True),
    (re.compile(r"main process exited, code=killed, status=1/HUP", re.I), "killed by SIGHUP",
     True),
    (re.compile(r"main process exited, code=(?:killed|exited|dumped)", re.I), "process exited",
     True),
    (re.compile(r"scheduled restart job, restart counter is at (\d+)", re.I),
     "restart scheduled", True),
    (re.compile(r"start request repeated too quickly|failed with result", re.I), "failed",
     True),
    (re.compile(r"^(?:Stopping|Stopped) (?:containerd\.service\b|containerd container runtime)",
                re.I), "stopped", True),
    (re.compile(r"^Started (?:containerd\.service\b|containerd container runtime)", re.I),
     "started", False),
)

# An event's count as the timeline adds it up: no real event repeats more often, and
# sums of hostile counts then stay within what JSON output carries.
_MOST_REPEATS = 10**12


@dataclass(slots=True)
class _Record:
    when: datetime
    lane: str
    key: str
    warning: bool
    text: str
    subject: str
    node: str | None
    count: int = 1
    path: str | None = None
    line: int | None = None
    pointer: str | None = None


@dataclass(slots=True)
class _Fold:
    first: _Record
    last: datetime
    count: int = 0
    warning: bool = False
    subjects: set[str] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)

    def note(self, when: datetime, count: int, warning: bool, subject: str,
             node: str | None) -> None:
        """Count one record in."""
        if when > self.last:
            self.last = when
        self.count += count
        self.warning = self.warning or warning
        self.subjects.add(subject)
        if node:
            self.nodes.add(node)


def _before(record: _Record, first: _Record) -> bool:
    """Whether ``record`` comes before ``first`` of the same fold (same lane and key)."""
    return (record.when, record.subject, record.text) < (first.when, first.subject, first.text)


_UNSEEN: Any = object()


def parse_time(text: object) -> datetime | None:
    """A Kubernetes timestamp as aware UTC; None for absent or unreadable values."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def clip(text: str, limit: int = TEXT_CAP) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- sources ------------------------------------------------------------------------------


def _fold_events(folder: _Folder, facts: Facts) -> None:
    """Fold the Kubernetes events into ``folder``.

    A bundle of a large cluster holds hundreds of thousands of events, and a fold shows
    only its first record: an event's record (text, pointer) is built only when the
    event could come first in its fold, which its time and subject decide unless both
    tie (see :class:`_Folder`).
    """
    pods = facts.pods_by_key
    folds = folder.folds
    times: dict[str | None, tuple[datetime, int] | None] = {}  # events share timestamps
    for event in facts.bundle.cluster.events:
        stamp = event.time
        timed = times.get(stamp, _UNSEEN)
        if timed is _UNSEEN:
            when = parse_time(stamp)
            timed = times[stamp] = None if when is None else (when, _bucket(when))
        if timed is None:
            folder.untimed += 1
            continue
        when, bucket = timed
        ref = event.involved_object
        kind = ref.kind or "Object"
        name = f"{ref.namespace}/{ref.name}" if ref.namespace else (ref.name or "?")
        subject = f"{kind} {name}"
        node: str | None = None
        if kind == "Node":
            node = ref.name
        elif kind == "Pod":
            pod = pods.get((ref.namespace or "default", ref.name or ""))
            node = pod.spec.node_name if pod is not None else None
        node = node or event.source.host
        reason = event.reason or "Event"
        key = f"event:{reason}"
        warning = (event.type or "") == "Warning"
        count = min(max(event.count or 1, 1), _MOST_REPEATS)
        where = ("event", key, bucket)
        slot = folds.get(where)
        if slot is None or (when, subject) <= (slot.first.when, slot.first.subject):
            pointer = event.source_pointer
            record = _Record(
                when=when, lane="event", key=key, warning=warning,
                text=clip(f"{reason}: {event.message or ''}"), subject=subject, node=node,
                count=count, path=event.source_path or None,
                pointer=(pointer + "/message") if pointer else None)
            if slot is None:
                slot = folds[where] = _Fold(record, when)
            elif _before(record, slot.first):
                slot.first = record
        slot.note(when, count, warning, subject, node)
        folder.total += count


def _untimed() -> _Record:
    return _Record(when=datetime.min.replace(tzinfo=UTC), lane="", key="", warning=False,
                   text="", subject="", node=None)


def _unit_word(message: str) -> tuple[str, bool] | None:
    for pattern, label, warning in _UNIT_WORDS:
        found = pattern.search(message)
        if found:
            if label == "restart scheduled" and found.groups():
                return f"restart scheduled (counter {found.group(1)})", warning
            return label, warning
    return None


def containerd_records(node: str, path: str, entries: Iterable[JournalEntry]) -> Iterator[_Record]:
    """One record per burst of systemd life-cycle lines (SIGHUP → exit → restart → start)."""
    burst: list[tuple[JournalEntry, str, bool]] = []

    def flush() -> Iterator[_Record]:
        if not burst:
            return
        first = burst[0][0]
        labels = [label for _, label, _ in burst]
        warning = any(flag for _, _, flag in burst)
        starts = sum(1 for label in labels if label == "started")
        steps = " → ".join(dict.fromkeys(labels))
        text = f"containerd restarted: {steps}" if warning else "containerd started"
        assert first.time is not None
        yield _Record(when=first.time, lane="containerd",
                      key="containerd:restart" if warning else "containerd:start",
                      warning=warning, text=clip(text), subject=f"containerd on {node}",
                      node=node, count=max(starts, 1), path=path, line=first.line)
        burst.clear()

    for entry in entries:
        if entry.time is None:
            continue
        word = _unit_word(entry.message)
        if word is None:
            continue
        if burst and entry.time - burst[-1][0].time > RESTART_GAP:  # type: ignore[operator]
            yield from flush()
        burst.append((entry, word[0], word[1]))
        if word[0] == "started":
            yield from flush()
    yield from flush()


def xid_events(facts: Facts, node: str) -> tuple[list[XidEvent], str | None]:
    """Xid events of a node and the kernel log(s) they came from (None: none collected),
    from the ``kernel_events`` fact (dmesg plus journal kernel lines, deduplicated)."""
    kernel = facts.kernel_events.get(node)
    if kernel is None:
        return [], None
    return list(kernel.xids), ", ".join(kernel.sources) or None


def _xid_records(node: str, events: Iterable[XidEvent]) -> Iterator[_Record]:
    for event in events:
        line = event.source
        if line.time is None:
            yield _untimed()
            continue
        where = f" on {event.pci}" if event.pci else ""
        yield _Record(when=line.time, lane="xid", key=f"xid:{event.xid}", warning=True,
                      text=clip(f"Xid {event.xid}{where}: {event.detail}"),
                      subject=f"GPU {event.pci or '?'} on {node}", node=node,
                      path=line.path, line=line.line)


def _finished(detail: ContainerStateDetail | None) -> datetime | None:
    return None if detail is None else parse_time(detail.finished_at)


def _pod_records(pod: Pod) -> Iterator[_Record]:
    node = pod.spec.node_name
    subject = f"Pod {pod.namespace}/{pod.name}"
    path = pod.source_path or None
    for index, condition in enumerate(pod.status.conditions):
        if condition.type not in ("Ready", "PodScheduled"):
            continue
        when = parse_time(condition.last_transition_time)
        if when is None:
            continue
        ok = condition.status == "True"
        reason = f" ({condition.reason})" if condition.reason else ""
        yield _Record(when=when, lane="pod", key=f"pod:{condition.type}={condition.status}",
                      warning=not ok, text=clip(f"{condition.type}={condition.status}{reason}"),
                      subject=subject, node=node, path=path,
                      pointer=f"{pod.source_pointer}/status/conditions/{index}")
    statuses = [("containerStatuses", s) for s in pod.status.container_statuses]
    statuses += [("initContainerStatuses", s) for s in pod.status.init_container_statuses]
    for index, (group, status) in enumerate(statuses):
        for which, state in (("state", status.state), ("lastState", status.last_state)):
            term = state.terminated
            when = _finished(term)
            if term is None or when is None:
                continue
            failed = term.exit_code not in (0, None)
            why = term.reason or f"exit code {term.exit_code}"
            yield _Record(when=when, lane="pod", key=f"pod:terminated:{why}", warning=failed,
                          text=clip(f"container {status.name} terminated: {why}"
                                    + (f" (exit {term.exit_code})" if failed else "")),
                          subject=subject, node=node, path=path,
                          pointer=f"{pod.source_pointer}/status/{group}/{index}/{which}")


def _watched_pods(facts: Facts) -> Iterator[Pod]:
    from analyzers.facts.gpu import pod_gpu_request

    namespace = facts.operator_namespace
    for pod in facts.bundle.cluster.pods:
        if (namespace is not None and pod.namespace == namespace) or pod_gpu_request(pod) \
                or pod.spec.runtime_class_name:
            yield pod


# -- folding and the window ------------------------------------------------------------


def _bucket(when: datetime) -> int:
    return int(when.timestamp() // FOLD.total_seconds())


class _Folder:
    """Folds records as they are produced, so that the records of a large bundle are
    never all held at once.

    A fold is shown by its first record in (time, lane, key, subject, text) order, the
    earliest produced among equals: the result does not depend on the order in which
    the other records arrive.
    """

    def __init__(self) -> None:
        self.folds: dict[tuple[str, str, int], _Fold] = {}
        self.total = 0    # occurrences of timed records
        self.untimed = 0  # records without a readable time

    def add(self, records: Iterable[_Record]) -> None:
        folds = self.folds
        for record in records:
            if not record.lane:
                self.untimed += 1
                continue
            when = record.when
            where = (record.lane, record.key, _bucket(when))
            slot = folds.get(where)
            if slot is None:
                slot = folds[where] = _Fold(record, when)
            elif _before(record, slot.first):
                slot.first = record
            slot.note(when, record.count, record.warning, record.subject, record.node)
            self.total += record.count


def _point(fold: _Fold) -> TimelinePoint:
    first = fold.first
    return TimelinePoint(
        time=iso(first.when), until=iso(fold.last), lane=first.lane, warning=fold.warning,
        text=first.text,
        subject=first.subject, subjects=len(fold.subjects), count=fold.count,
        nodes=sorted(fold.nodes)[:NODE_SAMPLE], node_count=len(fold.nodes),
        path=first.path, line=first.line, pointer=first.pointer,
    )


def _window(points: list[TimelinePoint]) -> tuple[str, str, str] | None:
    warnings = [p for p in points if p.warning]
    if not warnings:
        return None
    runs: list[list[TimelinePoint]] = [[warnings[0]]]
    for point in warnings[1:]:
        reached = max(p.until for p in runs[-1])
        gap = parse_time(point.time) - parse_time(reached)  # type: ignore[operator]
        if gap > WINDOW_GAP:
            runs.append([point])
        else:
            runs[-1].append(point)
    best = max(runs, key=lambda run: (sum(p.count for p in run), run[-1].time))
    count = sum(p.count for p in best)
    lanes = sorted({p.lane for p in best})
    reason = (f"{count} warning record(s) ({', '.join(lanes)}) with no gap over "
              f"{int(WINDOW_GAP.total_seconds() // 60)} minutes")
    return best[0].time, max(p.until for p in best), reason


_CLUSTER_FOLDS: WeakKeyDictionary[Facts, _Folder] = WeakKeyDictionary()


def fold_cluster(facts: Facts) -> None:
    """Fold the records of the cluster files (events, the watched pods' states) ahead
    of :func:`build`, which adds the node files' records to them: the analysis does this
    while worker processes still parse node files."""
    if facts not in _CLUSTER_FOLDS:
        folder = _Folder()
        _fold_events(folder, facts)
        for pod in _watched_pods(facts):
            folder.add(_pod_records(pod))
        _CLUSTER_FOLDS[facts] = folder


def build(facts: Facts, xids: Mapping[str, list[XidEvent]]) -> Timeline:
    """The timeline of the bundle; ``xids`` maps each node with a directory to its Xids."""
    fold_cluster(facts)
    folder = _CLUSTER_FOLDS.pop(facts)  # taken: the node records are added to it
    for name in sorted(xids):
        artifacts = facts.bundle.node(name)
        if artifacts.has(specs.CONTAINERD_JOURNAL):
            lifecycle = journal_scan(facts.bundle, name, "containerd").lifecycle
            folder.add(containerd_records(name, artifacts.path(specs.CONTAINERD_JOURNAL),
                                          lifecycle))
        folder.add(_xid_records(name, xids[name]))
    # By first record: folds the cap ranks equal keep this order, not the order in
    # which the sources happened to produce them.
    folds = sorted(folder.folds.values(), key=lambda f: (f.first.when, f.first.lane,
                                                         f.first.key, f.first.subject,
                                                         f.first.text))
    keep = sorted(folds, key=lambda f: (not f.warning, -f.first.when.timestamp(),
                                        f.first.lane, f.first.key))[:POINT_CAP]
    points = sorted((_point(f) for f in keep),
                    key=lambda p: (p.time, p.lane, p.text, p.subject))
    window = _window(points)
    return Timeline(
        points=points,
        total=folder.total,
        omitted=len(folds) - len(keep),
        untimed=folder.untimed,
        start=points[0].time if points else None,
        end=max(p.until for p in points) if points else None,
        window_start=window[0] if window else None,
        window_end=window[1] if window else None,
        window_reason=window[2] if window else None,
    )
