"""Second opinions give way to direct evidence.

A rule that says ``defers = True`` (KI001: a known-issue entry matched a line) recognises
a failure by its words alone. Where another rule already explains what it would claim —
a finding it names as its effect is caused by a finding of a rule that does not defer,
or a finding of such a rule (above info) quotes the same line, names the same pod among
its objects, or on the same node quotes the same words (the message of an event, read
by that rule from the pod status it left) — the deferring finding is kept as context:
info, without its cause links, its summary naming the rule that explains it (the rule,
not the finding: the same context on many nodes groups as one). It never becomes a
second root beside a rule with evidence of its own.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from analyzers.results.models import Evidence, Finding, Severity


def _spots(evidence: Iterable[Evidence]) -> set[tuple[str, int | None, str | None]]:
    """The lines and fields the evidence quotes (a file without a line is not a spot)."""
    return {(e.path, e.line, e.pointer) for e in evidence
            if e.line is not None or e.pointer is not None}


def _below(finding: Finding, by_id: dict[str, Finding]) -> set[str]:
    """The findings ``finding`` causes, directly or through others."""
    found: set[str] = set()
    todo = list(finding.causes)
    while todo:
        ident = todo.pop()
        if ident not in found and ident in by_id:
            found.add(ident)
            todo.extend(by_id[ident].causes)
    return found


# Two quotes say the same thing when they share a run of words as long as a clause of a
# message ("requested number of devices unavailable for nvidia.com/gpu"): a window of
# SAME_WORDS characters, taken every STEP characters of one quote, found in the other
# (any shared run of SAME_WORDS + STEP - 1 characters holds one; each test is a C-speed
# ``in``, where a longest-common-substring search cost seconds on a large bundle).
SAME_WORDS = 48
STEP = 16


def _same_words(mine: Iterable[Evidence], theirs: Iterable[Evidence]) -> bool:
    """Whether a quote of ``mine`` and one of ``theirs`` share a run of words (see
    :data:`SAME_WORDS`), case-insensitively: the same message quoted from another place
    (an event and the pod status it left, say)."""
    windows = {quote[i:i + SAME_WORDS] for e in mine
               for quote in (e.excerpt.lower(),)
               for i in range(0, len(quote) - SAME_WORDS + 1, STEP)}
    if not windows:
        return False
    return any(window in text for other in theirs
               for text in (other.excerpt.lower(),) if len(text) >= SAME_WORDS
               for window in windows)


def _pods(finding: Finding) -> set[tuple[str | None, str]]:
    return {(o.namespace, o.name) for o in finding.objects if o.kind == "Pod"}


def _explainer(finding: Finding, by_id: dict[str, Finding], deferring: Collection[str],
               quoting: dict[tuple[str, int | None, str | None], list[Finding]],
               naming: dict[tuple[str | None, str], list[Finding]],
               on_node: dict[str, list[Finding]]) -> str | None:
    """The id of a finding of a rule that does not defer which already explains what
    ``finding`` would claim; None when there is none. What the finding explains itself
    (its effects, and theirs) never counts."""
    children = _below(finding, by_id)
    for child in sorted(set(finding.causes) & set(by_id)):
        for parent in by_id[child].caused_by:
            if parent != finding.id and parent not in children \
                    and by_id[parent].rule_id not in deferring:
                return parent
    for spot in sorted(_spots(finding.evidence), key=repr):
        for other in quoting.get(spot, ()):
            if other.id not in children:
                return other.id
    for pod in sorted(_pods(finding), key=repr):
        for other in naming.get(pod, ()):
            if other.id not in children:
                return other.id
    for node in finding.nodes:
        for other in on_node.get(node, ()):
            if other.id not in children and _same_words(finding.evidence, other.evidence):
                return other.id
    return None


def give_way(findings: list[Finding], deferring: Collection[str]) -> list[Finding]:
    """``findings`` (linked both ways) with each deferring finding that another explains
    made context: severity info, no ``causes``, the explainer's rule named."""
    if not any(f.rule_id in deferring for f in findings):
        return findings
    by_id = {f.id: f for f in findings}
    quoting: dict[tuple[str, int | None, str | None], list[Finding]] = {}
    naming: dict[tuple[str | None, str], list[Finding]] = {}
    on_node: dict[str, list[Finding]] = {}
    for other in findings:
        if other.rule_id not in deferring and other.severity is not Severity.INFO:
            for spot in _spots(other.evidence):
                quoting.setdefault(spot, []).append(other)
            for pod in _pods(other):
                naming.setdefault(pod, []).append(other)
            for node in other.nodes:
                on_node.setdefault(node, []).append(other)
    explained = {f.id: by for f in findings if f.rule_id in deferring
                 and (by := _explainer(f, by_id, deferring, quoting, naming, on_node))
                 is not None}
    if not explained:
        return findings
    out = []
    for finding in findings:
        by = explained.get(finding.id)
        if by is not None:
            rule = by_id[by].rule_id
            finding = finding.model_copy(update={
                "severity": Severity.INFO, "causes": [],
                "summary": f"{finding.summary} {rule} already explains this with evidence of "
                           "its own: shown as context."})
        dropped = [parent for parent in finding.caused_by if parent in explained]
        if dropped:
            finding = finding.model_copy(update={
                "caused_by": [p for p in finding.caused_by if p not in explained]})
        out.append(finding)
    return out
