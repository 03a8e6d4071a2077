"""Second opinions give way to direct evidence.

A rule that says ``defers = True`` (KI001: a known-issue entry matched a line) recognises
a failure by its words alone. Where another rule already explains what it would claim —
a finding it names as its effect is caused by a finding of a rule that does not defer,
or a finding of such a rule (above info) quotes the same line or names the same pod
among its objects — the deferring finding
is kept as context: low, without its cause links, its summary naming the finding that
explains it. It never becomes a second root beside a rule with evidence of its own.
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


def _pods(finding: Finding) -> set[tuple[str | None, str]]:
    return {(o.namespace, o.name) for o in finding.objects if o.kind == "Pod"}


def _explainer(finding: Finding, by_id: dict[str, Finding], deferring: Collection[str],
               quoting: dict[tuple[str, int | None, str | None], list[Finding]],
               naming: dict[tuple[str | None, str], list[Finding]]) -> str | None:
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
    return None


def give_way(findings: list[Finding], deferring: Collection[str]) -> list[Finding]:
    """``findings`` (linked both ways) with each deferring finding that another explains
    made context: severity at most low, no ``causes``, the explainer named."""
    if not any(f.rule_id in deferring for f in findings):
        return findings
    by_id = {f.id: f for f in findings}
    quoting: dict[tuple[str, int | None, str | None], list[Finding]] = {}
    naming: dict[tuple[str | None, str], list[Finding]] = {}
    for other in findings:
        if other.rule_id not in deferring and other.severity is not Severity.INFO:
            for spot in _spots(other.evidence):
                quoting.setdefault(spot, []).append(other)
            for pod in _pods(other):
                naming.setdefault(pod, []).append(other)
    explained = {f.id: by for f in findings if f.rule_id in deferring
                 and (by := _explainer(f, by_id, deferring, quoting, naming)) is not None}
    if not explained:
        return findings
    out = []
    for finding in findings:
        by = explained.get(finding.id)
        if by is not None:
            severity = finding.severity if finding.severity.rank <= Severity.LOW.rank \
                else Severity.LOW
            finding = finding.model_copy(update={
                "severity": severity, "causes": [],
                "summary": f"{finding.summary} {by} already explains this with evidence of "
                           "its own: shown as context."})
        dropped = [parent for parent in finding.caused_by if parent in explained]
        if dropped:
            finding = finding.model_copy(update={
                "caused_by": [p for p in finding.caused_by if p not in explained]})
        out.append(finding)
    return out
