"""What a node's host files say about its kernel modules: the loaded nvidia / nouveau
modules (``host/modules.txt``) and the Secure Boot state (``host/secureboot.txt``).
and the NVIDIA GPUs bound to another driver (``host/lspci.txt``). Read once per run
through ``Facts.modules``, ``Facts.secure_boot`` and ``Facts.foreign_gpus``."""

from __future__ import annotations

from dataclasses import dataclass

from analyzers.results.models import Evidence
from bundle import Bundle, specs
from bundle.evidence import clip
from bundle.lspci import PciDevice


@dataclass(frozen=True, slots=True)
class Modules:
    """``host/modules.txt``: the loaded nvidia* / nouveau modules, with their lines."""

    path: str
    lines: dict[str, tuple[int, str]]

    def loaded(self, module: str) -> bool:
        return module in self.lines

    def evidence(self, module: str) -> Evidence:
        number, text = self.lines[module]
        return Evidence(path=self.path, line=number, excerpt=clip(text))


def read_modules(bundle: Bundle, name: str) -> Modules | None:
    """``host/modules.txt`` of ``name`` (``lsmod``-like lines), None where absent."""
    artifacts = bundle.node(name)
    text = artifacts.text(specs.MODULES)
    if text is None:
        return None
    lines: dict[str, tuple[int, str]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split()
        if fields:
            lines.setdefault(fields[0], (number, raw))
    return Modules(artifacts.path(specs.MODULES), lines)


def secure_boot(bundle: Bundle, name: str) -> tuple[bool | None, Evidence | None]:
    """(enabled, evidence line) from ``host/secureboot.txt`` (``mokutil --sb-state``)."""
    text = bundle.node(name).text(specs.SECUREBOOT)
    if text is None:
        return None, None
    path = specs.node_file(name, specs.SECUREBOOT)
    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.lower().split()
        if len(words) >= 2 and words[0] == "secureboot":
            evidence = Evidence(path=path, line=number, excerpt=clip(raw.strip()))
            state = {"enabled": True, "disabled": False}.get(words[1])
            return state, evidence
    return None, None


NVIDIA_DRIVERS = frozenset({"nvidia"})


def foreign_gpus(devices: list[PciDevice] | None) -> list[PciDevice]:
    """The NVIDIA GPUs (display/3D class) among a node's PCI devices (``NodeFacts.lspci``)
    bound to a driver other than nvidia."""
    return [device for device in devices or ()
            if device.is_gpu and device.driver is not None
            and device.driver not in NVIDIA_DRIVERS]
