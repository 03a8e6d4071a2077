"""HGX boards (eight SXM GPUs on NVSwitch) and what ``nvidia-smi -q -x`` says about a
GPU that is not healthy.

``dcgpu`` prints idle or busy data-center cards with clean counters; this module
adds the SXM cards of HGX A100 / H100 servers and per-GPU health readings on top of
``dcgpu``'s layout: uncorrectable ECC counts, row remapping (pending, counts and the
bank histogram), the reset flag, and the NVLink fabric registration that Fabric
Manager completes on NVSwitch systems (``Completed`` / ``Success`` when healthy,
``In Progress`` while nobody sets the fabric up).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from .dcgpu import Card, Slot, _gpu_node
from .model import Gpu
from .smi import XmlNode, smi_log

A100_SXM4_80GB = Card(
    gpu=Gpu(product="NVIDIA A100-SXM4-80GB", architecture="Ampere", memory_mib=81920,
            reserved_mib=647, compute=(8, 0), pci_device_id="20B2", pci_subsystem_id="147F10DE",
            pci_class="0302", vbios="92.00.36.00.10", power_limit_w=400.0, power_min_w=100.0,
            power_max_w=400.0, idle_power_w=61.28, temp_c=29,
            max_clocks_mhz=(1410, 1410, 1593, 1290), pcie_gen=4, fan_percent=None, uuid=""),
    brand="NVIDIA",
    board_part="692-2G506-0212-002",
    mig_capable=True,
)
H100_SXM5_80GB = Card(
    gpu=Gpu(product="NVIDIA H100 80GB HBM3", architecture="Hopper", memory_mib=81559,
            reserved_mib=591, compute=(9, 0), pci_device_id="2330", pci_subsystem_id="16C110DE",
            pci_class="0302", vbios="96.00.99.00.01", power_limit_w=700.0, power_min_w=200.0,
            power_max_w=700.0, idle_power_w=71.62, temp_c=31,
            max_clocks_mhz=(1980, 1980, 2619, 1755), pcie_gen=5, fan_percent=None, uuid=""),
    brand="NVIDIA",
    board_part="692-2G520-0200-000",
    mig_capable=True,
)


@dataclass(frozen=True)
class Health:
    """What one GPU's counters show; the defaults are a clean GPU."""

    dram_uncorrectable: int = 0  # since the driver loaded (volatile) and lifetime (aggregate)
    dram_correctable: int = 0
    sram_uncorrectable: int = 0  # SECDED
    remapped_unc: int = 0
    remap_pending: bool = False
    reset_required: bool = False
    fabric: tuple[str, str] | None = None  # (state, status); None: not an NVSwitch system


HEALTHY_FABRIC = ("Completed", "Success")
NO_FABRIC_MANAGER = ("In Progress", "N/A")


def _set(node: XmlNode, path: tuple[str, ...], value: str | list[XmlNode]) -> XmlNode:
    """``node`` with the element at ``path`` (tag names below it) given ``value``."""
    tag, body = node
    if not path:
        return (tag, value)
    assert isinstance(body, list), (tag, path)
    hits = [i for i, child in enumerate(body) if child[0].split(" ", 1)[0] == path[0]]
    assert len(hits) == 1, (tag, path)
    children = list(body)
    children[hits[0]] = _set(children[hits[0]], path[1:], value)
    return (tag, children)


def _ecc(h: Health, scope: str) -> list[XmlNode]:
    out: list[XmlNode] = [
        ("sram_correctable", "0"),
        ("sram_uncorrectable_parity", "0"),
        ("sram_uncorrectable_secded", str(h.sram_uncorrectable)),
        ("dram_correctable", str(h.dram_correctable)),
        ("dram_uncorrectable", str(h.dram_uncorrectable)),
    ]
    if scope == "aggregate":
        out.append(("sram_threshold_exceeded", "No"))
    return out


def gpu_node(slot: Slot, health: Health, banks: int = 640) -> XmlNode:
    """``dcgpu``'s ``<gpu>`` element with ``health`` written into it."""
    node = _gpu_node(slot)
    node = _set(node, ("ecc_errors", "volatile"), _ecc(health, "volatile"))
    node = _set(node, ("ecc_errors", "aggregate"), _ecc(health, "aggregate"))
    partial = 1 if health.remapped_unc else 0
    node = _set(node, ("remapped_rows",), [
        ("remapped_row_corr", "0"),
        ("remapped_row_unc", str(health.remapped_unc)),
        ("remapped_row_pending", "Yes" if health.remap_pending else "No"),
        ("remapped_row_failure", "No"),
        ("row_remapper_histogram", [
            ("row_remapper_histogram_max", f"{banks - partial} bank(s)"),
            ("row_remapper_histogram_high", f"{partial} bank(s)"),
            ("row_remapper_histogram_partial", "0 bank(s)"),
            ("row_remapper_histogram_low", "0 bank(s)"),
            ("row_remapper_histogram_none", "0 bank(s)"),
        ]),
    ])
    node = _set(node, ("gpu_reset_status", "reset_required"),
                "Yes" if health.reset_required else "No")
    if health.fabric is not None:
        state, status = health.fabric
        done = (state, status) == HEALTHY_FABRIC
        node = _set(node, ("fabric",), [
            ("state", state),
            ("status", status),
            ("cliqueId", "0" if done else "N/A"),
            ("clusterUuid", "00000000-0000-0000-0000-000000000000" if done else "N/A"),
            ("health", [
                ("bandwidth", "Full" if done else "N/A"),
                ("route_recovery_in_progress", "False" if done else "N/A"),
                ("route_unhealthy", "False" if done else "N/A"),
                ("access_timeout_recovery", "False" if done else "N/A"),
            ]),
        ])
    return node


def nvidia_smi_xml(slots: list[Slot], at: dt.datetime, health: dict[int, Health] | None = None,
                   *, fabric: tuple[str, str] | None = None, attached: int | None = None) -> str:
    """``nvidia-smi -q -x`` for the node's GPUs; ``health`` by GPU index, ``fabric`` the
    state every GPU of an NVSwitch board reports (unless its ``Health`` says otherwise)."""
    gpus = []
    for slot in slots:
        h = (health or {}).get(slot.index, Health())
        if h.fabric is None and fabric is not None:
            h = replace(h, fabric=fabric)
        gpus.append(gpu_node(slot, h))
    return smi_log(gpus, at, attached)
