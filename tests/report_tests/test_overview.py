"""The Overview carried in the Report: glance, node rows, timeline, inventory, marks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from kit.bundles import kube_list, write_dir
from report_findings import golden_report
from report_support import dump

from analyzers.engine import overview, timeline
from analyzers.facts import Facts
from analyzers.results.models import Report
from bundle import open_bundle


def _row(report: Report, name: str) -> Any:
    assert report.overview is not None
    return next(r for r in report.overview.nodes if r.name == name)


def test_glance_reads_versions_spread_and_gpu_counts(analysed: dict[str, Report]) -> None:
    report = analysed["incident"]
    assert report.overview is not None
    glance = report.overview.glance
    assert glance.kubernetes == "v1.37.1"
    assert (glance.nodes, glance.gpu_nodes) == (5, 4)
    op = glance.operator
    assert (op.version, op.series, op.status, op.status_label) == (
        "26.3.1", "26.3.x", "deprecated", "Deprecated")
    assert op.source == "image tag of Deployment gpu-operator/gpu-operator"
    assert op.chart == "gpu-operator-v26.3.1"
    assert [(s.value, s.count, s.nodes) for s in glance.containerd] == [
        ("1.7.27", 3, ["gpu-a", "gpu-b", "gpu-c"]), ("2.0.4", 1, ["gpu-d"])]
    assert [(s.value, s.count) for s in glance.drivers] == [("570.172.08", 3),
                                                             ("570.195.03", 1)]
    gpus = glance.gpus
    assert (gpus.physical, gpus.physical_nodes, gpus.advertised, gpus.allocatable,
            gpus.assigned, gpus.unhealthy) == (4, 4, 2, 1, 1, 1)


def test_operator_version_falls_back_to_the_helm_chart(tmp_path: Path) -> None:
    files = {"cluster/nodes.json": kube_list(),
             "cluster/helm/gpu-operator.json": [
                 {"revision": 1, "status": "superseded", "chart": "gpu-operator-v25.10.1"},
                 {"revision": 2, "status": "deployed", "chart": "gpu-operator-v26.7.0"}]}
    with open_bundle(write_dir(tmp_path / "b", files)) as opened:
        op = overview.operator_release(Facts(opened))
    assert (op.version, op.status, op.image) == ("26.7.0", "supported", None)
    assert op.source == "Helm release gpu-operator revision 2"


def test_node_rows_show_runtime_operands_capacity_and_xids(analysed: dict[str, Report]) -> None:
    report = analysed["incident"]
    assert [r.name for r in report.overview.nodes] == ["gpu-a", "gpu-b", "gpu-c", "gpu-d"]  # type: ignore[union-attr]
    a = _row(report, "gpu-a")
    assert (a.nvidia_runtime, a.capacity, a.allocatable, a.assigned) == (False, None, None, 0)
    assert (a.gpu_model, a.gpu_count, a.gpu_count_source) == ("NVIDIA L40S", 1, "nvidia-smi")
    assert (a.driver, a.containerd, a.ready) == ("570.172.08", "1.7.27", True)
    cells = {c.component: (c.status, c.state) for c in a.operands}
    assert cells == {
        "driver": ("off", "disabled in ClusterPolicy"),
        "toolkit": ("ok", "Running"),
        "device-plugin": ("failing", "Init:0/1"),
        "gfd": ("failing", "Init:0/1"),
        "dcgm-exporter": ("failing", "Init:0/1"),
        "mig-manager": ("off", "not MIG-capable"),
        "validator": ("failing", "Init:0/1"),
    }
    assert (a.xids, a.xid_source) == (0, "nodes/gpu-a/dmesg.txt")
    assert _row(report, "gpu-b").xid_source is None          # no kernel log collected
    d = _row(report, "gpu-d")
    assert (d.xids, d.capacity, d.allocatable, d.unhealthy, d.containerd, d.driver) == (
        1, 1, 0, 1, "2.0.4", "570.195.03")
    c = _row(report, "gpu-c")
    assert (c.nvidia_runtime, c.capacity, c.allocatable, c.assigned) == (True, 1, 1, 1)


def test_timeline_places_restarts_xids_events_and_the_window(analysed: dict[str, Report]) -> None:
    report = analysed["incident"]
    assert report.overview is not None
    line = report.overview.timeline
    by_lane: dict[str, list[Any]] = {}
    for point in line.points:
        by_lane.setdefault(point.lane, []).append(point)
    restart, = by_lane["containerd"]
    assert (restart.time, restart.nodes, restart.warning) == (
        "2026-11-29T13:20:00Z", ["gpu-a"], True)
    assert restart.text == ("containerd restarted: SIGHUP sent → killed by SIGHUP → restart "
                            "scheduled (counter 1) → started")
    assert (restart.path, restart.line) == ("nodes/gpu-a/journal/containerd.jsonl", 1)
    xid, = by_lane["xid"]
    assert (xid.time, xid.nodes, xid.path, xid.line) == (
        "2026-11-29T13:40:12Z", ["gpu-d"], "nodes/gpu-d/dmesg.txt", 2)
    assert xid.text.startswith("Xid 79 on 0000:3b:00.0:")
    sandbox = [p for p in by_lane["event"] if p.text.startswith("FailedCreatePodSandBox")]
    assert len(sandbox) == 1      # two pods on two nodes within five minutes: one point
    assert (sandbox[0].count, sandbox[0].subjects, sandbox[0].nodes) == (82, 2, ["gpu-a",
                                                                                "gpu-b"])
    assert (line.window_start, line.window_end) == ("2026-11-29T13:20:00Z",
                                                    "2026-11-29T13:59:00Z")
    assert line.untimed == 0 and line.omitted == 0
    assert [p.time for p in line.points] == sorted(p.time for p in line.points)


def test_timeline_folds_and_caps_a_flood(tmp_path: Path) -> None:
    events = []
    for i in range(2000):
        minute = i % 600
        events.append({
            "kind": "Event", "metadata": {"name": f"e{i}", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": f"p{i}"},
            "reason": f"Reason{i % 450}", "message": "m", "type": "Warning" if i % 2 else "Normal",
            "lastTimestamp": f"2026-11-29T{minute // 60:02d}:{minute % 60:02d}:00Z"})
    events.append({"kind": "Event", "metadata": {"name": "bad"}, "reason": "X",
                   "lastTimestamp": "not a time"})
    files = {"cluster/events.json": kube_list(*events)}
    with open_bundle(write_dir(tmp_path / "b", files)) as opened:
        built = timeline.build(Facts(opened), {})
    folds = {(e["reason"], i % 600 // 5) for i, e in enumerate(events[:-1])}
    warning_folds = {(e["reason"], i % 600 // 5) for i, e in enumerate(events[:-1])
                     if e["type"] == "Warning"}
    assert len(built.points) == timeline.POINT_CAP
    assert built.omitted == len(folds) - timeline.POINT_CAP
    assert built.untimed == 1 and built.total == 2000
    # warnings are kept before normal records
    assert sum(p.warning for p in built.points) == min(timeline.POINT_CAP, len(warning_folds))


def test_evidence_marks_point_at_the_known_error(bundle_dirs: dict[str, Path]) -> None:
    report = golden_report(bundle_dirs["incident"])
    assert report.overview is not None
    by_id = report.by_id()
    marks = [(m.finding, m.evidence, m.signature) for m in report.overview.marks]
    assert ("RT001:gpu-a", 0, "sandbox-no-runtime") in marks
    for mark in report.overview.marks:
        excerpt = by_id[mark.finding].evidence[mark.evidence].excerpt
        assert 0 <= mark.start < mark.end <= len(excerpt)
    sandbox = next(m for m in report.overview.marks if m.finding == "RT001:gpu-a")
    text = by_id["RT001:gpu-a"].evidence[0].excerpt[sandbox.start:sandbox.end]
    assert text == 'no runtime for "nvidia" is configured'


_DMESG_XID = ("[Sun Nov 29 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=x, "
              "Graphics Exception\n")
# Xid 79's wording, from NVIDIA's Xid catalog (https://docs.nvidia.com/deploy/xid-errors/).
_JOURNAL_XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."


def test_timeline_xids_are_the_kernel_events_fact(tmp_path: Path) -> None:
    """The timeline reads Facts.kernel_events: dmesg and journal kernel lines, merged."""
    entry = {"__REALTIME_TIMESTAMP": "1795946700000000", "_TRANSPORT": "kernel",
             "SYSLOG_IDENTIFIER": "kernel", "PRIORITY": "3", "MESSAGE": _JOURNAL_XID}
    files = {"cluster/nodes.json": kube_list(),
             "nodes/gpu-a/dmesg.txt": _DMESG_XID,
             "nodes/gpu-a/journal/kernel.jsonl": orjson.dumps(entry) + b"\n",
             "nodes/gpu-b/dmesg.txt": "[    1.000000] Linux version 6.8.0\n"}
    with open_bundle(write_dir(tmp_path / "b", files)) as opened:
        facts = Facts(opened)
        events, source = timeline.xid_events(facts, "gpu-a")
        assert [e.xid for e in events] == [13, 79]
        assert source == "nodes/gpu-a/dmesg.txt, nodes/gpu-a/journal/kernel.jsonl"
        assert events == list(facts.kernel_events["gpu-a"].xids)
        assert timeline.xid_events(facts, "gpu-b") == ([], "nodes/gpu-b/dmesg.txt")
        assert timeline.xid_events(facts, "gpu-z") == ([], None)  # no node directory


def test_inventory_counts_every_file_by_kind(analysed: dict[str, Report],
                                             bundle_dirs: dict[str, Path]) -> None:
    report = analysed["incident"]
    assert report.overview is not None
    inventory = report.overview.inventory
    files = sorted(p for p in bundle_dirs["incident"].rglob("*") if p.is_file())
    assert inventory.files == len(files)
    assert inventory.bytes == sum(p.stat().st_size for p in files)
    entries = {e.pattern: (e.files, e.bytes) for e in inventory.entries}
    smi = sorted(bundle_dirs["incident"].glob("nodes/*/nvidia-smi.xml"))
    assert entries["nodes/*/nvidia-smi.xml"] == (4, sum(p.stat().st_size for p in smi))
    assert entries["cluster/pods.json"][0] == 1
    sizes = [f.bytes for f in inventory.largest]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) == 10


def test_overview_is_deterministic_json(bundle_dirs: dict[str, Path]) -> None:
    first = golden_report(bundle_dirs["incident"])
    again = golden_report(bundle_dirs["incident"])
    assert first.model_dump_json() == again.model_dump_json()
    assert Report.model_validate_json(first.model_dump_json()) == first
    assert first.overview is not None
    assert dump(first.overview.model_dump(mode="json")) == dump(
        again.overview.model_dump(mode="json"))  # type: ignore[union-attr]


def test_a_failing_part_is_named_and_the_rest_is_built(bundle_dirs: dict[str, Path],
                                                       monkeypatch: Any) -> None:
    def broken(*_: object) -> None:
        raise KeyError("status")

    monkeypatch.setattr(timeline, "build", broken)
    report = golden_report(bundle_dirs["incident"])
    assert report.overview is not None
    assert report.overview.problems == ["timeline: KeyError: 'status'"]
    assert report.overview.timeline.points == []
    assert len(report.overview.nodes) == 4
    from reports import html

    page = html.render(report)
    assert "Report parts that could not be built" in page
    assert "timeline: KeyError: &#39;status&#39;" in page
