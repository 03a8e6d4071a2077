"""HELM: the operator's Helm release history (values dropped by an upgrade, stuck releases)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.preconditions import Need
from analyzers.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.refs import Link
from analyzers.rule import Context, Rule, cluster
from bundle.evidence import Locator, at_pointer, clip
from bundle.kube import HelmRevision

# Chart defaults of values whose silent return changes what the operator does
# (gpu-operator values.yaml); a revision that drops one of these reverts to it.
CHART_DEFAULTS: dict[str, object] = {
    "driver.enabled": True,
    "toolkit.enabled": True,
    "devicePlugin.enabled": True,
    "dcgmExporter.enabled": True,
    "gfd.enabled": True,
    "migManager.enabled": True,
    "nfd.enabled": True,
    "cdi.enabled": True,
    "mig.strategy": "single",
    "operator.defaultRuntime": "containerd",
}
# Dropping these does damage, not just drift: the operator starts managing what the
# admin had chosen to manage by hand.
HARMFUL = {"driver.enabled", "toolkit.enabled", "cdi.enabled", "mig.strategy",
           "devicePlugin.config.name", "operator.defaultRuntime"}
STUCK = ("pending-install", "pending-upgrade", "pending-rollback", "failed", "uninstalling")


def flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested Helm values as dotted keys; lists stay whole values."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


def _pointer_parts(dotted: str) -> list[str]:
    return dotted.split(".")


def _shown(value: object) -> str:
    return clip(repr(value) if not isinstance(value, bool) else str(value).lower(), 80)


def latest_of(ctx: Context, release: str) -> HelmRevision | None:
    revisions = ctx.bundle.cluster.helm.get(release, [])
    return revisions[-1] if revisions else None


def _pairs(revisions: list[HelmRevision]) -> Iterator[tuple[HelmRevision, HelmRevision]]:
    return zip(revisions, revisions[1:], strict=False)


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
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (cluster("helm/*.json"), cluster("pods.json", optional=True))
    needs = (Need.OPERATOR,)
    tags = ("helm", "configuration")

    def check(self, ctx: Context) -> Iterable[Finding]:
        namespace = ctx.facts.operator_namespace or "gpu-operator"
        for release, revisions in sorted(ctx.bundle.cluster.helm.items()):
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
                explains = [refs.OP001(n) for n in failing]
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
        subject = refs.HELM001.subject(release, after.revision)
        return self.finding(subject, summary, severity=severity,
                            objects=[ObjectRef(kind="HelmRelease", namespace=namespace,
                                               name=release)],
                            evidence=evidence, remediation=remediation, causes=explains)

    @staticmethod
    def _failing_driver_nodes(ctx: Context) -> list[str]:
        """GPU nodes whose operator-managed driver pod is not healthy."""
        return sorted(node for node, operands in ctx.facts.operands.items()
                      if "driver" in operands and not operands["driver"].healthy)


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
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster("helm/*.json"),)
    needs = (Need.OPERATOR,)
    tags = ("helm",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        namespace = ctx.facts.operator_namespace or "gpu-operator"
        for release, revisions in sorted(ctx.bundle.cluster.helm.items()):
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


RULES: list[type[Rule]] = [
    ValuesDroppedByUpgrade,  # HELM001
    ReleaseStuck,  # HELM002
]
