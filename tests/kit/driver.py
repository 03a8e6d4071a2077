"""Inline bundle pieces for the DRV rule tests: GPU nodes, nvidia-smi XML, kernel logs.

Kernel lines are real example lines (NVIDIA's Xid documentation, the driver's format
strings in NVIDIA/open-gpu-kernel-modules, public issue threads), in the transport the
test needs (plain dmesg, ``--time-format iso``, ``-T``, syslog, journal
JSON).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from kit.bundles import kube_node, smi_log
from kit.objects import lists, pod

DP_APP = "nvidia-device-plugin-daemonset"
DRIVER_APP = "nvidia-driver-daemonset"

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"


def gpu_node(name: str, capacity: int = 8, allocatable: int | None = None,
             kernel: str = "6.8.0-88-generic") -> dict[str, Any]:
    """A labelled GPU node; allocatable below capacity means withdrawn devices."""
    return kube_node(name, capacity, allocatable, other={"cpu": "64", "pods": "110"},
                     hostname=False,
                     node_info={"kernelVersion": kernel, "osImage": "Ubuntu 22.04.5 LTS"})


def smi_gpu(bus_id: str, uuid: str, model: str = A100, extra: str = "") -> str:
    """One ``<gpu>`` block, pretty-printed one element per line as nvidia-smi does."""
    return (f'\t<gpu id="{bus_id}">\n'
            f"\t\t<product_name>{model}</product_name>\n"
            f"\t\t<uuid>{uuid}</uuid>\n"
            f"\t\t<minor_number>0</minor_number>\n"
            f"\t\t<pci>\n\t\t\t<pci_bus_id>{bus_id}</pci_bus_id>\n\t\t</pci>\n"
            f"{extra}"
            "\t</gpu>\n")


def smi_xml(*gpus: str, driver: str = "570.195.03") -> str:
    return smi_log(gpus, driver=driver)


def remap(pending: str = "No", failure: str = "No") -> str:
    return ("\t\t<remapped_rows>\n"
            "\t\t\t<remapped_row_corr>0</remapped_row_corr>\n"
            "\t\t\t<remapped_row_unc>2</remapped_row_unc>\n"
            f"\t\t\t<remapped_row_pending>{pending}</remapped_row_pending>\n"
            f"\t\t\t<remapped_row_failure>{failure}</remapped_row_failure>\n"
            "\t\t</remapped_rows>\n")


def ecc_new(volatile_dram: int = 0, aggregate_dram: int = 0, threshold: str = "No") -> str:
    return ("\t\t<ecc_errors>\n\t\t\t<volatile>\n"
            "\t\t\t\t<sram_correctable>0</sram_correctable>\n"
            "\t\t\t\t<sram_uncorrectable_parity>0</sram_uncorrectable_parity>\n"
            "\t\t\t\t<sram_uncorrectable_secded>0</sram_uncorrectable_secded>\n"
            f"\t\t\t\t<dram_uncorrectable>{volatile_dram}</dram_uncorrectable>\n"
            "\t\t\t</volatile>\n\t\t\t<aggregate>\n"
            "\t\t\t\t<sram_uncorrectable_parity>0</sram_uncorrectable_parity>\n"
            f"\t\t\t\t<dram_uncorrectable>{aggregate_dram}</dram_uncorrectable>\n"
            f"\t\t\t\t<sram_threshold_exceeded>{threshold}</sram_threshold_exceeded>\n"
            "\t\t\t</aggregate>\n\t\t</ecc_errors>\n")


def ecc_legacy(volatile_total: int) -> str:
    """The pre-Ampere layout: ``double_bit`` per location with a total."""
    return ("\t\t<ecc_errors>\n\t\t\t<volatile>\n\t\t\t\t<single_bit>\n"
            "\t\t\t\t\t<device_memory>3</device_memory>\n\t\t\t\t\t<total>3</total>\n"
            "\t\t\t\t</single_bit>\n\t\t\t\t<double_bit>\n"
            f"\t\t\t\t\t<device_memory>{volatile_total}</device_memory>\n"
            f"\t\t\t\t\t<total>{volatile_total}</total>\n"
            "\t\t\t\t</double_bit>\n\t\t\t</volatile>\n\t\t</ecc_errors>\n")


def throttle(schema: str, **active: bool) -> str:
    """A clocks reasons block in the new (``event``) or old (``throttle``) schema."""
    block = "clocks_event_reasons" if schema == "event" else "clocks_throttle_reasons"
    prefix = "clocks_event_reason_" if schema == "event" else "clocks_throttle_reason_"
    keys = ("gpu_idle", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown",
            "hw_power_brake_slowdown", "sw_thermal_slowdown")
    rows = "".join(f"\t\t\t<{prefix}{k}>{'Active' if active.get(k) else 'Not Active'}"
                   f"</{prefix}{k}>\n" for k in keys)
    return f"\t\t<{block}>\n{rows}\t\t</{block}>\n"


def journal_kernel(*messages: tuple[str, datetime, float]) -> str:
    """``journalctl -o json`` kernel entries: (MESSAGE, wall clock, seconds since boot)."""
    rows = []
    for message, at, uptime in messages:
        rows.append(orjson.dumps({
            "__REALTIME_TIMESTAMP": str(int(at.timestamp() * 1_000_000)),
            "_SOURCE_MONOTONIC_TIMESTAMP": str(int(uptime * 1_000_000)),
            "_TRANSPORT": "kernel", "SYSLOG_IDENTIFIER": "kernel", "PRIORITY": "3",
            "_HOSTNAME": "gpu-node", "MESSAGE": message,
        }).decode())
    return "\n".join(rows) + "\n"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def device_plugin(node_name: str, suffix: str = "aaaaa") -> dict[str, Any]:
    return pod(f"{DP_APP}-{suffix}", node_name, app=DP_APP)


def dp_log(node_name: str, suffix: str = "aaaaa") -> str:
    return f"logs/gpu-operator/{DP_APP}-{suffix}/nvidia-device-plugin.log"


def bundle_files(nodes: list[dict[str, Any]], files: dict[str, Any],
                 pods: list[dict[str, Any]] | None = None,
                 policies: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A bundle of ``nodes``, ``pods`` and ClusterPolicies (no events) and raw ``files``."""
    content: dict[str, Any] = lists(nodes=nodes, pods=pods or [], events=[],
                                    clusterpolicies=policies or [])
    content.update(files)
    return content
