"""DRV008: the loaded NVIDIA driver cannot drive this GPU.

Kernel lines from public threads:
- a branch that does not list the GPU (470 on an L40S, PCI ID 10de:26b9):
  https://github.com/ZaidQureshi/bam/issues/38, and the same wording on 520 with a
  laptop GPU: https://github.com/NVIDIA/open-gpu-kernel-modules/issues/393;
- open kernel modules on a GT 1030 (Pascal, no GSP):
  https://github.com/negativo17/nvidia-driver/issues/158.
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of
from kit.driver import bundle_files as drv_files
from kit.driver import gpu_node
from kit.objects import pod

BRANCH_DMESG = (
    "[  422.450961] NVRM: The NVIDIA GPU 0000:8a:00.0 (PCI ID: 10de:26b9)\n"
    "               NVRM: installed in this system is not supported by the\n"
    "               NVRM: NVIDIA 470.256.02 driver release.\n"
    "               NVRM: Please see 'Appendix A - Supported NVIDIA GPU Products'\n"
    "               NVRM: in this release's README, available on the operating system\n"
    "               NVRM: specific graphics driver download page at www.nvidia.com.\n"
    "[  422.451145] nvidia: probe of 0000:8a:00.0 failed with error -1\n"
    "[  422.451178] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
    "[  422.451179] NVRM: None of the NVIDIA devices were initialized.\n"
)
OPEN_DMESG = (
    "Aug 14 10:00:01 gpu-o kernel: NVRM: The NVIDIA GPU 0000:09:00.0 (PCI ID: 10de:1d01)\n"
    "             NVRM: installed in this system is not supported by open\n"
    "             NVRM: nvidia.ko because it does not include the required GPU\n"
    "             NVRM: System Processor (GSP).\n"
    "             NVRM: Please see the 'Open Linux Kernel Modules' and 'GSP\n"
    "             NVRM: Firmware' sections in the driver README, available on\n"
    "             NVRM: the Linux graphics driver download page at\n"
    "             NVRM: www.nvidia.com.\n"
)
OPEN_LSPCI = (
    "09:00.0 VGA compatible controller [0300]: NVIDIA Corporation GP108 [GeForce GT 1030] "
    "[10de:1d01] (rev a1)\n"
    "\tKernel modules: nouveau, nvidia_drm, nvidia\n"
)
HEALTHY_DMESG = (
    "[    5.120000] nvidia: loading out-of-tree module taints kernel.\n"
    "[    5.240000] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.195.03  "
    "Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri Oct 24 16:49:01 UTC 2025\n"
)


def test_branch_does_not_list_the_gpu(tmp_path: Path) -> None:
    report = analyse(drv_files([gpu_node("gpu-b"), gpu_node("gpu-ok")],
                    {"nodes/gpu-b/dmesg.txt": BRANCH_DMESG,
                     "nodes/gpu-ok/dmesg.txt": HEALTHY_DMESG}), tmp=tmp_path)
    found = of(report, "DRV008")
    assert sorted(found) == ["DRV008:gpu-b"]
    finding = found["DRV008:gpu-b"]
    assert finding.severity.value == "critical"
    assert finding.nodes == ["gpu-b"]
    assert finding.summary.startswith("On gpu-b, the NVIDIA driver refused 10de:26b9: the "
                                      "NVIDIA 470.256.02 driver branch does not list this GPU")
    assert [(e.path, e.line) for e in finding.evidence] == [("nodes/gpu-b/dmesg.txt", 1)]
    assert "driver.version" in finding.remediation
    assert "kernelModuleType" not in finding.remediation


def test_open_modules_on_a_pre_turing_gpu(tmp_path: Path) -> None:
    report = analyse(drv_files([gpu_node("gpu-o")],
                    {"nodes/gpu-o/dmesg.txt": OPEN_DMESG,
                     "nodes/gpu-o/host/lspci.txt": OPEN_LSPCI}), tmp=tmp_path)
    finding = of(report, "DRV008")["DRV008:gpu-o"]
    assert "refused NVIDIA Corporation GP108 [GeForce GT 1030]" in finding.summary
    assert "the open kernel modules were loaded" in finding.summary
    assert "driver branch" not in finding.summary
    assert [(e.path, e.line) for e in finding.evidence] == [
        ("nodes/gpu-o/dmesg.txt", 1), ("nodes/gpu-o/host/lspci.txt", 1)]
    assert "driver.kernelModuleType=proprietary" in finding.remediation


def test_driver_container_log_alone(tmp_path: Path) -> None:
    """The installer's 'Kernel messages:' section repeats the kernel line."""
    driver = pod("nvidia-driver-daemonset-x1", "gpu-l", app="nvidia-driver-daemonset")
    log = ("Kernel messages:\n"
           "[   73.757880] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:13b0)\n"
           "               NVRM: installed in this system is not supported by the\n")
    path = "logs/gpu-operator/nvidia-driver-daemonset-x1/nvidia-driver-ctr.log"
    report = analyse(drv_files([gpu_node("gpu-l")],
                    {"nodes/gpu-l/dmesg.txt": "", path: log}, pods=[driver]), tmp=tmp_path)
    finding = of(report, "DRV008")["DRV008:gpu-l"]
    assert [(e.path, e.line) for e in finding.evidence] == [(path, 3)]
    assert "driver branch does not list this GPU" in finding.summary
