"""OP013: DCGM profiling metrics cannot be collected on a node."""

from __future__ import annotations

from analyzers.facts.operands import OperandPod
from analyzers.rule import Context
from bundle.evidence import Locator

NOT_SUPPORTED = "dcgm-profiling-not-supported"


MODULE_ERROR = "dcgm-profiling-module-error"


PRODUCT_LABEL = "nvidia.com/gpu.product"


def profiling_hits(ctx: Context, exporter: OperandPod) -> list[tuple[str, Locator]]:
    """(signature id, line) of every profiling failure in the exporter's logs; an
    earlier run's log counts only while the exporter is failing or has restarted."""
    restarted = any(s.restart_count for s in exporter.pod.status.container_statuses)
    found: list[tuple[str, Locator]] = []
    for log in ctx.facts.pod_logs.of(exporter.pod):
        if log.previous and exporter.healthy and not restarted:
            continue
        found += [(m.signature.id, log.locate(m)) for m in log.matches("OP013")]
    return found


def _product(ctx: Context, name: str) -> str | None:
    obj = ctx.facts.nodes.get(name)
    label = obj.labels.get(PRODUCT_LABEL) if obj is not None else None
    if label:
        return label
    smi = ctx.facts.node(name).nvidia_smi if name in ctx.facts.node_dirs else None
    products = sorted({g.product_name for g in smi.gpus if g.product_name}) if smi else []
    return ", ".join(products) or None
