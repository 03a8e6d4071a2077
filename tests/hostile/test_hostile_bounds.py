"""The four costs that had no bound (issue 30), each analysed through the CLI in a fresh,
capped interpreter that measures CPU time and peak memory:

- a manifest listing millions of items (a 150 KB archive: SIGSEGV at 3.6 GB before, or
  a 179 MB report) is cut at the cluster lists' cap;
- a must-gather bug report of gzip in gzip (13 KB expanding to 192 MiB: 732 MiB of
  memory before) is refused at what the outer archive's ratio cap leaves it, read in
  pieces;
- hundreds of thousands of refused members (490,000 symbolic links: 74 s before, 70 s
  of it every skipped rule rebuilding and scanning every damaged file) are indexed once;
- hundreds of thousands of node directories (400,000 one-file nodes: 84 s, 1.4 GB
  before) are capped at ``--max-nodes``.

The bombs here are smaller than the measured ones (``tests/hostile/measure_bombs.py``
runs those) so that the suite stays quick; the limits are generous for a shared
machine and still far below what the same input cost before the bounds.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from bombs import manifest_items, nested_archive, node_directories, refused_links
from hostile_kit import ROOT, assert_no_rule_errors, problems_of

import bundle.reader
from bundle import Limits, open_bundle
from bundle.damage import DamageIndex

LINE = b"[    1.000000] NVRM: GPU at PCI:0000:3b:00: GPU-1\n"  # the nested kernel log's
MEMORY_CAP = 4 << 30  # address space of the analysing interpreter


def _analysed(path: Path, tmp_path: Path, *flags: str) -> tuple[float, float, dict[str, Any]]:
    """``gpu-triage analyze PATH -f json`` in a fresh interpreter: CPU seconds, peak RSS
    in MiB (its own, from ``wait4``), and the report."""
    out = tmp_path / f"{path.name}.json"
    argv = [sys.executable, "-m", "gpu_triage", "analyze", str(path), "-f", "json", "-o",
            str(out), "--fail-on", "critical", "--jobs", "1", *flags]

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    child = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, preexec_fn=cap,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        _, status, usage = os.wait4(child.pid, 0)
    except BaseException:
        child.send_signal(signal.SIGKILL)
        raise
    stderr = child.stderr.read().decode() if child.stderr else ""
    assert os.waitstatus_to_exitcode(status) == 0, stderr
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, orjson.loads(
        out.read_bytes())


def test_manifest_items_are_capped(tmp_path: Path) -> None:
    path = manifest_items(tmp_path)  # 2.5 million failed steps in 150 KB
    cpu, rss, report = _analysed(path, tmp_path)
    assert ("manifest.json", "refused", "/items/300000",
            "2,500,000 items, over the limit of 300,000 per list: the items after the first "
            "300,000 were ignored") in problems_of(report)
    assert_no_rule_errors(report)
    assert cpu < 60 and rss < 1500, (cpu, rss)
    # the collection gaps the report lists stop at the cap too
    assert (tmp_path / f"{path.name}.json").stat().st_size < 40 << 20


def test_manifest_under_the_cap_is_read_whole(tmp_path: Path) -> None:
    path = manifest_items(tmp_path, 1_000)
    with open_bundle(path) as opened:
        assert len(opened.manifest.items) == 1_000
        assert [p for p in opened.problems if p.path == "manifest.json"] == []


def test_nested_archive_is_held_to_the_outer_ratio(tmp_path: Path) -> None:
    path = nested_archive(tmp_path)  # 13 KB; the bug report inside expands to 192 MiB
    cpu, rss, report = _analysed(path, tmp_path)
    # what 200 times the archive's size leaves once its own members are counted
    with tarfile.open(path) as archive:
        left = 200 * path.stat().st_size - sum(m.size for m in archive.getmembers())
    assert 1 << 20 < left < 3 << 20
    assert problems_of(report) == [(
        "nvidia-bug-report_gpu-a.log.gz", "refused", None,
        f"expands beyond the {left} bytes that the ratio cap (200 times the compressed "
        "archive's size) leaves; not read")]
    assert_no_rule_errors(report)
    assert cpu < 15 and rss < 250, (cpu, rss)


def test_nested_archive_under_the_outer_ratio_is_read(tmp_path: Path) -> None:
    # 1 MiB of kernel log is under the floor whatever the outer archive's size
    path = nested_archive(tmp_path, 1)
    with open_bundle(path) as opened:
        assert opened.problems == ()
        dmesg = opened.read_bytes("nodes/gpu-a/dmesg.txt") or b""
        assert dmesg == LINE * (1 << 20 >> 6)


def test_a_higher_ratio_cap_lets_the_nested_archive_expand(tmp_path: Path) -> None:
    path = nested_archive(tmp_path, 8)
    with open_bundle(path) as opened:
        # the 14 KB archive leaves no more than the 1 MiB floor
        assert [p.message[:40] for p in opened.problems] == [
            "expands beyond the 1048576 bytes that th"]
    with open_bundle(path, Limits(max_ratio=10_000)) as opened:
        assert opened.problems == ()
        assert opened.read_bytes("nodes/gpu-a/dmesg.txt") == LINE * (8 << 20 >> 6)


def test_refused_members_are_indexed_once(tmp_path: Path) -> None:
    path = refused_links(tmp_path, 100_000)
    cpu, rss, report = _analysed(path, tmp_path)
    assert ("nodes/gpu-a/journal/l0.jsonl", "refused", None,
            "not a regular file (symbolic link to '/etc/passwd')") in problems_of(report)
    assert_no_rule_errors(report)
    # reading 100,000 tar headers is most of it; before, each skipped rule scanned them all
    assert cpu < 40 and rss < 600, (cpu, rss)


def test_damaged_files_are_indexed_once_per_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzers.engine import analyze
    from analyzers.engine.plugins import discover
    from analyzers.rule import node

    built = 0
    real = DamageIndex.__init__

    def counting(self: DamageIndex, *args: Any) -> None:
        nonlocal built
        built += 1
        real(self, *args)

    monkeypatch.setattr(DamageIndex, "__init__", counting)
    with open_bundle(refused_links(tmp_path, 2_000)) as opened:
        analyze(opened, discover().rules)
        assert 0 < built <= 10, built
        # a rule input names the refused links it could not read, from the same index
        assert node("journal/*.jsonl").missing_reason(opened) == (
            "nodes/*/journal/*.jsonl could not be read: nodes/gpu-a/journal/l0.jsonl: not a "
            "regular file (symbolic link to '/etc/passwd') (and 1999 more)")
        assert node("dmesg.txt").missing_reason(opened) == "no node collected dmesg.txt"


def test_damage_index_matches_fnmatch() -> None:
    import fnmatch

    from bundle.problems import Problem

    paths = ["cluster/pods.json", "cluster/helm/a.json", "nodes/a/journal/k.jsonl",
             "nodes/b/journal/c.jsonl", "nodes/b/cdi/x.json", "nodes/c/dmesg.txt",
             "logs/ns/p/c.log", "nodes/a/containerd/files/etc/x.toml"]
    index = DamageIndex(0, {p: Problem(p, "m") for p in paths})
    for pattern in ("cluster/pods.json", "cluster/helm/*.json", "nodes/*/journal/*.jsonl",
                    "nodes/*/journal/k.jsonl", "nodes/*/cdi/*", "nodes/*/dmesg.txt",
                    "logs/*", "nodes/*/containerd/files/*", "nodes/*/*", "x"):
        assert [p for p, _ in index.matching(pattern)] == sorted(
            p for p in paths if fnmatch.fnmatchcase(p, pattern)), pattern


def test_node_directories_are_capped(tmp_path: Path) -> None:
    path = node_directories(tmp_path, 40_000)
    cpu, rss, report = _analysed(path, tmp_path)
    assert ("nodes/n10000/", "refused", None,
            "more than 10,000 node directories: 30,000 more were not read, from this one on "
            "(raise the cap with --max-nodes)") in problems_of(report)
    assert_no_rule_errors(report)
    assert cpu < 60 and rss < 800, (cpu, rss)


def test_max_nodes_flag_raises_and_lowers_the_cap(tmp_path: Path) -> None:
    path = node_directories(tmp_path, 30)
    _, _, report = _analysed(path, tmp_path, "--max-nodes", "10")
    # n0..n9 in archive order
    assert ("nodes/n10/", "refused", None,
            "more than 10 node directories: 20 more were not read, from this one on (raise "
            "the cap with --max-nodes)") in problems_of(report)
    with open_bundle(path, Limits(max_nodes=10)) as opened:
        assert opened.node_names == [f"n{index}" for index in range(10)]
    _, _, report = _analysed(path, tmp_path, "--max-nodes", "30")
    assert [p for p in problems_of(report) if "node directories" in p[3]] == []


def test_node_cap_holds_for_a_directory(tmp_path: Path) -> None:
    root = tmp_path / "dir"
    (root / "cluster").mkdir(parents=True)
    (root / "manifest.json").write_text('{"format_version": 1, "items": []}')
    for index in range(5):
        node = root / "nodes" / f"n{index}"
        node.mkdir(parents=True)
        (node / "dmesg.txt").write_text("x\n")
    with open_bundle(root, Limits(max_nodes=3)) as opened:
        assert opened.node_names == ["n0", "n1", "n2"]
        assert [(p.path, p.kind) for p in opened.problems] == [("nodes/n3/", "refused")]


def test_reader_limits_default() -> None:
    assert Limits().max_nodes == 10_000
    assert bundle.reader.MAX_LIST_ITEMS == 300_000
