"""RT014: running GPU containers lose their GPUs after a systemd reload.

Thread: NVIDIA/nvidia-container-toolkit#1227 (Ubuntu 22.04, systemd 249: ``Failed to
initialize NVML: Unknown Error`` inside running containers after ``systemctl
daemon-reload``), explained in NVIDIA/nvidia-container-toolkit#48 (no ``/dev/char`` links
for the NVIDIA devices, systemd-managed cgroups).
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of
from kit.runtime import dump, files, gpu_pod

CGROUP_SYSTEMD = (
    "fs-type: cgroup2fs\nversion: 2\n"
    "kubelet-cgroup-driver: systemd (/var/lib/kubelet/config.yaml)\n"
    'containerd: [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options] '
    "SystemdCgroup = true\n")
DEVICES = ("==> /dev/nvidia* <==\n"
           "crw-rw-rw- 1 root root 195,   0 Jul 14 16:20 nvidia0\n"
           "crw-rw-rw- 1 root root 195, 255 Jul 14 16:20 nvidiactl\n"
           "crw-rw-rw- 1 root root 509,   0 Jul 14 16:20 nvidia-uvm\n"
           "==> /dev/char <==\n")
LINKS = "lrwxrwxrwx 1 root root 10 Jul 14 16:21 195:0 -> ../nvidia0\n"
# https://github.com/NVIDIA/nvidia-container-toolkit/issues/1227
LOST = ("2025-07-14T16:20:01Z GPU 0: NVIDIA A10 (UUID: GPU-f15ae561-21b1-6003-c768-861fc285203b)\n"
        "2025-07-14T16:25:58Z Failed to initialize NVML: Unknown Error\n")


def node_files(cgroup: str = CGROUP_SYSTEMD, devices: str = DEVICES) -> dict[str, str]:
    return {"containerd/config-dump.toml": dump(), "host/cgroup.txt": cgroup,
            "host/dev-nvidia.txt": devices}


def test_fires_with_systemd_and_no_char_links(tmp_path: Path) -> None:
    report = analyse(files(
        {"gpu-a": node_files(), "gpu-b": node_files(devices=DEVICES + LINKS)},
        [gpu_pod("train-0", "gpu-a"), gpu_pod("train-1", "gpu-b")],
        logs={"ml/train-0/main": LOST, "ml/train-1/main": LOST}), tmp=tmp_path)
    found = of(report, "RT014")
    assert set(found) == {"RT014:gpu-a"}
    finding = found["RT014:gpu-a"]
    assert finding.summary.startswith(
        "On gpu-a, Running GPU pod(s) train-0 lost their GPUs (Failed to initialize NVML: "
        "Unknown Error): systemd manages the containers' cgroups (containerd: ")
    assert "/dev/char has no NVIDIA links although nvidia0 and the other NVIDIA devices " \
           "exist" in finding.summary
    assert [(e.path, e.line) for e in finding.evidence] == [
        ("logs/ml/train-0/main.log", 2), ("nodes/gpu-a/host/cgroup.txt", 4),
        ("nodes/gpu-a/host/dev-nvidia.txt", 5)]
    # train-0 has no owner: deleting it would not bring it back, so no delete is offered
    # (owned pods: test_rt014_recreate.py)
    assert finding.remediation.splitlines()[-2:] == [
        "# then, from your workstation and once the links exist, recreate the affected pods "
        "one at a time (their running work is lost):",
        "# train-0 has no owner that would start it again: re-create it from its manifest"]
