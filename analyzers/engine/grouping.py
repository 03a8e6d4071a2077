"""Grouping: the same problem on many nodes, said once, with its nodes listed.

Rules report one finding per subject (``RT004:gpu-a``, ``RT004:gpu-b`` …). On a fleet
that repeats one cause hundreds of times and hides the node that is different, so after
the rules have run (and their findings are linked) this step partitions the findings
into groups. Every finding is in exactly one group; a group of one is a finding whose
cause no other finding shares. The findings themselves are not changed: ids, ``diff``
and ``--suppress`` keep working per finding, that is per node.

Two findings have the *same cause*, and share a group, when all of these are equal:

* the rule, the severity and the title;
* the summary and the remediation once what identifies one machine, process or moment
  is abstracted: every node name of the report is read as ``<node>``, the name of each
  Pod object any finding lists as ``<pod>`` (DaemonSet pods differ per node by design),
  date-times as ``<time>``, GPU UUIDs as ``<gpu-uuid>``, PCI addresses as ``<pci>``, a
  GPU's index on its node as ``<index>``, process ids as ``<pid>``, and a list of such
  names as ``<nodes>`` / ``<pods>``. Everything else stays, numbers included: a node
  where Xid 48 was logged, or 3 restarts instead of 1, or another driver version, stands
  apart;
* the evidence's shape: the files quoted (node and pod names abstracted) and the JSON pointers
  (list indices abstracted), as a set; the excerpts themselves may differ (they
  are shown per node);
* the causes: the set of the cause keys of the findings it is ``caused_by`` (so RT001
  caused by one CFG004 is one group, and RT001 caused by RT002 on its own node on 3 of
  400 nodes is another group than the rest).

Only findings about one node are grouped. A finding without nodes (about the cluster)
or naming several (a pending pod and the nodes it does not fit on) is its own group: its
identity is its subject. The group id is ``<rule>~<10 hex digits>``, a digest of the
cause key: equal causes in two bundles get the same group id, but ``diff`` and
suppressions use finding ids. Group links (``caused_by`` / ``causes``) are the groups of
the members' linked findings.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

from analyzers.results.models import Finding, FindingGroup

NODE, POD, TIME = "<node>", "<pod>", "<time>"
# Identities of one machine, process or moment, written as placeholders (see the module
# docstring). Each pattern is general: the forms the rules and the tools they quote use.
_IDENTITIES = (
    # 2026-11-29T13:59:00Z, 2026-11-29 13:20:07, 2026-11-29T13:59:00.123+00:00
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"),
     TIME),
    # GPU-21f4bc9d-8756-45b0-b361-13208fdb6274 (nvidia-smi's GPU UUID)
    (re.compile(r"\bGPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"), "<gpu-uuid>"),
    # PCI addresses: 0000:1b:00.0, 00000000:1B:00.0, and the kernel's PCI:0000:1b:00
    (re.compile(r"\b(?:PCI:)?(?:[0-9a-fA-F]{4}|[0-9a-fA-F]{8}):[0-9a-fA-F]{2}:[0-9a-fA-F]{2}"
                r"(?:\.[0-7])?\b"), "<pci>"),
    # the index of a GPU on its node: "GPU 3 (NVIDIA H100 ..."
    (re.compile(r"\bGPU \d+ \("), "GPU <index> ("),
    # process ids: pid=4473, PID 1118, and a changing one written (1118 → 41136)
    (re.compile(r"\b(pid|PID)([=: ]+)\d+\b"), r"\1\2<pid>"),
    (re.compile(r"\(\d+(?: → \d+)+\)"), "(<pid> → <pid>)"),
)
# A list of placeholders ("<node>, <node> and 39 more") says "some nodes": how many is
# said elsewhere in the sentence when it matters, and which ones is the group's node list.
_LISTS = re.compile(r"<(node|pod)>(?:(?:, | and )<\1>)+(?: and \d+ more)?")
_TOKENS = re.compile(r"([\s,;()\[\]{}<>'\"=/|]+)")
_INDEX = re.compile(r"/\d+(?=/|$)")
_ABSTRACT_KINDS = {"Node": NODE, "Pod": POD}
Key = tuple[object, ...]
Names = dict[str, str]


def _names(finding: Finding, fleet: Names) -> Names:
    """Name → placeholder for the Node and Pod objects this finding names that are not
    already in ``fleet`` (every node of the report and every Pod any finding lists)."""
    names: Names = {}
    for ref in finding.objects:
        placeholder = _ABSTRACT_KINDS.get(ref.kind)
        if placeholder is not None and ref.name and ref.name not in fleet:
            names.setdefault(ref.name, placeholder)
    return names


def abstract(text: str, names: Names, *, identities: bool = True,
             more: Names | None = None) -> str:
    """``text`` with each whole name replaced by its placeholder (a name is a token
    between spaces, punctuation, quotes or slashes; a full stop or colon after it does not
    belong to it, so ``gpu-1`` is replaced in ``on gpu-1.`` and ``nodes/gpu-1/``, not in
    ``gpu-10``, ``gpu-1-b`` or ``gpu-1.example``); then, with ``identities``, times, GPU
    UUIDs, PCI addresses, GPU indexes and process ids, and lists of placeholders.
    ``more`` holds names of one finding, looked up after ``names`` (the report's)."""
    parts = _TOKENS.split(text)
    for index in range(0, len(parts), 2):
        token = parts[index]
        core = token.rstrip(".:")
        placeholder = names.get(core) if core else None
        if placeholder is None and core and more:
            placeholder = more.get(core)
        if placeholder is not None:
            parts[index] = placeholder + token[len(core):]
    text = "".join(parts)
    if not identities:
        return text
    for pattern, placeholder in _IDENTITIES:
        text = pattern.sub(placeholder, text)
    return _LISTS.sub(lambda m: f"<{m[1]}s>", text)


def _own_key(finding: Finding, fleet: Names) -> Key:
    own = _names(finding, fleet)
    shape = sorted({(abstract(e.path, fleet, identities=False),
                     _INDEX.sub("/#", e.pointer or "")) for e in finding.evidence})
    return (finding.rule_id, finding.severity.value, finding.title,
            abstract(finding.summary, fleet, more=own),
            abstract(finding.remediation, fleet, more=own), tuple(shape))


class _Keys:
    """Cause keys, computed once per finding; a finding's parents go into its key."""

    def __init__(self, findings: Iterable[Finding]) -> None:
        self.by_id = {f.id: f for f in findings}
        pods: Names = {o.name: POD for f in self.by_id.values() for o in f.objects
                       if o.kind == "Pod" and o.name}
        self.fleet: Names = pods | {n: NODE for f in self.by_id.values() for n in f.nodes if n}
        self.done: dict[str, Key] = {}

    def key(self, finding: Finding, path: frozenset[str] = frozenset()) -> Key:
        known = self.done.get(finding.id)
        if known is not None:
            return known
        if len(finding.nodes) != 1:
            key: Key = ("subject", finding.id)
        else:
            inner = path | {finding.id}
            parents = sorted({repr(self.key(self.by_id[p], inner)) for p in finding.caused_by
                              if p in self.by_id and p not in inner})
            key = (_own_key(finding, self.fleet), tuple(parents))
        self.done[finding.id] = key
        return key


def group_id(rule_id: str, key: Key) -> str:
    digest = hashlib.blake2b(repr(key).encode("utf-8", "replace"), digest_size=5).hexdigest()
    return f"{rule_id}~{digest}"


def group(findings: Sequence[Finding]) -> list[FindingGroup]:
    """Partition linked findings into cause groups (see the module docstring), ordered
    most severe first, then by rule, then the most nodes first."""
    keys = _Keys(findings)
    fleet = keys.fleet
    members: dict[Key, list[Finding]] = defaultdict(list)
    for finding in findings:
        members[keys.key(finding)].append(finding)
    of: dict[str, str] = {}
    ids: dict[Key, str] = {}
    for key, items in members.items():
        ids[key] = group_id(items[0].rule_id, key)
        for finding in items:
            of[finding.id] = ids[key]
    out = []
    for key, items in members.items():
        items = sorted(items, key=lambda f: (f.nodes[:1], f.id))
        first = items[0]
        own = ids[key]
        out.append(FindingGroup(
            id=own, rule_id=first.rule_id, title=first.title, severity=first.severity,
            summary=(abstract(first.summary, fleet, more=_names(first, fleet))
                     if len(first.nodes) == 1
                     else first.summary),
            findings=[f.id for f in items],
            nodes=sorted({n for f in items for n in f.nodes}),
            caused_by=sorted({of[p] for f in items for p in f.caused_by if p in of} - {own}),
            causes=sorted({of[c] for f in items for c in f.causes if c in of} - {own}),
        ))
    return sorted(out, key=lambda g: (-g.severity.rank, g.rule_id, -len(g.findings),
                                      g.nodes[:1], g.id))
