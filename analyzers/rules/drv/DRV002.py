"""DRV002: A GPU was lost: fallen off the bus, lost, or failing to initialise."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts import driver
from analyzers.facts.evidence import capped
from analyzers.facts.kernel_events import UNKNOWN_GPU, NodeKernel, line_evidence
from analyzers.refs import Link
from analyzers.results.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule
from analyzers.rules.common import node_ref
from analyzers.rules.drv._common import KERNEL_INPUTS, device_health, gpu_name, when
from analyzers.rules.drv._lost import _AER_SERIOUS, _TEXT, _aer_level, _groups, _remediation
from bundle.kernel import KernelSignal


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
    subject = refs.GPU
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = KERNEL_INPUTS
    tags = ("gpu", "kernel", "pcie")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name, kernel in sorted(ctx.facts.kernel_events.items()):
            groups = _groups(ctx, name, kernel)
            refused = driver.gpu_refusal(ctx.facts, name)
            for key, signals in sorted(groups.items()):
                cause = [refs.link("DRV008", name)] if refused and key in refused.keys else []
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
        smi = ctx.facts.node(name).nvidia_smi
        listed = ""
        if smi is not None and smi.gpus and key != UNKNOWN_GPU:
            listed = (" nvidia-smi still lists it." if gpu is not None and gpu.bus_id
                      else " It is missing from nvidia-smi's GPU list.")
        summary = (f"On {name}, {gpu_name(name, key, gpu)} is lost: {shown}.{listed}"
                   + (f" Kubernetes: {health.describe()}." if health.unhealthy else ""))
        evidence = capped([line_evidence(s.source) for s in signals], 5) + health.evidence
        return self.finding(
            refs.GPU.of(name, key), summary, severity=severity, nodes=[name],
            objects=[node_ref(name)], evidence=evidence,
            remediation=_remediation(name, key),
            causes=[refs.link("DRV001", name, key)], caused_by=caused_by,
            # only PCIe AER errors on its address: a pattern that often precedes a loss
            confidence=None if loss else Confidence.LIKELY,
        )
