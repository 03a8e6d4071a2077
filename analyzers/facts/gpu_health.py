"""What nvidia-smi says about one GPU's health: memory errors and repairs, recovery
actions, NVSwitch fabric registration and clock slowdowns, each with the readings of
``nvidia-smi.xml`` that say it (read by ``bundle.nvsmi_health``)."""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from analyzers.results.models import Severity
from bundle import Bundle
from bundle import nvsmi_health as health
from bundle.flatxml import FlatElement
from bundle.nvsmi_health import Reading


@dataclass(frozen=True, slots=True)
class Issue:
    """One thing nvidia-smi says is wrong with a GPU, with the readings that say it."""

    kind: str  # memory, recovery, fabric, slowdown
    severity: Severity
    text: str
    readings: tuple[Reading, ...]


def memory_issues(gpu: FlatElement) -> list[Issue]:
    issues: list[Issue] = []
    threshold = health.sram_threshold_exceeded(gpu)
    if threshold is not None:
        issues.append(Issue("memory", Severity.CRITICAL, "SRAM uncorrectable errors passed "
                            "NVIDIA's threshold (field diagnostics / replacement)", (threshold,)))
    remap = health.remapped_rows(gpu)
    if remap.failure is not None:
        issues.append(Issue("memory", Severity.CRITICAL, "row remapping failed (no spare rows "
                            "left: a replacement criterion)", (remap.failure,)))
    if remap.pending is not None:
        issues.append(Issue("memory", Severity.HIGH, "row remapping pending: a GPU reset is "
                            "needed to activate it", (remap.pending,)))
    volatile = health.ecc_uncorrectable(gpu, "volatile")
    aggregate = health.ecc_uncorrectable(gpu, "aggregate")
    if volatile:
        issues.append(Issue("memory", Severity.HIGH, "uncorrectable ECC errors since the driver "
                            f"loaded ({_counts(volatile)})", tuple(volatile)))
    elif aggregate:
        issues.append(Issue("memory", Severity.MEDIUM, "uncorrectable ECC errors in the GPU's "
                            f"lifetime ({_counts(aggregate)})", tuple(aggregate)))
    retired = health.retired_pages(gpu)
    if retired:
        issues.append(Issue("memory", Severity.HIGH, "retired pages pending: a reboot or GPU "
                            "reset is needed to blacklist them", tuple(retired)))
    for flag in health.repairs_pending(gpu):
        severe = flag.path.endswith("unrepairable_memory")
        issues.append(Issue("memory", Severity.CRITICAL if severe else Severity.HIGH,
                            f"{flag.path.rsplit('/', 1)[-1].replace('_', ' ')}: {flag.value}",
                            (flag,)))
    return issues


def _counts(readings: list[Reading]) -> str:
    return ", ".join(f"{r.path.rsplit('/', 1)[-1]} {r.value}" for r in readings)


def other_issues(gpu: FlatElement) -> list[Issue]:
    issues: list[Issue] = []
    for reading in health.recovery(gpu):
        issues.append(Issue("recovery", Severity.HIGH, f"the driver asks for recovery "
                            f"({reading.path.rsplit('/', 1)[-1]}: {reading.value})", (reading,)))
    fabric = health.fabric(gpu)
    if not fabric.healthy:
        state = fabric.state.value if fabric.state else "unknown"
        status = f", status {fabric.status.value}" if fabric.status else ""
        readings = tuple(r for r in (fabric.state, fabric.status) if r is not None)
        issues.append(Issue("fabric", Severity.HIGH, f"NVSwitch fabric registration not "
                            f"complete (state {state}{status})", readings))
    slow = health.active_slowdowns(gpu)
    if slow:
        draw, limit = health.power(gpu)
        temp = health.temperature(gpu)
        context = ", ".join(p for p in (f"{temp}" if temp else "",
                                        f"{draw} of {limit}" if draw and limit else "") if p)
        reasons = ", ".join(health.SLOWDOWNS[key] for key, _ in slow)
        issues.append(Issue("slowdown", Severity.MEDIUM, f"clocks slowed down: {reasons}"
                            + (f" ({context})" if context else ""),
                            tuple(r for _, r in slow)))
    return issues


def issues(gpu: FlatElement) -> list[Issue]:
    """Every issue of the GPU whose ``<gpu>`` element this is: memory first."""
    return memory_issues(gpu) + other_issues(gpu)


GpuIssues = tuple[tuple[str, tuple[Issue, ...]], ...]
"""(bus id, issues) of each GPU of a node that has any, in nvidia-smi's order."""


def node_issues(bundle: Bundle, name: str) -> GpuIssues:
    """The issues of every GPU of node ``name``'s nvidia-smi; made once, here or in a
    node-file worker (analyzers/speed/prefetch.py), and kept for the bundle's lifetime."""
    made = _NODES.setdefault(bundle, {})
    found = made.get(name)
    if found is None:
        smi = bundle.node(name).nvidia_smi
        found = made[name] = () if smi is None else tuple(
            (gpu.bus_id, tuple(listed)) for gpu in smi.gpus if (listed := issues(gpu.element)))
    return found


def remember_issues(bundle: Bundle, name: str, found: GpuIssues) -> None:
    """Keep a node's GPU issues made elsewhere (in a worker process)."""
    _NODES.setdefault(bundle, {})[name] = found


_NODES: WeakKeyDictionary[Bundle, dict[str, GpuIssues]] = WeakKeyDictionary()
