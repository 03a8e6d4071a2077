"""BND001: Collection gaps: steps the collector attempted that failed."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from analyzers import refs
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Input, Rule
from analyzers.rules.bnd._base import (
    _NOTHING_LOST,
    _OTHER_GAP,
    _REMEDIATION,
    _SEVERITY,
    SMI_FAILED,
    _affected_rules,
    _kind,
)
from bundle import specs
from bundle.manifest import ManifestItem


class CollectionGaps(Rule):
    """Collection gaps: steps the collector attempted that failed.

    Each failed manifest item (RBAC forbidden, node unreachable, command missing,
    timeout) is grouped by kind, with the rules it left without input.

    Why it matters:
    A rule without its input cannot see a problem, so "no finding" for it means
    "not checked". Knowing what is missing tells you what to ask the customer for.

    Remediation:
    Each kind of gap names its own first step.
    Otherwise re-run the collector with the missing permission or access, for example:
      kubectl auth can-i list events --all-namespaces
      gpu-triage collect --nodes <node> --node-mode ssh
    """

    id = "BND001"
    slug = "collection-gaps"
    severity = Severity.LOW
    confidence = Confidence.CONFIRMED
    inputs = (Input(specs.MANIFEST),)

    def check(self, ctx: Context) -> Iterable[Finding]:
        groups: dict[str, list[ManifestItem]] = defaultdict(list)
        meanings: dict[str, str] = {}
        for item in ctx.facts.manifest.failed_items:
            kind, meaning = _kind(item)
            groups[kind].append(item)
            meanings[kind] = meaning
        for kind, items in sorted(groups.items()):
            cluster_level = any(item.path.startswith(specs.CLUSTER_DIR) for item in items)
            severity = _SEVERITY.get(kind, Severity.MEDIUM if cluster_level else Severity.LOW)
            # A container that never started, or a previous run's log the kubelet dropped,
            # has no log to collect: nothing was lost.
            affected = [] if kind in _NOTHING_LOST else _affected_rules(ctx, items)
            if kind == SMI_FAILED:  # DRV009 reads the failure itself
                affected = [rule for rule in affected if rule != "DRV009"]
            nodes = sorted({item.node for item in items if item.node})
            paths = ", ".join(item.path for item in items[:4])
            more = f" and {len(items) - 4} more" if len(items) > 4 else ""
            left = (f" Rules left without these inputs: {', '.join(affected)}." if affected
                    else "")
            yield self.finding(
                kind,
                f"{len(items)} collection step(s) {meanings[kind]}: {paths}{more}.{left}",
                severity=severity,
                title=f"Collection gaps: {meanings[kind]}",
                nodes=nodes,
                evidence=[Evidence(path=specs.MANIFEST, excerpt=f"{item.path}: {item.error}")
                          for item in items[:10]],
                remediation=_REMEDIATION.get(kind, _OTHER_GAP),
                caused_by=[refs.link("DRV009", n) for n in nodes] if kind == SMI_FAILED else [],
            )
