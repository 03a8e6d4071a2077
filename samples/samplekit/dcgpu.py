"""Data-center GPUs for the multi-GPU samples: the cards, how a server holds them,
``nvidia-smi -q -x`` for several GPUs (busy or idle, MIG on or off), the
``nvidia-smi`` table the validators print, and the kernel lines a node keeps.

``smi.py`` describes one idle GeForce card (the lab); this module follows the same
XML layout (driver 570) with what a data-center board prints instead: brand
``NVIDIA``, ECC on, row remapping, passive cooling (fan N/A), MIG mode on the
cards that have it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from .core import hexid, number, plus
from .model import Gpu, Host
from .smi import DRIVER, XmlNode, _na, smi_log

# PCI bus numbers of the GPU slots of a 2-socket server, in NVML index order.
SLOTS = ("17", "31", "4B", "65", "97", "B1", "CA", "E3")


@dataclass(frozen=True)
class Card:
    """A GPU model: the ``model.Gpu`` fields plus what a data-center board adds."""

    gpu: Gpu
    brand: str
    board_part: str
    mig_capable: bool
    ecc: bool = True


def _card(gpu: Gpu, board_part: str, *, mig: bool = False) -> Card:
    return Card(gpu=gpu, brand="NVIDIA", board_part=board_part, mig_capable=mig)


L40S = _card(
    Gpu(product="NVIDIA L40S", architecture="Ada Lovelace", memory_mib=46068, reserved_mib=487,
        compute=(8, 9), pci_device_id="26B9", pci_subsystem_id="185110DE", pci_class="0302",
        vbios="95.02.66.00.02", power_limit_w=350.0, power_min_w=100.0, power_max_w=350.0,
        idle_power_w=33.41, temp_c=31, max_clocks_mhz=(2520, 2520, 9001, 1965), pcie_gen=4,
        fan_percent=None, uuid=""),
    "900-2G133-0080-000",
)  # fmt: skip
L4 = _card(
    Gpu(product="NVIDIA L4", architecture="Ada Lovelace", memory_mib=23034, reserved_mib=288,
        compute=(8, 9), pci_device_id="27B8", pci_subsystem_id="16CA10DE", pci_class="0302",
        vbios="95.04.29.00.06", power_limit_w=72.0, power_min_w=40.0, power_max_w=72.0,
        idle_power_w=16.12, temp_c=38, max_clocks_mhz=(2040, 2040, 6251, 1770), pcie_gen=4,
        fan_percent=None, uuid=""),
    "900-2G193-0000-001",
)  # fmt: skip
A10 = _card(
    Gpu(product="NVIDIA A10", architecture="Ampere", memory_mib=23028, reserved_mib=285,
        compute=(8, 6), pci_device_id="2236", pci_subsystem_id="148210DE", pci_class="0302",
        vbios="94.02.5C.00.02", power_limit_w=150.0, power_min_w=100.0, power_max_w=150.0,
        idle_power_w=19.87, temp_c=33, max_clocks_mhz=(1695, 1695, 6251, 1560), pcie_gen=4,
        fan_percent=None, uuid=""),
    "900-2G133-0000-000",
)  # fmt: skip
A100_PCIE_40GB = _card(
    Gpu(product="NVIDIA A100-PCIE-40GB", architecture="Ampere", memory_mib=40960,
        reserved_mib=264, compute=(8, 0), pci_device_id="20F1", pci_subsystem_id="145F10DE",
        pci_class="0302", vbios="92.00.25.00.08", power_limit_w=250.0, power_min_w=150.0,
        power_max_w=250.0, idle_power_w=35.63, temp_c=30,
        max_clocks_mhz=(1410, 1410, 1215, 1290), pcie_gen=4, fan_percent=None, uuid=""),
    "900-21001-0000-000",
    mig=True,
)  # fmt: skip


@dataclass(frozen=True)
class Load:
    """What a busy GPU shows: a training or inference process holding memory."""

    util: int  # percent
    used_mib: int
    power_w: float
    temp_c: int
    pid: int
    process: str = "python3"


@dataclass(frozen=True)
class MigDevice:
    """One MIG instance: profile, GPU instance id, SMs, memory, copy/decoder engines."""

    profile: str  # "3g.20gb"
    gi: int
    sms: int
    memory_mib: int
    copy: int
    decoders: int


MIG_A100_40GB = {
    "1g.5gb": (14, 4864, 1, 0),
    "3g.20gb": (42, 19968, 3, 2),
}


def mig_layout(profiles: dict[str, int]) -> tuple[MigDevice, ...]:
    """MIG instances of one A100 40GB, largest first (as nvidia-smi lists them).
    3g.20gb takes GPU instance ids 1-2, 1g.5gb ids 7-14 (placements 4 and 0-3)."""
    out: list[MigDevice] = []
    gi = {"3g.20gb": 1, "1g.5gb": 7}
    for name in ("3g.20gb", "1g.5gb"):
        sms, mem, copy, dec = MIG_A100_40GB[name]
        for _ in range(profiles.get(name, 0)):
            out.append(MigDevice(name, gi[name], sms, mem, copy, dec))
            gi[name] += 1
    return tuple(out)


@dataclass(frozen=True)
class Slot:
    """One GPU installed in a node."""

    card: Card
    index: int
    bus_id: str  # "00000000:17:00.0"
    uuid: str
    serial: str
    load: Load | None = None
    mig: tuple[MigDevice, ...] | None = None  # MIG mode on with these instances

    @property
    def gpu(self) -> Gpu:
        return replace(self.card.gpu, uuid=self.uuid, bus_id=self.bus_id)

    @property
    def pci(self) -> str:
        """``0000:17:00.0``, as the kernel prints it."""
        return self.bus_id[4:].lower()


def slot_uuid(node: str, index: int) -> str:
    h = hexid(32, "dc-gpu-uuid", node, index)
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def install(node: str, card: Card, count: int) -> list[Slot]:
    """``count`` cards of one model in a node's first slots."""
    return [
        Slot(
            card=card,
            index=i,
            bus_id=f"00000000:{SLOTS[i]}:00.0",
            uuid=slot_uuid(node, i),
            serial=str(number(1320000000000, 1329999999999, "serial", node, i)),
        )
        for i in range(count)
    ]


# ------------------------------------------------------------------ nvidia-smi -q -x


def _mig_node(slot: Slot, dev: MigDevice, index: int) -> XmlNode:
    return (
        "mig_device",
        [
            ("index", str(index)),
            ("gpu_instance_id", str(dev.gi)),
            ("compute_instance_id", "0"),
            (
                "device_attributes",
                [
                    (
                        "shared",
                        [
                            ("multiprocessor_count", str(dev.sms)),
                            ("copy_engine_count", str(dev.copy)),
                            ("encoder_count", "0"),
                            ("decoder_count", str(dev.decoders)),
                            ("ofa_count", "1" if dev.profile == "3g.20gb" else "0"),
                            ("jpg_count", "1" if dev.profile == "3g.20gb" else "0"),
                        ],
                    )
                ],
            ),
            ("ecc_error_count", [("volatile_count", [("sram_uncorrectable", "0")])]),
            (
                "fb_memory_usage",
                [
                    ("total", f"{dev.memory_mib} MiB"),
                    ("reserved", "0 MiB"),
                    ("used", "13 MiB"),
                    ("free", f"{dev.memory_mib - 13} MiB"),
                ],
            ),
            (
                "bar1_memory_usage",
                [("total", "32767 MiB"), ("used", "0 MiB"), ("free", "32767 MiB")],
            ),
        ],
    )


def _gpu_node(slot: Slot) -> XmlNode:
    gpu = slot.card.gpu
    load = slot.load
    graphics, sm, mem, video = gpu.max_clocks_mhz
    busy = load is not None
    used = load.used_mib if load else (0 if slot.mig is None else 13 * len(slot.mig))
    free = gpu.memory_mib - gpu.reserved_mib - used
    power_draw = load.power_w if load else gpu.idle_power_w
    temp = load.temp_c if load else gpu.temp_c
    pstate = "P0" if busy or slot.mig is not None else "P8"
    util = "N/A" if slot.mig is not None else f"{load.util if load else 0} %"
    mem_util = "N/A" if slot.mig is not None else f"{load.util // 2 if load else 0} %"
    power = f"{gpu.power_limit_w:.2f} W"
    if slot.card.mig_capable:
        mode = "Enabled" if slot.mig is not None else "Disabled"
        mig_mode: XmlNode = ("mig_mode", [("current_mig", mode), ("pending_mig", mode)])
    else:
        mig_mode = ("mig_mode", _na("current_mig", "pending_mig"))
    mig_devices: XmlNode = (
        ("mig_devices", [_mig_node(slot, d, i) for i, d in enumerate(slot.mig)])
        if slot.mig
        else ("mig_devices", "None")
    )
    processes: list[XmlNode] = []
    if load is not None:
        processes.append(
            (
                "process_info",
                [
                    ("gpu_instance_id", "N/A"),
                    ("compute_instance_id", "N/A"),
                    ("pid", str(load.pid)),
                    ("type", "C"),
                    ("process_name", load.process),
                    ("used_memory", f"{load.used_mib - 4} MiB"),
                ],
            )
        )
    zero_ecc = [
        ("sram_correctable", "0"),
        ("sram_uncorrectable_parity", "0"),
        ("sram_uncorrectable_secded", "0"),
        ("dram_correctable", "0"),
        ("dram_uncorrectable", "0"),
    ]
    return (
        f'gpu id="{slot.bus_id}"',
        [
            ("product_name", gpu.product),
            ("product_brand", slot.card.brand),
            ("product_architecture", gpu.architecture),
            ("display_mode", "Disabled"),
            ("display_active", "Disabled"),
            ("persistence_mode", "Enabled"),
            ("addressing_mode", "None"),
            mig_mode,
            mig_devices,
            ("accounting_mode", "Disabled"),
            ("accounting_mode_buffer_size", "4000"),
            ("driver_model", _na("current_dm", "pending_dm")),
            ("serial", slot.serial),
            ("uuid", slot.uuid),
            ("minor_number", str(slot.index)),
            ("vbios_version", gpu.vbios),
            ("multigpu_board", "No"),
            ("board_id", f"0x{int(slot.bus_id.split(':')[1], 16) << 8:x}"),
            ("board_part_number", slot.card.board_part),
            ("gpu_part_number", f"{gpu.pci_device_id}-{hexid(3, 'part', gpu.product)}-A1"),
            ("gpu_fru_part_number", "N/A"),
            ("gpu_module_id", "1"),
            (
                "inforom_version",
                [
                    ("img_version", "G133.0242.00.03"),
                    ("oem_object", "2.1"),
                    ("ecc_object", "6.16"),
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
                [("reset_required", "No"), ("drain_and_reset_recommended", "No")],
            ),
            ("gsp_firmware_version", DRIVER),
            ("ibmnpu", _na("relaxed_ordering_mode")),
            (
                "pci",
                [
                    ("pci_bus", slot.bus_id.split(":")[1]),
                    ("pci_device", "00"),
                    ("pci_domain", "0000"),
                    ("pci_base_class", "3"),
                    ("pci_sub_class", "2"),
                    ("pci_device_id", f"{gpu.pci_device_id}10DE"),
                    ("pci_bus_id", slot.bus_id),
                    ("pci_sub_system_id", gpu.pci_subsystem_id),
                    (
                        "pci_gpu_link_info",
                        [
                            (
                                "pcie_gen",
                                [
                                    ("max_link_gen", str(gpu.pcie_gen)),
                                    ("current_link_gen", str(gpu.pcie_gen if busy else 1)),
                                    ("device_current_link_gen", str(gpu.pcie_gen if busy else 1)),
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
            ("fan_speed", "N/A"),
            ("performance_state", pstate),
            (
                "clocks_event_reasons",
                [
                    ("clocks_event_reason_gpu_idle", "Not Active" if busy else "Active"),
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
            (
                "bar1_memory_usage",
                [("total", "65536 MiB"), ("used", "1 MiB"), ("free", "65535 MiB")],
            ),
            (
                "cc_protected_memory_usage",
                [("total", "0 MiB"), ("used", "0 MiB"), ("free", "0 MiB")],
            ),
            ("compute_mode", "Default"),
            (
                "utilization",
                [
                    ("gpu_util", util),
                    ("memory_util", mem_util),
                    *[(f"{u}_util", "0 %") for u in ("encoder", "decoder", "jpeg", "ofa")],
                ],
            ),
            (
                "encoder_stats",
                [("session_count", "0"), ("average_fps", "0"), ("average_latency", "0")],
            ),
            ("fbc_stats", [("session_count", "0"), ("average_fps", "0"), ("average_latency", "0")]),
            ("dram_encryption_mode", _na("current_dram_encryption", "pending_dram_encryption")),
            ("ecc_mode", [("current_ecc", "Enabled"), ("pending_ecc", "Enabled")]),
            (
                "ecc_errors",
                [
                    ("volatile", list(zero_ecc)),
                    ("aggregate", [*zero_ecc, ("sram_threshold_exceeded", "No")]),
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
            (
                "remapped_rows",
                [
                    ("remapped_row_corr", "0"),
                    ("remapped_row_unc", "0"),
                    ("remapped_row_pending", "No"),
                    ("remapped_row_failure", "No"),
                    (
                        "row_remapper_histogram",
                        [
                            ("row_remapper_histogram_max", "640 bank(s)"),
                            ("row_remapper_histogram_high", "0 bank(s)"),
                            ("row_remapper_histogram_partial", "0 bank(s)"),
                            ("row_remapper_histogram_low", "0 bank(s)"),
                            ("row_remapper_histogram_none", "0 bank(s)"),
                        ],
                    ),
                ],
            ),
            (
                "temperature",
                [
                    ("gpu_temp", f"{temp} C"),
                    ("gpu_temp_tlimit", f"{87 - temp} C"),
                    ("gpu_temp_max_threshold", "95 C"),
                    ("gpu_temp_slow_threshold", "92 C"),
                    ("gpu_temp_max_gpu_threshold", "89 C"),
                    ("gpu_target_temperature", "N/A"),
                    ("memory_temp", "N/A"),
                    ("gpu_temp_max_mem_threshold", "N/A"),
                ],
            ),
            ("supported_gpu_target_temp", _na("gpu_target_temp_min", "gpu_target_temp_max")),
            (
                "gpu_power_readings",
                [
                    ("power_state", pstate),
                    ("average_power_draw", f"{power_draw + 0.6:.2f} W"),
                    ("instant_power_draw", f"{power_draw:.2f} W"),
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
                    ("power_state", pstate),
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
                    ("graphics_clock", f"{graphics if busy else 210} MHz"),
                    ("sm_clock", f"{sm if busy else 210} MHz"),
                    ("mem_clock", f"{mem if busy else 405} MHz"),
                    ("video_clock", f"{video if busy else 555} MHz"),
                ],
            ),
            (
                "applications_clocks",
                [("graphics_clock", f"{graphics} MHz"), ("mem_clock", f"{mem} MHz")],
            ),
            (
                "default_applications_clocks",
                [("graphics_clock", f"{graphics} MHz"), ("mem_clock", f"{mem} MHz")],
            ),
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
            ("max_customer_boost_clocks", [("graphics_clock", f"{graphics} MHz")]),
            ("clock_policy", _na("auto_boost", "auto_boost_default")),
            ("voltage", [("graphics_volt", "887.500 mV" if busy else "650.000 mV")]),
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
            ("processes", processes),
            ("accounted_processes", []),
            ("capabilities", [("egm", "disabled")]),
        ],
    )


def nvidia_smi_xml(slots: list[Slot], at: dt.datetime, attached: int | None = None) -> str:
    """``nvidia-smi -q -x`` for the node's GPUs. ``attached`` counts GPUs the driver
    knows but NVML cannot reach any more (a GPU lost from the bus is not printed)."""
    return smi_log([_gpu_node(s) for s in slots], at, attached)


# ------------------------------------------------------------------ nvidia-smi table
# ----------------------------------------------------------------------------- dmesg


def iso_kernel(t: dt.datetime) -> str:
    """The ``dmesg --time-format iso`` timestamp."""
    return f"{t:%Y-%m-%dT%H:%M:%S},{t.microsecond:06d}+00:00"


def dmesg_lines(host: Host, slots: list[Slot], extra: list[tuple[dt.datetime, str]]) -> str:
    """NVIDIA lines of ``dmesg --time-format iso`` after the collector's filter: the
    open kernel module loading for every GPU at boot, then ``extra`` lines."""
    build = "Release Build  (dvs-builder@U22-I3-AE18-23-3)  Thu Sep  4 01:54:27 UTC 2025"
    t0 = plus(host.boot_at, 6.12)
    lines: list[tuple[float, str]] = [
        (0.0, "nvidia: loading out-of-tree module taints kernel."),
        (0.038, "nvidia-nvlink: Nvlink Core is being initialized, major device number 508"),
    ]
    for i, slot in enumerate(slots):
        lines.append((0.04 + 0.003 * i, f"nvidia {slot.pci}: enabling device (0000 -> 0002)"))
    lines.append(
        (0.121, f"NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER}  {build}")
    )
    lines.append(
        (
            0.163,
            "nvidia-modeset: Loading NVIDIA UNIX Open Kernel Mode Setting Driver for x86_64  "
            f"{DRIVER}  {build}",
        )
    )
    for i, slot in enumerate(slots):
        lines.append((0.171 + 0.002 * i, f"[drm] [nvidia-drm] [GPU ID 0x0000{slot.pci[5:7]}00] "
                                          "Loading driver"))
    for i, slot in enumerate(slots):
        lines.append(
            (2.4 + 0.21 * i, f"[drm] Initialized nvidia-drm 0.0.0 for {slot.pci} on minor {i + 1}")
        )
    out = [f"{iso_kernel(plus(t0, off))} {text}\n" for off, text in lines]
    out += [f"{iso_kernel(t)} {text}\n" for t, text in sorted(extra)]
    return "".join(out)
