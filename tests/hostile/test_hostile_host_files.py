"""RT014's host files (``host/cgroup.txt``, ``host/dev-nvidia.txt``) within a line budget.

Both are a few dozen lines on a real node. 64 MiB of ``c n`` lines in dev-nvidia.txt (a
64 KiB archive holds them: the ratio cap starts at 64 MiB) cost 54 s and 2.9 GB as line
objects; cgroup.txt the same way 7 s and 470 MB. Over 100,000 lines a file is not
parsed: a ``refused`` problem names it and the cap, RT014 says ``skipped`` (no node left
to judge) or ``partial``, the run goes on. A device line of millions of fields is cut
once, not split into millions of words.

Setup as in tests/rules/test_rt014.py (NVIDIA/nvidia-container-toolkit#1227 and #48).
"""

from __future__ import annotations

import sys
from pathlib import Path

from kit import analyse, status
from kit import findings as of
from kit.runtime import files, gpu_pod

from analyzers.results.models import Report
from bundle.devnodes import MAX_LINES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rules"))

from test_rt014 import CGROUP_SYSTEMD, DEVICES, LOST, node_files  # noqa: E402

CAP = f"more than {MAX_LINES:,} lines, over the cap for this host file; not read"


def _report(tmp_path: Path, cgroup: str = CGROUP_SYSTEMD, devices: str = DEVICES) -> Report:
    return analyse(files({"gpu-a": node_files(cgroup=cgroup, devices=devices)},
                               [gpu_pod("train-0", "gpu-a")], logs={"ml/train-0/main": LOST}),
                   tmp=tmp_path)


def test_a_device_listing_over_the_cap_is_refused_and_named(tmp_path: Path) -> None:
    report = _report(tmp_path, devices=DEVICES.replace("==> /dev/char <==\n", "")
                     + "c n\n" * MAX_LINES + "==> /dev/char <==\n")
    assert [(p.path, p.kind, p.message) for p in report.problems] == [
        ("nodes/gpu-a/host/dev-nvidia.txt", "refused", CAP)]
    assert of(report, "RT014") == {} and status(report, "RT014") == "skipped"
    reason = next(r.reason or "" for r in report.rules if r.rule_id == "RT014")
    assert "nodes/gpu-a/host/dev-nvidia.txt" in reason, reason
    assert [r.rule_id for r in report.rules if r.status.value == "error"] == []


def test_a_cgroup_file_over_the_cap_split_by_carriage_returns(tmp_path: Path) -> None:
    report = _report(tmp_path, cgroup=CGROUP_SYSTEMD + "x\r" * MAX_LINES)
    assert [(p.path, p.kind, p.message) for p in report.problems] == [
        ("nodes/gpu-a/host/cgroup.txt", "refused", CAP)]
    assert status(report, "RT014") == "skipped"


def test_just_under_the_cap_is_read(tmp_path: Path) -> None:
    filler = "c n\n" * (MAX_LINES - DEVICES.count("\n"))
    report = _report(tmp_path, devices=DEVICES.replace("==> /dev/char <==\n", "")
                     + filler + "==> /dev/char <==\n")
    assert report.problems == []
    assert set(of(report, "RT014")) == {"RT014:gpu-a"}


def test_a_device_line_of_millions_of_fields_names_its_last(tmp_path: Path) -> None:
    devices = "==> /dev/nvidia* <==\nc" + " x" * 2_000_000 + " nvidia9\n==> /dev/char <==\n"
    finding = of(_report(tmp_path, devices=devices), "RT014")["RT014:gpu-a"]
    assert "/dev/char has no NVIDIA links although nvidia9 and the other NVIDIA devices " \
           "exist" in finding.summary
