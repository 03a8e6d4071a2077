"""CDI device names: those a container asked for (from ``unresolvable CDI devices``
messages) and those the node's specs define (``nodes/<n>/cdi/*``, YAML or JSON).

A CDI device is ``<vendor>/<class>=<name>`` (``nvidia.com/gpu=0``,
``management.nvidia.com/gpu=GPU-<uuid>``, ``nvidia.com/gpu=all``). The runtime resolves
each requested name against the ``kind`` and ``devices[].name`` of every spec under
``/etc/cdi`` and ``/var/run/cdi``; a name no spec defines is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bundle import NodeArtifacts, specs
from bundle.yamldoc import YamlOverBudget, load_yaml

_AFTER = re.compile(r"unresolvable CDI devices?\s+(.*)", re.IGNORECASE | re.DOTALL)
# a name starts where no name character precedes it: a run of them without "/" is then
# tried once, not again from each of its positions (quadratic on hostile messages)
_DEVICE = re.compile(r"(?<![a-z0-9.-])([a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9_.-]*)"
                     r"=([A-Za-z0-9_.:-]*[A-Za-z0-9_.-])")
_UUID = re.compile(r"^(?:GPU|MIG)-[0-9a-fA-F-]{8,}$")
MAX_DEVICES = 64


@dataclass(frozen=True, slots=True)
class CdiSpec:
    file: str                 # name under cdi/
    kind: str
    devices: tuple[str, ...]


def requested(message: str) -> list[tuple[str, str]]:
    """(kind, name) of each device an ``unresolvable CDI devices`` message names."""
    after = _AFTER.search(message)
    if after is None:
        return []
    found: dict[tuple[str, str], None] = {}  # a set in message order: linear in the names
    for match in _DEVICE.finditer(after[1]):
        found[(match[1], match[2])] = None
        if len(found) == MAX_DEVICES:
            break
    return list(found)


def _device_name(value: object) -> str | None:
    """A device's name as the runtime compares it: a string, or a YAML integer (``name:
    0``). An integer past 64 bits is no device name (and a hex one past 4,300 decimal
    digits cannot even be turned into text)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and -(1 << 63) <= value < 1 << 64:
        return str(value)
    return None


def is_uuid(name: str) -> bool:
    return bool(_UUID.match(name))


def node_specs(artifacts: NodeArtifacts) -> list[CdiSpec]:
    """The CDI specs collected from the node; a file that is no spec is a recorded
    problem and left out."""
    found: list[CdiSpec] = []
    for name, text in sorted(artifacts.cdi_files.items()):
        path = artifacts.path(specs.CDI_DIR + name)
        try:
            data = load_yaml(text)
        except YamlOverBudget as exc:
            artifacts.bundle.problem(path, f"CDI spec refused: {exc}", kind="refused", lost=True)
            continue
        except ValueError as exc:
            artifacts.bundle.problem(path, f"CDI spec not understood: {exc}", lost=True)
            continue
        kind = data.get("kind") if isinstance(data, dict) else None
        devices = data.get("devices") if isinstance(data, dict) else None
        if not isinstance(kind, str) or not isinstance(devices, list):
            artifacts.bundle.problem(path, "CDI spec without 'kind' and 'devices'", lost=True)
            continue
        names = tuple(device for d in devices if isinstance(d, dict)
                      and (device := _device_name(d.get("name"))) is not None)
        found.append(CdiSpec(name, kind, names))
    return found
