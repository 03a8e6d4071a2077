"""OP016: The ClusterPolicy is rejected by its CRD: the CRD is older (or newer) than the chart."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import LOGS
from analyzers.rules.op._common import capped, namespace, quote
from analyzers.rules.op._crd import _gap_text, _rejections, schema_gap
from bundle import specs
from bundle.crds import POLICY_CRD as CRD


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
    inputs = (LOGS, cluster(specs.EVENTS, optional=True),
              cluster(specs.HELM_RELEASES, optional=True),
              cluster(specs.CLUSTERPOLICIES, optional=True), cluster(specs.PODS, optional=True),
              cluster(specs.CRDS, optional=True), cluster(specs.DEPLOYMENTS, optional=True))
    needs = (Need.OPERATOR,)
    tags = ("operator", "clusterpolicy", "crd", "helm")

    def check(self, ctx: Context) -> Iterable[Finding]:
        evidence, said, releases = _rejections(ctx)
        gap = None
        if ctx.facts.has(specs.CRDS):
            installed = ctx.facts.crds
            if installed is None:
                self.unjudged(f"{specs.CRDS} holds no readable list of CRDs: the installed CRDs "
                              "were not compared with the running operator")
            else:
                gap = schema_gap(ctx, installed, self)
        if not evidence and gap is None:
            return
        ns = namespace(ctx)
        policy = ctx.facts.cluster_policy
        policies = [p.metadata.name for p in ctx.facts.clusterpolicies]
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
        causes = [refs.link("OP006", name) for name in policies]
        causes.append(refs.link("OP006", refs.MISSING))
        causes += [refs.link("HELM002", name) for name in releases]
        return_objects = [ObjectRef(kind="CustomResourceDefinition", name=CRD)]
        yield self.finding(CRD, summary, objects=return_objects,
                           evidence=capped(evidence, 5), remediation=remediation,
                           causes=causes)
