"""The analysis: run each rule in isolation, then link and order what they found (reached
as ``analyzers.engine.analyze``; see the package's docstring)."""

from __future__ import annotations

import functools
import logging
import time
import weakref
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from analyzers import __version__, refs
from analyzers.engine import deference, grouping, overview, timeline
from analyzers.engine.coverage import Coverage, shortened_lists
from analyzers.engine.plugins import LoadedRule
from analyzers.engine.selection import Selection
from analyzers.facts import Facts
from analyzers.results.models import (
    BundleInfo,
    ClusterRef,
    CollectionGap,
    Finding,
    LayoutNote,
    ParseProblem,
    Report,
    RuleDoc,
    RuleResult,
    RuleStatus,
    Severity,
    Summary,
    ToolInfo,
)
from analyzers.rule import CannotJudge, Context, Rule
from analyzers.rules import builtin
from analyzers.speed import Preload
from bundle import Bundle

log = logging.getLogger(__name__)
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Outcome:
    result: RuleResult
    findings: list[Finding]
    seconds: float


def run_rule(rule: type[Rule], origin: str, ctx: Context) -> Outcome:
    """Run one rule: skipped when a required input is absent (or, for a rule that requires
    none, when every input is), error when it raises."""
    start = time.perf_counter()

    def outcome(status: RuleStatus, reason: str | None, found: list[Finding]) -> Outcome:
        result = RuleResult(rule_id=rule.id, status=status, reason=reason,
                            title=rule.title(), origin=origin)
        return Outcome(result, found, time.perf_counter() - start)

    for need in rule.needs:
        # a claim whose precondition is false is not made, whatever the bundle holds
        unmet = ctx.facts.unmet(need)
        if unmet is not None:
            return outcome(RuleStatus.SKIPPED, unmet, [])
    absent = rule.skip_reason(ctx.bundle)
    if absent is not None:
        return outcome(RuleStatus.SKIPPED, absent, [])
    try:
        instance = rule()
        found = list(instance.check(ctx))
    except CannotJudge as exc:
        return outcome(RuleStatus.SKIPPED, str(exc), [])
    except Exception as exc:  # noqa: BLE001 - isolation is the point
        log.debug("rule %s raised", rule.id, exc_info=True)
        return outcome(RuleStatus.ERROR, f"{type(exc).__name__}: {exc} (see --verbose)", [])
    wrong = [f.id for f in found if f.rule_id != rule.id]
    if wrong:
        return outcome(RuleStatus.ERROR, f"produced findings of another rule: {wrong[:3]}", [])
    dangling = _dangling_links(found, {r.id: r for r in ctx.rules})
    if dangling:
        return outcome(RuleStatus.ERROR, f"linked findings that cannot exist: {dangling}", [])
    unjudged = instance.unjudged_reasons()
    if unjudged:
        reason = "judged in part: " + "; ".join(unjudged)
        return outcome(RuleStatus.FAILED if found else RuleStatus.PARTIAL, reason, found)
    return outcome(RuleStatus.FAILED if found else RuleStatus.PASSED, None, found)


def _dangling_links(found: list[Finding], loaded: dict[str, type[Rule]]) -> str | None:
    """Why some of the rule's links can never name a finding (a typo in a rule id, a
    subject of the wrong shape for the target rule's class, a loaded rule or else the
    built-in one); None when every link can. A link to a finding that did not fire this
    time is fine: :func:`link` drops it."""
    def target(rule_id: str) -> refs.Subject | None:
        rule = loaded.get(rule_id) or builtin(rule_id)
        return rule.subject if rule is not None else None

    reasons = sorted({reason for finding in found for link in (*finding.caused_by,
                                                                *finding.causes)
                      if (reason := refs.dangling(link, target)) is not None})
    if not reasons:
        return None
    more = f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else ""
    return "; ".join(reasons[:3]) + more


def link(findings: list[Finding]) -> list[Finding]:
    """Make ``caused_by``/``causes`` symmetric and drop links to findings that are absent
    (their rule did not fire, or did not run; a link that can never name a finding made
    its rule an error in :func:`run_rule`)."""
    ids = {f.id for f in findings}
    causes: dict[str, set[str]] = defaultdict(set)
    caused_by: dict[str, set[str]] = defaultdict(set)
    for finding in findings:
        for parent in finding.caused_by:
            if parent in ids and parent != finding.id:
                caused_by[finding.id].add(parent)
                causes[parent].add(finding.id)
        for child in finding.causes:
            if child in ids and child != finding.id:
                causes[finding.id].add(child)
                caused_by[child].add(finding.id)
    return [f.model_copy(update={"caused_by": sorted(caused_by[f.id]),
                                 "causes": sorted(causes[f.id])}) for f in findings]


# The facts of each open bundle's latest analysis (a bundle is closed long before a
# second analysis of the same path could want them: kept only while it is referenced).
_FACTS: weakref.WeakKeyDictionary[Bundle, Facts] = weakref.WeakKeyDictionary()


def facts_of(bundle: Bundle) -> Facts:
    """The facts :func:`analyze` built for ``bundle`` (filled by its rules), or new ones
    when it was not analysed."""
    found = _FACTS.get(bundle)
    return found if found is not None else Facts(bundle)


def _order(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-f.severity.rank, f.rule_id, f.id))


def _prepared(bundle: Bundle, facts: Facts, rules: Sequence[LoadedRule],
              selection: Selection | None) -> list[Callable[[], object]]:
    """The cluster-only facts (``Rule.prepares``) of the rules that will run, each once,
    as calls for the time worker processes parse node files. A rule that may yet be
    skipped (one with ``needs``, or an input absent) prepares nothing: what it would
    read is read only if it runs."""
    made: dict[Callable[[Facts], object], None] = {}
    for loaded in rules:
        rule = loaded.rule
        if not rule.prepares or rule.needs or (
                selection is not None and selection.reason(rule.id) is not None):
            continue
        if rule.skip_reason(bundle) is None:
            made.update(dict.fromkeys(rule.prepares))
    return [functools.partial(prepare, facts) for prepare in made]


def analyze(bundle: Bundle, rules: Sequence[LoadedRule], *, version: str = __version__,
            progress: Progress | None = None, selection: Selection | None = None,
            preload: Preload | None = None) -> Report:
    """Run the rules over an opened bundle. ``preload``: worker processes that parse the
    node files before the first rule (:mod:`analyzers.speed`; give its ``watcher`` to
    ``open_bundle`` too, and workers begin while the archive is read); without one,
    everything is read when a rule first asks. The report is the same either way. The
    facts the analysis built stay available through :func:`facts_of` (``diff`` compares
    them)."""
    rules = sorted(rules, key=lambda loaded: (loaded.rule.phase, loaded.rule.id))
    facts = _FACTS[bundle] = Facts(bundle)
    cluster = bundle.cluster
    meanwhile = (lambda: cluster.nodes, lambda: cluster.pods, lambda: cluster.events,
                 *facts.cluster_indexes(), lambda: timeline.fold_cluster(facts),
                 *_prepared(bundle, facts, rules, selection))
    if progress is not None and bundle.node_names:
        progress(f"the files of {len(bundle.node_names)} node(s)")
    if preload is not None:
        preload.run(bundle, meanwhile)
    ctx = Context(bundle, facts, [loaded.rule for loaded in rules])
    results: list[RuleResult] = []
    findings: list[Finding] = []
    seen: set[str] = set()
    for index, loaded in enumerate(rules, start=1):
        if progress is not None:
            progress(f"[{index}/{len(rules)}] {loaded.rule.id}")
        deselected = selection.reason(loaded.rule.id) if selection is not None else None
        if deselected is not None:  # --only / --skip: listed as skipped, never run
            results.append(RuleResult(rule_id=loaded.rule.id, status=RuleStatus.SKIPPED,
                                      reason=deselected, title=loaded.rule.title(),
                                      origin=loaded.origin))
            continue
        outcome = run_rule(loaded.rule, loaded.origin, ctx)
        log.debug("%s %s in %.3fs", loaded.rule.id, outcome.result.status, outcome.seconds)
        results.append(outcome.result)
        for finding in outcome.findings:
            if finding.id in seen:
                log.warning("duplicate finding id %s dropped", finding.id)
                continue
            seen.add(finding.id)
            findings.append(finding)
    deferring = {loaded.rule.id for loaded in rules if loaded.rule.defers}
    linked = _order(deference.give_way(link(findings), deferring))
    # The overview reads node files no rule may have read (a journal, say): built first,
    # so that what reading them recorded is among the report's problems and is judged.
    built = overview.build(facts, linked)
    coverage = Coverage(bundle)
    judged = {loaded.rule.id: loaded.rule for loaded in rules}
    results = [coverage.judge(judged[r.rule_id], r) for r in results]
    counts = {severity.value: 0 for severity in Severity}
    for finding in linked:
        counts[finding.severity.value] += 1
    manifest = bundle.manifest
    report = bundle.layout_report  # what a foreign layout could not provide
    return Report(
        tool=ToolInfo(version=version),
        bundle=BundleInfo(
            path=bundle.display,
            format_version=manifest.format_version,
            created_at=manifest.created_at,
            cluster=ClusterRef(context=manifest.cluster.context,
                               server_version=manifest.cluster.server_version),
            nodes=len(bundle.cluster.nodes) or len(bundle.node_names),
            gpu_nodes=len(facts.gpu_nodes),
            layout=bundle.layout,
            layout_missing=list(report.missing) if report is not None else [],
            layout_notes=[LayoutNote(path=path, note=note)
                          for path, note in (report.notes if report is not None else ())],
            layout_partial=[LayoutNote(path=path, note=note)
                            for path, note in (report.partial if report is not None else ())],
            shortened=[LayoutNote(path=path, note=note)
                       for path, note in shortened_lists(bundle)],
        ),
        summary=Summary(**counts),
        findings=linked,
        rules=sorted(results, key=lambda r: r.rule_id),
        collection_gaps=[CollectionGap(path=item.path, node=item.node, error=item.error or "")
                         for item in manifest.failed_items],
        problems=[ParseProblem(path=p.path, kind=p.kind, message=p.message, where=p.where)
                  for p in bundle.problems],
        rule_docs=[_doc(loaded.rule) for loaded in rules],
        overview=built,
        groups=grouping.group(linked),
    )


def _doc(rule: type[Rule]) -> RuleDoc:
    docs = rule.docs()
    return RuleDoc(rule_id=rule.id, title=docs.title or rule.slug, severity=rule.severity,
                   why=docs.why, remediation=docs.remediation)
