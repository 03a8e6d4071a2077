"""Unpacked bundles (directories) are read under exactly the archive's caps.

Each case builds a directory here (no stored blobs) and asserts the exact problems
recorded. Where an archive has the same cap, the same content is also packed into a
.tgz the way the collector writes one (manifest.json first, then by path) and both
forms must record the same problems and keep the same paths.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from bombs import SPARSE_PATHS, sparse_directory
from hostile_kit import analyze_path, valid_files
from kit.bundles import encode, pack_dir, write_dir

import bundle.directory
from bundle import BundleError, Limits, open_bundle
from gpu_triage.cli import main

MIB = 1 << 20
NODES = b'{"apiVersion": "v1", "kind": "List", "items": []}'
SPARSE = "a sparse file, which bundles never hold; not read"

Problems = list[tuple[str, str, str]]


def _opened(path: Path, limits: Limits | None = None) -> tuple[Problems, list[str]]:
    """(path, kind, message) of every problem recorded on opening, and the paths kept."""
    with open_bundle(path, limits) as opened:
        return [(p.path, p.kind, p.message) for p in opened.problems], list(opened.paths)


def _both(tmp_path: Path, files: dict[str, Any], limits: Limits) -> tuple[Problems, list[str]]:
    """Open ``files`` as a directory and as the .tgz of that directory; both must agree."""
    directory = write_dir(tmp_path / "b", files)
    archive = pack_dir(directory, tmp_path / "b.tgz")
    as_directory = _opened(directory, limits)
    assert _opened(archive, limits) == as_directory
    return as_directory


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _holes_supported(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    with open(probe, "wb") as out:
        os.truncate(out.fileno(), 4 * MIB)
    if probe.stat().st_blocks * 512 >= 2 * MIB:
        pytest.skip("this file system does not keep holes")
    probe.unlink()


def _with_hole(path: Path, data: int, size: int) -> None:
    """``data`` bytes of log lines, then a hole up to ``size`` bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = b"2026-11-29T13:59:00Z a log line\n"
    with open(path, "wb") as out:
        out.write((line * (data // len(line) + 1))[:data])
        out.truncate(size)


# -- sparse files --------------------------------------------------------------------


def test_sparse_directory_bomb(tmp_path: Path) -> None:
    """Eight sparse 511 MiB files that every analysis reads: each is refused when the
    directory is listed; the rest of the bundle is analysed (exit 1: the GPU node's
    missing label)."""
    _holes_supported(tmp_path)
    root = sparse_directory(tmp_path)
    out = tmp_path / "r.json"
    assert main(["analyze", str(root), "-f", "json", "-o", str(out)]) == 1
    report = orjson.loads(out.read_bytes())
    assert [(p["path"], p["kind"], p["message"]) for p in report["problems"]] == [
        (path, "refused", SPARSE) for path in sorted(SPARSE_PATHS)]
    assert not [r for r in report["rules"] if r["status"] == "error"]
    assert [(f["id"], f["severity"]) for f in report["findings"]] == [
        ("OP003:gpu-a", "high"), ("BND002:refused", "medium")]
    problems, paths = _opened(root)
    assert paths == ["cluster/nodes.json", "manifest.json"]


def test_sparse_means_holes_make_up_half(tmp_path: Path) -> None:
    _holes_supported(tmp_path)
    root = write_dir(tmp_path / "b", {"cluster/nodes.json": NODES})
    _with_hole(root / "logs/ns/p/mostly-hole.log", 400 << 10, 1 * MIB)
    _with_hole(root / "logs/ns/p/some-hole.log", 1 * MIB, 1 * MIB + (512 << 10))
    problems, paths = _opened(root)
    assert problems == [("logs/ns/p/mostly-hole.log", "refused", SPARSE)]
    assert paths == ["cluster/nodes.json", "logs/ns/p/some-hole.log", "manifest.json"]


def test_compressed_blocks_are_not_holes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compressing file system (ZFS) reports few blocks for files with no hole: the
    holes are measured, and such a bundle reads as usual."""
    root = write_dir(tmp_path / "b", valid_files())
    (root / "logs/ns/p").mkdir(parents=True)
    (root / "logs/ns/p/big.log").write_bytes(b"a log line that compresses well\n" * 100_000)
    real_stat = os.stat

    class Compressed:
        def __init__(self, info: os.stat_result) -> None:
            self._info = info
            self.st_blocks = info.st_blocks // 10

        def __getattr__(self, name: str) -> Any:
            return getattr(self._info, name)

    def compressed(*args: Any, **kwargs: Any) -> Any:
        return Compressed(real_stat(*args, **kwargs))

    clean = _opened(root)
    with monkeypatch.context() as patch:
        patch.setattr(os, "stat", compressed)
        assert _opened(root) == clean
    assert clean[0] == []
    assert "logs/ns/p/big.log" in clean[1]


# -- the caps, as in an archive ------------------------------------------------------


def test_total_cap_same_as_archive(tmp_path: Path) -> None:
    files: dict[str, Any] = {"cluster/nodes.json": NODES}
    files.update({f"logs/ns/p/c{i}.log": b"y" * 3000 for i in range(5)})
    encoded = encode(files)
    # Room for the manifest, nodes.json and three logs, not for a fourth.
    cap = len(encoded["manifest.json"]) + len(NODES) + 3 * 3000 + 1500
    problems, paths = _both(tmp_path, files, Limits(max_total_bytes=cap))
    assert problems == [("logs/ns/p/c3.log", "refused",
                         f"archive expands beyond {cap} bytes; reading stopped")]
    assert paths == ["cluster/nodes.json", "logs/ns/p/c0.log", "logs/ns/p/c1.log",
                     "logs/ns/p/c2.log", "manifest.json"]


def test_total_cap_reads_the_manifest_first(tmp_path: Path) -> None:
    """manifest.json is listed first, as the collector archives it, so a bundle whose
    logs pass the total cap is still analysed, not unreadable."""
    files: dict[str, Any] = {"cluster/nodes.json": NODES, "logs/ns/p/c.log": b"y" * 5000}
    problems, paths = _both(tmp_path, files, Limits(max_total_bytes=4000))
    assert problems == [("logs/ns/p/c.log", "refused",
                         "archive expands beyond 4000 bytes; reading stopped")]
    assert paths == ["cluster/nodes.json", "manifest.json"]


def test_file_over_the_member_cap_same_as_archive(tmp_path: Path) -> None:
    files: dict[str, Any] = {"cluster/nodes.json": NODES, "logs/ns/p/c.log": b"x" * 5000}
    problems, paths = _both(tmp_path, files, Limits(max_member_bytes=4096))
    assert problems == [("logs/ns/p/c.log", "refused",
                         "5000 bytes exceeds the 4096 byte cap; not read")]
    assert paths == ["cluster/nodes.json", "manifest.json"]


def _many(tmp_path: Path, count: int) -> Path:
    """manifest.json, cdi/ with ``count`` files, cluster/nodes.json: 4 + count entries."""
    files: dict[str, Any] = {"cluster/nodes.json": NODES}
    files.update({f"cdi/f{i:03}.json": "{}" for i in range(count)})
    return write_dir(tmp_path / "b", files)


def test_member_cap_counts_every_entry(tmp_path: Path) -> None:
    """Directories count as members, as in a tar of the directory: 154 entries. The
    cap is met while listing cluster/, which is named."""
    root = _many(tmp_path, 150)
    assert _opened(root, Limits(max_members=154)) == ([], _opened(root)[1])
    fds = _open_fds()
    problems, paths = _opened(root, Limits(max_members=153))
    assert problems == [("cluster", "refused", "more than 153 members; the rest were not read")]
    assert paths == [*(f"cdi/f{i:03}.json" for i in range(150)), "manifest.json"]
    assert _open_fds() == fds


def test_member_cap_counts_while_listing(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory of many entries is not listed whole before the cap is checked."""
    root = _many(tmp_path, 5000)
    real_scandir = os.scandir
    listed = []

    @contextmanager
    def counting(fd: int) -> Iterator[Iterator[os.DirEntry[str]]]:
        with real_scandir(fd) as entries:
            def each() -> Iterator[os.DirEntry[str]]:
                for entry in entries:
                    listed.append(entry.name)
                    yield entry
            yield each()

    monkeypatch.setattr(os, "scandir", counting)
    problems, paths = _opened(root, Limits(max_members=100))
    monkeypatch.undo()
    assert problems == [("cdi", "refused", "more than 100 members; the rest were not read")]
    assert paths == ["manifest.json"]
    assert len(listed) == 101


def test_cap_met_before_the_manifest_is_named(tmp_path: Path) -> None:
    """A top directory of more entries than the cap: nothing is read, and the error
    says why rather than that there is no manifest."""
    root = _many(tmp_path, 10)
    for index in range(20):
        (root / f"junk{index:02}").write_text("x")
    with pytest.raises(BundleError) as raised:
        open_bundle(root, Limits(max_members=20))
    assert raised.value.problem == ("reading stopped before manifest.json was found "
                                    "(.: more than 20 members; the rest were not read)")


def test_deep_tree_stops_at_the_depth_cap(tmp_path: Path) -> None:
    root = write_dir(tmp_path / "b", {"cluster/nodes.json": NODES})
    deep = root / "logs"
    for level in range(1, 40):
        deep = deep / f"d{level}"
        deep.mkdir(parents=True)
        (deep / "x.log").write_text("x\n")
    fds = _open_fds()
    problems, paths = _opened(root)
    assert bundle.directory.MAX_DEPTH == 32
    # logs/d1/.../d31 has 32 components: its files would have 33.
    too_deep = "logs/" + "/".join(f"d{level}" for level in range(1, 32))
    assert problems == [(too_deep, "refused", "a directory more than 32 levels deep; not read")]
    assert paths == sorted(["cluster/nodes.json", "manifest.json",
                            *("logs/" + "/".join(f"d{level}" for level in range(1, last + 1))
                              + "/x.log" for last in range(1, 31))])
    assert _open_fds() == fds


# -- what is read is what was listed -------------------------------------------------


def test_directory_swapped_for_a_link_is_not_followed(tmp_path: Path) -> None:
    """nodes/gpu-a becomes a link to a directory outside the bundle after the listing:
    reading a file under it does not follow the link."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = b"do not read\n"
    (outside / "dmesg.txt").write_bytes(secret)
    root = write_dir(tmp_path / "b", {"cluster/nodes.json": NODES,
                                      "nodes/gpu-a/dmesg.txt": "x" * len(secret)})
    with open_bundle(root) as opened:
        node = root / "nodes/gpu-a"
        node.rename(tmp_path / "moved")
        node.symlink_to(outside, target_is_directory=True)
        assert opened.read_bytes("nodes/gpu-a/dmesg.txt") is None
        assert [(p.path, p.kind, p.message) for p in opened.problems] == [
            ("nodes/gpu-a/dmesg.txt", "refused",
             "changed since the directory was listed (Not a directory); not read")]
        assert opened.read_bytes("cluster/nodes.json") == NODES


def test_file_changed_after_listing_is_not_read(tmp_path: Path) -> None:
    root = write_dir(tmp_path / "b", {"cluster/nodes.json": NODES, "cluster/pods.json": NODES})
    with open_bundle(root) as opened:
        with open(root / "cluster/nodes.json", "ab") as grown:
            grown.write(b" " * 10_000)
        replaced = root / "cluster/pods.json"
        replaced.unlink()
        replaced.write_bytes(b"x" * len(NODES))  # same size, another file (maybe the
        os.utime(replaced, ns=(0, 0))              # same inode): another modification time
        assert opened.read_bytes("cluster/nodes.json") is None
        assert opened.read_bytes("cluster/pods.json") is None
        assert [(p.path, p.kind, p.message) for p in opened.problems] == [
            ("cluster/nodes.json", "refused", "changed since the directory was listed; not read"),
            ("cluster/pods.json", "refused", "changed since the directory was listed; not read")]


# -- a normal bundle -----------------------------------------------------------------


def test_valid_bundle_reads_the_same_as_its_archive(tmp_path: Path) -> None:
    """Every parser's file, as a directory and as a .tgz: same paths, same bytes, same
    findings, no problem."""
    directory = write_dir(tmp_path / "b", valid_files())
    archive = pack_dir(directory, tmp_path / "b.tgz")
    with open_bundle(directory) as as_dir, open_bundle(archive) as as_tgz:
        assert as_dir.paths == as_tgz.paths
        assert all(as_dir.read_bytes(p) == as_tgz.read_bytes(p) for p in as_dir.paths)
        assert all(as_dir.size(p) == as_tgz.size(p) for p in as_dir.paths)
    from_dir, from_tgz = analyze_path(directory), analyze_path(archive)
    assert from_dir.problems == from_tgz.problems == []
    assert ([(f.id, f.severity, f.summary) for f in from_dir.findings]
            == [(f.id, f.severity, f.summary) for f in from_tgz.findings])
    assert from_dir.findings
