"""HELM: the operator's Helm release history (values dropped by an upgrade, stuck releases)."""

from __future__ import annotations

from collections.abc import Iterator

from analyzers.rule import Context
from bundle.evidence import clip
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


def _pointer_parts(dotted: str) -> list[str]:
    return dotted.split(".")


def _shown(value: object) -> str:
    return clip(repr(value) if not isinstance(value, bool) else str(value).lower(), 80)


def latest_of(ctx: Context, release: str) -> HelmRevision | None:
    revisions = ctx.facts.helm_releases.get(release, [])
    return revisions[-1] if revisions else None


def _pairs(revisions: list[HelmRevision]) -> Iterator[tuple[HelmRevision, HelmRevision]]:
    return zip(revisions, revisions[1:], strict=False)
