"""The Xid catalog (``analyzers/data/xid.toml``): lookup, action ranking, severity.

The catalog is data; this module only loads it (once) and applies two documented
policies on top:

:func:`action_rank` orders NVIDIA's resolution buckets by how disruptive the action is
for the node, so that the strongest action among several Xids can be picked:

====  ==========================================================================
rank  buckets
====  ==========================================================================
0     ``IGNORE``, ``IGNORE (sympathetic)``, ``SYMPATHETIC_REPORT_SOLO``, no bucket
      (``NONE_LISTED``, ``UNDOCUMENTED``, ``N/A ...``, empty, unrecognised)
1     investigate only: ``CHECK_APP/CUDA``, ``INVESTIGATE_*``, ``XID_137_FLOW``,
      ``CHECK_NVLINK_FAILURE_FLOW``, ``CHECK_UVM``
2     ``RESTART_APP``, ``XID_154``, ``XID_154_EVAL``, ``WORKFLOW_XID_13``,
      ``WORKFLOW_XID_31``
3     ``WORKFLOW_XID_45``, ``RESTART_FM`` (restart Fabric Manager when alone)
4     ``RESTART_VM``
5     ``WORKFLOW_NVLINK_ERR``, ``WORKFLOW_NVLINK5_ERR``, ``WORKFLOW_XID_48``
      (decode first; the worst outcome is a GPU reset)
6     ``RESET_GPU``
7     ``UPDATE_SWFW`` (new driver/firmware; can wait for a maintenance window)
8     ``RESTART_BM``
9     ``CHECK_MECHANICALS`` (hands on the hardware)
10    ``CONTACT_SUPPORT``
====  ==========================================================================

:func:`severity_for` maps an Xid to ``critical`` / ``high`` / ``medium`` / ``low`` /
``info``. First matching rule wins:

1. Not in the catalog: ``medium`` (cannot be judged, worth a look).
2. An explicit entry in ``_SEVERITY_OVERRIDES`` (codes whose NVIDIA bucket is missing
   or understates them; each is commented there).
3. Application errors (``app_error``): ``info`` when the immediate action is
   ``IGNORE`` or ``WORKFLOW_XID_45`` (43, 45), else ``low`` (13, 31, 68, 109).
4. Category ``unused`` (legacy codes, not expected on Ampere+): ``medium``.
5. Immediate action ``CONTACT_SUPPORT``, ``RESTART_BM`` or ``CHECK_MECHANICALS``
   (the fallen-off-the-bus / hardware-service class): ``critical``.
6. ``RESET_GPU``, ``RESTART_VM``, ``UPDATE_SWFW`` or a decode workflow (ranks 4-7):
   ``high``.
7. ``RESTART_APP``, ``XID_154``, ``CHECK_UVM``, ``WORKFLOW_XID_45``: ``medium``.
8. ``IGNORE``: ``info`` when the follow-up is also ``IGNORE``/none or the category is
   ``informational``, else ``low``.
9. Anything else: ``medium``.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from analyzers.knowledge import packaged

__all__ = [
    "SEVERITIES",
    "XidInfo",
    "action_rank",
    "catalog",
    "is_known_action",
    "lookup",
    "severity_for",
]

SEVERITIES: tuple[str, ...] = ("critical", "high", "medium", "low", "info")
"""Severity names, most severe first."""

_FAMILIES = ("A100", "H100", "B100", "GB200")


@dataclass(frozen=True)
class XidInfo:
    """One catalog entry.

    ``action``/``action_investigatory`` are NVIDIA's resolution bucket identifiers
    (immediate and follow-up). ``applies_to`` lists the GPU families the catalog marks
    as affected (``None``: the catalog does not say). ``app_error`` means the Kubernetes
    device plugin does not mark the GPU unhealthy for it, from ``app_error_since`` when
    that is set. ``known`` is ``False`` for numbers missing from the catalog.
    """

    xid: int
    name: str
    meaning: str
    category: str
    action: str
    action_investigatory: str | None
    app_error: bool
    app_error_since: str | None
    applies_to: tuple[str, ...] | None
    mnemonic: str | None
    source: str
    known: bool = True


_RANKS: Mapping[str, int] = MappingProxyType(
    {
        "IGNORE": 0,
        "IGNORE (SYMPATHETIC)": 0,
        "SYMPATHETIC_REPORT_SOLO": 0,
        "NONE_LISTED": 0,
        "UNDOCUMENTED": 0,
        "N/A INFORMATIONAL ONLY REGARDING ANOTHER XID": 0,
        "CHECK_APP/CUDA": 1,
        "INVESTIGATE_SW": 1,
        "INVESTIGATE_SW_USER": 1,
        "INVESTIGATE_HOST": 1,
        "INVESTIGATE_PEER_DEVICE": 1,
        "INVESTIGATE_LINK_SI": 1,
        "INVESTIGATE_LINK_SI_AND_CABLES": 1,
        "XID_137_FLOW": 1,
        "CHECK_NVLINK_FAILURE_FLOW": 1,
        "CHECK_UVM": 1,
        "RESTART_APP": 2,
        "XID_154": 2,
        "XID_154_EVAL": 2,
        "WORKFLOW_XID_13": 2,
        "WORKFLOW_XID_31": 2,
        "WORKFLOW_XID_45": 3,
        "RESTART_FM": 3,
        "SOLO: RESTART_FM NOT SOLO: IGNORE (FOLLOW OTHER XID)": 3,
        "RESTART_VM": 4,
        "WORKFLOW_NVLINK_ERR": 5,
        "WORKFLOW_NVLINK5_ERR": 5,
        "WORKFLOW_XID_48": 5,
        "RESET_GPU": 6,
        "UPDATE_SWFW": 7,
        "RESTART_BM": 8,
        "CHECK_MECHANICALS": 9,
        "CONTACT_SUPPORT": 10,
    }
)


def _norm_action(action: str) -> str:
    return " ".join(action.split()).upper() if isinstance(action, str) else ""


def action_rank(action: str) -> int:
    """Disruption rank of a resolution bucket (0 = nothing to do ... 10 = support case).

    Case and spacing are ignored; unrecognised or empty values rank 0. See the module
    docstring for the full order.
    """
    return _RANKS.get(_norm_action(action), 0)


def is_known_action(action: str) -> bool:
    """Whether ``action`` is one of the bucket identifiers :func:`action_rank` orders."""
    return _norm_action(action) in _RANKS


def _text(table: Mapping[str, object], key: str) -> str | None:
    value = table.get(key)
    return value if isinstance(value, str) else None


def _entry(number: int, table: Mapping[str, object]) -> XidInfo:
    applies = table.get("applies_to")
    applies_to: tuple[str, ...] | None = None
    if isinstance(applies, Mapping):
        applies_to = tuple(family for family in _FAMILIES if applies.get(family) is True)
    return XidInfo(
        xid=number,
        name=_text(table, "name") or f"Xid {number}",
        meaning=_text(table, "meaning") or "",
        category=_text(table, "category") or "unknown",
        action=_text(table, "action") or "UNDOCUMENTED",
        action_investigatory=_text(table, "action_investigatory"),
        app_error=table.get("app_error") is True,
        app_error_since=_text(table, "app_error_since"),
        applies_to=applies_to,
        mnemonic=_text(table, "mnemonic"),
        source=_text(table, "source") or "",
    )


@functools.cache
def catalog() -> Mapping[int, XidInfo]:
    """Every catalog entry by Xid number (read from the package data once)."""
    data = tomllib.loads(packaged.read_toml("xid"))
    tables = data.get("xid", {})
    entries = {
        int(key): _entry(int(key), value)
        for key, value in tables.items()
        if key.isdigit() and isinstance(value, Mapping)
    }
    return MappingProxyType(dict(sorted(entries.items())))


def lookup(xid: int) -> XidInfo:
    """The catalog entry for ``xid``; unknown numbers get ``known=False``."""
    found = catalog().get(xid)
    if found is not None:
        return found
    return XidInfo(
        xid=xid,
        name=f"Unknown Xid {xid}",
        meaning=(
            "This number is not in the bundled Xid catalog; it may come from a driver newer "
            "than the catalog. Check NVIDIA's current Xid catalog."
        ),
        category="unknown",
        action="UNDOCUMENTED",
        action_investigatory=None,
        app_error=False,
        app_error_since=None,
        applies_to=None,
        mnemonic=None,
        source="",
        known=False,
    )


_SEVERITY_OVERRIDES: Mapping[int, str] = MappingProxyType(
    {
        64: "critical",  # remap/retirement failed: bad memory stays in use; RMA criterion
        154: "info",  # only restates the recovery action of the Xid it accompanies
        162: "info",  # power smoothing working again
        163: "low",  # power smoothing switched off for now
        164: "medium",  # power smoothing near end of life: plan a replacement
        165: "high",  # power smoothing worn out: power swings from now on
        166: "medium",  # confidential-computing NVLink traffic before encryption
        167: "high",  # fatal PCIe timeout, no NVIDIA bucket yet
        168: "high",  # usable GPU memory reduced
        169: "high",  # SEC2 micro-controller halted (like 62, which is RESET_GPU)
        170: "medium",  # NVLink security interrupt in CC mode
        171: "high",  # detail record of Xid 48 (DRAM)
        172: "high",  # detail record of Xid 48 (SRAM)
        173: "high",  # fatal chip-to-chip link failure, no NVIDIA bucket yet
        174: "low",  # process killed on channel reset: application scope
        175: "high",  # memory subsystem error, no NVIDIA bucket yet
        176: "low",  # PCIe correctable-error fault
    }
)

_CRITICAL_ACTIONS = frozenset({"CONTACT_SUPPORT", "RESTART_BM", "CHECK_MECHANICALS"})
_HIGH_ACTIONS = frozenset(
    {
        "RESET_GPU",
        "RESTART_VM",
        "UPDATE_SWFW",
        "WORKFLOW_NVLINK_ERR",
        "WORKFLOW_NVLINK5_ERR",
        "WORKFLOW_XID_48",
    }
)
_MEDIUM_ACTIONS = frozenset({"RESTART_APP", "XID_154", "CHECK_UVM", "WORKFLOW_XID_45"})
_QUIET_FOLLOW_UPS = frozenset({"", "IGNORE", "IGNORE (SYMPATHETIC)"})


def severity_for(xid: int) -> str:
    """Severity of one Xid occurrence (one of :data:`SEVERITIES`); rules in the module doc."""
    info = lookup(xid)
    if not info.known:
        return "medium"
    override = _SEVERITY_OVERRIDES.get(xid)
    if override is not None:
        return override
    action = _norm_action(info.action)
    if info.app_error:
        return "info" if action in ("IGNORE", "WORKFLOW_XID_45") else "low"
    if info.category == "unused":
        return "medium"
    if action in _CRITICAL_ACTIONS:
        return "critical"
    if action in _HIGH_ACTIONS:
        return "high"
    if action in _MEDIUM_ACTIONS:
        return "medium"
    if action == "IGNORE":
        follow_up = _norm_action(info.action_investigatory or "")
        quiet = follow_up in _QUIET_FOLLOW_UPS or info.category == "informational"
        return "info" if quiet else "low"
    return "medium"
