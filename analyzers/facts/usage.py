"""Idle but not empty: GPUs on nodes with GPU pods that do nothing while holding memory.

The scheduler sees assignments, nvidia-smi sees use. A GPU counts as idle here when
its utilisation is at most :data:`IDLE_UTIL_PERCENT` and it holds at least
:data:`HELD_MIB` of framebuffer, on a node where non-terminated pods hold GPUs. The
bundle has no pod-to-device map (kubelet's pod-resources API is not collected), so
the pods are those of the node, not of the device.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from analyzers.facts.gpu import NodeGPUs
from bundle import Bundle
from bundle.kernel import normalize_pci
from bundle.nvsmi import GPU, text_of

IDLE_UTIL_PERCENT = 1
HELD_MIB = 1024


@dataclass(frozen=True, slots=True)
class IdleGPU:
    node: str
    gpu: GPU
    pci: str                 # canonical PCI address, the subject key
    index: int               # position in nvidia-smi's list
    power_watts: float | None
    holders: tuple[str, ...]  # "namespace/name" of the node's GPU pods


def power_draw(gpu: GPU) -> float | None:
    raw = text_of(gpu.element, "gpu_power_readings/power_draw",
                  "gpu_power_readings/instant_power_draw", "power_readings/power_draw")
    if raw is None:
        return None
    try:
        return float(raw.split()[0])
    except (ValueError, IndexError):
        return None


def is_idle(gpu: GPU) -> bool:
    return (gpu.gpu_util_percent is not None and gpu.gpu_util_percent <= IDLE_UTIL_PERCENT
            and gpu.fb_used_mib is not None and gpu.fb_used_mib >= HELD_MIB)


def idle_gpus(bundle: Bundle, gpu_nodes: list[str],
              accounting: Mapping[str, NodeGPUs]) -> dict[str, list[IdleGPU]]:
    found: dict[str, list[IdleGPU]] = {}
    for name in sorted(set(gpu_nodes) | set(bundle.node_names)):
        counts = accounting.get(name)
        if counts is None or not counts.pods:
            continue
        smi = bundle.node(name).nvidia_smi
        if smi is None:
            continue
        for index, gpu in enumerate(smi.gpus):
            if not is_idle(gpu):
                continue
            pci = normalize_pci(gpu.bus_id) or gpu.bus_id
            found.setdefault(name, []).append(
                IdleGPU(name, gpu, pci, index, power_draw(gpu), counts.pods))
    return found

