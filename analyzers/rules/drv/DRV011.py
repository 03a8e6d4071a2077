"""DRV011: NVSwitch SXid errors, per node and switch."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.evidence import capped
from analyzers.facts.kernel_events import NodeKernel, line_evidence
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, node
from analyzers.rules.common import node_ref
from analyzers.rules.drv._common import KERNEL_INPUTS, when
from analyzers.rules.drv._sxid import (
    _LISTED,
    FATAL,
    GPU_XIDS,
    _Clocks,
    _info,
    _key,
    _remediation,
    _reports,
    _serious,
)
from bundle import specs
from bundle.kernel import SXidEvent


class NvswitchSXid(Rule):
    """NVSwitch SXid errors, per node and switch.

    On NVSwitch systems (HGX/DGX) the ``nvidia-nvswitch`` driver reports switch faults
    as SXid lines, read like Xids: ``nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028,
    Non-fatal, Link 32 egress non-posted PRIV error (First)``. The rule reads them from
    the same kernel logs as the Xid rule (``dmesg.txt`` and kernel entries of
    ``journal/*.jsonl``, counted once), groups them by switch, and explains the worst
    with the SXid catalog (``analyzers/data/sxid.toml``, after NVIDIA's Fabric Manager
    User Guide): single-bit ECC the switch corrected (info), non-fatal errors, fatal
    errors on one port, and errors fatal to the whole fabric. SXids are a rule of their
    own, not part of DRV001, because they name a switch and its links rather than a GPU
    and their actions reset the fabric, not one GPU. A fatal SXid reaches the GPUs as
    Xid 74, and SXids that stall NVLink traffic abort CUDA jobs with Xid 45: DRV001
    findings with those Xids near the SXid in time hang under this one, and so does
    OP005 when the node's NVLink fabric is down after a fatal SXid.

    Why it matters:
    A fatal SXid takes NVLink away from the GPUs behind the switch port (or from every
    GPU, when it is fatal to the fabric): NCCL jobs hang or fail while each GPU alone
    still looks healthy, and only a reset of the GPUs and switches brings the fabric back.

    Remediation:
    Read the switch's history on the node: ``dmesg --time-format iso | grep SXid`` and
    the Fabric Manager log (``journalctl -u nvidia-fabricmanager``). For fatal SXids
    drain the node, reset the GPUs and NVSwitches together or reboot, and open a
    hardware case when they return; corrected single-bit ECC needs no action.
    """

    id = "DRV011"
    slug = "nvswitch-sxid"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (*KERNEL_INPUTS, node(specs.FABRIC_MANAGER_JOURNAL, optional=True))
    tags = ("gpu", "kernel", "nvswitch", "sxid")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name, kernel in sorted(ctx.facts.kernel_events.items()):
            if not kernel.sxids:
                continue
            groups: dict[str, list[SXidEvent]] = {}
            for event in kernel.sxids:
                groups.setdefault(_key(event), []).append(event)
            for key, events in sorted(groups.items()):
                yield self._finding(ctx, name, key, kernel, events)

    def _finding(self, ctx: Context, name: str, key: str, kernel: NodeKernel,
                 events: list[SXidEvent]) -> Finding:
        reports = _reports(events)
        infos = {e.sxid: _info(e) for e in reports}
        lead = max(infos.values(), key=lambda i: (Severity(i.severity).rank, i.sxid))
        switch = next((e.switch for e in events if e.switch), "NVSwitch")
        counts = Counter(e.sxid for e in reports)
        listed = sorted(counts.items())
        listing = ", ".join(
            f"SXid {n} ({infos[n].name}{', ' + infos[n].kind if infos[n].kind else ''}) x{c}"
            for n, c in listed[:_LISTED])
        if len(listed) > _LISTED:
            listing += f" and {len(listed) - _LISTED:,} other SXid number(s)"
        links = sorted({e.link for e in reports if e.link is not None})
        first, last = reports[0].source, reports[-1].source
        span = when(first) if when(first) == when(last) else f"{when(first)} to {when(last)}"
        where = f" on link(s) {', '.join(map(str, links[:8]))}" if links else ""
        summary = (f"On {name}, {switch} ({key}) reported {len(reports)} SXid error(s) "
                   f"({span}){where}: {listing}. Lead: SXid {lead.sxid} ({lead.name}): "
                   f"{lead.meaning} Action: {lead.action}")
        serious = [e for e in reports if _serious(e)]
        causes: list[refs.Link] = []
        echoes = self._gpu_echoes(kernel, serious)
        if echoes:
            summary += (f" The GPUs report it too: {', '.join(sorted(echoes))} "
                        "(Xid 74/45 near the SXid; see DRV001).")
            causes += [refs.link("DRV001", name, gpu) for gpu in sorted(echoes)]
        fabric = ctx.facts.nvlink_fabric.get(name)
        if any(_info(e).kind in FATAL for e in serious) and fabric is not None and fabric.broken:
            summary += " The node's NVLink fabric is not up either (see OP005)."
            causes.append(refs.link("OP005", name))
        evidence = self._evidence(reports)
        return self.finding(
            f"{name}/{key}", summary, severity=Severity(lead.severity), nodes=[name],
            objects=[node_ref(name)], evidence=evidence, causes=causes,
            remediation=_remediation(name, lead, bool(serious)))

    @staticmethod
    def _gpu_echoes(kernel: NodeKernel, serious: list[SXidEvent]) -> set[str]:
        if not serious:
            return set()
        found: set[str] = set()
        clocks = _Clocks(serious)
        for gpu, xids in kernel.xids_by_gpu().items():
            if any(x.xid in GPU_XIDS and clocks.near(x) for x in xids):
                found.add(gpu)
        return found

    @staticmethod
    def _evidence(reports: list[SXidEvent]) -> list[Evidence]:
        chosen: list[SXidEvent] = []
        seen: set[int] = set()
        for event in reports:
            if event.sxid not in seen:
                seen.add(event.sxid)
                chosen.append(event)
        if reports[-1] not in chosen:
            chosen.append(reports[-1])
        return capped([line_evidence(e.source) for e in chosen], 5)
