"""``nvidia-smi -q -x`` output of driver 570 for one idle GeForce GPU."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from .core import ctime
from .model import Gpu

DRIVER = "570.195.03"
CUDA = "12.8"

XmlNode = tuple[str, "str | list[XmlNode]"]


def _xml(node: XmlNode, depth: int) -> str:
    """Tab-indented like nvidia-smi; a tag may carry attributes (``gpu id="..."``)."""
    tag, body = node
    name = tag.split(" ", 1)[0]
    pad = "\t" * depth
    if isinstance(body, str):
        return f"{pad}<{tag}>{body}</{name}>\n"
    inner = "".join(_xml(child, depth + 1) for child in body)
    return f"{pad}<{tag}>\n{inner}{pad}</{name}>\n"


HEAD = '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'


def smi_log(gpus: Sequence[XmlNode], at: dt.datetime, attached: int | None = None) -> str:
    """The whole ``nvidia-smi -q -x`` document of driver :data:`DRIVER`: its header, the
    time it ran, the driver and CUDA versions, the number of GPUs the driver knows
    (``attached``, default: one per ``<gpu>`` block) and the ``<gpu>`` blocks. Every
    sample's nvidia-smi.xml, lab, data-center or synthetic, is written here."""
    root: XmlNode = (
        "nvidia_smi_log",
        [
            ("timestamp", ctime(at)),
            ("driver_version", DRIVER),
            ("cuda_version", CUDA),
            ("attached_gpus", str(attached if attached is not None else len(gpus))),
            *gpus,
        ],
    )
    return HEAD + _xml(root, 0)


def _na(*tags: str) -> list[XmlNode]:
    return [(t, "N/A") for t in tags]


def nvidia_smi_xml(gpu: Gpu, at: dt.datetime, minor: int = 0) -> str:
    """``nvidia-smi -q -x`` for one idle GeForce GPU on driver 570."""
    used = 2
    free = gpu.memory_mib - gpu.reserved_mib - used
    graphics, sm, mem, video = gpu.max_clocks_mhz
    fan = f"{gpu.fan_percent} %" if gpu.fan_percent is not None else "N/A"
    sub_class = "0" if gpu.pci_class == "0300" else "2"
    power = f"{gpu.power_limit_w:.2f} W"
    gpu_node: XmlNode = (
        f'gpu id="{gpu.bus_id}"',
        [
            ("product_name", gpu.product),
            ("product_brand", "GeForce"),
            ("product_architecture", gpu.architecture),
            ("display_mode", "Disabled"),
            ("display_active", "Disabled"),
            ("persistence_mode", "Enabled"),
            ("addressing_mode", "None"),
            ("mig_mode", _na("current_mig", "pending_mig")),
            ("mig_devices", "None"),
            ("accounting_mode", "Disabled"),
            ("accounting_mode_buffer_size", "4000"),
            ("driver_model", _na("current_dm", "pending_dm")),
            ("serial", "N/A"),
            ("uuid", gpu.uuid),
            ("minor_number", str(minor)),
            ("vbios_version", gpu.vbios),
            ("multigpu_board", "No"),
            ("board_id", "0x100"),
            ("board_part_number", "N/A"),
            ("gpu_part_number", "N/A"),
            ("gpu_fru_part_number", "N/A"),
            ("gpu_module_id", "1"),
            (
                "inforom_version",
                [
                    ("img_version", "G001.0000.94.01"),
                    ("oem_object", "2.1"),
                    ("ecc_object", "N/A"),
                    ("pwr_object", "N/A"),
                ],
            ),
            ("gpu_operation_mode", _na("current_gom", "pending_gom")),
            ("c2c_mode", "N/A"),
            (
                "gpu_virtualization_mode",
                [
                    ("virtualization_mode", "None"),
                    ("host_vgpu_mode", "N/A"),
                    ("vgpu_heterogeneous_mode", "N/A"),
                ],
            ),
            (
                "gpu_reset_status",
                [("reset_required", "No"), ("drain_and_reset_recommended", "N/A")],
            ),
            ("gsp_firmware_version", DRIVER),
            ("ibmnpu", _na("relaxed_ordering_mode")),
            (
                "pci",
                [
                    ("pci_bus", gpu.bus_id.split(":")[1]),
                    ("pci_device", "00"),
                    ("pci_domain", "0000"),
                    ("pci_base_class", "3"),
                    ("pci_sub_class", sub_class),
                    ("pci_device_id", f"{gpu.pci_device_id}10DE"),
                    ("pci_bus_id", gpu.bus_id),
                    ("pci_sub_system_id", gpu.pci_subsystem_id),
                    (
                        "pci_gpu_link_info",
                        [
                            (
                                "pcie_gen",
                                [
                                    ("max_link_gen", str(gpu.pcie_gen)),
                                    ("current_link_gen", "1"),
                                    ("device_current_link_gen", "1"),
                                    ("max_device_link_gen", str(gpu.pcie_gen)),
                                    ("max_host_link_gen", str(gpu.pcie_gen)),
                                ],
                            ),
                            (
                                "link_widths",
                                [("max_link_width", "16x"), ("current_link_width", "16x")],
                            ),
                        ],
                    ),
                    ("pci_bridge_chip", _na("bridge_chip_type", "bridge_chip_fw")),
                    ("replay_counter", "0"),
                    ("replay_rollover_counter", "0"),
                    ("tx_util", "0 KB/s"),
                    ("rx_util", "0 KB/s"),
                    ("atomic_caps_outbound", "N/A"),
                    ("atomic_caps_inbound", "N/A"),
                ],
            ),
            ("fan_speed", fan),
            ("performance_state", "P8"),
            (
                "clocks_event_reasons",
                [
                    ("clocks_event_reason_gpu_idle", "Active"),
                    *[
                        (f"clocks_event_reason_{r}", "Not Active")
                        for r in (
                            "applications_clocks_setting",
                            "sw_power_cap",
                            "hw_slowdown",
                            "hw_thermal_slowdown",
                            "hw_power_brake_slowdown",
                            "sync_boost",
                            "sw_thermal_slowdown",
                            "display_clocks_setting",
                        )
                    ],
                ],
            ),
            ("sparse_operation_mode", "N/A"),
            (
                "fb_memory_usage",
                [
                    ("total", f"{gpu.memory_mib} MiB"),
                    ("reserved", f"{gpu.reserved_mib} MiB"),
                    ("used", f"{used} MiB"),
                    ("free", f"{free} MiB"),
                ],
            ),
            ("bar1_memory_usage", [("total", "256 MiB"), ("used", "1 MiB"), ("free", "255 MiB")]),
            (
                "cc_protected_memory_usage",
                [("total", "0 MiB"), ("used", "0 MiB"), ("free", "0 MiB")],
            ),
            ("compute_mode", "Default"),
            (
                "utilization",
                [
                    (f"{u}_util", "0 %")
                    for u in ("gpu", "memory", "encoder", "decoder", "jpeg", "ofa")
                ],
            ),
            (
                "encoder_stats",
                [("session_count", "0"), ("average_fps", "0"), ("average_latency", "0")],
            ),
            ("fbc_stats", [("session_count", "0"), ("average_fps", "0"), ("average_latency", "0")]),
            ("dram_encryption_mode", _na("current_dram_encryption", "pending_dram_encryption")),
            ("ecc_mode", _na("current_ecc", "pending_ecc")),
            (
                "ecc_errors",
                [
                    (
                        "volatile",
                        _na(
                            "sram_correctable",
                            "sram_uncorrectable_parity",
                            "sram_uncorrectable_secded",
                            "dram_correctable",
                            "dram_uncorrectable",
                        ),
                    ),
                    (
                        "aggregate",
                        _na(
                            "sram_correctable",
                            "sram_uncorrectable_parity",
                            "sram_uncorrectable_secded",
                            "dram_correctable",
                            "dram_uncorrectable",
                            "sram_threshold_exceeded",
                        ),
                    ),
                ],
            ),
            (
                "retired_pages",
                [
                    ("multiple_single_bit_retirement", _na("retired_count", "retired_pagelist")),
                    ("double_bit_retirement", _na("retired_count", "retired_pagelist")),
                    ("pending_blacklist", "N/A"),
                    ("pending_retirement", "N/A"),
                ],
            ),
            ("remapped_rows", "N/A"),
            (
                "temperature",
                [
                    ("gpu_temp", f"{gpu.temp_c} C"),
                    ("gpu_temp_tlimit", f"{88 - gpu.temp_c} C"),
                    ("gpu_temp_max_threshold", "98 C"),
                    ("gpu_temp_slow_threshold", "95 C"),
                    ("gpu_temp_max_gpu_threshold", "93 C"),
                    ("gpu_target_temperature", "83 C"),
                    ("memory_temp", "N/A"),
                    ("gpu_temp_max_mem_threshold", "N/A"),
                ],
            ),
            (
                "supported_gpu_target_temp",
                [("gpu_target_temp_min", "65 C"), ("gpu_target_temp_max", "91 C")],
            ),
            (
                "gpu_power_readings",
                [
                    ("power_state", "P8"),
                    ("average_power_draw", f"{gpu.idle_power_w + 0.4:.2f} W"),
                    ("instant_power_draw", f"{gpu.idle_power_w:.2f} W"),
                    ("current_power_limit", power),
                    ("requested_power_limit", power),
                    ("default_power_limit", power),
                    ("min_power_limit", f"{gpu.power_min_w:.2f} W"),
                    ("max_power_limit", f"{gpu.power_max_w:.2f} W"),
                ],
            ),
            ("gpu_memory_power_readings", _na("average_power_draw", "instant_power_draw")),
            (
                "module_power_readings",
                [
                    ("power_state", "P8"),
                    *_na(
                        "average_power_draw",
                        "instant_power_draw",
                        "current_power_limit",
                        "requested_power_limit",
                        "default_power_limit",
                        "min_power_limit",
                        "max_power_limit",
                    ),
                ],
            ),
            ("power_smoothing", "N/A"),
            (
                "clocks",
                [
                    ("graphics_clock", "210 MHz"),
                    ("sm_clock", "210 MHz"),
                    ("mem_clock", "405 MHz"),
                    ("video_clock", "555 MHz"),
                ],
            ),
            ("applications_clocks", _na("graphics_clock", "mem_clock")),
            ("default_applications_clocks", _na("graphics_clock", "mem_clock")),
            ("deferred_clocks", _na("mem_clock")),
            (
                "max_clocks",
                [
                    ("graphics_clock", f"{graphics} MHz"),
                    ("sm_clock", f"{sm} MHz"),
                    ("mem_clock", f"{mem} MHz"),
                    ("video_clock", f"{video} MHz"),
                ],
            ),
            ("max_customer_boost_clocks", _na("graphics_clock")),
            ("clock_policy", _na("auto_boost", "auto_boost_default")),
            ("voltage", [("graphics_volt", "740.000 mV")]),
            (
                "fabric",
                [
                    *_na("state", "status", "cliqueId", "clusterUuid"),
                    (
                        "health",
                        _na(
                            "bandwidth",
                            "route_recovery_in_progress",
                            "route_unhealthy",
                            "access_timeout_recovery",
                        ),
                    ),
                ],
            ),
            ("processes", []),
            ("accounted_processes", []),
            ("capabilities", [("egm", "disabled")]),
        ],
    )
    return smi_log([gpu_node], at)
