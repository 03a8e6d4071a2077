"""DRV001: Xid events per node and GPU, explained with NVIDIA's Xid catalog."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from analyzers import commands as sh
from analyzers.facts.kernel_events import UNKNOWN_GPU, GpuIdentity
from analyzers.knowledge import xid as catalog
from analyzers.results.models import Severity
from analyzers.rules.drv._text import action
from bundle.kernel import XidEvent

_RESET_RANK = catalog.action_rank("RESET_GPU")


@dataclass(frozen=True, slots=True)
class GpuXids:
    """The Xid history of one GPU, split the way NVIDIA's workflow reads it.

    ``hardware`` are the Xid numbers that are not application errors, including the
    numbers that ``caused by previous Xid N`` lines name as the real cause.
    ``causes`` pairs each such line with the earlier event it refers to (or None when
    that event is no longer in the collected log).
    """

    events: tuple[XidEvent, ...]
    app: tuple[XidEvent, ...]
    hardware: frozenset[int]
    causes: tuple[tuple[XidEvent, XidEvent | None], ...]

    @property
    def lead(self) -> int:
        """The Xid that decides severity and action: the worst hardware/driver one,
        else the worst application one."""
        pool = self.hardware or {e.xid for e in self.events}
        return max(sorted(pool), key=lambda n: (_rank(catalog.severity_for(n)),
                                                catalog.action_rank(catalog.lookup(n).action)))


def _rank(severity: str) -> int:
    return Severity(severity).rank


def analyse(events: Iterable[XidEvent]) -> GpuXids:
    ordered = tuple(events)
    app = tuple(e for e in ordered if catalog.lookup(e.xid).app_error)
    hardware = {e.xid for e in ordered if not catalog.lookup(e.xid).app_error}
    causes: list[tuple[XidEvent, XidEvent | None]] = []
    for index, event in enumerate(ordered):
        if event.caused_by is None:
            continue
        earlier = [e for e in ordered[:index] if e.xid == event.caused_by]
        causes.append((event, earlier[-1] if earlier else None))
        if not catalog.lookup(event.caused_by).app_error:
            hardware.add(event.caused_by)
    return GpuXids(ordered, app, frozenset(hardware), tuple(causes))


def _label(number: int) -> str:
    info = catalog.lookup(number)
    name = info.name if info.known else "unknown to the catalog"
    return f"Xid {number} ({name})"


def _listing(events: Iterable[XidEvent]) -> str:
    counts = Counter(e.xid for e in events)
    return ", ".join(f"{_label(n)} x{c}" for n, c in sorted(counts.items()))


def _remediation(name: str, key: str, gpu: GpuIdentity | None, xids: GpuXids) -> str:
    lead = catalog.lookup(xids.lead)
    target: sh.Value | sh.Raw = sh.pci(key) if key != UNKNOWN_GPU else sh.raw("<pci>")
    short = target.map(lambda pci: pci.rsplit(".", 1)[0]) if isinstance(target, sh.Value) \
        else "<pci>"
    node = sh.node(name)
    lines = [
        sh.node_shell(node),
        sh.cmd("dmesg", "--time-format", "iso", sh.raw("|"), "grep", "-E",
               sh.join("NVRM: Xid \\(PCI:", short), tail=" | tail -20"),
        sh.cmd("nvidia-smi", "-q", "-i", target, "-d", "ECC,ROW_REMAPPER,PAGE_RETIREMENT"),
    ]
    rank = max((catalog.action_rank(catalog.lookup(n).action) for n in xids.hardware),
               default=0)
    if rank >= _RESET_RANK:
        lines += [
            sh.cmd("kubectl", "cordon", node),
            sh.cmd("kubectl", "drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                   tail="   # one node at a time"),
        ]
        if lead.action == "RESTART_BM":
            lines.append(sh.note("# then reboot {node}; if the Xid returns, run dcgmi diag -r 3 "
                                 "and open a hardware case", node=node))
        else:
            lines.append(sh.cmd("nvidia-smi", "-r", "-i", target,
                                tail="   # or reboot; then delete the device-plugin pod on the "
                                     "node so it re-registers the GPU"))
    elif xids.hardware:
        lines.append(f"# NVIDIA's action: {action(lead)}")
    else:
        lines += [
            sh.cmd("kubectl", "get", "pods", "-A", "-o", "wide", "--field-selector",
                   sh.join("spec.nodeName=", node)),
            "# application Xids: give the pid/name from the Xid line to the workload owner",
        ]
    if gpu is not None and gpu.uuid:
        lines.append(sh.note("# GPU UUID {uuid}", uuid=sh.word(gpu.uuid, "GPU UUID")))
    return sh.lines(lines)
