"""The bundle reader: containers, root discovery, refusals and recorded problems."""

from __future__ import annotations

import gzip
import io
import json
import random
import tarfile
from pathlib import Path

import pytest
from kit.bundles import kube_list, kube_node, write_dir, write_tar

import bundle.gzstream
from bundle import BundleError, Limits, open_bundle

NODE = kube_node("gpu-a", 8, 7, other={}, hostname=False)
FILES = {"cluster/nodes.json": kube_list(NODE),
         "nodes/gpu-a/containerd/version.txt":
             "containerd github.com/containerd/containerd v1.7.27\n"}


@pytest.mark.parametrize("kind", ["dir", "tgz", "tar"])
def test_opens_every_container(tmp_path: Path, kind: str) -> None:
    if kind == "dir":
        path = write_dir(tmp_path / "b", FILES)
    else:
        path = write_tar(tmp_path / f"b.{kind}", FILES, gzip=kind == "tgz")
    with open_bundle(path) as b:
        assert b.manifest.format_version == 1
        assert [n.name for n in b.cluster.nodes] == ["gpu-a"]
        assert b.cluster.nodes[0].status.allocatable["nvidia.com/gpu"] == "7"
        assert b.node_names == ["gpu-a"]
        assert b.node("gpu-a").containerd_version.endswith("v1.7.27")
        assert b.cluster.nodes[0].source_pointer == "/items/0"
        assert b.problems == ()


def test_manifest_one_level_down_in_a_directory(tmp_path: Path) -> None:
    write_dir(tmp_path / "outer" / "gpu-triage-x-20261129T140000Z", FILES)
    with open_bundle(tmp_path / "outer") as b:
        assert b.has("cluster/nodes.json")


def test_unknown_format_version_is_refused_clearly(tmp_path: Path) -> None:
    path = write_dir(tmp_path / "b", FILES, format_version=7)
    with pytest.raises(BundleError, match="unknown bundle format_version 7"):
        open_bundle(path)


@pytest.mark.parametrize(("content", "message"), [
    (b"", "empty file"),
    (b"hello, this is a text file\n" * 20, "not a tar, gzip, xz, bzip2, zstd or zip archive"),
])
def test_garbage_is_a_bundle_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.tgz"
    path.write_bytes(content)
    with pytest.raises(BundleError, match=message):
        open_bundle(path)


def test_tar_without_manifest(tmp_path: Path) -> None:
    path = tmp_path / "x.tar"
    with tarfile.open(path, "w") as archive:
        data = b"{}"
        info = tarfile.TarInfo("top/cluster/nodes.json")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    with pytest.raises(BundleError, match="no manifest.json"):
        open_bundle(path)


def test_truncated_archive_is_read_up_to_the_cut(tmp_path: Path) -> None:
    big = {f"logs/gpu-operator/pod-{i}/c.log": f"line {i}\n" * 4000 for i in range(30)}
    path = write_tar(tmp_path / "full.tgz", {**FILES, **big})
    raw = path.read_bytes()
    cut = tmp_path / "cut.tgz"
    cut.write_bytes(raw[: len(raw) // 2])
    with open_bundle(cut) as b:
        assert b.manifest.format_version == 1
        kinds = [p.kind for p in b.problems]
        assert "truncated" in kinds
        assert 0 < len([p for p in b.paths if p.startswith("logs/")]) < 30


def _raw_tar(path: Path, members: list[tarfile.TarInfo], payloads: dict[str, bytes]) -> Path:
    manifest = b'{"format": "gpu-triage-bundle", "format_version": 1, "items": []}'
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo("top/manifest.json")
        info.size = len(manifest)
        archive.addfile(info, io.BytesIO(manifest))
        for member in members:
            data = payloads.get(member.name, b"")
            member.size = len(data) if member.isreg() else 0
            archive.addfile(member, io.BytesIO(data) if member.isreg() else None)
    return path


def test_unsafe_members_are_refused_and_recorded(tmp_path: Path) -> None:
    link = tarfile.TarInfo("top/cluster/pods.json")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    hard = tarfile.TarInfo("top/cluster/events.json")
    hard.type = tarfile.LNKTYPE
    hard.linkname = "../../etc/shadow"
    fifo = tarfile.TarInfo("top/nodes/gpu-a/dmesg.txt")
    fifo.type = tarfile.FIFOTYPE
    absolute = tarfile.TarInfo("/etc/cron.d/evil")
    dotdot = tarfile.TarInfo("top/../../evil")
    first = tarfile.TarInfo("top/cluster/nodes.json")
    second = tarfile.TarInfo("top/cluster/nodes.json")
    payloads = {"/etc/cron.d/evil": b"x", "top/../../evil": b"x",
                "top/cluster/nodes.json": b'{"kind": "List", "items": []}'}
    path = _raw_tar(tmp_path / "evil.tgz", [link, hard, fifo, absolute, dotdot, first, second],
                    payloads)
    with open_bundle(path) as b:
        refused = {p.path: p.message for p in b.problems if p.kind == "refused"}
        assert "symbolic link to '/etc/passwd'" in refused["cluster/pods.json"]
        assert "hard link" in refused["cluster/events.json"]
        assert "FIFO" in refused["nodes/gpu-a/dmesg.txt"]
        assert "unsafe name" in refused["/etc/cron.d/evil"]
        assert "unsafe name" in refused["../../evil"]
        assert "duplicate" in refused["cluster/nodes.json"]
        assert b.paths == ["cluster/nodes.json", "manifest.json"]
    assert not (tmp_path / "evil").exists()


def test_member_over_the_cap_is_refused(tmp_path: Path) -> None:
    path = write_tar(tmp_path / "b.tgz", {**FILES, "logs/ns/p/c.log": "x" * 5000})
    with open_bundle(path, Limits(max_member_bytes=4096)) as b:
        assert not b.has("logs/ns/p/c.log")
        assert any("cap" in p.message and p.path == "logs/ns/p/c.log" for p in b.problems)


def test_decompression_bomb_stops_at_the_total_cap(tmp_path: Path) -> None:
    path = tmp_path / "bomb.tgz"
    with tarfile.open(path, "w:gz") as archive:
        manifest = b'{"format_version": 1, "items": []}'
        info = tarfile.TarInfo("manifest.json")
        info.size = len(manifest)
        archive.addfile(info, io.BytesIO(manifest))
        for i in range(4):
            zeros = b"\0" * (2 << 20)
            info = tarfile.TarInfo(f"logs/ns/p/c{i}.log")
            info.size = len(zeros)
            archive.addfile(info, io.BytesIO(zeros))
    assert path.stat().st_size < 100_000
    with open_bundle(path, Limits(max_total_bytes=5 << 20)) as b:
        assert any("expands beyond" in p.message for p in b.problems)
        assert len([p for p in b.paths if p.startswith("logs/")]) == 2


def test_bad_json_and_wrong_kinds_become_problems(tmp_path: Path) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    files = {
        "cluster/nodes.json": "{not json",
        "cluster/pods.json": pod,
        "cluster/events.json": kube_list({"kind": "Event", "count": "many"}, 7),
    }
    with open_bundle(write_dir(tmp_path / "b", files)) as b:
        assert b.cluster.nodes == []
        assert b.cluster.pods == []
        # The event is kept; only its wrong-typed field is dropped (and recorded).
        assert [e.count for e in b.cluster.events] == [None]
        problems = {(p.path, p.where): p.message for p in b.problems}
        assert "invalid JSON" in problems[("cluster/nodes.json", "line 1, column 2")]
        assert "expected a List of Pod objects, got 'Pod'" in problems[("cluster/pods.json", None)]
        assert "count" in problems[("cluster/events.json", "/items/0/count")]
        assert "expected an object" in problems[("cluster/events.json", "/items/1")]


def test_a_number_out_of_a_doubles_range_damages_a_cluster_file(tmp_path: Path) -> None:
    # In a field no view keeps: the file is still not JSON to the exact reader, which a
    # faster projection that skips unread fields must keep (docs/performance.md, msgspec).
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "x": "HUGE"}}
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "x": ["HUGE"]}
    files = {"cluster/pods.json": json.dumps(kube_list(pod)).replace('"HUGE"', "1e400"),
             "cluster/events.json": json.dumps(kube_list(event)).replace('"HUGE"', "-2e308")}
    with open_bundle(write_dir(tmp_path / "b", files)) as b:
        assert b.cluster.pods == [] and b.cluster.events == []
        damaged = {p.path for p in b.problems if "invalid JSON" in p.message}
        assert damaged == {"cluster/pods.json", "cluster/events.json"}


def test_journal_and_xml_problems_are_recorded(tmp_path: Path) -> None:
    bomb = (b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
            b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><nvidia_smi_log>&b;</nvidia_smi_log>')
    files = {
        "nodes/gpu-a/journal/containerd.jsonl":
            '{"MESSAGE": "ok", "__REALTIME_TIMESTAMP": "1700000000000000", "_PID": "12"}\n'
            'garbage line\n'
            '{"MESSAGE": [104, 105, 255]}\n',
        "nodes/gpu-a/nvidia-smi.xml": bomb,
    }
    with open_bundle(write_dir(tmp_path / "b", files)) as b:
        entries = b.node("gpu-a").journal("containerd")
        assert [(e.line, e.message, e.pid) for e in entries] == [(1, "ok", 12),
                                                                  (3, "hi\ufffd", None)]
        assert entries[0].time is not None and entries[0].time.year == 2023
        assert b.node("gpu-a").nvidia_smi is None
        problems = {p.path: (p.where, p.message) for p in b.problems}
        assert problems["nodes/gpu-a/journal/containerd.jsonl"][0] == "line 2"
        assert "entities" in problems["nodes/gpu-a/nvidia-smi.xml"][1]


def test_gzip_member_of_a_plain_file_is_not_a_bundle(tmp_path: Path) -> None:
    path = tmp_path / "x.tgz"
    path.write_bytes(gzip.compress(b"just text, not a tar archive" * 50))
    with pytest.raises(BundleError):
        open_bundle(path)


@pytest.mark.parametrize("piece", [None, 777])
@pytest.mark.parametrize("kind", ["tgz", "tar"])
def test_members_read_back_exactly_from_memory_and_spool(
        tmp_path: Path, kind: str, piece: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sizes around the spool threshold and the block size, and members much larger than
    a decompressed piece (777 bytes: headers and data straddle pieces)."""
    if piece is not None:
        monkeypatch.setattr(bundle.gzstream, "PIECE", piece)
    rng = random.Random(3)
    sizes = [0, 1, 511, 512, 513, (64 << 10) - 1, 64 << 10, (64 << 10) + 1, 300_000]
    files = {f"logs/ns/p/c{size}.log": rng.randbytes(size) for size in sizes}
    path = write_tar(tmp_path / f"b.{kind}", {**FILES, **files}, gzip=kind == "tgz")
    with open_bundle(path) as b:
        assert b.problems == ()
        for name, data in files.items():
            assert b.read_bytes(name) == data
            assert b.size(name) == len(data)
