"""Grouping: the same problem on many nodes, said once, with its nodes listed.

Rules report one finding per subject (``RT004:gpu-a``, ``RT004:gpu-b`` …). On a fleet
that repeats one cause hundreds of times and hides the node that is different, so after
the rules have run (and their findings are linked) this step partitions the findings
into groups. Every finding is in exactly one group; a group of one is a finding whose
cause no other finding shares. The findings themselves are not changed: ids, ``diff``
and ``--suppress`` keep working per finding, that is per node.

Two findings have the *same cause*, and share a group, when all of these are equal:

* the rule, the severity and the title;
* the summary and the remediation once the finding's own subjects are abstracted: each
  of its nodes is read as ``<node>``, the name of each Node or Pod object it names as
  ``<node>`` or ``<pod>`` (DaemonSet pods differ per node by design), and each date-time
  as ``<time>``. Everything else stays, numbers included: a node where Xid 48 was
  logged, or 3 restarts instead of 1, or another driver version, stands apart;
* the evidence's shape: the files quoted (node name abstracted) and the JSON pointers
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

from analyzers.models import Finding, FindingGroup

NODE, POD, TIME = "<node>", "<pod>", "<time>"
# 2026-11-29T13:59:00Z, 2026-11-29 13:20:07, 2026-11-29T13:59:00.123+00:00
_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?")
_INDEX = re.compile(r"/\d+(?=/|$)")
_ABSTRACT_KINDS = {"Node": NODE, "Pod": POD}
Key = tuple[object, ...]


def _names(finding: Finding) -> list[tuple[str, str]]:
    """(name, placeholder) for the finding's own subjects, longest name first."""
    names = {n: NODE for n in finding.nodes if n}
    for ref in finding.objects:
        placeholder = _ABSTRACT_KINDS.get(ref.kind)
        if placeholder is not None and ref.name and ref.name not in names:
            names[ref.name] = placeholder
    return sorted(names.items(), key=lambda item: -len(item[0]))


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _replace(text: str, name: str, placeholder: str) -> str:
    """``name`` replaced where it stands as a whole name: not inside a longer one
    (``gpu-1`` is not replaced in ``gpu-10``, ``xgpu-1`` or ``gpu-1.example``), while a
    full stop or slash after it ends it (``on gpu-1.``, ``nodes/gpu-1/``). Plain string
    search: a regular expression per node name would be compiled again for every
    finding of a large fleet."""
    if name not in text:
        return text
    out = []
    at = 0
    size = len(name)
    start = text.find(name)
    while start >= 0:
        end = start + size
        before = text[start - 1] if start else ""
        after = text[end:end + 2]
        inside = (bool(before) and (_word(before) or before in ".-")) or (
            bool(after) and (_word(after[0]) or after[0] == "-"
                             or (after[0] == "." and len(after) > 1 and _word(after[1]))))
        if not inside:
            out.append(text[at:start])
            out.append(placeholder)
            at = end
        start = text.find(name, end)
    out.append(text[at:])
    return "".join(out)


def abstract(text: str, names: Sequence[tuple[str, str]], *, times: bool = True) -> str:
    """``text`` with each name (as a whole name) and, with ``times``, each date-time
    replaced."""
    for name, placeholder in names:
        text = _replace(text, name, placeholder)
    return _TIME.sub(TIME, text) if times else text


def _own_key(finding: Finding) -> Key:
    names = _names(finding)
    nodes = [(n, NODE) for n in finding.nodes]
    shape = sorted({(abstract(e.path, nodes, times=False), _INDEX.sub("/#", e.pointer or ""))
                    for e in finding.evidence})
    return (finding.rule_id, finding.severity.value, finding.title,
            abstract(finding.summary, names), abstract(finding.remediation, names),
            tuple(shape))


class _Keys:
    """Cause keys, computed once per finding; a finding's parents go into its key."""

    def __init__(self, findings: Iterable[Finding]) -> None:
        self.by_id = {f.id: f for f in findings}
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
            key = (_own_key(finding), tuple(parents))
        self.done[finding.id] = key
        return key


def group_id(rule_id: str, key: Key) -> str:
    digest = hashlib.blake2b(repr(key).encode("utf-8", "replace"), digest_size=5).hexdigest()
    return f"{rule_id}~{digest}"


def group(findings: Sequence[Finding]) -> list[FindingGroup]:
    """Partition linked findings into cause groups (see the module docstring), ordered
    most severe first, then by rule, then the most nodes first."""
    keys = _Keys(findings)
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
            summary=(abstract(first.summary, _names(first)) if len(first.nodes) == 1
                     else first.summary),
            findings=[f.id for f in items],
            nodes=sorted({n for f in items for n in f.nodes}),
            caused_by=sorted({of[p] for f in items for p in f.caused_by if p in of} - {own}),
            causes=sorted({of[c] for f in items for c in f.causes if c in of} - {own}),
        ))
    return sorted(out, key=lambda g: (-g.severity.rank, g.rule_id, -len(g.findings),
                                      g.nodes[:1], g.id))
