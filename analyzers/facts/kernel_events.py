"""Kernel events per node: Xid and NVSwitch SXid reports and GPU-relevant kernel signals.

Kernel lines come from ``dmesg.txt`` and from the kernel entries of every
``journal/*.jsonl`` of the node. A journal entry that repeats a dmesg line (same
message, same clock within a few seconds, or no comparable clock) is dropped, so an
event seen by both is counted once and quoted from ``dmesg.txt``.

GPUs are identified by their canonical PCI address (``0000:3b:00.0``). The Xid line
prints ``0000:3b:00`` and nvidia-smi ``00000000:3B:00.0``; both normalise to the same
key, and a lookup that misses on the function number falls back to domain, bus and
device. UUID, model and index come from ``nvidia-smi.xml``, and the UUID also from
the driver's ``NVRM: GPU at PCI:...: GPU-<uuid>`` line when nvidia-smi is missing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar
from weakref import WeakKeyDictionary

from analyzers.facts.journals import journal_scan, journal_units
from analyzers.results.models import Evidence
from bundle import Bundle, specs
from bundle.evidence import clip
from bundle.kernel import (
    KernelLine,
    KernelSignal,
    SXidEvent,
    XidEvent,
    normalize_pci,
    parse_sxid,
    parse_xid,
    scan_signals,
)
from bundle.nvsmi import NvidiaSmi

_Event = TypeVar("_Event", XidEvent, SXidEvent)
UNKNOWN_GPU = "unknown"
MAX_DEVICES = 64
"""Distinct PCI addresses of one kind (Xids, kernel signals, SXids) read per node: the
largest servers hold 16 GPUs and 12 NVSwitches. Each address becomes a finding of its
own, so a log naming thousands (damaged, or made to) would bury the report; the lines
of the addresses past the first :data:`MAX_DEVICES` are counted in a refused problem."""
"""Key of Xid events whose line names no PCI address."""

_SAME_RECORD_SECONDS = 5.0
MERGE_LOOKS = 1_000
"""Kept lines of the same text a journal kernel line is compared with at most."""
_GPU_AT_RE = re.compile(
    r"GPU at PCI:(?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?):\s*"
    r"(?P<uuid>GPU-[0-9A-Fa-f-]{36})"
)


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    """One GPU of a node. ``bus_id`` is nvidia-smi's spelling ('' when the GPU is known
    only from the kernel log); ``index`` is its position in nvidia-smi's list."""

    pci: str
    bus_id: str
    uuid: str | None
    model: str | None
    index: int | None

    def describe(self) -> str:
        parts = [p for p in (self.model, self.uuid) if p]
        name = f"GPU {self.index}" if self.index is not None else "GPU"
        return f"{name} ({', '.join(parts)})" if parts else name


@dataclass(frozen=True, slots=True)
class NodeKernel:
    """What one node's kernel log says about its GPUs."""

    node: str
    lines: tuple[KernelLine, ...]
    xids: tuple[XidEvent, ...]
    signals: tuple[KernelSignal, ...]
    gpus: tuple[GpuIdentity, ...]
    sources: tuple[str, ...]
    sxids: tuple[SXidEvent, ...] = ()   # NVSwitch reports, in time order

    def gpu(self, pci: str | None) -> GpuIdentity | None:
        """The GPU at ``pci`` (any spelling), or None."""
        key = normalize_pci(pci) if pci else None
        if key is None:
            return None
        for gpu in self.gpus:
            if gpu.pci == key:
                return gpu
        stem = key.rsplit(".", 1)[0]
        return next((g for g in self.gpus if g.pci.rsplit(".", 1)[0] == stem), None)

    def gpu_by_uuid(self, uuid: str) -> GpuIdentity | None:
        wanted = uuid.strip().lower()
        return next((g for g in self.gpus if g.uuid and g.uuid.lower() == wanted), None)

    def key(self, pci: str | None) -> str:
        """The subject key of an address: the known GPU's address, else the canonical
        form, else :data:`UNKNOWN_GPU`."""
        gpu = self.gpu(pci)
        if gpu is not None:
            return gpu.pci
        return (normalize_pci(pci) if pci else None) or UNKNOWN_GPU

    def xids_by_gpu(self) -> dict[str, list[XidEvent]]:
        """GPU key → its Xid events in time order."""
        grouped: dict[str, list[XidEvent]] = defaultdict(list)
        for event in self.xids:
            grouped[self.key(event.pci)].append(event)
        return dict(grouped)

    def signals_of(self, *kinds: str) -> list[KernelSignal]:
        return [s for s in self.signals if s.kind in kinds]


def by_node(bundle: Bundle) -> dict[str, NodeKernel]:
    """Kernel events of every node directory in the bundle."""
    return {name: node_kernel(bundle, name) for name in bundle.node_names}


def node_kernel(bundle: Bundle, name: str) -> NodeKernel:
    """The node's kernel events; made once (here or in a worker process, see
    speed/prefetch.py) and kept for the bundle's lifetime."""
    made = _KERNELS.setdefault(bundle, {})
    found = made.get(name)
    if found is None:
        found = made[name] = _node_kernel(bundle, name)
    return found


def remember_kernel(bundle: Bundle, kernel: NodeKernel) -> None:
    """Keep a node's kernel events made elsewhere (in a worker process)."""
    _KERNELS.setdefault(bundle, {})[kernel.node] = kernel


_KERNELS: WeakKeyDictionary[Bundle, dict[str, NodeKernel]] = WeakKeyDictionary()


def _node_kernel(bundle: Bundle, name: str) -> NodeKernel:
    artifacts = bundle.node(name)
    lines: list[KernelLine] = list(artifacts.dmesg)
    sources = [artifacts.path(specs.DMESG)] if artifacts.has(specs.DMESG) else []
    for unit in journal_units(bundle, name):
        kernel = list(journal_scan(bundle, name, unit).kernel)  # one shared pass per journal
        if kernel:
            sources.append(artifacts.path(specs.journal(unit)))
            lines = merge_lines(lines, kernel)
    where = sources[0] if sources else artifacts.path(specs.DMESG)

    def note(message: str) -> None:
        bundle.problem(where, message, kind="refused")

    xids = _first_devices([e for line in lines if (e := parse_xid(line)) is not None],
                          "Xid", note)
    signals = _first_devices([s for line in lines for s in scan_signals(line)],
                             "GPU kernel", note)
    sxids = _first_devices([r for line in lines if (r := parse_sxid(line)) is not None],
                           "SXid", note)
    return NodeKernel(
        node=name,
        lines=tuple(lines),
        xids=tuple(in_time_order(xids)),
        signals=tuple(signals),
        gpus=tuple(identities(artifacts.nvidia_smi, lines)),
        sources=tuple(sources),
        sxids=tuple(in_time_order(sxids)),
    )


Addressed = TypeVar("Addressed", XidEvent, KernelSignal, SXidEvent)


def _first_devices(events: list[Addressed], what: str,
                   note: Callable[[str], None]) -> list[Addressed]:
    """The events of the first :data:`MAX_DEVICES` distinct addresses, in order (those
    without an address all kept); ``note`` hears how many addresses were left out."""
    seen: set[str] = set()
    left: set[str] = set()
    kept = []
    for event in events:
        key = normalize_pci(event.pci) if event.pci else None
        if key is None or key in seen:
            kept.append(event)
        elif len(seen) < MAX_DEVICES:
            seen.add(key)
            kept.append(event)
        else:
            left.add(key)
    if left:
        note(f"{what} lines name {len(seen) + len(left):,} distinct PCI addresses; those of "
             f"the first {MAX_DEVICES} were read, the lines of the other {len(left):,} were "
             "not (no server holds that many GPUs or NVSwitches)")
    return kept


# ---------------------------------------------------------------------- merging


def _text_key(line: KernelLine) -> str:
    return " ".join(line.message.split())


def _same_record(a: KernelLine, b: KernelLine) -> bool:
    if a.time is not None and b.time is not None:
        return abs((a.time - b.time).total_seconds()) <= _SAME_RECORD_SECONDS
    if a.uptime is not None and b.uptime is not None:
        return abs(a.uptime - b.uptime) <= _SAME_RECORD_SECONDS
    return True


def merge_lines(kept: Sequence[KernelLine], extra: Iterable[KernelLine]) -> list[KernelLine]:
    """``kept`` plus the lines of ``extra`` that do not repeat one of ``kept``.

    Each kept line absorbs at most one repeat, so an event logged twice stays twice.
    A line's repeat is looked for among at most :data:`MERGE_LOOKS` kept lines of the
    same text past those already matched, so that a log of one message repeated a
    million times (an AER storm, or a bomb) merges in linear time; a repeat further
    away than that is kept twice.
    """
    by_text: dict[str, list[int]] = defaultdict(list)
    for index, line in enumerate(kept):
        by_text[_text_key(line)].append(index)
    front: dict[str, int] = {}  # per text: candidates before this one are all used
    used: set[int] = set()
    merged = list(kept)
    for line in extra:
        key = _text_key(line)
        candidates = by_text.get(key, ())
        start = front.get(key, 0)
        while start < len(candidates) and candidates[start] in used:
            start += 1
        front[key] = start
        twin = next((i for i in candidates[start:start + MERGE_LOOKS]
                     if i not in used and _same_record(kept[i], line)), None)
        if twin is None:
            merged.append(line)
        else:
            used.add(twin)
    return merged


def in_time_order(events: Sequence[_Event]) -> list[_Event]:
    """Sorted by wall clock when every event has one, else by uptime when every event
    has one, else left in log order (dmesg first, then journal-only events)."""
    if events and all(e.source.time is not None for e in events):
        return sorted(events, key=lambda e: (e.source.time, e.source.line))
    if events and all(e.source.uptime is not None for e in events):
        return sorted(events, key=lambda e: (e.source.uptime or 0.0, e.source.line))
    return list(events)


# --------------------------------------------------------------------- identities


def identities(smi: NvidiaSmi | None, lines: Iterable[KernelLine]) -> list[GpuIdentity]:
    """GPUs from nvidia-smi, plus GPUs the driver named in ``GPU at PCI`` lines."""
    found: dict[str, GpuIdentity] = {}
    for index, gpu in enumerate(smi.gpus if smi is not None else ()):
        pci = normalize_pci(gpu.bus_id)
        if pci is None or pci in found:
            continue
        found[pci] = GpuIdentity(pci=pci, bus_id=gpu.bus_id, uuid=gpu.uuid,
                                 model=gpu.product_name, index=index)
    for line in lines:
        m = _GPU_AT_RE.search(line.message)
        pci = normalize_pci(m["pci"]) if m else None
        if m is None or pci is None or pci in found:
            continue
        stem = pci.rsplit(".", 1)[0]
        if any(key.rsplit(".", 1)[0] == stem for key in found):
            continue
        found[pci] = GpuIdentity(pci=pci, bus_id="", uuid=m["uuid"], model=None, index=None)
    return list(found.values())


def line_evidence(line: KernelLine) -> Evidence:
    """The evidence of one kernel (or container log) line: its file, number and words."""
    return Evidence(path=line.path, line=line.line, excerpt=clip(line.raw or line.message))


def gpu_address(bus_id: str) -> str | None:
    """The canonical PCI address of an nvidia-smi bus id, as ``NodeKernel`` keys its
    GPUs; None when it is not one."""
    return normalize_pci(bus_id)


def log_lines(path: str, text: str, *needles: str) -> Iterator[KernelLine]:
    """Lines of a container log holding any of ``needles`` (case-insensitive), as
    records the kernel signal scanner can read."""
    lowered = tuple(n.lower() for n in needles)
    for number, raw in enumerate(text.splitlines(), start=1):
        low = raw.lower()
        if any(n in low for n in lowered):
            yield KernelLine(path=path, line=number, raw=raw, message=raw.strip(),
                             time=None, uptime=None)


def log_signals(path: str, text: str, kinds: tuple[str, ...],
                *needles: str) -> list[KernelSignal]:
    """The kernel-style signals of ``kinds`` that lines of a container log holding one
    of ``needles`` carry (NVML's "device handle" and "GPU is lost" words)."""
    return [signal for line in log_lines(path, text, *needles)
            for signal in scan_signals(line) if signal.kind in kinds]
