"""``gpu-triage diff``: did the fix work? Two bundles of one cluster, compared.

Findings are matched by id (``<rule>:<subject>``, stable across bundles):

* **resolved**: in BEFORE, not in AFTER, and its rule ran in AFTER;
* **unverified**: in BEFORE, not in AFTER, but its rule was skipped (input not collected)
  or raised in AFTER -- absence of evidence, not a fix;
* **new**: in AFTER only;
* **changed**: in both, with another severity, other numbers in the summary (an Xid
  count that grew, allocatable 7 → 8), other nodes, or more or fewer evidence items;
* **unchanged**: in both, none of the above (wording that names a recreated pod does not
  count as a change).

Beside the findings, the facts that moved: versions (Kubernetes, operator, containerd,
driver, kernel, kubelet), the ClusterPolicy state and component switches, Helm release
revisions, each GPU node's Ready condition, loaded ``nvidia`` runtime, operand states and
GPU numbers (capacity, allocatable, assigned per ``nvidia.com/*`` resource), Xid counts.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable

from analyzers import __version__
from analyzers.facts import Facts
from analyzers.results.diff_models import (
    ChangedFinding,
    DiffReport,
    DiffSummary,
    FactChange,
    FindingChange,
    RuleChange,
    UnverifiedFinding,
)
from analyzers.results.models import Finding, Report, RuleStatus, ToolInfo

CLUSTER = "cluster"
POLICY_COMPONENTS = ("driver", "toolkit", "devicePlugin", "dcgmExporter", "gfd", "migManager",
                     "cdi", "validator", "nodeStatusExporter", "sandboxWorkloads")
# A token that is a number, maybe in brackets or before punctuation: "7", "(x5)", "0.5,";
# not a name (gpu-1), a PCI address, a time, a date, a path or a version (1.7.2).
_NUMBER = re.compile(r"^[(\[]?x?(\d+(?:\.\d+)?)%?[)\],.;:]*$")
# A rule that read its inputs only in part (partial) may have missed what it found before.
_RAN = (RuleStatus.PASSED, RuleStatus.FAILED)

FactKey = tuple[str, str]
Put = Callable[[str, str, object], None]


def compare(before: Report, after: Report, before_facts: Facts, after_facts: Facts, *,
            version: str = __version__) -> DiffReport:
    old, new = before.by_id(), after.by_id()
    after_rules = {r.rule_id: r for r in after.rules}
    resolved: list[Finding] = []
    unverified: list[UnverifiedFinding] = []
    for finding_id in sorted(set(old) - set(new)):
        finding = old[finding_id]
        rule = after_rules.get(finding.rule_id)
        if rule is not None and rule.status in _RAN:
            resolved.append(finding)
        elif rule is None:
            unverified.append(UnverifiedFinding(finding=finding,
                                                reason=f"{finding.rule_id} was not loaded"))
        else:
            why = f": {rule.reason}" if rule.reason else ""
            unverified.append(UnverifiedFinding(
                finding=finding, reason=f"{finding.rule_id} {rule.status.value} in AFTER{why}"))
    changed: list[ChangedFinding] = []
    unchanged: list[Finding] = []
    for finding_id in sorted(set(old) & set(new)):
        changes = finding_changes(old[finding_id], new[finding_id])
        if changes:
            changed.append(ChangedFinding(id=finding_id, rule_id=new[finding_id].rule_id,
                                          title=new[finding_id].title, before=old[finding_id],
                                          after=new[finding_id], changes=changes))
        else:
            unchanged.append(new[finding_id])
    added = [new[finding_id] for finding_id in sorted(set(new) - set(old))]
    facts = fact_changes(snapshot(before, before_facts), snapshot(after, after_facts))
    coverage = rule_changes(before, after)
    contexts = (before.bundle.cluster.context, after.bundle.cluster.context)
    return DiffReport(
        tool=ToolInfo(version=version),
        before=before.bundle,
        after=after.bundle,
        same_cluster=None if None in contexts else contexts[0] == contexts[1],
        summary=DiffSummary(resolved=len(resolved), new=len(added), changed=len(changed),
                            unchanged=len(unchanged), unverified=len(unverified),
                            facts=len(facts)),
        resolved=_ordered(resolved),
        new=_ordered(added),
        changed=sorted(changed, key=lambda c: (-c.after.severity.rank, c.rule_id, c.id)),
        unchanged=_ordered(unchanged),
        unverified=sorted(unverified, key=lambda u: (-u.finding.severity.rank,
                                                     u.finding.rule_id, u.finding.id)),
        facts=facts,
        coverage=coverage,
    )


def _ordered(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-f.severity.rank, f.rule_id, f.id))


def numbers(text: str) -> list[str]:
    """The numbers a summary states, in order (``7``, ``0.5``; not the 1 of ``gpu-1``, nor
    the parts of ``0000:3b:00.0``, ``09:32:05``, ``2026-11-20`` or ``1.7.2``)."""
    return [m[1] for token in text.split() if (m := _NUMBER.match(token))]


def number_changes(before: str, after: str) -> list[tuple[str, str]]:
    """Numbers that stand where another number stood: ``7 Xid events`` → ``8 Xid events``.

    The two summaries are aligned word by word, so a reworded summary (a product name
    spelled differently, a list that grew) does not count as a change of numbers."""
    old, new = before.split(), after.split()
    pairs = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace" or i2 - i1 != j2 - j1:
            continue
        for x, y in zip(old[i1:i2], new[j1:j2], strict=True):
            a, b = _NUMBER.match(x), _NUMBER.match(y)
            if a is not None and b is not None and a[1] != b[1]:
                pairs.append((a[1], b[1]))
    return pairs


def finding_changes(before: Finding, after: Finding) -> list[FindingChange]:
    changes = []
    if before.severity != after.severity:
        changes.append(FindingChange(field="severity", before=before.severity.value,
                                     after=after.severity.value))
    moved = number_changes(before.summary, after.summary)
    if moved:
        changes.append(FindingChange(field="numbers", before=", ".join(a for a, _ in moved),
                                     after=", ".join(b for _, b in moved)))
    if before.nodes != after.nodes:
        changes.append(FindingChange(field="nodes", before=", ".join(before.nodes) or "none",
                                     after=", ".join(after.nodes) or "none"))
    if len(before.evidence) != len(after.evidence):
        changes.append(FindingChange(field="evidence", before=str(len(before.evidence)),
                                     after=str(len(after.evidence))))
    return changes


def rule_changes(before: Report, after: Report) -> list[RuleChange]:
    old = {r.rule_id: r for r in before.rules}
    new = {r.rule_id: r for r in after.rules}
    changes = []
    for rule_id in sorted(set(old) | set(new)):
        was, now = old.get(rule_id), new.get(rule_id)
        status_before = was.status if was is not None else None
        status_after = now.status if now is not None else None
        ran_before = status_before in _RAN
        ran_after = status_after in _RAN
        if ran_before == ran_after and (ran_before or status_before == status_after):
            continue
        reason = (now.reason if now is not None and now.reason else
                  was.reason if was is not None else None)
        changes.append(RuleChange(rule_id=rule_id, before=status_before, after=status_after,
                                  reason=reason))
    return changes


def fact_changes(before: dict[FactKey, str], after: dict[FactKey, str]) -> list[FactChange]:
    keys = sorted(set(before) | set(after), key=lambda k: (k[0] != CLUSTER, k))
    return [FactChange(subject=subject, fact=fact, before=before.get((subject, fact)),
                       after=after.get((subject, fact)))
            for subject, fact in keys if before.get((subject, fact)) != after.get((subject, fact))]


def snapshot(report: Report, facts: Facts) -> dict[FactKey, str]:
    """The comparable facts of one bundle: (subject, fact) → value as text."""
    found: dict[FactKey, str] = {}

    def put(subject: str, fact: str, value: object) -> None:
        if value is not None and value != "":
            found[(subject, fact)] = str(value).lower() if isinstance(value, bool) else str(value)

    bundle = facts.bundle
    put(CLUSTER, "kubernetes", facts.kubernetes_version)
    put(CLUSTER, "nodes", report.bundle.nodes)
    put(CLUSTER, "gpu nodes", report.bundle.gpu_nodes)
    operator = facts.operator_version.image
    put(CLUSTER, "gpu-operator image", operator.image if operator is not None else None)
    policy = facts.cluster_policy
    if policy is not None:
        put(CLUSTER, "clusterpolicy state", policy.status.state)
        for component in POLICY_COMPONENTS:
            enabled = policy.component_enabled(component)
            put(CLUSTER, f"clusterpolicy {component}.enabled",
                "default" if enabled is None else enabled)
    for release, revisions in sorted(bundle.cluster.helm.items()):
        if revisions:
            latest = revisions[-1]
            put(CLUSTER, f"helm {release} revision", latest.revision)
            put(CLUSTER, f"helm {release} status", latest.status)
            put(CLUSTER, f"helm {release} chart", latest.chart)
    names = sorted(set(facts.gpu_nodes) | set(bundle.node_names))
    for name in names:
        _node(facts, name, put)
    return found


def _node(facts: Facts, name: str, put: Put) -> None:
    node = facts.nodes.get(name)
    if node is not None:
        ready = next((c.status for c in node.status.conditions if c.type == "Ready"), None)
        put(name, "ready", ready)
        put(name, "unschedulable", node.spec.unschedulable)
        info = node.status.node_info
        put(name, "kernel", info.kernel_version)
        put(name, "kubelet", info.kubelet_version)
        put(name, "container runtime", info.container_runtime_version)
    artifacts = facts.bundle.node(name)
    put(name, "containerd", artifacts.containerd_version)
    smi = artifacts.nvidia_smi
    if smi is not None:
        put(name, "driver", smi.driver_version)
    if artifacts.config_dump is not None:
        put(name, "nvidia runtime loaded", facts.runtime(name).has_nvidia)
    counts = facts.accounting.get(name)
    for resource, count in sorted(counts.resources.items()) if counts is not None else []:
        put(name, f"{resource} capacity", count.capacity)
        put(name, f"{resource} allocatable", count.allocatable)
        put(name, f"{resource} assigned", count.assigned)
    for component, operand in sorted(facts.operands.get(name, {}).items()):
        put(name, f"operand {component}", operand.state)
    kernel = facts.kernel_events.get(name)
    if kernel is not None and kernel.sources:
        put(name, "xid events", len(kernel.xids))
