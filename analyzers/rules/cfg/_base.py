"""CFG: versions, support and configuration of the GPU Operator."""

from __future__ import annotations

from analyzers.facts.evidence import field
from analyzers.knowledge.releases import SupportStatus
from analyzers.results.models import Evidence, Severity
from analyzers.rule import Context
from bundle.kube import HelmRevision, Node


def operator_release(ctx: Context) -> tuple[str, list[HelmRevision]] | None:
    """The Helm release of the GPU Operator chart, with its revisions."""
    releases = ctx.facts.helm_releases
    for name, revisions in sorted(releases.items()):
        if revisions and revisions[-1].chart.startswith("gpu-operator"):
            return name, revisions
    return None


def _operand_mismatches(ctx: Context, version: str) -> list[tuple[str, Evidence]]:
    found: list[tuple[str, Evidence]] = []
    for gap in ctx.facts.operand_mismatches(version):
        pod, item, want = gap.pod, gap.container, gap.expected
        shown = want.version if want.version.count(".") >= 2 else f"{want.version}.x"
        found.append((f"{want.label} {gap.actual} (expected {shown} for {want.scope}) in "
                      f"{pod.namespace}/{pod.name}",
                      field(pod, f"{pod.namespace}/{pod.name} {item.name} image "
                                 f"{item.image}",
                            "spec", gap.section, gap.index, "image")))
    return found


_STATUS_SEVERITY = {
    SupportStatus.END_OF_SUPPORT: Severity.MEDIUM,
    SupportStatus.DEPRECATED: Severity.LOW,
    SupportStatus.UNKNOWN: Severity.INFO,
    SupportStatus.SUPPORTED: Severity.LOW,
}


_STATUS_MEANING = {
    SupportStatus.END_OF_SUPPORT: "it gets no fixes, not even for CVEs, and NVIDIA support "
                                  "will ask for an upgrade first",
    SupportStatus.DEPRECATED: "it gets only critical bug and CVE fixes; plan the move to the "
                              "supported line",
    SupportStatus.UNKNOWN: "this gpu-triage's release table cannot place it; check NVIDIA's "
                           "lifecycle page",
    SupportStatus.SUPPORTED: "it is the supported line",
}


def _mig_wanted(node_obj: Node) -> str | None:
    labels = node_obj.labels
    config = labels.get("nvidia.com/mig.config")
    if config and config != "all-disabled":
        return f"label nvidia.com/mig.config={config}"
    strategy = labels.get("nvidia.com/mig.strategy")
    if strategy in ("single", "mixed"):
        return f"label nvidia.com/mig.strategy={strategy}"
    mig_resources = sorted(r for r in node_obj.status.capacity if r.startswith("nvidia.com/mig-"))
    if mig_resources:
        return f"resource {mig_resources[0]} in its capacity"
    return None


def _label_int(labels: dict[str, str], key: str) -> int | None:
    value = labels.get(key, "")
    return int(value) if value.isdigit() else None
