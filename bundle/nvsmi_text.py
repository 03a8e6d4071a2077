"""``nvidia-smi -q`` text output, read into the same structures as ``nvidia-smi -q -x``.

Collections sometimes hold the text report where the XML was expected (a collector
configured with ``-q`` only, a support engineer's paste). Parsed as XML it is only
"invalid XML", and its remapped-row, ECC and recovery readings are lost. The text is an
indented outline instead: a ``==============NVSMI LOG==============`` banner, then
``Label : value`` lines and section headings, four spaces a level, with one
``GPU <bus id>`` section per GPU. Some headings carry a value and children at once
(``HW Slowdown : Not Active`` above ``HW Thermal Slowdown``).

:func:`parse_nvidia_smi_text` turns the outline into the element tree that
``nvidia-smi -q -x`` prints for the same readings (the same tag names and nesting,
``<gpu id="...">`` included) and reads that tree with :func:`bundle.nvsmi.parse_nvidia_smi`,
so :class:`~bundle.nvsmi.NvidiaSmi`, :class:`~bundle.nvsmi.GPU` and every reader of
:mod:`bundle.nvsmi_health` work on it unchanged. A label is translated by the table of its
section (:data:`_CHILD`); a label the table does not name becomes its lowercase slug
("Display Mode" becomes ``display_mode``), which is the XML tag for most fields. The
tables were checked against the text outputs under ``tests/fixtures/real/smi/text``
(R460 and R550 drivers); labels of other releases that are not there fall back to
slugs, so a renamed label reads as absent rather than wrong.

What cannot carry over: :func:`bundle.nvsmi_health.locate` searches XML lines, so a
finding on a text-read GPU has no quoted line.

Cost: one pass over the lines, each split with ``str.find``; the nesting kept is at
most :data:`MAX_DEPTH` levels (a deeper line is attached at that depth), so neither
the outline nor the element tree can grow deeper than real output does. A text of more
than :data:`MAX_LINES` lines is refused before it is split (at the limit, about 200,000
lines, reading takes a few seconds: outline, tree and the XML round trip cost some
three times what parsing the same readings as XML does).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from bundle.nvsmi import NvidiaSmi, XMLProblem, parse_nvidia_smi

__all__ = [
    "BANNER",
    "MAX_DEPTH",
    "MAX_LINES",
    "TextProblem",
    "looks_like_text",
    "parse_nvidia_smi_text",
]

BANNER = "==============NVSMI LOG=============="
MAX_DEPTH = 12
"""Outline levels kept; real output nests five deep (GPU, PCI, link info, generation)."""
MAX_LINES = 200_000
"""Lines read at most. A GPU's report is about 200 lines, so a 72-GPU node prints some
15,000; the text path costs a few times the XML path per line, so a larger file is
refused rather than read."""

_SNIFF_BYTES = 4096
_TAG_MAX = 64
_GPU_HEADER = re.compile(r"GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_NON_WORD = re.compile(r"[^0-9a-z]+")


class TextProblem(XMLProblem):
    """The data is not ``nvidia-smi -q`` text; ``line`` says where that was decided."""


def looks_like_text(data: bytes) -> bool:
    """The data starts (after blank lines) with the ``nvidia-smi -q`` banner."""
    head = data[:_SNIFF_BYTES].decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    return head.startswith(BANNER)


# ----------------------------------------------------------------------------- outline


@dataclass(slots=True)
class _Line:
    label: str
    value: str | None  # None for a heading without ": value"
    number: int
    children: list[_Line] = field(default_factory=list)


def _split(body: str) -> tuple[str, str | None]:
    at = body.find(" : ")
    if at >= 0:
        return body[:at].strip(), body[at + 3:].strip()
    if body.endswith(" :"):
        return body[:-2].strip(), ""
    return body, None


def _outline(lines: list[str], first_number: int) -> list[_Line]:
    """The lines as a tree by indentation; blank lines are skipped."""
    top: list[_Line] = []
    open_lines: list[tuple[int, _Line]] = []  # (indent, line) of the current ancestors
    for number, raw in enumerate(lines, start=first_number):
        text = _NOT_XML.sub("", raw.expandtabs(4).rstrip())
        body = text.lstrip(" ")
        if not body:
            continue
        indent = len(text) - len(body)
        label, value = _split(body)
        line = _Line(label, value, number)
        while open_lines and open_lines[-1][0] >= indent:
            open_lines.pop()
        (open_lines[-1][1].children if open_lines else top).append(line)
        if len(open_lines) < MAX_DEPTH:
            open_lines.append((indent, line))
    return top


# ------------------------------------------------------------------------- label → tag

_CURRENT_PENDING = {
    "mig_mode": ("current_mig", "pending_mig"),
    "driver_model": ("current_dm", "pending_dm"),
    "gpu_operation_mode": ("current_gom", "pending_gom"),
    "ecc_mode": ("current_ecc", "pending_ecc"),
    "dram_encryption_mode": ("current_dram_encryption", "pending_dram_encryption"),
}
_CLOCKS = {"Graphics": "graphics_clock", "SM": "sm_clock", "Memory": "mem_clock",
           "Video": "video_clock"}
_ECC_COUNTERS = {"SRAM Uncorrectable SEC-DED": "sram_uncorrectable_secded"}
_HISTOGRAM = {name: f"row_remapper_histogram_{name.lower()}"
              for name in ("Max", "High", "Partial", "Low", "None")}

_CHILD: dict[str, dict[str, str]] = {
    "gpu": {
        "Serial Number": "serial",
        "GPU UUID": "uuid",
        "Module ID": "gpu_module_id",
        "FRU Part Number": "gpu_fru_part_number",
        "GPU C2C Mode": "c2c_mode",
        "Inforom BBX Object Flush": "inforom_bbx_flush",
        "Conf Compute Protected Memory Usage": "cc_protected_memory_usage",
        "MIG devices": "mig_devices",
    },
    **{section: {"Current": current, "Pending": pending}
       for section, (current, pending) in _CURRENT_PENDING.items()},
    "inforom_version": {"Image Version": "img_version", "Power Management Object": "pwr_object"},
    "inforom_bbx_flush": {"Latest Timestamp": "latest_timestamp",
                          "Latest Duration": "latest_duration"},
    "pci": {
        "Bus": "pci_bus", "Device": "pci_device", "Domain": "pci_domain",
        "Base Classcode": "pci_base_class", "Sub Classcode": "pci_sub_class",
        "Device Id": "pci_device_id", "Bus Id": "pci_bus_id",
        "Sub System Id": "pci_sub_system_id", "GPU Link Info": "pci_gpu_link_info",
        "Bridge Chip": "pci_bridge_chip", "Replays Since Reset": "replay_counter",
        "Replay Number Rollovers": "replay_rollover_counter",
        "Tx Throughput": "tx_util", "Rx Throughput": "rx_util",
    },
    "pci_gpu_link_info": {"PCIe Generation": "pcie_gen", "Link Width": "link_widths"},
    "pcie_gen": {"Max": "max_link_gen", "Current": "current_link_gen",
                 "Device Current": "device_current_link_gen",
                 "Device Max": "max_device_link_gen", "Host Max": "max_host_link_gen"},
    "link_widths": {"Max": "max_link_width", "Current": "current_link_width"},
    "pci_bridge_chip": {"Type": "bridge_chip_type", "Firmware": "bridge_chip_fw"},
    "utilization": {"Gpu": "gpu_util", "Memory": "memory_util", "Encoder": "encoder_util",
                    "Decoder": "decoder_util", "JPEG": "jpeg_util", "OFA": "ofa_util"},
    "encoder_stats": {"Active Sessions": "session_count"},
    "fbc_stats": {"Active Sessions": "session_count"},
    "volatile": _ECC_COUNTERS,
    "aggregate": _ECC_COUNTERS,
    "single_bit": {"Texture Shared": "texture_shm"},
    "double_bit": {"Texture Shared": "texture_shm"},
    "retired_pages": {"Pending Page Blacklist": "pending_blacklist",
                      "Pending Page Retirement": "pending_retirement",
                      "Pending Retirement": "pending_retirement"},
    "remapped_rows": {"Correctable Error": "remapped_row_corr",
                      "Uncorrectable Error": "remapped_row_unc",
                      "Pending": "remapped_row_pending",
                      "Remapping Failure Occurred": "remapped_row_failure",
                      "Bank Remap Availability Histogram": "row_remapper_histogram"},
    "row_remapper_histogram": _HISTOGRAM,
    "temperature": {
        "GPU Current Temp": "gpu_temp",
        "GPU T.Limit Temp": "gpu_temp_tlimit",
        "GPU Shutdown Temp": "gpu_temp_max_threshold",
        "GPU Slowdown Temp": "gpu_temp_slow_threshold",
        "GPU Max Operating Temp": "gpu_temp_max_gpu_threshold",
        "GPU Shutdown T.Limit Temp": "gpu_temp_max_tlimit_threshold",
        "GPU Slowdown T.Limit Temp": "gpu_temp_slow_tlimit_threshold",
        "GPU Max Operating T.Limit Temp": "gpu_temp_max_gpu_tlimit_threshold",
        "GPU Target Temperature": "gpu_target_temperature",
        "Memory Current Temp": "memory_temp",
        "Memory Max Operating Temp": "gpu_temp_max_mem_threshold",
        "Memory Max Operating T.Limit Temp": "gpu_temp_max_mem_tlimit_threshold",
    },
    **{section: _CLOCKS for section in ("clocks", "applications_clocks",
                                          "default_applications_clocks", "deferred_clocks",
                                          "max_clocks", "max_customer_boost_clocks")},
    "voltage": {"Graphics": "graphics_volt"},
    "fabric": {"CliqueId": "cliqueId", "ClusterUUID": "clusterUuid"},
    "process_info": {"GPU instance ID": "gpu_instance_id",
                     "Compute instance ID": "compute_instance_id",
                     "Process ID": "pid", "Name": "process_name",
                     "Used GPU Memory": "used_memory"},
}
# Clock slowdown reasons: the text nests the HW reasons under "HW Slowdown"; the XML
# prints every reason as a sibling with the block's prefix.
_REASON_BLOCKS = {"Clocks Event Reasons": ("clocks_event_reasons", "clocks_event_reason_"),
                  "Clocks Throttle Reasons": ("clocks_throttle_reasons",
                                              "clocks_throttle_reason_")}
_REASONS = {"Idle": "gpu_idle", "Display Clock Setting": "display_clocks_setting"}
# Retired pages: the text prints the counts flat; the XML nests them.
_RETIRED_COUNTS = {"Single Bit ECC": "multiple_single_bit_retirement",
                   "Double Bit ECC": "double_bit_retirement"}


def _slug(label: str) -> str:
    """A tag for a label no table names: 'Display Mode' → 'display_mode'."""
    slug = _NON_WORD.sub("_", label.lower()).strip("_")[:_TAG_MAX]
    return slug if slug and not slug[0].isdigit() else f"field_{slug}"


def _tag(section: str, label: str) -> str:
    return _CHILD.get(section, {}).get(label) or _slug(label)


def _add(parent: ET.Element, tag: str, value: str | None) -> ET.Element:
    element = ET.SubElement(parent, tag)
    if value is not None:
        element.text = value
    return element


# ------------------------------------------------------------------------ outline → XML


def _fill(parent: ET.Element, lines: list[_Line]) -> None:
    """Add ``lines`` below ``parent`` (a section element), translating labels."""
    for line in lines:
        if parent.tag == "gpu" and line.label in _REASON_BLOCKS:
            _reasons(parent, line)
        elif parent.tag == "gpu" and line.label == "Processes":
            _processes(parent, line)
        elif parent.tag == "retired_pages" and line.label in _RETIRED_COUNTS:
            block = _add(parent, _RETIRED_COUNTS[line.label], None)
            _add(block, "retired_count", line.value)
        else:
            element = _add(parent, _tag(parent.tag, line.label), line.value)
            _fill(element, line.children)


def _reasons(gpu: ET.Element, line: _Line) -> None:
    tag, prefix = _REASON_BLOCKS[line.label]
    block = _add(gpu, tag, line.value)
    pending = list(reversed(line.children))
    while pending:  # depth-first, in document order; nesting is flattened
        reason = pending.pop()
        name = _REASONS.get(reason.label) or _slug(reason.label)
        _add(block, prefix + name, reason.value)
        pending.extend(reversed(reason.children))


def _processes(gpu: ET.Element, line: _Line) -> None:
    """One ``process_info`` per process: a new one starts where a label repeats."""
    block = _add(gpu, "processes", line.value)
    current: ET.Element | None = None
    seen: set[str] = set()
    for field_line in line.children:
        tag = _tag("process_info", field_line.label)
        if current is None or tag in seen:
            current = _add(block, "process_info", None)
            seen = set()
        seen.add(tag)
        element = _add(current, tag, field_line.value)
        _fill(element, field_line.children)


def _tree(top: list[_Line]) -> ET.Element:
    root = ET.Element("nvidia_smi_log")
    for line in top:
        header = _GPU_HEADER.fullmatch(line.label) if line.value is None else None
        if header is not None:
            gpu = ET.SubElement(root, "gpu", id=header[1])
            _fill(gpu, line.children)
        else:
            element = _add(root, _slug(line.label), line.value)
            _fill(element, line.children)
    return root


def parse_nvidia_smi_text(data: bytes) -> NvidiaSmi:
    """Read ``nvidia-smi -q`` text into the structures :func:`parse_nvidia_smi` returns.

    Raises :class:`TextProblem` when the banner is missing (the data is something else)
    or the data has more than :data:`MAX_LINES` lines. Of a repeated report
    (``nvidia-smi -q -l``) only the first is read.
    """
    if max(data.count(b"\n"), data.count(b"\r")) > MAX_LINES:
        raise _too_long()
    lines = data.decode("utf-8", errors="replace").lstrip("\ufeff").splitlines()
    if len(lines) > MAX_LINES:  # other line breaks that str.splitlines honours
        raise _too_long()
    banner = next((index for index, line in enumerate(lines) if line.strip()), None)
    if banner is None or lines[banner].strip() != BANNER:
        where = (banner or 0) + 1
        raise TextProblem(f"not nvidia-smi -q text: the first line is not {BANNER}", where, 1)
    # 'nvidia-smi -q -l N' repeats the whole report; the first one is read.
    end = next((index for index in range(banner + 1, len(lines))
                if lines[index].strip() == BANNER), len(lines))
    root = _tree(_outline(lines[banner + 1:end], banner + 2))
    return parse_nvidia_smi(ET.tostring(root, encoding="utf-8"))


def _too_long() -> TextProblem:
    return TextProblem(f"nvidia-smi -q text of more than {MAX_LINES:,} lines is not read "
                       "(the limit of bundle.nvsmi_text)", MAX_LINES + 1, 1)
