"""RT014 where a node's pods log the NVML error but the files the rule needs for that
node are missing: partial with the reason, not passed.

Wording: NVIDIA/nvidia-container-toolkit#1227 (``Failed to initialize NVML: Unknown
Error`` inside running containers after ``systemctl daemon-reload``).
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse, status
from kit import findings as of
from kit.runtime import dump, files, gpu_pod
from test_rt014 import CGROUP_SYSTEMD, DEVICES, LOST

from analyzers.results.models import Report

NO_CHAR = DEVICES.replace("==> /dev/char <==\n", "")


def reason(report: Report) -> str:
    return next(r.reason or "" for r in report.rules if r.rule_id == "RT014")


def test_node_without_its_dev_nvidia_file_is_partial(tmp_path: Path) -> None:
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(), "host/cgroup.txt": CGROUP_SYSTEMD},
         "gpu-b": {"containerd/config-dump.toml": dump(), "host/cgroup.txt": CGROUP_SYSTEMD,
                   "host/dev-nvidia.txt": DEVICES + "lrwxrwxrwx 1 root root 10 Jul 14 16:21 "
                                                   "195:0 -> ../nvidia0\n"}},
        [gpu_pod("train-0", "gpu-a"), gpu_pod("train-1", "gpu-b")],
        logs={"ml/train-0/main": LOST, "ml/train-1/main": LOST}), tmp=tmp_path)
    assert of(report, "RT014") == {}
    assert status(report, "RT014") == "partial"
    assert "GPU pods on gpu-a log 'Failed to initialize NVML: Unknown Error'" in reason(report)
    assert "gpu-b" not in reason(report)


def test_dev_nvidia_without_char_listing_is_partial(tmp_path: Path) -> None:
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(), "host/cgroup.txt": CGROUP_SYSTEMD,
                   "host/dev-nvidia.txt": NO_CHAR}},
        [gpu_pod("train-0", "gpu-a")], logs={"ml/train-0/main": LOST}), tmp=tmp_path)
    assert of(report, "RT014") == {}
    assert status(report, "RT014") == "partial"
    assert "host/dev-nvidia.txt has no /dev/char listing" in reason(report)


def test_missing_files_without_the_error_stay_passed(tmp_path: Path) -> None:
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(), "host/cgroup.txt": CGROUP_SYSTEMD},
         "gpu-b": {"containerd/config-dump.toml": dump(), "host/cgroup.txt": CGROUP_SYSTEMD,
                   "host/dev-nvidia.txt": NO_CHAR}},
        [gpu_pod("train-0", "gpu-a"), gpu_pod("train-1", "gpu-b")],
        logs={"ml/train-0/main": "step 100 loss 0.31\n", "ml/train-1/main": "step 1\n"}),
                     tmp=tmp_path)
    assert of(report, "RT014") == {}
    assert status(report, "RT014") == "passed"


def test_skipped_without_any_container_log(tmp_path: Path) -> None:
    """The NVML error is read from container logs only: a bundle without logs cannot
    say the node is fine."""
    from test_rt014 import node_files

    report = analyse(files({"gpu-a": node_files()}, [gpu_pod("train-0", "gpu-a")]), tmp=tmp_path)
    assert of(report, "RT014") == {}
    assert status(report, "RT014") == "skipped"
    assert "logs/*" in reason(report)
