"""``nvidia-smi -q -x`` output, parsed with entity declarations forbidden.

Element names changed across driver releases (``clocks_throttle_reasons`` became
``clocks_event_reasons``, ``power_readings`` became ``gpu_power_readings``); the
accessors take alternatives so rules need not care which schema a node printed.

Every node's document stays parsed for the whole run, so each ``<gpu>`` is kept as a
:class:`~bundle.flatxml.FlatElement` (about 3 KB) rather than as an ElementTree
subtree (about 45 KB); the tree itself is dropped once the GPUs are read.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from xml.parsers import expat

from bundle.flatxml import FlatElement, flatten


class XMLProblem(ValueError):
    """The document cannot be read; ``line`` and ``column`` (1-based) say where."""

    def __init__(self, message: str, line: int | None = None,
                 column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column

    @property
    def where(self) -> str | None:
        return f"line {self.line}, column {self.column}" if self.line is not None else None


class UnsafeXML(XMLProblem):
    """The document declares entities or external references."""


def parse_xml(data: bytes) -> ET.Element:
    """Parse XML refusing DTD entity declarations (billion laughs, external entities)."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()
    parser.buffer_text = True
    message = "the document declares XML entities, which are refused"

    def _refuse(*_: object) -> None:
        raise UnsafeXML(message)

    def _refuse_reference(*_: object) -> int:
        raise UnsafeXML(message)

    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.EntityDeclHandler = _refuse
    parser.UnparsedEntityDeclHandler = _refuse
    parser.ExternalEntityRefHandler = _refuse_reference
    try:
        parser.Parse(data, True)
    except UnsafeXML as exc:
        raise UnsafeXML(str(exc), parser.CurrentLineNumber,
                        parser.CurrentColumnNumber + 1) from None
    except expat.ExpatError as exc:
        raise XMLProblem(f"invalid XML: {expat.ErrorString(exc.code)}", exc.lineno,
                         exc.offset + 1) from None
    return builder.close()


def text_of(element: FlatElement | ET.Element | None, *paths: str) -> str | None:
    """First non-empty text among alternative child paths; 'N/A' counts as absent."""
    if element is None:
        return None
    for path in paths:
        found = element.find(path)
        if found is not None and found.text is not None:
            value = found.text.strip()
            if value and value not in ("N/A", "Not Supported", "[N/A]"):
                return value
    return None


@dataclass(frozen=True, slots=True)
class GPUProcess:
    pid: int | None
    name: str
    used_memory_mib: int | None


@dataclass(frozen=True, slots=True)
class GPU:
    bus_id: str
    uuid: str | None
    product_name: str | None
    product_brand: str | None
    minor_number: int | None
    fb_total_mib: int | None
    fb_used_mib: int | None
    gpu_util_percent: int | None
    processes: tuple[GPUProcess, ...]
    element: FlatElement = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class NvidiaSmi:
    driver_version: str | None
    cuda_version: str | None
    gpus: tuple[GPU, ...]


def number(text: str | None) -> int | None:
    """Leading integer of values such as '24576 MiB' or '0 %'."""
    if not text:
        return None
    head = text.split()[0]
    try:
        return int(float(head))
    except (ValueError, OverflowError):  # "abc", "nan"; "1e999" is infinite
        return None


def parse_nvidia_smi(data: bytes) -> NvidiaSmi:
    root = parse_xml(data)
    if root.tag != "nvidia_smi_log":
        raise XMLProblem(f"root element is <{root.tag}>, expected <nvidia_smi_log>", 1, 1)
    return NvidiaSmi(
        driver_version=text_of(root, "driver_version"),
        cuda_version=text_of(root, "cuda_version"),
        gpus=tuple(_gpu(flatten(element)) for element in root.findall("gpu")),
    )


def _gpu(element: FlatElement) -> GPU:
    processes = []
    for proc in element.findall("processes/process_info"):
        processes.append(GPUProcess(
            pid=number(text_of(proc, "pid")),
            name=text_of(proc, "process_name") or "",
            used_memory_mib=number(text_of(proc, "used_memory")),
        ))
    return GPU(
        bus_id=element.get("id") or text_of(element, "pci/pci_bus_id") or "",
        uuid=text_of(element, "uuid"),
        product_name=text_of(element, "product_name"),
        product_brand=text_of(element, "product_brand"),
        minor_number=number(text_of(element, "minor_number")),
        fb_total_mib=number(text_of(element, "fb_memory_usage/total")),
        fb_used_mib=number(text_of(element, "fb_memory_usage/used")),
        gpu_util_percent=number(text_of(element, "utilization/gpu_util")),
        processes=tuple(processes),
        element=element,
    )
