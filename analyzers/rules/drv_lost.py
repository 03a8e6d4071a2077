"""DRV002: a GPU lost from the PCIe bus or unable to initialise."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.kernel_events import UNKNOWN_GPU, NodeKernel
from analyzers.models import Confidence, Finding, Severity
from analyzers.refs import Link
from analyzers.rule import Context, Rule
from analyzers.rules.common import node_ref
from analyzers.rules.drv_common import (
    KERNEL_INPUTS,
    capped,
    device_health,
    gpu_name,
    line_evidence,
    log_lines,
    node_logs,
    when,
)
from analyzers.rules.drv_support import DriverCannotDriveGpu
from bundle.kernel import KernelSignal, scan_signals

LOSS = ("fallen_off_bus", "gpu_lost", "rm_init_adapter_failed", "device_handle")
_AER_SERIOUS = ("fatal", "uncorrected", "recovery_failed")
_TEXT = {
    "fallen_off_bus": "fell off the bus",
    "gpu_lost": "reported lost",
    "rm_init_adapter_failed": "failed to initialise (RmInitAdapter)",
    "device_handle": "NVML could not get a device handle",
    "aer": "PCIe AER error",
}


def _aer_level(signal: KernelSignal) -> str:
    return signal.detail.split(":", 1)[0]


# What a GPU the driver refused (DRV008) shows as a consequence, never hardware: it
# never initialises (RmInitAdapter), NVML has no handle for it, RM calls it lost.
_REFUSAL_CONSEQUENCES = ("rm_init_adapter_failed", "device_handle", "gpu_lost")


def _deferred(signal: KernelSignal, key: str, refused: tuple[frozenset[str], bool] | None
              ) -> bool:
    """Whether DRV008's refusal explains this signal: an initialisation failure of a GPU
    the driver refused by address, or of any GPU when a refusal named no address."""
    if refused is None or signal.kind not in _REFUSAL_CONSEQUENCES:
        return False
    keys, unaddressed = refused
    return key in keys or unaddressed


def _groups(ctx: Context, name: str, kernel: NodeKernel) -> dict[str, list[KernelSignal]]:
    """GPU key → loss signals (kernel and container logs) and AER errors on its address,
    less what a driver refusal (DRV008) explains."""
    groups: dict[str, list[KernelSignal]] = defaultdict(list)
    signals = kernel.signals_of(*LOSS)
    for path, _container, text in node_logs(ctx, name):
        for line in log_lines(path, text, "device handle", "gpu is lost"):
            signals += [s for s in scan_signals(line) if s.kind in ("device_handle", "gpu_lost")]
    refused = DriverCannotDriveGpu.refused_gpus(ctx, name)
    signals = [s for s in signals if not _deferred(s, kernel.key(s.pci), refused)]
    for signal in signals:
        groups[kernel.key(signal.pci)].append(signal)
    known = {g.pci for g in kernel.gpus} | set(groups)
    known |= {kernel.key(e.pci) for e in kernel.xids if e.pci}
    for signal in kernel.signals_of("aer"):
        key = kernel.key(signal.pci)
        if key in known and key != UNKNOWN_GPU and _aer_level(signal) in (*_AER_SERIOUS,
                                                                            "nonfatal"):
            groups[key].append(signal)
    unnamed = groups.pop(UNKNOWN_GPU, [])
    if unnamed and len(groups) == 1:
        next(iter(groups.values())).extend(unnamed)
    elif unnamed and not groups:
        groups[UNKNOWN_GPU] = unnamed
    return groups


class GpuLost(Rule):
    """A GPU was lost: fallen off the bus, lost, or failing to initialise.

    Collects, per GPU address, the driver's ``GPU has fallen off the bus`` (with or
    without the Xid 79 line), ``GPU is lost``, ``RmInitAdapter failed`` (with its
    NV_STATUS code decoded), NVML's ``Unable to determine the device handle`` in
    container logs, and uncorrected PCIe AER errors on the GPU's own address. Each
    address yields one finding. Lines that name no address join the node's only
    lost GPU. A GPU the driver refused (DRV008: an unsupported branch, a legacy GPU, the
    wrong module flavour) is not lost hardware: its ``RmInitAdapter``, device-handle and
    ``GPU is lost`` lines are left to DRV008, and what remains on its address (AER) links
    to it as the cause. A finding with only AER errors on the address is a likely loss.

    Why it matters:
    A lost GPU is gone until the node reboots (often until the hardware is fixed).
    The device plugin withdraws it, so the node's allocatable GPUs drop below its
    capacity and pods that land there fail with UnexpectedAdmissionError; work that
    was running on it is lost.

    Remediation:
    First keep the evidence, on the node: ``dmesg --time-format iso | grep -iE
    'NVRM|Xid|AER|fallen'``, ``lspci -vvv -s <bus id>`` (LnkSta, UESta) and the BMC
    event log (``ipmitool sel list``). Then cordon and drain the node (``kubectl cordon
    <node>``, ``kubectl drain <node> --ignore-daemonsets --delete-emptydir-data``), one
    node at a time, and reboot it; if the same GPU is lost again, check seating, riser
    and power, and open a hardware case.
    """

    id = "DRV002"
    slug = "gpu-lost"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = KERNEL_INPUTS
    tags = ("gpu", "kernel", "pcie")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name, kernel in sorted(ctx.facts.kernel_events.items()):
            groups = _groups(ctx, name, kernel)
            refused = DriverCannotDriveGpu.refused_gpus(ctx, name)
            for key, signals in sorted(groups.items()):
                cause = [refs.DRV008(name)] if refused and key in refused[0] else []
                yield self._finding(ctx, name, key, kernel, signals, cause)

    def _finding(self, ctx: Context, name: str, key: str, kernel: NodeKernel,
                 signals: list[KernelSignal], caused_by: list[Link]) -> Finding:
        gpu = kernel.gpu(key)
        loss = [s for s in signals if s.kind != "aer" or _aer_level(s) in _AER_SERIOUS]
        severity = Severity.CRITICAL if loss else Severity.HIGH
        described: dict[str, str] = {}
        for signal in signals:
            text = f"{_TEXT[signal.kind]} at {when(signal.source)}"
            detail = ""
            if signal.kind in ("rm_init_adapter_failed", "device_handle", "aer"):
                detail = f" ({signal.detail})"
            elif signal.kind == "fallen_off_bus" and "Xid" in signal.detail:
                detail = " (with an Xid 79 line)"
            slot = text + (detail if signal.kind != "fallen_off_bus" else "")
            described[slot] = described.get(slot) or text + detail
        facts = list(described.values())
        shown = "; ".join(facts[:4]) + (f"; and {len(facts) - 4} more" if len(facts) > 4 else "")
        health = device_health(ctx, name)
        smi = ctx.bundle.node(name).nvidia_smi
        listed = ""
        if smi is not None and smi.gpus and key != UNKNOWN_GPU:
            listed = (" nvidia-smi still lists it." if gpu is not None and gpu.bus_id
                      else " It is missing from nvidia-smi's GPU list.")
        summary = (f"On {name}, {gpu_name(name, key, gpu)} is lost: {shown}.{listed}"
                   + (f" Kubernetes: {health.describe()}." if health.unhealthy else ""))
        evidence = capped([line_evidence(s.source) for s in signals], 5) + health.evidence
        return self.finding(
            refs.DRV002.subject(name, key), summary, severity=severity, nodes=[name],
            objects=[node_ref(name)], evidence=evidence,
            remediation=_remediation(name, key),
            causes=[refs.DRV001(name, key)], caused_by=caused_by,
            # only PCIe AER errors on its address: a pattern that often precedes a loss
            confidence=None if loss else Confidence.LIKELY,
        )


def _remediation(name: str, key: str) -> str:
    target = sh.pci(key) if key != UNKNOWN_GPU else sh.raw("<bus id>")
    node = sh.node(name)
    return sh.lines([
        sh.node_shell(node),
        "# first, keep the evidence for the hardware case:",
        "dmesg --time-format iso | grep -iE 'NVRM|Xid|AER|fallen off' | tail -50",
        sh.cmd("lspci", "-vvv", "-s", target, tail=" | grep -iE 'LnkSta|UESta|CESta'"),
        "ipmitool sel list | tail -20",
        "# then, from your own machine, one node at a time:",
        sh.cmd("kubectl", "cordon", node),
        sh.cmd("kubectl", "drain", node, "--ignore-daemonsets", "--delete-emptydir-data"),
        sh.note("# reboot {node}; if this GPU is lost again, reseat it / check riser and power "
                "and open a hardware case", node=node),
    ])
