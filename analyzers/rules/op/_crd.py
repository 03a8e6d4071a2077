"""OP016: the ClusterPolicy CRD is older than the operator — its CRD is not the chart's.

Two halves feed one finding: what the cluster said about the policy (operator logs,
events, Helm's release records), and the installed CRDs themselves (``cluster/crds.json``
of bundle format 1.1) compared with the fields and CRDs the running operator's release
ships (``analyzers/data/clusterpolicy_crd.toml``, read by ``analyzers.knowledge.policy_crd``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from analyzers.facts.evidence import event_evidence
from analyzers.facts.evidence import field as object_field
from analyzers.knowledge import policy_crd, signatures
from analyzers.results.models import Evidence
from analyzers.rule import Context, Rule
from analyzers.rules.common import running_operator
from bundle import specs
from bundle.crds import POLICY_CRD as CRD
from bundle.crds import Crd
from bundle.evidence import Locator

SIGNATURE = "clusterpolicy-schema-rejected"


_SHOWN = 5


@dataclass(frozen=True, slots=True)
class SchemaGap:
    """What the installed CRDs lack for the running operator."""

    running: str
    evidence: tuple[Evidence, ...]
    fields: tuple[tuple[str, str], ...]   # (spec field set and pruned, release that added it)
    crds: tuple[tuple[str, str], ...]     # (missing CRD, release that needs it)


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _paths(tree: object) -> list[tuple[str, tuple[str, ...]]]:
    """``section`` and ``section.name`` of every key set in a spec-shaped mapping, with
    their keys."""
    found: list[tuple[str, tuple[str, ...]]] = []
    if not isinstance(tree, dict):
        return found
    for section, value in tree.items():
        found.append((str(section), (str(section),)))
        if isinstance(value, dict):
            found += [(f"{section}.{name}", (str(section), str(name))) for name in value]
    return found


def submitted(ctx: Context) -> dict[str, Evidence] | None:
    """The spec fields something asked for, each with where it was first read: the
    ClusterPolicy as stored and as last applied (``kubectl apply``'s annotation), and the
    user's Helm values of the latest revision of the operator's release (the chart renders
    them into the policy). None when none of these is in the bundle."""
    fields: dict[str, Evidence] = {}
    seen = False
    for policy in ctx.facts.clusterpolicies:
        seen = True
        name = policy.metadata.name
        for dotted, keys in _paths(policy.spec):
            fields.setdefault(dotted, object_field(policy, f"ClusterPolicy {name} sets "
                                                           f"spec.{dotted}", "spec", *keys))
        applied = policy.metadata.annotations.get(LAST_APPLIED)
        try:
            document = json.loads(applied) if applied else None
        except ValueError:
            document = None
        if isinstance(document, dict):
            for dotted, _ in _paths(document.get("spec")):
                fields.setdefault(dotted, object_field(
                    policy, f"ClusterPolicy {name} was applied with spec.{dotted}",
                    "metadata", "annotations", LAST_APPLIED))
    for release, revisions in sorted(ctx.facts.helm_releases.items()):
        latest = revisions[-1] if revisions else None
        if latest is None or not latest.chart.startswith("gpu-operator"):
            continue
        seen = True
        for dotted, keys in _paths(latest.values):
            fields.setdefault(dotted, object_field(
                latest, f"Helm release {release} revision {latest.revision} sets {dotted}",
                "values", *keys))
    return fields if seen else None


def schema_gap(ctx: Context, installed: list[Crd], rule: Rule | None = None) -> SchemaGap | None:
    """Compare the CRDs of ``cluster/crds.json`` with what the running operator's release
    ships. A field counts only where something set it (see :func:`submitted`) and the
    stored schema prunes it (``x-kubernetes-preserve-unknown-fields`` on ``spec`` or on its
    section keeps it); without any submitted source the fields are not judged (``rule``
    is told why)."""
    found = running_operator(ctx)
    source = ctx.facts.operator_version.source  # the version running_operator quotes
    running = source.version if source is not None else None
    if found is None or running is None:
        return None
    crds = {crd.name: crd for crd in installed}
    policy = crds.get(CRD)
    stored = policy.stored if policy is not None else None
    need_fields, need_crds = policy_crd.needs()
    fields: list[tuple[str, str]] = []
    evidence: list[Evidence] = []
    if stored is not None and not stored.open_schema:
        pruned = [need for need in need_fields
                  if need.since <= running and stored.prunes(need.name)
                  and ("." not in need.name or need.name.partition(".")[0] in stored.fields)]
        asked = submitted(ctx)
        if asked is None:
            if pruned and rule is not None:
                rule.unjudged(f"the stored {CRD} schema lacks {len(pruned)} field(s) of the "
                              f"running operator's release, but neither a ClusterPolicy nor "
                              "the operator's Helm values are in the bundle to say whether "
                              "anything sets them")
        else:
            fields = [(need.name, need.release) for need in pruned if need.name in asked]
        if fields:
            listed = ", ".join(f"spec.{n}" for n, _ in fields[:_SHOWN])
            evidence.append(Evidence(
                path=specs.CRDS, pointer=stored.pointer + "/properties",
                excerpt=f"{CRD} {stored.name} schema has no {listed}"
                        + (f" (and {len(fields) - _SHOWN} more)" if len(fields) > _SHOWN
                           else "")))
            if asked is not None:
                evidence.append(asked[fields[0][0]])
    crds_missing = [(need.name, need.release) for need in need_crds
                    if need.since <= running and need.name not in crds]
    for name, first in crds_missing:
        evidence.append(Evidence(path=specs.CRDS, pointer="/items",
                                 excerpt=f"no {name} CRD (the operator needs it since {first})"))
    if not evidence:
        return None
    return SchemaGap(running=found.text, evidence=(found.evidence, *evidence),
                     fields=tuple(fields), crds=tuple(crds_missing))


def _rejections(ctx: Context) -> tuple[list[Locator | Evidence], list[str], list[str]]:
    """(evidence, quoted errors, Helm releases) of every place the policy was refused."""
    wanted = (signatures.get(SIGNATURE),)
    evidence: list[Locator | Evidence] = []
    said: list[str] = []
    releases: dict[str, None] = {}  # in order, each once (a set per hit would be quadratic)
    for pod in ctx.facts.operator_pods:
        for log in ctx.facts.pod_logs.of(pod):
            for hit in log.matches("OP016"):
                evidence.append(log.locate(hit))
                if hit.signature.id == SIGNATURE:
                    said.append(hit.text)
    for event in ctx.facts.events_with(SIGNATURE):
        evidence.append(event_evidence(event))
        said.append(event.message or "")
    for release, revisions in sorted(ctx.facts.helm_releases.items()):
        for revision in revisions:
            hits = signatures.match(revision.description, "event", signatures=wanted)
            if hits:
                evidence.append(object_field(
                    revision, f"{release} revision {revision.revision} ({revision.status}): "
                              f"{hits[0].text}", "description"))
                said.append(hits[0].text)
                releases[release] = None
    return evidence, said, list(releases)


def _gap_text(gap: SchemaGap) -> str:
    parts = []
    if gap.fields:
        listed = ", ".join(f"spec.{name} ({since})" for name, since in gap.fields[:_SHOWN])
        more = f" and {len(gap.fields) - _SHOWN} more" if len(gap.fields) > _SHOWN else ""
        parts.append(f"The ClusterPolicy or the Helm values set {listed}{more}, which the "
                     f"running operator's release ({gap.running}) has but the stored {CRD} "
                     "schema lacks: the API server prunes those fields from the "
                     "ClusterPolicy, so these settings have no effect")
    if gap.crds:
        listed = ", ".join(f"{name} (needed since {since})" for name, since in gap.crds)
        parts.append(f"The {listed} CRD is not installed for operator {gap.running}: its "
                     "controller cannot start")
    return ". ".join(parts) + "."
