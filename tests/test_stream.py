"""Node files parsed by workers while the archive is still read give the report one
process gives, whatever the archive's order, and a worker that dies loses nothing."""

from __future__ import annotations

import io
import multiprocessing
import os
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.results.models import Report
from analyzers.speed import Preload, prefetch, stream
from analyzers.speed.stream import NodeStream
from bundle import open_bundle

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "incident-toolkit-disabled"  # nodes gpu-a .. gpu-d
NODES = ["gpu-a", "gpu-b", "gpu-c", "gpu-d"]
NOISE = "".join(orjson.dumps({"MESSAGE": f"routine line {i}", "_PID": "812",
                              "SYSLOG_IDENTIFIER": "containerd",
                              "__REALTIME_TIMESTAMP": str(1795960000000000 + i)}).decode() + "\n"
                for i in range(200)) + "-- not json --\n"


def _members(root: str = "b/") -> list[tuple[str, bytes]]:
    """The sample in the collector's order (manifest first, then sorted), each node
    with one more journal holding a bad line (a problem only the node's reader finds)."""
    files = sorted((f"{root}{p.relative_to(SAMPLE)}", p.read_bytes())
                   for p in SAMPLE.rglob("*") if p.is_file())
    files += [(f"{root}nodes/{node}/journal/noise.jsonl", NOISE.encode()) for node in NODES]
    files.sort()
    manifest = [m for m in files if m[0] == f"{root}manifest.json"]
    return manifest + [m for m in files if m not in manifest]


def _tgz(target: Path, members: Iterable[tuple[str, bytes]], *, cut: int | None = None
         ) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    data = buffer.getvalue()
    target.write_bytes(data if cut is None else data[:cut])
    return target


def _alone(path: Path) -> dict[str, Any]:
    with open_bundle(path) as opened:
        return analyze(opened, discover().rules).model_dump()


def _streamed(path: Path, jobs: int = 2) -> tuple[Report, NodeStream, bool]:
    with Preload(jobs) as preload, open_bundle(path, watcher=preload.watcher) as opened:
        watcher = preload.watcher
        assert isinstance(watcher, NodeStream)
        served = watcher.serves(opened)
        report = analyze(opened, discover().rules, preload=preload)
    return report, watcher, served


@pytest.fixture(autouse=True)
def one_node_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers for any bundle, one node per chunk."""
    monkeypatch.setattr(prefetch, "MIN_NODES", 1)
    monkeypatch.setattr(prefetch, "CHUNK", 1)


def test_nodes_parsed_while_reading_give_the_same_report(tmp_path: Path) -> None:
    bundle = _tgz(tmp_path / "b.tgz", _members())
    report, watcher, served = _streamed(bundle)
    assert served
    assert sorted(name for chunk in watcher._chunks for name in chunk) == NODES
    assert report.model_dump() == _alone(bundle)
    bad = sorted(p.path for p in report.problems if p.path.endswith("noise.jsonl"))
    assert bad == [f"nodes/{node}/journal/noise.jsonl" for node in NODES]
    assert not multiprocessing.active_children()


def test_a_manifest_at_the_top_streams_too(tmp_path: Path) -> None:
    bundle = _tgz(tmp_path / "b.tgz", _members(root=""))
    report, _, served = _streamed(bundle)
    assert served
    assert report.model_dump() == _alone(bundle)


XID = (b"2026-11-20T09:12:51,384306+00:00 NVRM: Xid (PCI:0000:01:00): 79, "
       b"GPU has fallen off the bus.\n")


def test_a_node_whose_files_come_back_later_is_read_again(tmp_path: Path) -> None:
    """gpu-b's dmesg comes after gpu-d: gpu-b was handed over without it, and its Xid
    is found only if gpu-b is read again once the archive has ended."""
    members = _members()
    late = next(m for m in members if m[0] == "b/nodes/gpu-b/dmesg.txt")
    members.remove(late)
    members.append((late[0], late[1] + XID))
    bundle = _tgz(tmp_path / "b.tgz", members)
    report, watcher, served = _streamed(bundle)
    assert served and watcher._dirty == {"gpu-b"}
    assert report.model_dump() == _alone(bundle)
    assert "DRV001:gpu-b/0000:01:00.0" in {f.id for f in report.findings}


def test_an_archive_in_another_order_is_read_without_a_stream(tmp_path: Path) -> None:
    members = _members()
    members.append(members.pop(0))  # the manifest last
    bundle = _tgz(tmp_path / "b.tgz", members)
    report, watcher, served = _streamed(bundle)
    assert not served and watcher._chunks == []
    assert report.model_dump() == _alone(bundle)


def test_a_root_other_than_the_first_manifest_stops_the_stream(tmp_path: Path) -> None:
    """The first member names b/ as the root, but a manifest at the top wins."""
    members = _members()
    members.append(("manifest.json", dict(members)["b/manifest.json"]))
    bundle = _tgz(tmp_path / "b.tgz", members)
    report, _, served = _streamed(bundle)
    assert not served
    assert report.model_dump() == _alone(bundle)


def test_a_truncated_archive_gives_the_same_report(tmp_path: Path) -> None:
    whole = _tgz(tmp_path / "whole.tgz", _members())
    bundle = _tgz(tmp_path / "b.tgz", _members(), cut=int(whole.stat().st_size * 0.8))
    report, _, _ = _streamed(bundle)
    expected = _alone(bundle)
    assert any(p.kind == "truncated" for p in report.problems)
    assert report.model_dump() == expected


def _dying_parse(*args: Any) -> Any:
    os._exit(9)


def test_a_dead_worker_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = _tgz(tmp_path / "b.tgz", _members())
    expected = _alone(bundle)
    monkeypatch.setattr(stream, "_parse", _dying_parse)  # in the forked workers
    report, _, served = _streamed(bundle)
    assert served
    assert report.model_dump() == expected


def test_one_job_starts_no_worker(tmp_path: Path) -> None:
    bundle = _tgz(tmp_path / "b.tgz", _members())
    report, watcher, served = _streamed(bundle, jobs=1)
    assert not served and watcher._processes == [] and watcher._chunks == []
    assert report.model_dump() == _alone(bundle)


def test_leaving_early_stops_the_workers(tmp_path: Path) -> None:
    """An analysis that fails after the open (or never runs) leaves no process behind."""
    bundle = _tgz(tmp_path / "b.tgz", _members())
    with NodeStream(3) as watcher, open_bundle(bundle, watcher=watcher):
        assert len(watcher._processes) == 2
    assert not multiprocessing.active_children()
    assert watcher._results is None
