"""OP009: MIG configuration problems."""

from __future__ import annotations

from dataclasses import dataclass

from analyzers.facts.evidence import field
from analyzers.facts.gpu import count as gpu_count
from analyzers.facts.mig import MigEntry, device_id
from analyzers.results.models import Evidence
from analyzers.rule import Context
from bundle import specs
from bundle.kube import Node

CONFIG_LABEL = "nvidia.com/mig.config"


STATE_LABEL = "nvidia.com/mig.config.state"


CAPABLE_LABEL = "nvidia.com/mig.capable"


PRODUCT_LABEL = "nvidia.com/gpu.product"


@dataclass(frozen=True, slots=True)
class GpuView:
    index: int
    product: str | None
    device_id: str | None
    mig_supported: bool | None      # None: unknown
    where: Evidence | None          # where the "no MIG" fact was read


def _gpus(ctx: Context, obj: Node) -> list[GpuView]:
    """The node's GPUs in NVML index order: nvidia-smi first, else the GFD labels."""
    artifacts = ctx.facts.node(obj.name)
    smi = artifacts.nvidia_smi
    capable = obj.labels.get(CAPABLE_LABEL)
    if smi is not None and smi.gpus:
        path = artifacts.path(specs.NVIDIA_SMI)
        views = []
        for index, gpu in enumerate(smi.gpus):
            element = gpu.element.find("mig_mode/current_mig")
            current = (element.text or "").strip() if element is not None else None
            consumer = (gpu.product_brand or "").lower() in ("geforce", "titan")
            supported: bool | None = None
            where = None
            if current == "N/A" or consumer:
                supported = False
                hit = artifacts.smi_line(gpu.bus_id, "mig_mode/current_mig") \
                    if current == "N/A" else None
                where = (Evidence(path=path, line=hit[0], excerpt=f"GPU {index}: {hit[1]}")
                         if hit is not None else
                         Evidence(path=path, excerpt=f"GPU {index}: {gpu.product_name} "
                                                     f"(brand {gpu.product_brand})"))
            elif current in ("Enabled", "Disabled"):
                supported = True
            pci = gpu.element.findtext("pci/pci_device_id")
            views.append(GpuView(index, gpu.product_name, device_id(pci), supported, where))
        return views
    product = obj.labels.get(PRODUCT_LABEL)
    if product and "-MIG-" in product:
        product = product.split("-MIG-")[0]
    count = gpu_count(obj.labels.get("nvidia.com/gpu.count")) or 1
    supported = {"true": True, "false": False}.get(capable or "")
    where = field(obj, f"{CAPABLE_LABEL}={capable}", "metadata", "labels", CAPABLE_LABEL) \
        if supported is False else None
    return [GpuView(i, product, None, supported, where) for i in range(count)]


def _entry_text(entry: MigEntry) -> str:
    devices = entry.devices if entry.devices == "all" else list(entry.devices)
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(entry.counts.items())) or "none"
    return f"devices {devices}, mig-enabled {str(entry.enabled).lower()}, mig-devices {counts}"


def _indices(indices: list[int]) -> str:
    return "GPU " + ",".join(str(i) for i in indices)
