"""What containerd's loaded CRI configuration says about each runtime handler: its
``runtime_type``, the binary it executes (``options.BinaryName``), which handler is the
default and whether CDI injection is on.

RT001 asks only whether ``nvidia`` is there; RT011 asks whether it can work and RT012
whether pods that name no RuntimeClass get it. Read from the config dump (the loaded
configuration), in whichever place that containerd keeps the CRI runtimes: ``cri``
(1.x, config version 1), ``io.containerd.grpc.v1.cri`` (1.x, version 2) or
``io.containerd.cri.v1.runtime`` (2.x).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from analyzers.facts.containerd_merge import CRI_GRPC, CRI_RUNTIME, CRI_V1_ID, DEFAULT_RUNTIME

NVIDIA_PREFIX = "nvidia"


@dataclass(frozen=True, slots=True)
class RuntimeEntry:
    name: str
    runtime_type: str | None    # None or "": containerd cannot create containers with it
    binary: str | None          # options.BinaryName (None: the shim's default, runc)


@dataclass(frozen=True, slots=True)
class CriRuntimes:
    default: str                # default_runtime_name (containerd's default: runc)
    enable_cdi: bool            # CDI device injection by containerd itself
    runtimes: dict[str, RuntimeEntry]

    @property
    def nvidia_default(self) -> bool:
        """The default handler is one of the NVIDIA ones (nvidia, nvidia-cdi, ...)."""
        return self.default.startswith(NVIDIA_PREFIX)


def _table(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def cri_runtimes(config: Mapping[str, Any] | None) -> CriRuntimes | None:
    """The CRI runtimes of a loaded configuration (None: no dump, or no CRI runtimes)."""
    if config is None:
        return None
    plugins = _table(config.get("plugins"))
    for key in (CRI_RUNTIME, CRI_GRPC, CRI_V1_ID):
        plugin = _table(plugins.get(key))
        containerd = _table(plugin.get("containerd"))
        runtimes = _table(containerd.get("runtimes"))
        if not runtimes:
            continue
        entries = {}
        for name, raw in runtimes.items():
            entry = _table(raw)
            options = _table(entry.get("options"))
            binary = _text(options.get("BinaryName")) or _text(options.get("binaryName"))
            entries[name] = RuntimeEntry(name, _text(entry.get("runtime_type")), binary or None)
        default = _text(containerd.get("default_runtime_name"))
        cdi = plugin.get("enable_cdi")
        # containerd 2.x turns CDI on by default; 1.7 off
        enable_cdi = cdi if isinstance(cdi, bool) else key == CRI_RUNTIME
        return CriRuntimes(default or DEFAULT_RUNTIME, enable_cdi, entries)
    return None
