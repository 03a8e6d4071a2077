"""KI001: A failure seen before: a known-issue entry matches a line of the bundle."""

from __future__ import annotations

import textwrap
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from analyzers import refs
from analyzers.facts.inventory import controller
from analyzers.facts.known_issue_conditions import Judged, Verdict, judge
from analyzers.facts.known_issue_lines import Sighting, cluster_sightings, sightings, unread
from analyzers.knowledge.known_issues import Issue, Source
from analyzers.refs import Link
from analyzers.results.models import Confidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS
from bundle import specs

# The generic findings a known failure of a stack workload's pod explains: the
# component's own record (CMP003-CMP010, by workload; OP001 hangs under those), or, for
# a pod of no recognised workload, the operand stage of its node (OP001).
_WORKLOAD_SYMPTOMS = ("CMP003", "CMP004", "CMP005", "CMP006", "CMP007", "CMP008", "CMP009",
                      "CMP010")
_NODE_SYMPTOMS = ("OP001",)
# Sources whose line belongs to the node's history rather than to an object's state.
_HISTORY = (Source.JOURNAL, Source.KERNEL, Source.CONFIG)


@dataclass
class _Seen:
    """One entry at one place, over the sightings that make it."""

    issue: Issue
    place: str
    sightings: list[Sighting]
    context: Judged
    workload: str | None = None

    @property
    def first(self) -> Sighting:
        return self.sightings[0]

    @property
    def current(self) -> bool:
        return any(s.current for s in self.sightings)

    @property
    def specificity(self) -> tuple[int, int, int]:
        issue = self.issue
        return (len(self.context.checked), len(issue.needles) + (issue.regex is not None),
                sum(map(len, issue.needles)))


class KnownIssue(Rule):
    """A failure seen before: a known-issue entry matches a line of the bundle.

    The known-issues base (``analyzers/data/known_issues/``, ``docs/known-issues.md``)
    holds real failures from public threads whose cause was established: where the line
    appears, how to recognise it, the conditions under which the diagnosis holds, the
    cause and the fix. Each entry is matched where its line would be (a container log,
    an event, a pod state, a unit's journal, the kernel log, a host file, Helm values),
    and its conditions (versions, distribution, CRI, GPU family, cloud) are read from
    the bundle: an entry whose conditions fail is not reported, one whose conditions
    the bundle does not show is only *likely*. A line from a pod that is running and
    ready, or a Normal event, is history: reported low. The finding quotes the line and
    names the thread it was seen in; it is the cause of the generic findings of the same
    workload (CMP) and node stage (OP001), and gives way to a rule that explains them
    with direct evidence of its own (it is then info: context beside that rule).

    Why it matters:
    The same failure recurs across clusters; its thread holds the cause and the fix a
    maintainer or the reporter established, which no generic finding can say.

    Remediation:
    Read the entry's cause and the thread it links; check the conditions it names
    against the cluster before applying its fix.
    """

    id = "KI001"
    slug = "known-issue"
    subject = refs.KNOWN
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    # Defers to a rule with direct evidence of its own (analyzers.engine.deference).
    defers = True
    inputs = (cluster(specs.PODS, optional=True), cluster(specs.EVENTS, optional=True),
              cluster(specs.HELM_RELEASES, optional=True),
              node(specs.JOURNALS, optional=True), node(specs.DMESG, optional=True),
              node(specs.HOST_FILES_ANY, optional=True), LOGS,
              # what the entries' conditions are read from (facts.known_issue_conditions)
              node(specs.NVIDIA_SMI, optional=True), node(specs.OS_RELEASE, optional=True),
              node(specs.CONTAINERD_VERSION, optional=True), node(specs.UNAME, optional=True),
              node(specs.RUNTIME_JSON, optional=True),
              cluster(specs.NODES, optional=True), cluster(specs.VERSION, optional=True),
              cluster(specs.DEPLOYMENTS, optional=True), cluster(specs.DAEMONSETS, optional=True))
    tags = ("known-issues",)
    prepares = (cluster_sightings,)

    def check(self, ctx: Context) -> Iterable[Finding]:
        for reason in unread(ctx.facts):
            self.unjudged(reason)
        grouped: dict[tuple[str, str], _Seen] = {}
        judged: dict[tuple[str, str | None], Judged] = {}  # an entry's context on a node
        for sighting in sightings(ctx.facts):
            asked = (sighting.issue.id, sighting.node)
            if asked not in judged:
                judged[asked] = judge(ctx.facts, sighting.node, sighting.issue.context)
            held = judged[asked]
            if held.verdict is Verdict.FAILS:
                continue
            workload = _workload(ctx, sighting)
            place = workload or _controller(ctx, sighting) or sighting.place
            key = (sighting.issue.id, place)
            seen = grouped.get(key)
            if seen is None:
                grouped[key] = _Seen(sighting.issue, place, [sighting], held, workload)
            else:
                seen.sightings.append(sighting)
                if held.verdict is Verdict.UNKNOWN:
                    seen.context = held
        outranked = _outranked(list(grouped.values()))
        for seen in sorted(grouped.values(), key=lambda s: (s.issue.id, s.place)):
            yield self._finding(ctx, seen, outranked.get(id(seen)))

    def _finding(self, ctx: Context, seen: _Seen, above: _Seen | None) -> Finding:
        issue, first = seen.issue, seen.first
        nodes = sorted({s.node for s in seen.sightings if s.node})
        likely = seen.context.verdict is Verdict.UNKNOWN
        severity = _severity(seen)
        said = [issue.cause]
        count = sum(s.count for s in seen.sightings)
        more = f" ({count} matching lines)" if count > 1 else ""
        places = len(seen.sightings)
        also = f" and {places - 1} more place(s)" if places > 1 else ""
        said.append(f"Seen in the {first.where}{also}{more}.")
        if not seen.current:
            said.append("The pod is running and ready now (or the event is Normal): a past "
                        "occurrence, shown low.")
        if seen.context.checked:
            said.append("Conditions checked: " + "; ".join(seen.context.checked) + ".")
        if likely:
            said.append("Not shown by the bundle: " + "; ".join(seen.context.unknown)
                        + " — so only likely.")
        if above is not None:
            severity = Severity.LOW
            said.append(f"{above.issue.id} matches the same line more specifically.")
        said.append("Seen before: " + ", ".join(issue.sources))
        causes: list[Link] = []
        if above is None:
            if seen.workload is not None:
                ns, _, name = seen.workload.partition("/")
                causes += [refs.link(rule, ns, name) for rule in _WORKLOAD_SYMPTOMS]
            elif first.pod is not None:
                causes += [refs.link(rule, n) for rule in _NODE_SYMPTOMS for n in nodes]
        fix = textwrap.wrap(f"Fix: {issue.fix}", 88, break_long_words=False,
                            break_on_hyphens=False)
        remediation = "\n".join([*(f"# {line}" for line in fix), *issue.commands])
        return self.finding(
            refs.KNOWN.of(issue.id, seen.place), " ".join(said), severity=severity,
            title=f"{issue.id}: {issue.title}", nodes=nodes, objects=_objects(seen),
            evidence=[s.evidence for s in seen.sightings[:4]], remediation=remediation,
            causes=causes, confidence=Confidence.LIKELY if likely else Confidence.CONFIRMED,
            references=issue.sources)


def _workload(ctx: Context, sighting: Sighting) -> str | None:
    """``<namespace>/<workload>`` of a stack pod the line belongs to (None otherwise)."""
    if sighting.pod is None or sighting.namespace is None:
        return None
    pod = ctx.facts.pods_by_key.get((sighting.namespace, sighting.pod))
    workload = ctx.facts.inventory.of(pod) if pod is not None else None
    return workload.key if workload is not None else None


_CONTROLLERS = frozenset({"ReplicaSet", "Job", "StatefulSet", "DaemonSet"})


def _controller(ctx: Context, sighting: Sighting) -> str | None:
    """``<namespace>/<controller>`` of a pod outside the stack that a controller made (a
    Deployment through its ReplicaSet, a Job, a StatefulSet, a DaemonSet): one finding for
    all its pods instead of one per pod."""
    if sighting.pod is None or sighting.namespace is None:
        return None
    pod = ctx.facts.pods_by_key.get((sighting.namespace, sighting.pod))
    made = controller(pod, _CONTROLLERS) if pod is not None else None
    return f"{sighting.namespace}/{made[1]}" if made is not None else None


def _severity(seen: _Seen) -> Severity:
    if not seen.current:
        return Severity.LOW
    if seen.issue.source in _HISTORY:
        return Severity.MEDIUM
    return Severity.HIGH


def _outranked(seen: list[_Seen]) -> dict[int, _Seen]:
    """Entries that match the same line as a more specific entry: the other entry, by
    ``id()`` of the outranked one."""
    by_line: dict[tuple[str, int | None, str | None], list[_Seen]] = defaultdict(list)
    for one in seen:
        evidence = one.first.evidence
        by_line[(evidence.path, evidence.line, evidence.pointer)].append(one)
    found: dict[int, _Seen] = {}
    for same in by_line.values():
        if len(same) < 2:
            continue
        ranked = sorted(same, key=lambda s: (s.specificity, s.issue.id), reverse=True)
        for other in ranked[1:]:
            found[id(other)] = ranked[0]
    return found


def _objects(seen: _Seen) -> list[ObjectRef]:
    first = seen.first
    if seen.workload is not None or first.pod is not None:
        return [ObjectRef(kind="Pod", namespace=s.namespace, name=s.pod)
                for s in seen.sightings[:4] if s.pod is not None]
    if first.name is not None:
        return [ObjectRef(kind=first.kind or "Object", namespace=first.namespace,
                          name=first.name)]
    return []

