"""Helpers shared by the DRV rules: evidence from kernel lines and nvidia-smi, the
node's device health as Kubernetes and the device plugin see it, and node logs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analyzers.facts import Facts
from analyzers.facts.evidence import field as object_field
from analyzers.facts.kernel_events import GpuIdentity
from analyzers.facts.logindex import node_logs
from analyzers.knowledge import signatures
from analyzers.results.models import Evidence
from analyzers.rule import Context, Input, cluster, node
from analyzers.rules.common import LOGS
from bundle import specs
from bundle.evidence import clip
from bundle.kernel import KernelLine
from bundle.nvsmi_health import Reading

# What DRV001, DRV002 and DRV011 read: kernel lines, mapped to GPUs and to the node's
# health, and the container lines (NVML, the device plugin) that name a GPU's loss.
KERNEL_INPUTS: tuple[Input, ...] = (
    node(specs.DMESG),
    node(specs.NVIDIA_SMI, optional=True),
    node(specs.JOURNALS, optional=True),
    cluster(specs.NODES, optional=True),
    cluster(specs.PODS, optional=True),
    LOGS,
)


ALL_DEVICES = "*"


_UUID_RE = re.compile(r"\b(?:MIG-)?GPU-[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}\b")


_PLUGIN_XID_RE = re.compile(r"Xid=(?P<xid>[0-9]{1,6})")


def when(line: KernelLine) -> str:
    """A short time stamp for summaries: wall clock, else seconds since boot."""
    if line.time is not None:
        return line.time.strftime("%Y-%m-%dT%H:%M:%SZ")
    if line.uptime is not None:
        return f"{line.uptime:.0f} s after boot"
    return f"{line.path.rsplit('/', 1)[-1]} line {line.line}"


def gpu_name(node: str, key: str, gpu: GpuIdentity | None) -> str:
    where = f"at {key}" if key != "unknown" else "at an address the log does not name"
    return f"{gpu.describe()} {where}" if gpu is not None else f"the GPU {where}"


def smi_path(node: str) -> str:
    return specs.node_file(node, specs.NVIDIA_SMI)


def smi_evidence(ctx: Context, node: str, bus_id: str, reading: Reading) -> Evidence:
    """The line of ``reading`` inside this GPU's block of nvidia-smi.xml."""
    path = smi_path(node)
    found = ctx.facts.node(node).smi_line(bus_id, reading.path)
    if found is None:
        return Evidence(path=path, excerpt=clip(f"gpu {bus_id}: {reading.path} = {reading.value}"))
    return Evidence(path=path, line=found[0], excerpt=clip(found[1]))


@dataclass
class DeviceHealth:
    """GPUs Kubernetes no longer offers on a node, and why the device plugin says so.

    ``unhealthy`` is capacity minus allocatable of the first GPU resource where they
    differ; ``marks`` maps a GPU UUID (or :data:`ALL_DEVICES`) to plugin log lines that
    mark it unhealthy, and ``mark_xids`` to the Xid numbers those lines name.
    """

    resource: str | None = None
    capacity: int | None = None
    allocatable: int | None = None
    evidence: list[Evidence] = field(default_factory=list)
    marks: dict[str, list[Evidence]] = field(default_factory=dict)
    mark_xids: dict[str, set[int]] = field(default_factory=dict)

    @property
    def unhealthy(self) -> int:
        if self.capacity is None or self.allocatable is None:
            return 0
        return max(self.capacity - self.allocatable, 0)

    def marked(self, gpu: GpuIdentity | None) -> list[Evidence]:
        found = list(self.marks.get(ALL_DEVICES, []))
        if gpu is not None and gpu.uuid:
            found = self.marks.get(gpu.uuid.lower(), []) + found
        return found

    @property
    def degraded(self) -> bool:
        return self.unhealthy > 0 or bool(self.marks)

    def describe(self) -> str:
        if self.resource is None:
            return ""
        return (f"{self.resource} capacity {self.capacity}, allocatable {self.allocatable} "
                f"({self.unhealthy} device(s) withdrawn as unhealthy)")


def prepare_accounting(facts: Facts) -> object:
    """The GPU accounting of every node, made ahead of the rules (``Rule.prepares``): it
    reads only the Node objects and the pods."""
    return facts.accounting


def device_health(ctx: Context, node: str) -> DeviceHealth:
    health = DeviceHealth()
    counts = ctx.facts.accounting.get(node)
    obj = ctx.facts.nodes.get(node)
    if counts is not None:
        for name, count in sorted(counts.resources.items()):
            if count.unhealthy > 0:
                health.resource, health.capacity = name, count.capacity
                health.allocatable = count.allocatable
                if obj is not None:
                    health.evidence = [
                        object_field(obj, f"capacity {name}: {count.capacity}",
                                     "status", "capacity", name),
                        object_field(obj, f"allocatable {name}: {count.allocatable}",
                                     "status", "allocatable", name),
                    ]
                break
    _plugin_marks(ctx, node, health)
    return health


def _plugin_marks(ctx: Context, node: str, health: DeviceHealth) -> None:
    for path, container, text in node_logs(ctx.facts, node, components=("device-plugin",)):
        for hit in signatures.match(text, "log", container=container):
            if "OP008" not in hit.signature.rules or "unhealthy" not in hit.text.lower():
                continue
            uuid = _UUID_RE.search(hit.text)
            key = uuid[0].lower() if uuid else ALL_DEVICES
            evidence = Evidence(path=path, line=hit.line, excerpt=clip(hit.text))
            if evidence not in health.marks.get(key, []):
                health.marks.setdefault(key, []).append(evidence)
            xid = _PLUGIN_XID_RE.search(hit.text)
            if xid:
                health.mark_xids.setdefault(key, set()).add(int(xid["xid"]))
