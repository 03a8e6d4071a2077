"""OP016: the API server rejects the ClusterPolicy — its CRD is not the chart's.

This part reads what the cluster said about the policy (operator logs, events, Helm's
release records). Comparing the installed CRD's schema with the operator's needs the
CRD itself (``cluster/crds.json`` of bundle format 1.1) and is not done here.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import signatures
from analyzers.models import Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import event_evidence
from analyzers.rules.common import field as object_field
from analyzers.rules.op_common import LOGS, capped, namespace, quote
from bundle.evidence import Locator

SIGNATURE = "clusterpolicy-schema-rejected"
CRD = "clusterpolicies.nvidia.com"


def _rejections(ctx: Context) -> tuple[list[Locator | Evidence], list[str], list[str]]:
    """(evidence, quoted errors, Helm releases) of every place the policy was refused."""
    wanted = (signatures.get(SIGNATURE),)
    evidence: list[Locator | Evidence] = []
    said: list[str] = []
    releases: list[str] = []
    for pod in ctx.facts.operator_pods:
        for log in ctx.facts.pod_logs.of(pod):
            for hit in log.matches("OP016"):
                evidence.append(log.locate(hit))
                said.append(hit.text)
    for event in ctx.bundle.cluster.events:
        if any(h.signature.id == SIGNATURE for h in ctx.facts.event_signatures(event)):
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
                if release not in releases:
                    releases.append(release)
    return evidence, said, releases


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
    (HELM002). Comparing the installed CRD's schema with the operator's needs the CRD
    itself, which this rule does not read.

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
    inputs = (LOGS, cluster("events.json", optional=True), cluster("helm/*.json", optional=True),
              cluster("clusterpolicies.json", optional=True), cluster("pods.json", optional=True))
    tags = ("operator", "clusterpolicy", "crd", "helm")

    def check(self, ctx: Context) -> Iterable[Finding]:
        evidence, said, releases = _rejections(ctx)
        if not evidence:
            return
        ns = namespace(ctx)
        policy = ctx.facts.cluster_policy
        policies = [p.metadata.name for p in ctx.bundle.cluster.clusterpolicies]
        summary = (f"The API server rejects the ClusterPolicy against the installed {CRD} "
                   f"schema: {quote(said[-1], 220)}. Helm never upgrades CRDs, so the CRD is "
                   "still the one of an earlier chart; the upgrade cannot finish (or new "
                   "fields are dropped) until the chart's CRDs are applied.")
        if len(said) > 1:
            summary += f" Seen {len(said)} time(s)."
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
        causes = [f"OP006:{name}" for name in policies] + ["OP006:missing"]
        causes += [f"HELM002:{name}" for name in releases]
        return_objects = [ObjectRef(kind="CustomResourceDefinition", name=CRD)]
        yield self.finding(CRD, summary, objects=return_objects,
                           evidence=capped(evidence, 5), remediation=remediation,
                           causes=causes)

