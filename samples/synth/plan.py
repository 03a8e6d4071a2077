"""Sizes, node roles and the planted-findings manifest of a synthetic bundle.

Every node is healthy except those given a role: one failure from the rule catalog,
placed on every ``stride``-th node from an offset the seed chooses (always inside
the cluster, so even the smallest size carries each failure at least once). Roles do
not overlap; a collision moves the later role to the next healthy node.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any

UTC = dt.UTC
CREATED = dt.datetime(2026, 11, 20, 12, 0, 0, tzinfo=UTC)
"""Collection time of every synthetic bundle (the clock is fixed, not read)."""
OPERATOR_NS = "gpu-operator"
POLICY = "cluster-policy"
GPUS_PER_NODE = 8
# A DGX/HGX H100's eight GPUs, canonical PCI addresses (nvidia-smi prints 00000000:1B:00.0).
BUS_IDS = ("0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
           "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0")


@dataclass(frozen=True, slots=True)
class Size:
    """How big a bundle is. ``journal_kib`` is the target size of a node's journals
    (containerd and kubelet together); ``cpu_pods`` the non-GPU pods per node."""

    name: str
    nodes: int
    journal_kib: int
    pending_pods: int
    rejected_per_lost_node: int
    cpu_pods: int = 14


SIZES = {
    "S": Size("S", nodes=50, journal_kib=1024, pending_pods=4, rejected_per_lost_node=64),
    "M": Size("M", nodes=500, journal_kib=1024, pending_pods=8, rejected_per_lost_node=64),
    "L": Size("L", nodes=2000, journal_kib=1024, pending_pods=20, rejected_per_lost_node=64),
}


class Role(StrEnum):
    HEALTHY = "healthy"
    NO_RUNTIME = "no-runtime"            # CFG004 + RT001 + OP001: no drop-in at all
    CLOBBERED = "dropin-clobbered"       # RT002 + RT001 + OP001: 99-registry.toml wins
    GPU_LOST = "gpu-lost"                # DRV002 + DRV001 (Xid 79) + SC005
    XID_HARDWARE = "xid-48"              # DRV001: double-bit ECC error
    XID_APPLICATION = "xid-13"           # DRV001: application error, GPU still offered
    RESTARTED = "containerd-restarted"   # RT004: containerd killed by SIGHUP, restarted


# Priority order: a role listed earlier keeps its node on a collision.
STRIDES: tuple[tuple[Role, int], ...] = (
    (Role.NO_RUNTIME, 97),
    (Role.CLOBBERED, 89),
    (Role.GPU_LOST, 61),
    (Role.XID_HARDWARE, 53),
    (Role.XID_APPLICATION, 67),
    (Role.RESTARTED, 41),
)
NO_NVIDIA = (Role.NO_RUNTIME, Role.CLOBBERED)
XID_ROLES = {Role.GPU_LOST: 79, Role.XID_HARDWARE: 48, Role.XID_APPLICATION: 13}


def digest(*parts: object) -> bytes:
    return hashlib.blake2b("\x1f".join(str(p) for p in parts).encode(), digest_size=16).digest()


def assign_roles(nodes: int, seed: int) -> list[Role]:
    roles = [Role.HEALTHY] * nodes
    for role, stride in STRIDES:
        offset = random.Random(f"{seed}/{role.value}").randrange(min(stride, nodes))
        for start in range(offset, nodes, stride):
            index = start
            for _ in range(nodes):
                if roles[index] is Role.HEALTHY:
                    roles[index] = role
                    break
                index = (index + 1) % nodes
    return roles


@dataclass(frozen=True, slots=True)
class NodePlan:
    """One GPU node: its name, role, and the GPU a GPU-level failure hits."""

    index: int
    name: str
    role: Role
    fault_gpu: int  # index into BUS_IDS; meaningful for the Xid roles

    @property
    def fault_pci(self) -> str:
        return BUS_IDS[self.fault_gpu]

    @property
    def has_nvidia(self) -> bool:
        return self.role not in NO_NVIDIA

    @property
    def gpus_listed(self) -> int:
        """GPUs nvidia-smi lists: a GPU that fell off the bus is gone from the list."""
        return GPUS_PER_NODE - 1 if self.role is Role.GPU_LOST else GPUS_PER_NODE

    @property
    def allocatable(self) -> int | None:
        """nvidia.com/gpu allocatable; None where the device plugin never registered."""
        if not self.has_nvidia:
            return None
        return GPUS_PER_NODE - 1 if self.role is Role.GPU_LOST else GPUS_PER_NODE


@dataclass(frozen=True)
class Plan:
    size: Size
    seed: int

    @cached_property
    def roles(self) -> list[Role]:
        return assign_roles(self.size.nodes, self.seed)

    @cached_property
    def nodes(self) -> list[NodePlan]:
        result = []
        for index, role in enumerate(self.roles):
            name = node_name(index)
            fault = random.Random(f"{self.seed}/{name}/fault").randrange(GPUS_PER_NODE)
            result.append(NodePlan(index, name, role, fault))
        return result

    def with_role(self, *roles: Role) -> list[NodePlan]:
        return [n for n in self.nodes if n.role in roles]

    def pending_pod_names(self) -> list[str]:
        return [f"llm-finetune-{k:03d}-{suffix(5, self.seed, 'pending', k)}"
                for k in range(self.size.pending_pods)]

    def planted(self) -> dict[str, Any]:
        """The manifest of what was planted and what the analyzer must report."""
        broken = self.with_role(*NO_NVIDIA)
        lost = self.with_role(Role.GPU_LOST)
        xids = self.with_role(*XID_ROLES)
        expected: dict[str, list[str]] = {
            "CFG004": [f"CFG004:{POLICY}"] if broken else [],
            "RT001": [f"RT001:{n.name}" for n in broken],
            "RT002": [f"RT002:{n.name}" for n in self.with_role(Role.CLOBBERED)],
            "OP001": [f"OP001:{n.name}" for n in broken],
            "RT004": [f"RT004:{n.name}" for n in self.with_role(Role.RESTARTED)],
            "DRV001": [f"DRV001:{n.name}/{n.fault_pci}" for n in xids],
            "DRV002": [f"DRV002:{n.name}/{n.fault_pci}" for n in lost],
            "SC005": [f"SC005:{n.name}" for n in lost],
            "SC001": [f"SC001:ml-batch/{p}" for p in self.pending_pod_names()],
        }
        chained: dict[str, list[str]] = {
            "OP008": sorted(f"OP008:{n.name}" for n in broken + lost),
            "OP006": [f"OP006:{POLICY}"],
            "BND001": ["BND001:not-started"] if broken else [],
        }
        return {
            "generator": "samples.synth",
            "size": self.size.name,
            "seed": self.seed,
            "nodes": self.size.nodes,
            "gpus_per_node": GPUS_PER_NODE,
            "journal_kib_per_node": self.size.journal_kib,
            "roles": {n.name: n.role.value for n in self.nodes if n.role is not Role.HEALTHY},
            "expected": {k: sorted(v) for k, v in expected.items()},
            "chained": {k: sorted(v) for k, v in chained.items() if v},
            "notes": {
                "expected": "for each rule id listed, the analyzer's findings of that rule "
                            "are exactly these ids",
                "chained": "findings of other rules that the planted failures cause and that "
                           "the analyzer may report: OP008 (device plugin not running where "
                           "the runtime is missing; devices marked unhealthy where a GPU fell "
                           "off the bus), OP006 (the ClusterPolicy is notReady while operands "
                           "are stuck), BND001 (logs of containers stuck in PodInitializing "
                           "could not be collected)",
            },
        }


def node_name(index: int) -> str:
    return f"gpu-{index + 1:04d}"


_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def suffix(length: int, *parts: object) -> str:
    """A Kubernetes-style random suffix (generateName alphabet), stable for ``parts``."""
    raw = digest("suffix", *parts)
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in raw[:length])


def hexid(length: int, *parts: object) -> str:
    out = ""
    counter = 0
    while len(out) < length:
        out += digest(counter, *parts).hex()
        counter += 1
    return out[:length]


def uid(*parts: object) -> str:
    h = hexid(32, "uid", *parts)
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:32]}"


def iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def plus(t: dt.datetime, seconds: float) -> dt.datetime:
    return t + dt.timedelta(seconds=seconds)
