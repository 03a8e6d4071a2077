"""OP016: the ClusterPolicy CRD is older than the operator — its CRD is not the chart's.

Two halves feed one finding: what the cluster said about the policy (operator logs,
events, Helm's release records), and the installed CRDs themselves (``cluster/crds.json``
of bundle format 1.1) compared with the fields and CRDs the running operator's release
ships (``analyzers/data/clusterpolicy_crd.toml``).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from analyzers import commands as sh
from analyzers import packaged, refs, signatures
from analyzers.facts.preconditions import Need
from analyzers.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import LOGS, event_evidence, running_operator
from analyzers.rules.common import field as object_field
from analyzers.rules.op_common import capped, namespace, quote
from bundle.crds import CRDS, Crd
from bundle.crds import POLICY_CRD as CRD
from bundle.evidence import Locator

SIGNATURE = "clusterpolicy-schema-rejected"
_VERSION = re.compile(r"(?<![0-9.])v?(\d{1,2})\.(\d{1,2})\.(\d{1,3})(?![0-9])")
_SHOWN = 5


def _release(text: str) -> tuple[int, int, int] | None:
    """A release of the data file (``v1.7.0`` … ``v25.10.0``: one-digit majors too)."""
    m = _VERSION.search(text.rpartition(":")[2] or text)
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


@cache
def _needs() -> tuple[tuple[tuple[str, tuple[int, int, int]], ...],
                      tuple[tuple[str, tuple[int, int, int]], ...]]:
    """(ClusterPolicy spec fields, CRDs), each with the first release that ships it."""
    data = tomllib.loads(packaged.read_toml("clusterpolicy_crd"))

    def table(key: str) -> tuple[tuple[str, tuple[int, int, int]], ...]:
        rows = []
        for name, entry in data.get(key, {}).items():
            since = _release(entry["since"])
            if since is not None:
                rows.append((name, since))
        return tuple(sorted(rows, key=lambda row: (row[1], row[0])))

    return table("field"), table("crd")


@dataclass(frozen=True, slots=True)
class SchemaGap:
    """What the installed CRDs lack for the running operator."""

    running: str
    evidence: tuple[Evidence, ...]
    fields: tuple[tuple[str, str], ...]   # (spec field set and pruned, release that added it)
    crds: tuple[tuple[str, str], ...]     # (missing CRD, release that needs it)


def _text(version: tuple[int, int, int]) -> str:
    return "v" + ".".join(map(str, version))


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
    for policy in ctx.bundle.cluster.clusterpolicies:
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
    for release, revisions in sorted(ctx.bundle.cluster.helm.items()):
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
    need_fields, need_crds = _needs()
    fields: list[tuple[str, str]] = []
    evidence: list[Evidence] = []
    if stored is not None and not stored.open_schema:
        pruned = [(name, since) for name, since in need_fields
                  if since <= running and stored.prunes(name)
                  and ("." not in name or name.partition(".")[0] in stored.fields)]
        asked = submitted(ctx)
        if asked is None:
            if pruned and rule is not None:
                rule.unjudged(f"the stored {CRD} schema lacks {len(pruned)} field(s) of the "
                              f"running operator's release, but neither a ClusterPolicy nor "
                              "the operator's Helm values are in the bundle to say whether "
                              "anything sets them")
        else:
            fields = [(name, _text(since)) for name, since in pruned if name in asked]
        if fields:
            listed = ", ".join(f"spec.{n}" for n, _ in fields[:_SHOWN])
            evidence.append(Evidence(
                path=CRDS, pointer=stored.pointer + "/properties",
                excerpt=f"{CRD} {stored.name} schema has no {listed}"
                        + (f" (and {len(fields) - _SHOWN} more)" if len(fields) > _SHOWN
                           else "")))
            if asked is not None:
                evidence.append(asked[fields[0][0]])
    crds_missing = [(name, _text(since)) for name, since in need_crds
                    if since <= running and name not in crds]
    for name, first in crds_missing:
        evidence.append(Evidence(path=CRDS, pointer="/items",
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
    for release, revisions in sorted(ctx.bundle.cluster.helm.items()):
        for revision in revisions:
            hits = signatures.match(revision.description, "event", signatures=wanted)
            if hits:
                evidence.append(object_field(
                    revision, f"{release} revision {revision.revision} ({revision.status}): "
                              f"{hits[0].text}", "description"))
                said.append(hits[0].text)
                releases[release] = None
    return evidence, said, list(releases)


class ClusterPolicySchemaRejected(Rule):
    """The ClusterPolicy is rejected by its CRD: the CRD is older (or newer) than the chart.

    Helm installs a chart's CRDs on first install only and never upgrades them, so
    after an operator upgrade the cluster can keep an old ``clusterpolicies.nvidia.com``
    schema. The API server then refuses the ClusterPolicy the chart or the operator
    writes: ``ClusterPolicy.nvidia.com "cluster-policy" is invalid: spec.…: Required
    value`` (a field the old schema requires), ``Invalid value``, or ``unknown field
    "…" in com.nvidia.v1.ClusterPolicy.spec.…`` (a field it does not know). The rule
    reads these wordings in the operator's log, in events, and in the description of
    Helm release revisions (a failed ``helm upgrade``), and links the symptoms it
    explains: the ClusterPolicy not ready or missing (OP006) and the failed release
    (HELM002). With the CRDs in the bundle (``cluster/crds.json``) it also compares the
    installed schema with the running operator's release (operator Deployment image,
    else Helm app version, else operator pod image): a ``spec`` section or field the
    release's chart CRD has (``analyzers/data/clusterpolicy_crd.toml``, read from every
    release's ``crds/``) that the stored schema lacks is pruned by the API server without
    a word, and a CRD the release needs (``nvidiadrivers.nvidia.com`` from v23.9.0) that
    is absent stops the operator's controllers (``nvidia.com/v1alpha1: the server could
    not find the requested resource``).

    Why it matters:
    The upgrade stops half-way (a failed release, an old policy the new operator
    misreads) or, where the old schema merely prunes unknown fields, the operator runs
    with settings nobody wrote — new options silently have no effect.

    Remediation:
    Compare the CRD with the chart version you run
    (``kubectl get crd clusterpolicies.nvidia.com -o yaml``, ``helm -n gpu-operator
    history gpu-operator``), apply that chart version's CRDs (``kubectl apply -f`` its
    ``crds/`` directory), then retry the upgrade with ``--reuse-values``.
    """

    id = "OP016"
    slug = "clusterpolicy-schema-rejected"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (LOGS, cluster("events.json", optional=True), cluster("helm/*.json", optional=True),
              cluster("clusterpolicies.json", optional=True), cluster("pods.json", optional=True),
              cluster("crds.json", optional=True), cluster("deployments.json", optional=True))
    needs = (Need.OPERATOR,)
    tags = ("operator", "clusterpolicy", "crd", "helm")

    def check(self, ctx: Context) -> Iterable[Finding]:
        evidence, said, releases = _rejections(ctx)
        gap = None
        if ctx.bundle.has(CRDS):
            installed = ctx.bundle.cluster.crds
            if installed is None:
                self.unjudged(f"{CRDS} holds no readable list of CRDs: the installed CRDs "
                              "were not compared with the running operator")
            else:
                gap = schema_gap(ctx, installed, self)
        if not evidence and gap is None:
            return
        ns = namespace(ctx)
        policy = ctx.facts.cluster_policy
        policies = [p.metadata.name for p in ctx.bundle.cluster.clusterpolicies]
        if said:
            summary = (f"The API server rejects the ClusterPolicy against the installed {CRD} "
                       f"schema: {quote(said[-1], 220)}. Helm never upgrades CRDs, so the CRD "
                       "is still the one of an earlier chart; the upgrade cannot finish (or "
                       "new fields are dropped) until the chart's CRDs are applied.")
            if len(said) > 1:
                summary += f" Seen {len(said)} time(s)."
        else:
            summary = ("The installed GPU Operator CRDs are older than the running operator "
                       "(Helm never upgrades CRDs).")
            if evidence:
                summary += f" The operator logs: {quote(evidence[-1].excerpt, 200)}."
        if gap is not None:
            summary += " " + _gap_text(gap)
            evidence = [*gap.evidence, *evidence]
        if policy is None:
            summary += " No ClusterPolicy is in effect."
        release = releases[-1] if releases else "gpu-operator"
        remediation = sh.lines(
            sh.cmd("kubectl", "get", "crd", CRD, "-o",
                   sh.raw("jsonpath='{.metadata.annotations}{\"\\n\"}"
                          "{.spec.versions[*].name}{\"\\n\"}'")),
            sh.cmd("helm", "-n", sh.namespace(ns), "history", sh.release(release)),
            sh.cmd("kubectl", "-n", sh.namespace(ns), "logs", "deploy/gpu-operator",
                   "--tail=200", tail=" | grep -i 'is invalid'"),
            "# apply the CRDs of the chart version you run (kubectl apply -f <chart>/crds/), "
            "then retry: helm upgrade --reuse-values",
        )
        causes = [refs.OP006(name) for name in policies] + [refs.OP006.missing()]
        causes += [refs.HELM002(name) for name in releases]
        return_objects = [ObjectRef(kind="CustomResourceDefinition", name=CRD)]
        yield self.finding(CRD, summary, objects=return_objects,
                           evidence=capped(evidence, 5), remediation=remediation,
                           causes=causes)


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
