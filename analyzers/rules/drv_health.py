"""DRV006: GPU health as nvidia-smi reports it (memory errors, repairs, fabric, slowdowns)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.kernel_events import GpuIdentity
from analyzers.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule, node
from analyzers.rules.common import KERNEL_LINES, node_ref
from analyzers.rules.drv_common import smi_evidence
from bundle import nvsmi_health as health
from bundle.flatxml import FlatElement
from bundle.kernel import normalize_pci
from bundle.nvsmi_health import Reading


@dataclass(frozen=True, slots=True)
class Issue:
    kind: str  # memory, recovery, fabric, slowdown
    severity: Severity
    text: str
    readings: tuple[Reading, ...]


def _memory(gpu: FlatElement) -> list[Issue]:
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


def _other(gpu: FlatElement) -> list[Issue]:
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


class GpuHealth(Rule):
    """nvidia-smi reports an unhealthy GPU.

    Reads each ``<gpu>`` of ``nvidia-smi.xml`` whatever the driver's schema:
    uncorrectable ECC errors (volatile, else aggregate; new and old layouts), SRAM
    threshold exceeded, retired pages pending, row remapping pending or failed,
    channel/TPC repair pending, a recovery action other than None (or the older
    reset-required flags), NVSwitch fabric state not Completed or status not Success,
    and active hardware or thermal clock slowdowns. One finding per GPU, at the
    severity of its worst reading.

    Why it matters:
    These are the GPU's own health counters. Pending remaps and retirements take
    effect only after a GPU reset; a failed remap or exceeded SRAM threshold is a
    replacement criterion; an incomplete fabric registration makes CUDA fail on
    NVSwitch systems; slowdowns cost performance and point at cooling or power.

    Remediation:
    On the node: ``nvidia-smi -q -i <pci> -d ECC,ROW_REMAPPER,PAGE_RETIREMENT`` (and
    ``-d PERFORMANCE,TEMPERATURE,POWER`` for slowdowns). To apply pending repairs:
    ``kubectl cordon <node>``, drain one node at a time, ``nvidia-smi -r -i <pci>`` or
    reboot, then run ``dcgmi diag -r 3``. Failed remaps or exceeded thresholds: open a
    hardware case. Fabric: check ``nvidia-fabricmanager`` on the node.
    """

    id = "DRV006"
    slug = "gpu-health"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (node("nvidia-smi.xml"), *KERNEL_LINES)
    tags = ("gpu", "hardware", "ecc")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name in ctx.bundle.node_names:
            smi = ctx.bundle.node(name).nvidia_smi
            if smi is None:
                continue
            kernel = ctx.facts.kernel_events.get(name)
            for gpu in smi.gpus:
                issues = _memory(gpu.element) + _other(gpu.element)
                pci = normalize_pci(gpu.bus_id)
                if not issues or pci is None:
                    continue
                identity = kernel.gpu(pci) if kernel is not None else None
                yield self._finding(ctx, name, pci, gpu.bus_id, identity, issues)

    def _finding(self, ctx: Context, name: str, pci: str, bus_id: str,
                 identity: GpuIdentity | None, issues: list[Issue]) -> Finding:
        severity = max((i.severity for i in issues), key=lambda s: s.rank)
        who = identity.describe() if identity is not None else "GPU"
        summary = f"On {name}, {who} at {pci}: " + "; ".join(i.text for i in issues) + "."
        evidence = [smi_evidence(ctx, name, bus_id, r) for i in issues for r in i.readings]
        kinds = {i.kind for i in issues}
        causes = [refs.DRV001(name, pci)] if "memory" in kinds or "recovery" in kinds else []
        # A fabric that never finished initialising is Fabric Manager's doing (OP005).
        explained_by = [refs.OP005(name)] if kinds == {"fabric"} else []
        return self.finding(
            refs.DRV006.subject(name, pci), summary, severity=severity, nodes=[name],
            objects=[node_ref(name)], evidence=evidence[:8],
            remediation=_remediation(name, pci, identity, kinds), causes=causes,
            caused_by=explained_by,
        )


def _remediation(name: str, pci: str, identity: GpuIdentity | None, kinds: set[str]) -> str:
    index: int | sh.Raw = identity.index if identity is not None and \
        identity.index is not None else sh.raw("<index>")
    node, gpu = sh.node(name), sh.pci(pci)
    lines = [sh.note("# on {node}:", node=node)]
    if kinds & {"memory", "recovery"}:
        lines += [
            sh.cmd("nvidia-smi", "-q", "-i", gpu, "-d", "ECC,ROW_REMAPPER,PAGE_RETIREMENT"),
            sh.cmd("kubectl", "cordon", node),
            sh.cmd("kubectl", "drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                   tail="   # one node at a time"),
            sh.cmd("nvidia-smi", "-r", "-i", gpu,
                   tail="   # or reboot; applies pending remaps/retirements"),
            sh.cmd("dcgmi", "diag", "-r", "3", "-i", index,
                   tail="   # failed remap or threshold exceeded: hardware case"),
        ]
    if "fabric" in kinds:
        lines += [sh.cmd("nvidia-smi", "-q", "-i", gpu, tail=" | grep -A4 -i fabric"),
                  "systemctl status nvidia-fabricmanager; journalctl -u nvidia-fabricmanager "
                  "-n 50"]
    if "slowdown" in kinds:
        lines += [sh.cmd("nvidia-smi", "-q", "-i", gpu, "-d", "PERFORMANCE,TEMPERATURE,POWER"),
                  "# check airflow, fans and power supplies (BMC: ipmitool sdr; ipmitool sel list)"]
    return sh.lines(lines)
