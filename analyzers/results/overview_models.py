"""The report's overview: what a reader needs beyond the findings.

``Report.overview`` carries the cluster at a glance, one row per GPU node, a timeline of
what happened and the bundle's inventory, all derived from the facts in
``analyzers/engine/overview.py``. Renderers may import ``analyzers.results`` only, so
everything they show is computed here, once, and is part of the JSON document (a sibling
field of schema version 1: automation may ignore it).

Strict like the rest of the contract: frozen, ``extra="forbid"``, lists sorted.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bundle.manifest import fresh_list


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OperatorRelease(_Strict):
    """The GPU Operator version the cluster runs and its support status."""

    version: str | None = None
    series: str | None = None
    status: str = "unknown"          # supported | deprecated | end-of-support | unknown
    status_label: str = "Unknown"
    source: str | None = None        # where the version was read, in words
    image: str | None = None         # the operator image reference, if found
    chart: str | None = None         # the Helm chart of the deployed release, if found
    note: str | None = None          # the status as of the table's date; disagreements
    as_of: str | None = None


class ValueSpread(_Strict):
    """One value (a version) and the GPU nodes that show it."""

    value: str
    count: int
    nodes: list[str] = Field(default_factory=fresh_list)  # sorted, at most a few names


class GpuTotals(_Strict):
    """``nvidia.com/gpu`` over all GPU nodes: seen by nvidia-smi, advertised, usable, used."""

    physical: int | None = None      # None: no node collected nvidia-smi
    physical_nodes: int = 0          # GPU nodes whose nvidia-smi output was read
    advertised: int = 0              # status.capacity
    allocatable: int = 0             # status.allocatable
    assigned: int = 0                # limits of non-terminated pods bound to the node
    unhealthy: int = 0               # capacity minus allocatable


class ResourceTotal(_Strict):
    """Another ``nvidia.com/*`` resource (MIG profiles, renamed shared GPUs)."""

    resource: str
    capacity: int
    allocatable: int
    assigned: int
    nodes: int


class Glance(_Strict):
    kubernetes: str | None = None
    operator: OperatorRelease = Field(default_factory=OperatorRelease)
    containerd: list[ValueSpread] = Field(default_factory=fresh_list)
    drivers: list[ValueSpread] = Field(default_factory=fresh_list)
    nodes: int = 0
    gpu_nodes: int = 0
    gpus: GpuTotals = Field(default_factory=GpuTotals)
    resources: list[ResourceTotal] = Field(default_factory=fresh_list)


class OperandCell(_Strict):
    """One operand on one node. ``status``: ok, failing, missing (expected, no pod) or off
    (disabled in the ClusterPolicy or not deployed to this node by design)."""

    component: str
    status: str
    state: str                       # kubectl's STATUS column, or why there is no pod
    pod: str | None = None           # namespace/name
    restarts: int = 0


class NodeRow(_Strict):
    name: str
    ready: bool | None = None        # the Ready condition; None when the Node is not listed
    unschedulable: bool = False
    gpu_model: str | None = None
    gpu_count: int | None = None     # physical GPUs (nvidia-smi), else the gpu.count label
    gpu_count_source: str | None = None
    driver: str | None = None
    containerd: str | None = None
    nvidia_runtime: bool | None = None  # in the loaded config; None: no config dump
    operands: list[OperandCell] = Field(default_factory=fresh_list)
    capacity: int | None = None      # nvidia.com/gpu
    allocatable: int | None = None
    assigned: int = 0
    unhealthy: int = 0
    other_resources: list[ResourceTotal] = Field(default_factory=fresh_list)  # MIG, renamed
    xids: int = 0
    xid_source: str | None = None    # the kernel log read; None when none was collected


class TimelinePoint(_Strict):
    """One thing that happened, or several alike folded together (``count``)."""

    time: str                        # ISO 8601 UTC, second precision, "Z": the first record
    until: str                       # the last record folded into this point
    lane: str                        # event | containerd | xid | pod
    warning: bool
    text: str
    subject: str                     # the first object it is about
    subjects: int = 1                # distinct objects folded into this point
    count: int = 1                   # occurrences folded into this point
    nodes: list[str] = Field(default_factory=fresh_list)  # sorted sample
    node_count: int = 0
    path: str | None = None
    line: int | None = None
    pointer: str | None = None


class Timeline(_Strict):
    points: list[TimelinePoint] = Field(default_factory=fresh_list)  # by time
    total: int = 0                   # occurrences before folding
    omitted: int = 0                 # folded points left out by the cap
    untimed: int = 0                 # records with no usable wall-clock time
    start: str | None = None
    end: str | None = None
    window_start: str | None = None  # the incident window: the densest run of warnings
    window_end: str | None = None
    window_reason: str | None = None


class InventoryEntry(_Strict):
    """Files grouped by path pattern (``nodes/*/dmesg.txt``, ``logs/gpu-operator/*``)."""

    pattern: str
    files: int
    bytes: int
    truncated: int = 0


class InventoryFile(_Strict):
    path: str
    bytes: int


class Inventory(_Strict):
    files: int = 0
    bytes: int = 0
    entries: list[InventoryEntry] = Field(default_factory=fresh_list)
    entries_omitted: int = 0
    largest: list[InventoryFile] = Field(default_factory=fresh_list)
    truncated: list[str] = Field(default_factory=fresh_list)  # files the collector cut short


class EvidenceMark(_Strict):
    """Where a known error signature matched inside an evidence excerpt (offsets in the
    excerpt string), so a renderer can highlight the part that matters."""

    finding: str
    evidence: int
    start: int
    end: int
    signature: str


class Overview(_Strict):
    glance: Glance = Field(default_factory=Glance)
    nodes: list[NodeRow] = Field(default_factory=fresh_list)
    timeline: Timeline = Field(default_factory=Timeline)
    inventory: Inventory = Field(default_factory=Inventory)
    marks: list[EvidenceMark] = Field(default_factory=fresh_list)
    problems: list[str] = Field(default_factory=fresh_list)  # parts that could not be built
