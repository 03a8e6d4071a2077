"""Health readings of one GPU in ``nvidia-smi -q -x``, across schema versions.

:mod:`bundle.nvsmi` parses the document; this module reads the health-related parts
of one ``<gpu>`` element without caring which driver printed it:

* ECC: the Ampere+ layout (``sram_uncorrectable`` or its ``_parity``/``_secded``
  split, ``dram_uncorrectable``, ``sram_threshold_exceeded``) and the older one
  (``double_bit/<location>`` with a ``total``);
* dynamic page retirement (``retired_pages/pending_retirement``, ``pending_blacklist``)
  and row remapping (``remapped_rows/remapped_row_pending``, ``remapped_row_failure``);
* the recovery action (``gpu_recovery_action``, R575+) and the older
  ``gpu_reset_status`` flags;
* NVSwitch fabric registration (``fabric/state``, ``fabric/status``);
* clock slowdowns (``clocks_event_reasons`` or ``clocks_throttle_reasons``) and the
  power readings (``gpu_power_readings`` or ``power_readings``).

Every reading carries the element path it came from (relative to ``<gpu>``) so a rule
can quote it; :func:`locate` finds that element's line in the file text. Only findings
quote, so a file's lines are split when the first of its readings is located, not when
it is parsed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from bundle.flatxml import FlatElement
from bundle.nvsmi import number, text_of

__all__ = [
    "SLOWDOWNS",
    "Fabric",
    "Reading",
    "RowRemap",
    "active_slowdowns",
    "ecc_uncorrectable",
    "fabric",
    "locate",
    "power",
    "recovery",
    "remapped_rows",
    "repairs_pending",
    "retired_pages",
    "sram_threshold_exceeded",
    "temperature",
]

_ABSENT = frozenset({"", "n/a", "[n/a]", "not supported", "none",
                     "requested functionality has been deprecated"})


@dataclass(frozen=True, slots=True)
class Reading:
    """One value read from a ``<gpu>`` element: its child path and text."""

    path: str
    value: str

    @property
    def count(self) -> int | None:
        return number(self.value)

    @property
    def yes(self) -> bool:
        return self.value.strip().lower() in ("yes", "true", "active")


def _present(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in _ABSENT


def _read(gpu: FlatElement, path: str) -> Reading | None:
    text = gpu.findtext(path)  # '' for an element without text: absent all the same
    if not text:
        return None
    value = " ".join(text.split())
    return Reading(path, value) if _present(value) else None


def _children(gpu: FlatElement, path: str) -> list[FlatElement]:
    parent = gpu.find(path)
    return list(parent) if parent is not None else []


# ------------------------------------------------------------------------------ ECC

_NEW_UNCORRECTABLE = ("sram_uncorrectable", "sram_uncorrectable_parity",
                      "sram_uncorrectable_secded", "dram_uncorrectable")


def ecc_uncorrectable(gpu: FlatElement, scope: str) -> list[Reading]:
    """Non-zero uncorrectable ECC counters of ``scope`` (``volatile`` or ``aggregate``).

    The new layout gives one counter per memory type; the old one a ``double_bit``
    block per location, of which the ``total`` is used when it is printed.
    """
    found: list[Reading] = []
    for name in _NEW_UNCORRECTABLE:
        reading = _read(gpu, f"ecc_errors/{scope}/{name}")
        if reading is not None and (reading.count or 0) > 0:
            found.append(reading)
    if found:
        return found
    base = f"ecc_errors/{scope}/double_bit"
    total = _read(gpu, f"{base}/total")
    if total is not None:
        return [total] if (total.count or 0) > 0 else []
    for child in _children(gpu, base):
        reading = _read(gpu, f"{base}/{child.tag}")
        if reading is not None and (reading.count or 0) > 0:
            found.append(reading)
    return found


def sram_threshold_exceeded(gpu: FlatElement) -> Reading | None:
    """``aggregate/sram_threshold_exceeded`` when it says Yes (an RMA criterion)."""
    reading = _read(gpu, "ecc_errors/aggregate/sram_threshold_exceeded")
    return reading if reading is not None and reading.yes else None


# -------------------------------------------------------------------- memory repair


def retired_pages(gpu: FlatElement) -> list[Reading]:
    """Page-retirement flags that say Yes (pre-Ampere: a reboot or reset is due)."""
    flags = ("retired_pages/pending_retirement", "retired_pages/pending_blacklist")
    return [r for r in (_read(gpu, path) for path in flags) if r is not None and r.yes]


@dataclass(frozen=True, slots=True)
class RowRemap:
    pending: Reading | None
    failure: Reading | None
    uncorrectable_rows: Reading | None


def remapped_rows(gpu: FlatElement) -> RowRemap:
    """Row-remapper state; each field is set only when it signals trouble."""
    pending = _read(gpu, "remapped_rows/remapped_row_pending")
    failure = _read(gpu, "remapped_rows/remapped_row_failure")
    unc = _read(gpu, "remapped_rows/remapped_row_unc")
    return RowRemap(
        pending=pending if pending is not None and pending.yes else None,
        failure=failure if failure is not None and failure.yes else None,
        uncorrectable_rows=unc if unc is not None and (unc.count or 0) > 0 else None,
    )


def repairs_pending(gpu: FlatElement) -> list[Reading]:
    """Newest drivers' ``channel_repair_pending`` / ``tpc_repair_pending`` /
    ``unrepairable_memory`` flags that say Yes."""
    paths = ("ecc_errors/channel_repair_pending", "ecc_errors/tpc_repair_pending",
             "ecc_errors/unrepairable_memory")
    return [r for r in (_read(gpu, path) for path in paths) if r is not None and r.yes]


# ------------------------------------------------------------------------- recovery


def recovery(gpu: FlatElement) -> list[Reading]:
    """What the driver asks for: a recovery action other than None, or the older
    ``reset_required`` / ``drain_and_reset_recommended`` flags set to Yes."""
    found: list[Reading] = []
    action = _read(gpu, "gpu_recovery_action")
    if action is not None:
        found.append(action)
    for path in ("gpu_reset_status/reset_required",
                 "gpu_reset_status/drain_and_reset_recommended"):
        flag = _read(gpu, path)
        if flag is not None and flag.yes:
            found.append(flag)
    return found


@dataclass(frozen=True, slots=True)
class Fabric:
    state: Reading | None
    status: Reading | None

    @property
    def applies(self) -> bool:
        """The GPU takes part in an NVSwitch/NVLink fabric (the state is printed)."""
        return self.state is not None and self.state.value.lower() != "not supported"

    @property
    def completed(self) -> bool:
        return self.state is not None and self.state.value.lower() == "completed"

    @property
    def healthy(self) -> bool:
        if not self.applies:
            return True
        ok_status = self.status is None or self.status.value.lower() == "success"
        return self.completed and ok_status


def fabric(gpu: FlatElement) -> Fabric:
    return Fabric(state=_read(gpu, "fabric/state"), status=_read(gpu, "fabric/status"))


# ----------------------------------------------------------------- clocks and power

# Reason suffixes that mean the hardware or the driver's thermal policy slows the GPU.
# ``sw_power_cap`` (at the power limit) and ``gpu_idle`` are normal and left out.
SLOWDOWNS: dict[str, str] = {
    "hw_slowdown": "hardware slowdown (thermal or power-supply signal)",
    "hw_thermal_slowdown": "hardware thermal slowdown",
    "hw_power_brake_slowdown": "power brake (external power-supply signal)",
    "sw_thermal_slowdown": "software thermal slowdown",
}
_REASON_BLOCKS = (("clocks_event_reasons", "clocks_event_reason_"),
                  ("clocks_throttle_reasons", "clocks_throttle_reason_"))


def active_slowdowns(gpu: FlatElement) -> list[tuple[str, Reading]]:
    """(reason key of :data:`SLOWDOWNS`, reading) for each slowdown that is Active."""
    found: list[tuple[str, Reading]] = []
    for block, prefix in _REASON_BLOCKS:
        for key in SLOWDOWNS:
            reading = _read(gpu, f"{block}/{prefix}{key}")
            if reading is not None and reading.value.lower() == "active":
                found.append((key, reading))
        if found:
            break
    return found


def power(gpu: FlatElement) -> tuple[str | None, str | None]:
    """(power draw, power limit) as printed, from either schema."""
    draw = text_of(gpu, "gpu_power_readings/power_draw", "gpu_power_readings/instant_power_draw",
                   "gpu_power_readings/average_power_draw", "power_readings/power_draw")
    limit = text_of(gpu, "gpu_power_readings/current_power_limit",
                    "power_readings/enforced_power_limit", "power_readings/power_limit")
    return draw, limit


def temperature(gpu: FlatElement) -> str | None:
    return text_of(gpu, "temperature/gpu_temp")


# ------------------------------------------------------------------------ locating


def locate(text: str, bus_id: str, path: str) -> tuple[int, str] | None:
    """1-based line and text of the element ``path`` (relative to ``<gpu>``) inside
    the ``<gpu id="bus_id">`` block of the XML ``text``; the last path segment is
    searched after the opening tags of the earlier ones. None when not found."""
    lines = _lines_of(text)
    start = lines.gpu_start(bus_id)
    if start is None:
        return None
    index = start
    for segment in path.split("/"):
        found = lines.next_tag(index, segment)
        if found is None:
            return None
        index = found
    return index + 1, lines.lines[index].strip()


class _Lines:
    """One file's lines and the lines that open a ``<gpu`` block, found once for all
    the readings located in it (a finding quotes up to eight, and each GPU of a node
    can have a finding)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self._gpu_rows = [(index, lowered) for index, line in enumerate(self.lines)
                          if "<gpu " in (lowered := line.lower())]

    def gpu_start(self, bus_id: str) -> int | None:
        wanted = f'id="{bus_id}"'.lower()
        return next((index for index, lowered in self._gpu_rows if wanted in lowered), None)

    def next_tag(self, start: int, tag: str) -> int | None:
        opening, spaced = f"<{tag}>", f"<{tag} "
        lines = self.lines
        for index in range(start, len(lines)):
            line = lines[index]
            if index > start and "<gpu " in line:
                return None
            if opening in line or spaced in line:
                return index
        return None


@functools.lru_cache(maxsize=2)
def _lines_of(text: str) -> _Lines:
    """Readings are located node after node, so the last file or two is all to keep."""
    return _Lines(text)
