"""OP013: DCGM profiling metrics cannot be collected on a node: the GPU it names (the
failures are read by analyzers/facts/dcgm.py)."""

from __future__ import annotations

from analyzers.rule import Context

PRODUCT_LABEL = "nvidia.com/gpu.product"


def _product(ctx: Context, name: str) -> str | None:
    obj = ctx.facts.nodes.get(name)
    label = obj.labels.get(PRODUCT_LABEL) if obj is not None else None
    if label:
        return label
    smi = ctx.facts.node(name).nvidia_smi if name in ctx.facts.node_dirs else None
    products = sorted({g.product_name for g in smi.gpus if g.product_name}) if smi else []
    return ", ".join(products) or None
