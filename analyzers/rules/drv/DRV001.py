"""DRV001: Xid errors reported by the NVIDIA driver, per node and GPU."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.evidence import capped
from analyzers.facts.kernel_events import GpuIdentity, NodeKernel, line_evidence
from analyzers.knowledge import xid as catalog
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule
from analyzers.rules.common import node_ref
from analyzers.rules.drv._common import (
    KERNEL_INPUTS,
    DeviceHealth,
    device_health,
    gpu_name,
    prepare_accounting,
    when,
)
from analyzers.rules.drv._text import action, cause
from analyzers.rules.drv._xid import GpuXids, _label, _listing, _rank, _remediation, analyse
from bundle.kernel import XidEvent


class XidEvents(Rule):
    """Xid errors reported by the NVIDIA driver, per node and GPU.

    Reads every ``NVRM: Xid`` line of the node's kernel log (``dmesg.txt`` and kernel
    entries of ``journal/*.jsonl``, counted once when both carry it), groups them by
    GPU (PCI address mapped to UUID and model through ``nvidia-smi.xml``), orders them
    in time, and explains the worst one with NVIDIA's Xid catalog: meaning, likely
    cause and the recommended action. Application Xids (13, 31, 43, 45, 68, 109) are
    kept apart: alone on a GPU Kubernetes still offers they are an ``info`` finding.
    ``caused by previous Xid N`` is followed to the Xid that really happened. The
    finding says whether the node's allocatable GPUs dropped and whether the device
    plugin marked the GPU unhealthy.

    Why it matters:
    An Xid is the driver's only report of a GPU fault. Hardware and driver Xids
    usually take the GPU out of service (the device plugin withdraws it, pods fail
    with UnexpectedAdmissionError) and need a reset, a reboot or a hardware case;
    application Xids only need the workload fixed. Telling the two apart decides
    whether to drain the node or to call the application owner.

    Remediation:
    Read the GPU's history first: ``dmesg --time-format iso | grep 'NVRM: Xid'`` and
    ``nvidia-smi -q -i <pci> -d ECC,ROW_REMAPPER,PAGE_RETIREMENT`` on the node. For
    reset/reboot actions: ``kubectl cordon <node>``, ``kubectl drain <node>
    --ignore-daemonsets --delete-emptydir-data``, then ``nvidia-smi -r -i <pci>`` or
    reboot, one node at a time; restart the device-plugin pod afterwards. Recurring
    hardware Xids on the same GPU: run ``dcgmi diag -r 3`` and open a hardware case.
    """

    id = "DRV001"
    slug = "xid-events"
    subject = refs.GPU
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = KERNEL_INPUTS
    tags = ("gpu", "kernel", "xid")
    prepares = (prepare_accounting,)

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name, kernel in sorted(ctx.facts.kernel_events.items()):
            if not kernel.xids:
                continue
            health = device_health(ctx, name)
            for key, events in sorted(kernel.xids_by_gpu().items()):
                yield self._finding(name, key, kernel, analyse(events), health)

    def _finding(self, name: str, key: str, kernel: NodeKernel, xids: GpuXids,
                 health: DeviceHealth) -> Finding:
        gpu = kernel.gpu(key)
        marks = health.marked(gpu)
        degraded = health.unhealthy > 0 or bool(marks)
        lead = catalog.lookup(xids.lead)
        if xids.hardware:
            severity = Severity(max((catalog.severity_for(n) for n in xids.hardware),
                                    key=_rank))
        else:
            severity = Severity.LOW if degraded else Severity.INFO
        summary = " ".join(part for part in (
            self._what(name, key, gpu, xids),
            f"Lead: {_label(lead.xid)}: {lead.meaning}".rstrip(),
            f"Likely cause: {cause(lead)}.",
            f"NVIDIA's action: {action(lead)}.",
            self._causes(xids),
            self._health(health, marks, xids, gpu),
        ) if part)
        evidence = self._evidence(xids) + health.evidence + marks[:2]
        links = [refs.link("DRV002", name, key)]
        if any(catalog.lookup(n).category == "memory_ecc" for n in xids.hardware):
            links.append(refs.link("DRV006", name, key))
        return self.finding(
            refs.GPU.of(name, key), summary, severity=severity, nodes=[name],
            objects=[node_ref(name)], evidence=evidence,
            remediation=_remediation(name, key, gpu, xids),
            caused_by=links,
        )

    @staticmethod
    def _what(name: str, key: str, gpu: GpuIdentity | None, xids: GpuXids) -> str:
        first, last = xids.events[0].source, xids.events[-1].source
        span = when(first) if len(xids.events) == 1 else f"{when(first)} to {when(last)}"
        hardware = [e for e in xids.events if e not in xids.app]
        parts = []
        if hardware:
            parts.append(f"hardware/driver Xids: {_listing(hardware)}")
        if xids.app:
            parts.append(f"application Xids: {_listing(xids.app)}")
        return (f"On {name}, {gpu_name(name, key, gpu)} reported {len(xids.events)} Xid "
                f"event(s) ({span}); {'; '.join(parts)}.")

    @staticmethod
    def _causes(xids: GpuXids) -> str:
        texts = []
        for symptom, found in xids.causes:
            origin = (f"found at {when(found.source)}" if found is not None
                      else "that Xid is no longer in the collected log")
            texts.append(f"Xid {symptom.xid} at {when(symptom.source)} was caused by "
                         f"Xid {symptom.caused_by} ({origin})")
        unique = list(dict.fromkeys(texts))
        return ("Followed the driver's 'caused by previous Xid': " + "; ".join(unique[:3])
                + ".") if unique else ""

    @staticmethod
    def _health(health: DeviceHealth, marks: list[Evidence], xids: GpuXids,
                gpu: GpuIdentity | None) -> str:
        texts = []
        if health.unhealthy:
            texts.append(f"Kubernetes: {health.describe()}")
        if marks:
            uuid = gpu.uuid if gpu is not None and gpu.uuid else None
            numbers = sorted(health.mark_xids.get(uuid.lower(), set())) if uuid else []
            after = f" after Xid {', '.join(map(str, numbers))}" if numbers else ""
            texts.append(f"the device plugin marked {uuid or 'all devices'} unhealthy{after}")
        if texts:
            return "Device health: " + "; ".join(texts) + "."
        if not xids.hardware:
            return ("The GPU is still offered to pods (no allocatable drop, no unhealthy "
                    "mark): these are application errors, not a hardware fault.")
        return ""

    @staticmethod
    def _evidence(xids: GpuXids) -> list[Evidence]:
        chosen: list[XidEvent] = []
        seen: set[int] = set()
        for event in xids.events:
            if event.xid not in seen or event.caused_by is not None:
                seen.add(event.xid)
                chosen.append(event)
        if xids.events[-1] not in chosen:
            chosen.append(xids.events[-1])
        return capped([line_evidence(e.source) for e in chosen], 6)
