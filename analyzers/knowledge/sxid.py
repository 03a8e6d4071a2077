"""The NVSwitch SXid catalog (``analyzers/data/sxid.toml``): lookup and severity.

An SXid is the NVSwitch's counterpart of a GPU Xid, printed by the ``nvidia-nvswitch``
driver on HGX/DGX systems. Each entry names a class (``corrected``, ``non-fatal``,
``fatal``, ``always-fatal``) whose meaning, action and severity it takes unless it gives
its own. A number the catalog does not know is judged from the severity the line itself
printed: ``Fatal`` is ``high``, ``Non-fatal`` is ``medium``.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from typing import Any

from analyzers.knowledge import packaged

__all__ = ["SXidInfo", "guide", "lookup"]


@dataclass(frozen=True, slots=True)
class SXidInfo:
    sxid: int
    name: str
    kind: str        # corrected, non-fatal, fatal, always-fatal ("" when unknown)
    severity: str    # critical, high, medium, low, info
    meaning: str
    action: str
    source: str
    known: bool = True


@functools.cache
def _data() -> dict[str, Any]:
    return tomllib.loads(packaged.read_toml("sxid"))


def guide() -> str:
    """NVIDIA's Fabric Manager User Guide, the document the catalog follows."""
    return str(_data()["guide"])


@functools.lru_cache(maxsize=1024)  # bounded: the numbers come from the bundle
def lookup(number: int, printed: str | None = None) -> SXidInfo:
    """The catalog entry of ``number``; for an unknown number, a placeholder judged from
    the severity the line printed (``fatal`` / ``non-fatal`` / None)."""
    data = _data()
    entry = data["sxid"].get(str(number))
    if entry is None:
        severity = {"fatal": "high"}.get(printed or "", "medium")
        return SXidInfo(number, "not in the SXid catalog", printed or "", severity,
                        "An NVSwitch error this catalog does not describe.",
                        "Read the Fabric Manager User Guide's SXid tables and the switch's "
                        "other SXids.", guide(), known=False)
    kind = entry["class"]
    defaults = data["class"].get(kind, {})
    return SXidInfo(number, entry["name"], kind,
                    entry.get("severity", defaults.get("severity", "medium")),
                    entry.get("meaning", defaults.get("meaning", "")),
                    entry.get("action", defaults.get("action", "")), entry["source"])
