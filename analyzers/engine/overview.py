"""Build the report's :class:`Overview` from the facts: the cluster at a glance, one row
per GPU node, the timeline, the bundle inventory, and where evidence matched a known
signature. Everything here reads facts and the bundle once; nothing raises on odd data.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from analyzers.engine import timeline
from analyzers.facts import Facts
from analyzers.facts.operands import OperandPod
from analyzers.facts.operator_version import OperatorChart, OperatorImage
from analyzers.knowledge import releases, signatures
from analyzers.results.models import Finding
from analyzers.results.overview_models import (
    EvidenceMark,
    Glance,
    GpuTotals,
    Inventory,
    InventoryEntry,
    InventoryFile,
    NodeRow,
    OperandCell,
    OperatorRelease,
    Overview,
    ResourceTotal,
    Timeline,
    ValueSpread,
)
from bundle import specs, versions
from bundle.kernel import XidEvent
from bundle.kube import Deployment, Node

T = TypeVar("T")
log = logging.getLogger(__name__)

GPU = "nvidia.com/gpu"
SPREAD_SAMPLE = 5
INVENTORY_CAP = 300
LARGEST = 10
TRUNCATED_CAP = 50
MARK_EVIDENCE_CAP = 8
MARK_EXCERPT_CAP = 2000
MARK_TOTAL_CAP = 5000

# (component in facts.operands, ClusterPolicy section, node deploy label suffix)
MATRIX: tuple[tuple[str, str, str], ...] = (
    ("driver", "driver", "driver"),
    ("toolkit", "toolkit", "container-toolkit"),
    ("device-plugin", "devicePlugin", "device-plugin"),
    ("gfd", "gfd", "gpu-feature-discovery"),
    ("dcgm-exporter", "dcgmExporter", "dcgm-exporter"),
    ("mig-manager", "migManager", "mig-manager"),
    ("validator", "validator", "operator-validator"),
)

def build(facts: Facts, findings: Sequence[Finding] = ()) -> Overview:
    """The overview of a bundle. Each part is built in isolation: a part that fails (a
    fact raising on data nobody foresaw) is left empty and named in ``problems``; the
    report goes on."""
    problems: list[str] = []

    def part(name: str, make: Callable[[], T], empty: T) -> T:
        try:
            return make()
        except Exception as exc:  # noqa: BLE001 - the overview must never sink the report
            log.debug("overview part %s failed", name, exc_info=True)
            problems.append(f"{name}: {type(exc).__name__}: {exc}"[:300])
            return empty

    names = sorted(set(facts.bundle.node_names) | set(facts.gpu_nodes))
    no_xids: dict[str, tuple[list[XidEvent], str | None]] = {}
    xids = part("kernel events", lambda: {n: timeline.xid_events(facts, n) for n in names},
                no_xids)
    no_rows: list[NodeRow] = []
    rows = part("node matrix", lambda: [_node_row(facts, n, xids.get(n, ([], None)))
                                        for n in facts.gpu_nodes], no_rows)
    return Overview(
        glance=part("glance", lambda: _glance(facts, rows), Glance()),
        nodes=rows,
        timeline=part("timeline", lambda: timeline.build(
            facts, {n: events for n, (events, _) in xids.items()}), Timeline()),
        inventory=part("inventory", lambda: _inventory(facts), Inventory()),
        marks=part("evidence marks", lambda: _marks(findings), []),
        problems=problems,
    )


# -- glance -----------------------------------------------------------------------------


def _glance(facts: Facts, rows: list[NodeRow]) -> Glance:
    bundle = facts.bundle
    smi_rows = [row for row in rows if row.gpu_count_source == "nvidia-smi"]
    totals = GpuTotals(
        physical=sum(row.gpu_count or 0 for row in smi_rows) if smi_rows else None,
        physical_nodes=len(smi_rows),
        advertised=sum(row.capacity or 0 for row in rows),
        allocatable=sum(row.allocatable or 0 for row in rows),
        assigned=sum(row.assigned for row in rows),
        unhealthy=sum(row.unhealthy for row in rows),
    )
    return Glance(
        kubernetes=facts.kubernetes_version,
        operator=operator_release(facts),
        containerd=_spread((row.name, row.containerd) for row in rows),
        drivers=_spread((row.name, row.driver) for row in rows),
        nodes=len(bundle.cluster.nodes) or len(bundle.node_names),
        gpu_nodes=len(rows),
        gpus=totals,
        resources=_other_resources(facts),
    )


def _spread(values: Iterable[tuple[str, str | None]]) -> list[ValueSpread]:
    by_value: dict[str, list[str]] = defaultdict(list)
    for node, value in values:
        by_value[value or "unknown"].append(node)
    ordered = sorted(by_value.items(), key=lambda kv: (kv[0] == "unknown", -len(kv[1]), kv[0]))
    return [ValueSpread(value=value, count=len(nodes), nodes=sorted(nodes)[:SPREAD_SAMPLE])
            for value, nodes in ordered]


def _other_resources(facts: Facts) -> list[ResourceTotal]:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for name in facts.gpu_nodes:
        counts = facts.accounting.get(name)
        if counts is None:
            continue
        for resource, count in counts.resources.items():
            if resource == GPU:
                continue
            slot = totals[resource]
            slot[0] += count.capacity or 0
            slot[1] += count.allocatable or 0
            slot[2] += count.assigned
            slot[3] += 1
    return [ResourceTotal(resource=r, capacity=c, allocatable=a, assigned=s, nodes=n)
            for r, (c, a, s, n) in sorted(totals.items())]


def _where(source: OperatorImage | OperatorChart) -> str:
    if isinstance(source, OperatorChart):
        return f"Helm release {source.release} revision {source.revision.revision}"
    owner = source.owner
    kind = "Deployment" if isinstance(owner, Deployment) else "Pod"
    return f"image tag of {kind} {owner.metadata.namespace}/{owner.metadata.name}"


def operator_release(facts: Facts) -> OperatorRelease:
    """The operator version (image tag first, Helm chart second) and its support status."""
    found = facts.operator_version
    image = found.image.image if found.image is not None else None
    chart = found.chart.revision.chart if found.chart is not None else None
    source = found.source
    status = releases.support(found.text)
    if source is None or status is None:
        return OperatorRelease(image=image, chart=chart,
                               note="no operator version found in the Deployment image tag "
                                    "or the Helm release history")
    note = status.note
    image_version = found.image.version if found.image is not None else None
    chart_version = found.chart.version if found.chart is not None else None
    if image_version and chart_version and image_version != chart_version:
        note += (f"; the image tag says {'.'.join(map(str, image_version))} but the Helm "
                 f"chart says {'.'.join(map(str, chart_version))}")
    return OperatorRelease(
        version=status.version, series=status.series, status=status.status.value,
        status_label=status.label, source=_where(source), image=image, chart=chart,
        note=note, as_of=status.as_of,
    )


# -- node matrix --------------------------------------------------------------------------


def containerd_version(facts: Facts, name: str, node: Node | None) -> str | None:
    text = facts.bundle.node(name).containerd_version
    found = versions.containerd_text(text)
    if found:
        return found
    runtime = node.status.node_info.container_runtime_version if node is not None else ""
    if runtime:
        engine, _, version = runtime.partition("://")
        return version if engine == "containerd" and version else runtime
    return None


def _driver(labels: dict[str, str], smi_driver: str | None) -> str | None:
    if smi_driver:
        return smi_driver
    full = labels.get("nvidia.com/cuda.driver-version.full")
    if full:
        return full
    parts = [labels.get(f"nvidia.com/cuda.driver.{p}") for p in ("major", "minor", "rev")]
    return ".".join(p for p in parts if p) or None


def _gpu_model(products: Sequence[str], label: str | None) -> str | None:
    if not products:
        return label.replace("-", " ") if label else None
    counts = Counter(products)
    if len(counts) == 1:
        return products[0]
    return ", ".join(f"{name} ×{n}" for name, n in sorted(counts.items()))


def _label_int(labels: dict[str, str], key: str) -> int | None:
    value = labels.get(key, "")
    return int(value) if value.isdigit() else None


def _cell(facts: Facts, node: Node | None, component: str, section: str, label: str,
          operand: OperandPod | None) -> OperandCell:
    if operand is not None:
        restarts = sum(s.restart_count for s in operand.pod.status.container_statuses)
        return OperandCell(component=component, status="ok" if operand.healthy else "failing",
                           state=operand.state, pod=f"{operand.pod.namespace}/{operand.pod.name}",
                           restarts=restarts)
    labels = node.labels if node is not None else {}
    deploy = labels.get(f"nvidia.com/gpu.deploy.{label}")
    policy = facts.cluster_policy
    enabled = policy.component_enabled(section) if policy is not None else None
    if enabled is False:
        return OperandCell(component=component, status="off", state="disabled in ClusterPolicy")
    if deploy is not None and deploy != "true":
        return OperandCell(component=component, status="off", state=f"deploy label {deploy}")
    if component == "mig-manager" and deploy is None and \
            labels.get("nvidia.com/mig.capable") != "true":
        return OperandCell(component=component, status="off", state="not MIG-capable")
    return OperandCell(component=component, status="missing", state="no pod")


def _node_row(facts: Facts, name: str, xids: tuple[list[XidEvent], str | None]) -> NodeRow:
    node = facts.nodes.get(name)
    labels = node.labels if node is not None else {}
    artifacts = facts.bundle.node(name)
    smi = artifacts.nvidia_smi
    products = [g.product_name for g in smi.gpus if g.product_name] if smi else []
    count: int | None
    count_source: str | None
    if smi is not None and smi.gpus:
        count, count_source = len(smi.gpus), "nvidia-smi"
    else:
        count = _label_int(labels, "nvidia.com/gpu.count")
        count_source = "label" if count is not None else None
    ready = None
    if node is not None:
        ready = next((c.status == "True" for c in node.status.conditions if c.type == "Ready"),
                     None)
    accounting = facts.accounting.get(name)
    gpus = accounting.count(GPU) if accounting is not None else None
    operands = facts.operands.get(name, {})
    cells = [_cell(facts, node, component, section, label, operands.get(component))
             for component, section, label in MATRIX]
    return NodeRow(
        name=name,
        ready=ready,
        unschedulable=node.spec.unschedulable if node is not None else False,
        gpu_model=_gpu_model(products, labels.get("nvidia.com/gpu.product")),
        gpu_count=count,
        gpu_count_source=count_source,
        driver=_driver(labels, smi.driver_version if smi else None),
        containerd=containerd_version(facts, name, node),
        nvidia_runtime=facts.runtime(name).has_nvidia,
        operands=cells,
        capacity=gpus.capacity if gpus else None,
        allocatable=gpus.allocatable if gpus else None,
        assigned=gpus.assigned if gpus else 0,
        unhealthy=gpus.unhealthy if gpus else 0,
        other_resources=[
            ResourceTotal(resource=r, capacity=c.capacity or 0, allocatable=c.allocatable or 0,
                          assigned=c.assigned, nodes=1)
            for r, c in sorted(accounting.resources.items()) if r != GPU
        ] if accounting is not None else [],
        xids=len(xids[0]),
        xid_source=xids[1],
    )


# -- inventory ----------------------------------------------------------------------------


def _pattern(path: str) -> str:
    parts = path.split("/")
    if parts[0] == "nodes" and len(parts) > 2:
        return specs.any_node("/".join(parts[2:]))
    if parts[0] == "logs" and len(parts) > 2:
        return specs.logs_of_namespace(parts[1]) + "*"
    return path


def _inventory(facts: Facts) -> Inventory:
    bundle = facts.bundle
    truncated = sorted(item.path for item in bundle.manifest.items if item.truncated)
    cut = set(truncated)
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    sizes: list[tuple[int, str]] = []
    for path in bundle.paths:
        size = bundle.size(path) or 0
        slot = groups[_pattern(path)]
        slot[0] += 1
        slot[1] += size
        slot[2] += path in cut
        sizes.append((size, path))
    entries = [InventoryEntry(pattern=p, files=f, bytes=b, truncated=t)
               for p, (f, b, t) in sorted(groups.items())]
    largest = sorted(sizes, key=lambda item: (-item[0], item[1]))[:LARGEST]
    return Inventory(
        files=len(sizes),
        bytes=sum(size for size, _ in sizes),
        entries=entries[:INVENTORY_CAP],
        entries_omitted=max(len(entries) - INVENTORY_CAP, 0),
        largest=[InventoryFile(path=p, bytes=s) for s, p in largest],
        truncated=truncated[:TRUNCATED_CAP],
    )


# -- evidence marks -------------------------------------------------------------------------


def _source_of(path: str) -> str | None:
    if path == specs.EVENTS:
        return "event"
    if path == specs.PODS:
        return "pod-status"
    if path.startswith(specs.LOGS_DIR):
        return "log"
    if path.endswith("/dmesg.txt"):
        return "kernel"
    if "/journal/" in path and path.endswith(".jsonl"):
        return "journal:" + path.rsplit("/", 1)[1][: -len(".jsonl")]
    return None


def _marks(findings: Sequence[Finding]) -> list[EvidenceMark]:
    marks: list[EvidenceMark] = []
    scanned = 0
    for finding in findings:
        for index, evidence in enumerate(finding.evidence[:MARK_EVIDENCE_CAP]):
            source = _source_of(evidence.path)
            if source is None or scanned >= MARK_TOTAL_CAP:
                continue
            scanned += 1
            end_seen = -1
            for found in signatures.match(evidence.excerpt[:MARK_EXCERPT_CAP], source):
                start, end = found.span
                if start < end_seen:
                    continue
                end_seen = end
                marks.append(EvidenceMark(finding=finding.id, evidence=index, start=start,
                                          end=end, signature=found.signature.id))
    return marks
