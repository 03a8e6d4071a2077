"""Parse ``host/lspci.txt``: the output of ``lspci -nnk -d 10de:`` (also ``-D``, ``-v``).

Each device starts at column 0 with its address, class name and ``[class code]``, then
``: <vendor and device name> [10de:<device id>]``; indented lines follow, among them
``Kernel driver in use: <driver>`` and ``Kernel modules: <a>, <b>``. A device without a
driver bound has no ``Kernel driver in use`` line. Pure format parsing: no judgement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# "0000:52:00.0 VGA compatible controller [0300]: NVIDIA Corporation TU104GL ... [10de:1eb1]"
_DEVICE = re.compile(
    r"^(?P<address>[0-9A-Fa-f]{0,8}:?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+"
    r"(?P<kind>[^\[\n]*?)\s*\[(?P<class_code>[0-9A-Fa-f]{4})\]:\s*(?P<name>.*?)"
    r"(?:\s*\[(?P<vendor>[0-9A-Fa-f]{4}):(?P<device>[0-9A-Fa-f]{4})\])?"
    r"(?:\s*\(rev [^)]*\))?(?:\s*\(prog-if[^)]*\))?\s*$")
_IN_USE = re.compile(r"^\s+Kernel driver in use:\s*(?P<driver>\S+)")
_MODULES = re.compile(r"^\s+Kernel modules:\s*(?P<modules>.*)$")
# PCI class codes of a GPU: VGA compatible controller, 3D controller, display controller.
GPU_CLASSES = frozenset({"0300", "0302", "0380"})
MAX_DEVICES = 256


@dataclass(frozen=True, slots=True)
class PciDevice:
    """One NVIDIA device of the listing, with the lines that name it and its driver."""

    address: str
    kind: str
    class_code: str
    name: str
    device_id: str
    line: int
    text: str
    driver: str | None = None
    driver_line: int | None = None
    driver_text: str = ""
    modules: tuple[str, ...] = ()

    @property
    def is_gpu(self) -> bool:
        return self.class_code in GPU_CLASSES


def parse_lspci(text: str) -> list[PciDevice]:
    """The devices of an ``lspci -nnk`` listing, in order (at most ``MAX_DEVICES``)."""
    devices: list[PciDevice] = []
    current: dict[str, object] | None = None

    def close() -> None:
        if current is not None and len(devices) < MAX_DEVICES:
            devices.append(PciDevice(**current))  # type: ignore[arg-type]

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line:
            continue
        if not line[0].isspace():
            match = _DEVICE.match(line)
            close()
            current = None
            if match is not None:
                current = {
                    "address": match["address"], "kind": match["kind"].strip(),
                    "class_code": match["class_code"].lower(),
                    "name": match["name"].strip(),
                    "device_id": (match["device"] or "").lower(),
                    "line": number, "text": line}
            continue
        if current is None:
            continue
        in_use = _IN_USE.match(line)
        if in_use is not None:
            current["driver"] = in_use["driver"]
            current["driver_line"] = number
            current["driver_text"] = line.strip()
            continue
        modules = _MODULES.match(line)
        if modules is not None:
            current["modules"] = tuple(m.strip() for m in modules["modules"].split(",")
                                       if m.strip())
    close()
    return devices
