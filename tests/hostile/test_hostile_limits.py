"""Caps bound time and memory: decompression bombs and archives with very many members.

Each archive is opened in a fresh interpreter so that its peak memory is its own. CI
uses bombs of 1 GiB; the numbers for 10 GiB bombs and a 200k-member archive come
from the opt-in measurement at the end:

    GPU_TRIAGE_MEASURE=1 .venv/bin/pytest tests/hostile/test_hostile_limits.py -q -s
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from hostile_kit import many_members, measure_open, zero_bomb
from kit.bundles import write_dir

import analyzers.facts.collected
from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from bundle import open_bundle
from gpu_triage.cli import main

GIB = 1 << 30
MIB = 1 << 20
CPU_LIMIT_S = 5.0
RSS_LIMIT_MIB = 200.0


def _messages(problems: list[tuple[str, str, str]]) -> str:
    return "\n".join(f"{path} [{kind}] {message}" for path, kind, message in problems)


def test_bomb_in_one_member_stops_early(tmp_path: Path) -> None:
    bomb = zero_bomb(tmp_path / "one.tgz", [GIB])
    assert bomb.stat().st_size < 2 * MIB
    result = measure_open(bomb)
    text = _messages(result.problems)
    assert "1073741824 bytes exceeds the 536870912 byte cap" in text
    assert "expands more than 200 times its compressed size" in text
    assert result.cpu_s < CPU_LIMIT_S, result
    assert result.peak_rss_mib < RSS_LIMIT_MIB, result


def test_bomb_in_many_members_stops_early(tmp_path: Path) -> None:
    bomb = zero_bomb(tmp_path / "many.tgz", [100 * MIB] * 10)
    result = measure_open(bomb)
    assert "reading stopped inside logs/ns/p/c0.log" in _messages(result.problems)
    assert result.paths == 1  # only the manifest: nothing of the bomb was kept
    assert result.cpu_s < CPU_LIMIT_S, result
    assert result.peak_rss_mib < RSS_LIMIT_MIB, result


def test_total_cap_bounds_a_bomb_when_the_ratio_cap_is_raised(tmp_path: Path) -> None:
    """With --max-ratio out of the way, skipping a refused member still ends at the
    stream budget (twice the total cap), not after all the gigabytes it declares."""
    bomb = zero_bomb(tmp_path / "one.tgz", [GIB])
    result = measure_open(bomb, max_ratio=10**9, max_total_bytes=128 * MIB)
    assert "the archive expands beyond 269484032 bytes" in _messages(result.problems)
    assert result.cpu_s < CPU_LIMIT_S, result
    assert result.peak_rss_mib < RSS_LIMIT_MIB, result


def test_many_members_are_read_in_bounded_memory(tmp_path: Path) -> None:
    archive = many_members(tmp_path / "many.tgz", 20_000)
    result = measure_open(archive)
    assert result.paths == 20_001
    assert result.problems == []
    assert result.cpu_s < CPU_LIMIT_S, result
    assert result.peak_rss_mib < RSS_LIMIT_MIB, result


def test_member_cap_stops_reading(tmp_path: Path) -> None:
    archive = many_members(tmp_path / "many.tgz", 5_000)
    result = measure_open(archive, max_members=1_000)
    assert result.paths == 1_000
    assert ("cdi/f999.json", "refused",
            "more than 1000 members; the rest were not read") in result.problems


@pytest.mark.skipif(not os.environ.get("GPU_TRIAGE_MEASURE"),
                    reason="large measurement; set GPU_TRIAGE_MEASURE=1")
def test_measure_large(tmp_path: Path) -> None:
    cases = {
        "10 GiB of zeros in one member": zero_bomb(tmp_path / "one.tgz", [10 * GIB]),
        "10 GiB of zeros in 40 members": zero_bomb(tmp_path / "forty.tgz", [10 * GIB // 40] * 40),
        "200k tiny members": many_members(tmp_path / "200k.tgz", 200_000),
    }
    for label, path in cases.items():
        result = measure_open(path)
        print(f"\n{label}: {path.stat().st_size / MIB:.1f} MiB archive, cpu {result.cpu_s:.2f}"
              f" s, wall {result.wall_s:.2f} s, peak RSS {result.peak_rss_mib:.0f} MiB, "
              f"{result.paths} paths; {_messages(result.problems[:2])}")


def test_cli_flag_raises_the_ratio_cap(tmp_path: Path) -> None:
    """A genuine but very compressible member is refused by default and read with a
    higher --max-ratio."""
    archive = zero_bomb(tmp_path / "zeros.tgz", [80 * MIB])
    outcomes = {}
    for flag in ("200", "5000"):
        out = tmp_path / f"report-{flag}.json"
        assert main(["analyze", str(archive), "-o", str(out), "--max-ratio", flag]) == 0
        report = orjson.loads(out.read_bytes())
        outcomes[flag] = [(p["kind"], p["message"][:39]) for p in report["problems"]]
    assert outcomes["200"] == [("refused", "reading stopped inside logs/ns/p/c0.log")]
    assert outcomes["5000"] == []


def test_input_presence_is_not_quadratic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Per-node inputs are looked up under each node's prefix (analyzers/facts/collected.py),
    not matched against every path of the bundle for every node (80 million fnmatch calls
    for 200 nodes with 1,000 files each before)."""
    files = {f"nodes/node-{n}/cdi/f{k}.json": "{}" for n in range(100) for k in range(50)}
    calls = 0
    real = analyzers.facts.collected.fnmatch.fnmatchcase

    def counting(name: str, pattern: str) -> bool:
        nonlocal calls
        calls += 1
        return real(name, pattern)

    monkeypatch.setattr(analyzers.facts.collected.fnmatch, "fnmatchcase", counting)
    with open_bundle(write_dir(tmp_path / "b", files)) as opened:
        analyze(opened, discover().rules)
    assert calls < 5 * len(files)  # was rules x nodes x paths: about a million here
