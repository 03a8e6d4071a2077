"""The overview part of the HTML view model: glance, node matrix, timeline, coverage and
inventory. Geometry for the inline SVG (bars, timeline) is computed here so the template
only places what it is given.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from analyzers.results.models import (
    Finding,
    Glance,
    NodeRow,
    Overview,
    Report,
    RuleStatus,
    Timeline,
    TimelinePoint,
    ValueSpread,
)
from reports.html_findings import Anchors, Link, anchor
from reports.view import at_least, clean

MATRIX_ROWS = 200           # nodes with every column (operand chips, GPU bar)
MATRIX_BRIEF = 5000         # nodes after those, one brief row each (filter, sort, search)
MATRIX_NAMES = 500
NODE_LINKS = 6
TIMELINE_ROWS = 300
COVERAGE_ROWS = 200

COMPONENT_LABELS = {
    "driver": "driver", "toolkit": "toolkit", "device-plugin": "device plugin", "gfd": "GFD",
    "dcgm-exporter": "DCGM exporter", "mig-manager": "MIG manager", "validator": "validator",
}
LANES = (("event", "Kubernetes events"), ("containerd", "containerd restarts"),
         ("xid", "Xid (kernel)"), ("pod", "Pod state"))
STATUS_ORDER = (RuleStatus.ERROR, RuleStatus.FAILED, RuleStatus.PARTIAL, RuleStatus.SKIPPED,
                RuleStatus.PASSED)


def _c(text: str | None, limit: int = 300) -> str:
    value = clean(text or "")
    return value if len(value) <= limit else value[: limit - 1] + "…"


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


# -- glance ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stat:
    label: str
    value: str
    tone: str                   # ok | warn | bad | none
    note: str


@dataclass(frozen=True, slots=True)
class GlanceView:
    rows: list[Stat]
    gpus: list[Stat]


def _spread_text(spread: Sequence[ValueSpread]) -> tuple[str, str, str]:
    known = [s for s in spread if s.value != "unknown"]
    if not spread:
        return "no GPU nodes", "none", ""
    parts = []
    for item in spread:
        sample = f" ({', '.join(_c(n, 80) for n in item.nodes)}" + (
            f" +{item.count - len(item.nodes)})" if item.count > len(item.nodes) else ")")
        parts.append(f"{_c(item.value, 80)} on {item.count} node{'s' * (item.count != 1)}"
                     + (sample if len(spread) > 1 and item.count <= 3 else ""))
    tone = "warn" if len(known) > 1 else ("none" if not known else "ok")
    note = "differs across GPU nodes" if len(known) > 1 else ""
    return " · ".join(parts), tone, note


def glance_view(report: Report, glance: Glance) -> GlanceView:
    operator = glance.operator
    tones = {"supported": "ok", "deprecated": "warn", "end-of-support": "bad"}
    if operator.version:
        op_value = f"{_c(operator.version)} — {operator.status_label}"
        op_note = "; ".join(x for x in (_c(operator.note, 400),
                                        f"read from the {_c(operator.source)}") if x)
    else:
        op_value, op_note = "not found", _c(operator.note, 400)
    containerd, c_tone, c_note = _spread_text(glance.containerd)
    drivers, d_tone, d_note = _spread_text(glance.drivers)
    kubernetes = report.bundle.cluster.server_version or glance.kubernetes
    rows = [
        Stat("Kubernetes", _c(kubernetes) or "unknown", "none", ""),
        Stat("GPU Operator", op_value, tones.get(operator.status, "none"), op_note),
        Stat("containerd", containerd, c_tone, c_note),
        Stat("NVIDIA driver", drivers, d_tone, d_note),
        Stat("GPU nodes", f"{glance.gpu_nodes} of {at_least(report)}{glance.nodes} nodes",
             "bad" if glance.nodes and not glance.gpu_nodes and not report.bundle.shortened
             else "none", "lower bounds: a list was shortened" if report.bundle.shortened
             else ""),
    ]
    for resource in glance.resources:
        rows.append(Stat(_c(resource.resource), f"capacity {resource.capacity} · allocatable "
                         f"{resource.allocatable} · assigned {resource.assigned}", "none",
                         f"on {resource.nodes} node(s)"))
    gpus = glance.gpus
    physical = "—" if gpus.physical is None else str(gpus.physical)
    short = gpus.physical is not None and gpus.advertised < gpus.physical
    if gpus.physical is None:
        physical_note, physical_tone = "no node collected nvidia-smi", "none"
    else:
        physical_note = f"on {gpus.physical_nodes} of {glance.gpu_nodes} GPU nodes"
        physical_tone = "none"
        if gpus.physical_nodes == glance.gpu_nodes and gpus.physical < gpus.advertised:
            physical_tone = "bad"
            physical_note += (f"; {gpus.advertised - gpus.physical} fewer than advertised "
                              "(a GPU the driver no longer sees?)")
    advertised_tone, advertised_note = "none", ""
    if short and gpus.physical is not None:
        missing = gpus.physical - gpus.advertised
        if glance.resources:
            advertised_tone = "warn"
            advertised_note = (f"{missing} not advertised as nvidia.com/gpu; the other "
                               "NVIDIA resources (MIG, renamed shares) are listed above")
        else:
            advertised_tone, advertised_note = "bad", f"{missing} not advertised"
    gpu_stats = [
        Stat("Physical (nvidia-smi)", physical, physical_tone, physical_note),
        Stat("Advertised (capacity)", str(gpus.advertised), advertised_tone, advertised_note),
        Stat("Allocatable", str(gpus.allocatable), "bad" if gpus.unhealthy else "none",
             f"{gpus.unhealthy} unhealthy" if gpus.unhealthy else ""),
        Stat("Assigned", str(gpus.assigned),
             "warn" if gpus.allocatable and gpus.assigned >= gpus.allocatable else "none",
             "all allocatable GPUs are assigned"
             if gpus.allocatable and gpus.assigned >= gpus.allocatable else ""),
    ]
    return GlanceView(rows, gpu_stats)


# -- node matrix ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Chip:
    label: str
    status: str                 # ok | failing | missing | off (the colour)
    symbol: str                 # the same, without colour
    state: str                  # shown on the chip when it is not ok/off
    title: str


SYMBOLS = {"ok": "✓", "failing": "✗", "missing": "?", "off": "–"}


@dataclass(frozen=True, slots=True)
class BarSegment:
    x: float
    width: float
    kind: str                   # assigned | free | unhealthy | missing
    count: int


@dataclass(frozen=True, slots=True)
class Bar:
    width: int
    segments: list[BarSegment]
    label: str


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str
    anchor: str
    ready: str
    ready_tone: str
    cordoned: bool
    model: str
    count: str
    driver: str
    containerd: str
    runtime: str
    runtime_tone: str
    chips: list[Chip]
    capacity: str
    allocatable: str
    assigned: str
    others: list[str]           # "mig-1g.5gb 16 · 16 · 1"
    xids: str
    xid_tone: str
    findings: list[Link]
    findings_more: int
    worst: str
    bar: Bar


@dataclass(frozen=True, slots=True)
class BriefNodeView:
    """A node past the first :data:`MATRIX_ROWS`: the same columns, operands as a count
    of failing ones, no bar, finding links without titles."""

    name: str
    anchor: str
    ready: str
    ready_tone: str
    cordoned: bool
    model: str
    driver: str
    containerd: str
    runtime: str
    runtime_tone: str
    operands: str               # "✗ 2 failing", or "" when none fail
    nums: str                   # capacity · allocatable · assigned
    xids: str
    xid_tone: str
    findings: list[Link]
    findings_more: int
    worst: str


@dataclass(frozen=True, slots=True)
class MatrixView:
    columns: list[str]
    rows: list[NodeView]
    brief: list[BriefNodeView]
    total: int
    hidden: int
    hidden_names: list[str]
    hidden_names_more: int


BAR_WIDTH = 120


def bar(row: NodeRow) -> Bar:
    capacity = row.capacity or 0
    allocatable = row.allocatable or 0
    physical = row.gpu_count if row.gpu_count_source == "nvidia-smi" else None
    parts = [
        ("assigned", row.assigned),
        ("free", max(allocatable - row.assigned, 0)),
        ("unhealthy", max(capacity - allocatable, 0)),
        ("missing", 0 if row.other_resources else max((physical or 0) - capacity, 0)),
    ]
    total = max(sum(n for _, n in parts), 1)
    scale = BAR_WIDTH / total
    segments = []
    x = 0.0
    for kind, count in parts:
        if count <= 0:
            continue
        segments.append(BarSegment(round(x, 2), round(count * scale, 2), kind, count))
        x += count * scale
    words = {"assigned": "assigned", "free": "free", "unhealthy": "unhealthy",
             "missing": "not advertised"}
    label = ", ".join(f"{s.count} {words[s.kind]}" for s in segments) or (
        "advertised as other NVIDIA resources" if row.other_resources else "no GPUs counted")
    return Bar(BAR_WIDTH, segments, label)


def _num(value: int | None) -> str:
    return "—" if value is None else str(value)


def _node_view(row: NodeRow, findings: Sequence[Finding], anchors: Anchors) -> NodeView:
    chips = []
    for cell in row.operands:
        label = COMPONENT_LABELS.get(cell.component, cell.component)
        detail = f"{label}: {_c(cell.state, 120)}"
        if cell.pod:
            detail += f" — pod {_c(cell.pod, 200)}"
        if cell.restarts:
            detail += f", {cell.restarts} restart(s)"
        shown = _c(cell.state, 40) if cell.status in ("failing", "missing") else ""
        chips.append(Chip(label, cell.status, SYMBOLS.get(cell.status, "·"), shown, detail))
    ordered = sorted(findings, key=lambda f: (-f.severity.rank, f.rule_id, f.id))
    links = [Link(_c(f.id), anchors.by_id.get(f.id), f.rule_id, f.severity.value,
                  _c(f.title)) for f in ordered[:NODE_LINKS]]
    runtime = {True: ("loaded", "ok"), False: ("missing", "bad"), None: ("no dump", "none")}
    ready = {True: ("Ready", "ok"), False: ("NotReady", "bad"), None: ("not listed", "none")}
    count = _num(row.gpu_count)
    if row.gpu_count_source == "label":
        count += " (label)"
    return NodeView(
        name=_c(row.name, 253), anchor="node-" + anchor(row.name)[len("finding-"):],
        ready=ready[row.ready][0], ready_tone=ready[row.ready][1], cordoned=row.unschedulable,
        model=_c(row.gpu_model) or "unknown", count=count,
        driver=_c(row.driver) or "unknown", containerd=_c(row.containerd) or "unknown",
        runtime=runtime[row.nvidia_runtime][0], runtime_tone=runtime[row.nvidia_runtime][1],
        chips=chips, capacity=_num(row.capacity), allocatable=_num(row.allocatable),
        assigned=str(row.assigned),
        others=[_c(f"{r.resource.removeprefix('nvidia.com/')} {r.capacity} · {r.allocatable} · "
                   f"{r.assigned}", 120) for r in row.other_resources[:6]],
        xids=str(row.xids) if row.xid_source else "no log", xid_tone="bad" if row.xids else "none",
        findings=links, findings_more=max(len(ordered) - NODE_LINKS, 0),
        worst=ordered[0].severity.value if ordered else "", bar=bar(row),
    )


def _brief_view(full: NodeView) -> BriefNodeView:
    failing = [c.label for c in full.chips if c.status in ("failing", "missing")]
    return BriefNodeView(
        name=full.name, anchor=full.anchor, ready=full.ready, ready_tone=full.ready_tone,
        cordoned=full.cordoned, model=f"{full.model} × {full.count}", driver=full.driver,
        containerd=full.containerd, runtime=full.runtime, runtime_tone=full.runtime_tone,
        operands=f"✗ {len(failing)} failing" if failing else "",
        nums=f"{full.capacity} · {full.allocatable} · {full.assigned}", xids=full.xids,
        xid_tone=full.xid_tone, findings=full.findings, findings_more=full.findings_more,
        worst=full.worst)


def _trouble(row: NodeRow, findings: Sequence[Finding]) -> tuple[int, int]:
    worst = max((f.severity.rank + 1 for f in findings), default=0)
    signals = (sum(c.status == "failing" for c in row.operands) + (row.nvidia_runtime is False)
               + (row.unhealthy > 0) + (row.xids > 0) + (row.ready is False))
    return worst, signals


def matrix_view(report: Report, overview: Overview, anchors: Anchors) -> MatrixView:
    by_node: dict[str, list[Finding]] = defaultdict(list)
    for finding in report.findings:
        for node in finding.nodes:
            by_node[node].append(finding)
    rows = sorted(overview.nodes, key=lambda r: (
        tuple(-x for x in _trouble(r, by_node.get(r.name, []))), r.name))
    shown = rows[:MATRIX_ROWS]
    brief = rows[MATRIX_ROWS:MATRIX_ROWS + MATRIX_BRIEF]
    hidden = rows[MATRIX_ROWS + MATRIX_BRIEF:]
    return MatrixView(
        columns=[COMPONENT_LABELS.get(c.component, c.component)
                 for c in (overview.nodes[0].operands if overview.nodes else [])],
        rows=[_node_view(r, by_node.get(r.name, []), anchors) for r in shown],
        brief=[_brief_view(_node_view(r, by_node.get(r.name, []), anchors)) for r in brief],
        total=len(rows), hidden=len(hidden),
        hidden_names=[_c(r.name, 253) for r in hidden[:MATRIX_NAMES]],
        hidden_names_more=max(len(hidden) - MATRIX_NAMES, 0),
    )


# -- timeline -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lane:
    label: str
    y: float


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True, slots=True)
class Dot:
    cx: float
    cy: float
    r: float
    warning: bool
    title: str


@dataclass(frozen=True, slots=True)
class TimelineRow:
    time: str
    lane: str
    nodes: str
    text: str
    count: int
    warning: bool
    in_window: bool
    where: str


@dataclass(frozen=True, slots=True)
class TimelineView:
    width: int
    height: int
    left: int
    lanes: list[Lane]
    ticks: list[Tick]
    window_x: float | None
    window_width: float
    window_label: str
    dots: list[Dot]
    rows: list[TimelineRow]
    rows_more: int
    span: str
    notes: list[str]
    summary: str


WIDTH, LEFT, RIGHT, TOP, LANE_H, AXIS_H = 960, 150, 20, 10, 36, 26
FOCUS_MARGIN = timedelta(minutes=5)
_STEPS = (60, 120, 300, 600, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400,
          7 * 86400, 30 * 86400)


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def _show(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S")


def _ticks(start: datetime, end: datetime, x: Callable[[datetime], float]) -> list[Tick]:
    span = (end - start).total_seconds()
    step = next((s for s in _STEPS if span / s <= 8), _STEPS[-1])
    fmt = "%m-%d %H:%M" if span >= 86400 or start.date() != end.date() else "%H:%M"
    first = math.ceil(start.timestamp() / step) * step
    ticks = []
    at = first
    while at <= end.timestamp():
        moment = datetime.fromtimestamp(at, tz=UTC)
        ticks.append(Tick(round(x(moment), 2), moment.strftime(fmt)))
        at += step
    return ticks


def _where(point: TimelinePoint) -> str:
    if not point.path:
        return ""
    at = f":{point.line}" if point.line else (f" {point.pointer}" if point.pointer else "")
    return _c(point.path + at, 300)


def _nodes(point: TimelinePoint) -> str:
    names = ", ".join(_c(n, 80) for n in point.nodes)
    more = point.node_count - len(point.nodes)
    return names + (f" +{more}" if more > 0 else "")


def timeline_view(timeline: Timeline) -> TimelineView | None:
    if not timeline.points or timeline.start is None or timeline.end is None:
        return None
    start, end = _t(timeline.start), _t(timeline.end)
    earlier = []
    if timeline.window_start and timeline.window_end:
        w_start, w_end = _t(timeline.window_start), _t(timeline.window_end)
        focus = w_start - max(FOCUS_MARGIN, (w_end - w_start) / 2)
        if focus > start:
            earlier = [p for p in timeline.points if _t(p.time) < focus]
            start = focus
    if end - start < timedelta(minutes=10):
        middle = start + (end - start) / 2
        start, end = middle - timedelta(minutes=5), middle + timedelta(minutes=5)
    pad = (end - start) * 0.03
    start, end = start - pad, end + pad
    inner = WIDTH - LEFT - RIGHT
    seconds = (end - start).total_seconds()

    def x(moment: datetime) -> float:
        return LEFT + (moment - start).total_seconds() / seconds * inner

    lane_y = {key: TOP + i * LANE_H + LANE_H / 2 for i, (key, _) in enumerate(LANES)}
    labels = dict(LANES)
    buckets: dict[tuple[str, int], list[TimelinePoint]] = defaultdict(list)
    drawn = [p for p in timeline.points if _t(p.time) >= start]
    for point in drawn:
        buckets[(point.lane, int(x(_t(point.time)) // 8))].append(point)
    dots = []
    for (lane, _), points in sorted(buckets.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        count = sum(p.count for p in points)
        cx = sum(x(_t(p.time)) for p in points) / len(points)
        texts = [f"{_show(_t(p.time))} {_c(p.text, 160)}" + (f" (×{p.count})" if p.count > 1
                                                              else "") for p in points[:3]]
        if len(points) > 3:
            texts.append(f"… and {len(points) - 3} more")
        dots.append(Dot(round(cx, 2), lane_y.get(lane, TOP), round(3.5 + min(math.log2(count),
                        5.0), 2), any(p.warning for p in points), "\n".join(texts)))
    window_x, window_w, window_label = None, 0.0, ""
    if timeline.window_start and timeline.window_end:
        left, right = x(_t(timeline.window_start)), x(_t(timeline.window_end))
        window_x, window_w = round(left - 4, 2), round(max(right - left, 0) + 8, 2)
        window_label = (f"Incident window {_show(_t(timeline.window_start))} – "
                        f"{_show(_t(timeline.window_end))} UTC: {_c(timeline.window_reason)}")
    rows = []
    for point in sorted(timeline.points, key=lambda p: (p.time, p.lane, p.text)):
        inside = bool(timeline.window_start and timeline.window_end
                      and point.until >= timeline.window_start
                      and point.time <= timeline.window_end)
        when = _show(_t(point.time))
        if point.until != point.time:
            when += " – " + _show(_t(point.until))[11:]
        rows.append(TimelineRow(when, labels.get(point.lane, point.lane),
                                _nodes(point), _c(point.text, 300), point.count, point.warning,
                                inside, _where(point)))
    notes = []
    if earlier:
        notes.append(f"The chart starts shortly before the incident window; {len(earlier)} "
                     f"earlier point(s) since {_show(_t(earlier[0].time))} are only in the "
                     "table")
    if timeline.omitted:
        notes.append(f"{timeline.omitted} older or normal point(s) left out to keep the "
                     "timeline readable")
    if timeline.untimed:
        notes.append(f"{timeline.untimed} record(s) without a wall-clock time are not shown")
    warnings = sum(p.count for p in timeline.points if p.warning)
    summary = (f"{len(timeline.points)} points ({timeline.total} records, {warnings} warnings) "
               f"from {_show(_t(timeline.start))} to {_show(_t(timeline.end))} UTC")
    return TimelineView(
        width=WIDTH, height=TOP + LANE_H * len(LANES) + AXIS_H, left=LEFT,
        lanes=[Lane(label, lane_y[key]) for key, label in LANES],
        ticks=_ticks(start, end, x), window_x=window_x, window_width=window_w,
        window_label=window_label, dots=dots, rows=rows[-TIMELINE_ROWS:],
        rows_more=max(len(rows) - TIMELINE_ROWS, 0),
        span=f"{_show(_t(timeline.start))} – {_show(_t(timeline.end))} UTC",
        notes=notes, summary=summary,
    )


# -- coverage and inventory ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RuleRow:
    rule_id: str
    status: str
    title: str
    reason: str


@dataclass(frozen=True, slots=True)
class CoverageView:
    counts: list[tuple[str, int]]
    rules: list[RuleRow]
    gaps: list[tuple[str, str, str]]
    gaps_more: int
    problems: list[tuple[str, str, str]]
    problems_more: int
    open: bool                  # show the rule table unfolded: something did not run
    overview_problems: list[str]
    suppressed: list[tuple[str, str, str]]  # finding id, why, until


def coverage_view(report: Report) -> CoverageView:
    order = {status: i for i, status in enumerate(STATUS_ORDER)}
    counts = {status.value: 0 for status in STATUS_ORDER}
    for result in report.rules:
        counts[result.status.value] += 1
    rules = sorted(report.rules, key=lambda r: (order.get(r.status, 9), r.rule_id))
    gaps = [(_c(g.path, 400), _c(g.node, 253), _c(g.error, 600))
            for g in report.collection_gaps[:COVERAGE_ROWS]]
    problems = [(_c(p.path + (f" · {p.where}" if p.where else ""), 400), _c(p.kind, 40),
                 _c(p.message, 600)) for p in report.problems[:COVERAGE_ROWS]]
    return CoverageView(
        counts=list(counts.items()),
        rules=[RuleRow(r.rule_id, r.status.value, _c(r.title), _c(r.reason, 600))
               for r in rules],
        gaps=gaps, gaps_more=max(len(report.collection_gaps) - COVERAGE_ROWS, 0),
        problems=problems, problems_more=max(len(report.problems) - COVERAGE_ROWS, 0),
        open=bool(counts["error"] or counts["skipped"]),
        overview_problems=[_c(p, 300) for p in (report.overview.problems
                                                 if report.overview else [])],
        suppressed=[(_c(s.finding.id), _c(s.reason, 400), _c(s.until or "", 40))
                    for s in report.suppressed[:COVERAGE_ROWS]],
    )


@dataclass(frozen=True, slots=True)
class InventoryView:
    files: int
    size: str
    entries: list[tuple[str, int, str, int]]
    entries_omitted: int
    largest: list[tuple[str, str]]
    truncated: list[str]
    gaps: int


def inventory_view(report: Report, overview: Overview) -> InventoryView:
    inventory = overview.inventory
    return InventoryView(
        files=inventory.files, size=human_size(inventory.bytes),
        entries=[(_c(e.pattern, 400), e.files, human_size(e.bytes), e.truncated)
                 for e in inventory.entries],
        entries_omitted=inventory.entries_omitted,
        largest=[(_c(f.path, 400), human_size(f.bytes)) for f in inventory.largest],
        truncated=[_c(p, 400) for p in inventory.truncated],
        gaps=len(report.collection_gaps),
    )
