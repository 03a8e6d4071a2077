"""HELM001: A Helm upgrade dropped values the previous revision had set."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.preconditions import Need
from analyzers.refs import Link
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import flatten
from analyzers.rules.helm._base import (
    CHART_DEFAULTS,
    HARMFUL,
    _pairs,
    _pointer_parts,
    _shown,
    latest_of,
)
from bundle import specs
from bundle.evidence import Locator, at_pointer
from bundle.kube import HelmRevision


class ValuesDroppedByUpgrade(Rule):
    """A Helm upgrade dropped values the previous revision had set.

    Compares the user-supplied values of consecutive revisions of the operator's
    release: a value set in revision N and absent in N+1 (an upgrade without
    ``--reuse-values``), so the chart default silently applies again
    (``driver.enabled: false`` → unset, i.e. ``true``). Values changed explicitly
    in the new revision were set on purpose and are not flagged.

    Why it matters:
    ``helm upgrade`` without ``--reuse-values`` starts again from the chart
    defaults. On a host-driver cluster that silently turns ``driver.enabled`` back
    on, and the operator tries to install a driver over the host one.

    Remediation:
    Compare the revisions and carry every value forward:
      helm -n gpu-operator get values gpu-operator --revision N
      helm -n gpu-operator upgrade gpu-operator nvidia/gpu-operator --reuse-values --set ...
    or go back with ``helm -n gpu-operator rollback gpu-operator N``.
    """

    id = "HELM001"
    slug = "values-dropped-by-upgrade"
    subject = refs.REVISION
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.HELM_RELEASES), cluster(specs.PODS, optional=True))
    needs = (Need.OPERATOR,)
    tags = ("helm", "configuration")

    def check(self, ctx: Context) -> Iterable[Finding]:
        namespace = ctx.facts.operator_namespace or "gpu-operator"
        for release, revisions in sorted(ctx.facts.helm_releases.items()):
            for before, after in _pairs(revisions):
                finding = self._diff(ctx, release, namespace, before, after)
                if finding is not None:
                    yield finding

    def _diff(self, ctx: Context, release: str, namespace: str, before: HelmRevision,
              after: HelmRevision) -> Finding | None:
        old, new = flatten(before.values), flatten(after.values)
        # A value present in the new revision was set on purpose (even to the chart
        # default); only values that vanished fell back to defaults unnoticed.
        dropped = sorted(k for k in old if k not in new)
        if not dropped:
            return None
        changes = [f"{k}: {_shown(old[k])} → (unset, chart default "
                   f"{_shown(CHART_DEFAULTS[k]) if k in CHART_DEFAULTS else 'applies'})"
                   for k in dropped]
        harmful = [k for k in dropped if k in HARMFUL]
        severity = Severity.HIGH if harmful else Severity.MEDIUM
        danger = ""
        explains: list[Link] = []
        if "driver.enabled" in harmful:
            danger = (" With driver.enabled back to true the operator deploys its driver "
                      "container over the host driver.")
            failing = self._failing_driver_nodes(ctx) if after is latest_of(ctx, release) \
                else []
            if failing:
                danger += f" Its driver pods now fail on {', '.join(failing)}."
                explains = [refs.link("OP001", n) for n in failing]
        elif harmful:
            danger = f" {', '.join(harmful)} changes what the operator deploys."
        evidence: list[Evidence | Locator] = [
            at_pointer(before.source_path, before.source_pointer,
                       f"{k} = {_shown(old[k])} (revision {before.revision})", "values",
                       *_pointer_parts(k))
            for k in dropped[:6]]
        evidence.append(Evidence(path=after.source_path, pointer=after.source_pointer,
                                 excerpt=f"revision {after.revision} ({after.status}, "
                                         f"{after.updated}): {after.description}"))
        keep: list[sh.Arg] = []
        for k in dropped[:6]:
            if not isinstance(old[k], (dict, list)):
                keep += ["--set", sh.join(sh.values_key(k), "=", sh.values_value(old[k]))]
        ns, name = sh.namespace(namespace), sh.release(release)
        remediation = sh.lines(
            sh.cmd("helm", "-n", ns, "history", name),
            sh.cmd("helm", "-n", ns, "get", "values", name, "--revision", before.revision),
            sh.cmd("helm", "-n", ns, "get", "values", name, "--revision", after.revision),
            "# put the lost values back, keeping everything else",
            sh.cmd("helm", "-n", ns, "upgrade", name, "nvidia/gpu-operator", "--reuse-values",
                   *keep),
            sh.note("# or return to the revision that had them: helm -n {ns} rollback "
                    "{release} {revision}", ns=ns, release=name, revision=before.revision))
        summary = (f"Helm release {release}: revision {after.revision} dropped values that "
                   f"revision {before.revision} had set — {'; '.join(changes[:6])}"
                   f"{' …' if len(changes) > 6 else ''}.{danger}")
        subject = refs.REVISION.of(release, after.revision)
        return self.finding(subject, summary, severity=severity,
                            objects=[ObjectRef(kind="HelmRelease", namespace=namespace,
                                               name=release)],
                            evidence=evidence, remediation=remediation, causes=explains)

    @staticmethod
    def _failing_driver_nodes(ctx: Context) -> list[str]:
        """GPU nodes whose operator-managed driver pod is not healthy."""
        return sorted(node for node, operands in ctx.facts.operands.items()
                      if "driver" in operands and not operands["driver"].healthy)
