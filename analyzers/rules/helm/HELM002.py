"""HELM002: The operator's Helm release is stuck or failed."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.helm._base import STUCK
from bundle import specs


class ReleaseStuck(Rule):
    """The operator's Helm release is stuck or failed.

    The latest revision's status is ``pending-install``, ``pending-upgrade``,
    ``pending-rollback``, ``uninstalling`` or ``failed``: Helm refuses further
    upgrades until it is resolved, and the cluster may run a mix of two revisions.

    Why it matters:
    Fixes applied with ``helm upgrade`` fail with "another operation is in
    progress" or leave the ClusterPolicy at the old values.

    Remediation:
    Read the history, then roll back to the last good revision:
      helm -n gpu-operator history gpu-operator
      helm -n gpu-operator rollback gpu-operator <last deployed revision>
    """

    id = "HELM002"
    slug = "release-stuck"
    subject = refs.RELEASE
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.HELM_RELEASES),)
    needs = (Need.OPERATOR,)
    tags = ("helm",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        namespace = ctx.facts.operator_namespace or "gpu-operator"
        for release, revisions in sorted(ctx.facts.helm_releases.items()):
            if not revisions or revisions[-1].status not in STUCK:
                continue
            latest = revisions[-1]
            good = [r for r in revisions[:-1] if r.status in ("deployed", "superseded")]
            target = good[-1].revision if good else None
            candidates = (f"; rollback candidate: revision {target} ({good[-1].chart})"
                          if target is not None else "; no earlier good revision to roll back to")
            summary = (f"Helm release {release} is {latest.status} at revision "
                       f"{latest.revision} ({latest.description or 'no description'}){candidates}.")
            ns, name = sh.namespace(namespace), sh.release(release)
            remediation = sh.lines(sh.cmd("helm", "-n", ns, "history", name),
                                   sh.cmd("helm", "-n", ns, "rollback", name, target)
                                   if target is not None else
                                   sh.cmd("helm", "-n", ns, "status", name))
            yield self.finding(release, summary,
                               objects=[ObjectRef(kind="HelmRelease", namespace=namespace,
                                                  name=release)],
                               evidence=[Evidence(path=latest.source_path,
                                                  pointer=latest.source_pointer,
                                                  excerpt=f"revision {latest.revision}: "
                                                          f"{latest.status}")],
                               remediation=remediation)
