"""Issue 25, case 3: a driver-support or module-flavour refusal is the cause, never
hardware. DRV002 ("a GPU was lost ... open a hardware case") defers to DRV008 for the
same PCI address; DRV008 is the finding, linked as the cause.

Kernel wordings from public threads (names, addresses and versions as posted there):
- proprietary module on a Blackwell GPU, then RmInitAdapter for the same address, in
  syslog form: https://github.com/NVIDIA/open-gpu-kernel-modules/issues/862 (RTX 5090,
  10de:2b85, ``RmInitAdapter failed! (0x22:0x56:884)``);
- the same refusal in plain dmesg with continuation lines (RTX 5090 Laptop, 10de:2c58,
  580.105.08), quoted in a public ROS 2 install write-up and in
  https://github.com/NVIDIA/open-gpu-kernel-modules/issues/862;
- the open module on a consumer GPU before it was supported (``Open nvidia.ko is only
  ready for use on Data Center GPUs``), then RmInitAdapter:
  https://github.com/NVIDIA/open-gpu-kernel-modules/issues/230;
- legacy branches: Talos ``kern:`` prefix, GT 710 on 535.129.03 (470.xx Legacy),
  https://github.com/siderolabs/talos/issues/8764; ``dmesg -T``, GTX 1050 on
  595.71.05 (580.xx Legacy), https://github.com/NixOS/nixos-hardware/issues/1880.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kit import analyse
from kit import findings as of
from kit import verdict as status
from kit.driver import bundle_files as drv_files
from kit.driver import gpu_node

# open-gpu-kernel-modules#862, as journalctl -k / syslog prints it
OPEN_REQUIRED_SYSLOG = (
    "Jul 01 22:55:07 gpu kernel: NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device "
    "minor number 0\n"
    "Jul 01 22:55:07 gpu kernel: NVRM: GPU 0000:01:00.0: RmInitAdapter failed! "
    "(0x22:0x56:884)\n"
    "Jul 01 22:55:07 gpu kernel: NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85)\n"
    "                             NVRM: installed in this system requires use of the "
    "NVIDIA open kernel modules.\n"
)
# the same refusal in plain dmesg (580.105.08 on 10de:2c58)
OPEN_REQUIRED_DMESG = (
    "[    5.499014] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.105.08  Wed Oct 29 "
    "23:15:11 UTC 2025\n"
    "[    5.559842] NVRM: The NVIDIA GPU 0000:02:00.0 (PCI ID: 10de:2c58)\n"
    "               NVRM: installed in this system requires use of the NVIDIA open kernel "
    "modules.\n"
    "[    5.559858] NVRM: GPU 0000:02:00.0: RmInitAdapter failed! (0x22:0x56:884)\n"
    "[    5.560313] NVRM: GPU 0000:02:00.0: rm_init_adapter failed, device minor number 0\n"
)
# the same, without timestamps (dmesg -t)
OPEN_REQUIRED_BARE = "".join(
    line.split("] ", 1)[1] + "\n" if line.startswith("[") else line.strip() + "\n"
    for line in OPEN_REQUIRED_DMESG.splitlines())
# open-gpu-kernel-modules#230: the open module refused a consumer GPU
OPEN_DATACENTER_ONLY = (
    "[    3.513141] NVRM: Open nvidia.ko is only ready for use on Data Center GPUs.\n"
    "[    3.513144] NVRM: To force use of Open nvidia.ko on other GPUs, see the\n"
    "[    3.513145] NVRM: 'OpenRmEnableUnsupportedGpus' kernel module parameter described\n"
    "[    3.513145] NVRM: in the README.\n"
    "[    3.824916] NVRM: GPU 0000:04:00.0: RmInitAdapter failed! (0x63:0x0:1905)\n"
    "[    3.827920] NVRM: GPU 0000:04:00.0: rm_init_adapter failed, device minor number 0\n"
)
# siderolabs/talos#8764 (Talos kernel log prefix)
LEGACY_TALOS = (
    "kern:     err: [2024-05-20T02:46:53.856596762Z]: NVRM: The NVIDIA GeForce GT 710 GPU "
    "installed in this system is\n"
    " NVRM:  supported through the NVIDIA 470.xx Legacy drivers. Please\n"
    " NVRM:  visit http://www.nvidia.com/object/unix.html for more\n"
    " NVRM:  information.  The 535.129.03 NVIDIA driver will ignore\n"
    " NVRM:  this GPU.  Continuing probe...\n"
    "kern: warning: [2024-05-20T02:46:53.859954762Z]: NVRM: No NVIDIA GPU found.\n"
)
# NixOS/nixos-hardware#1880 (dmesg -T)
LEGACY_DMESG_T = (
    "[Sun May 17 15:55:50 2026] NVRM: The NVIDIA NVIDIA GeForce GTX 1050 GPU installed in "
    "this system is\n"
    "                           NVRM:  supported through the NVIDIA 580.xx Legacy drivers. "
    "Please\n"
    "                           NVRM:  visit http://www.nvidia.com/object/unix.html for "
    "more\n"
    "                           NVRM:  information.  The 595.71.05 NVIDIA driver will "
    "ignore\n"
    "                           NVRM:  this GPU.  Continuing probe...\n"
    "[Sun May 17 15:55:50 2026] NVRM: No NVIDIA GPU found.\n"
)
# a real loss on the other node stays DRV002 (NVIDIA's Xid 79 wording)
FALLEN = ("[ 9000.100000] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the "
          "bus.\n")


# journalctl -k -o short-iso prints the same records with an ISO timestamp
OPEN_REQUIRED_ISO = OPEN_REQUIRED_SYSLOG.replace("Jul 01 22:55:07 gpu kernel:",
                                                 "2025-07-01T22:55:07+0000 gpu kernel:")


@pytest.mark.parametrize("text", [OPEN_REQUIRED_SYSLOG, OPEN_REQUIRED_DMESG,
                                  OPEN_REQUIRED_BARE, OPEN_REQUIRED_ISO],
                         ids=["syslog", "dmesg", "dmesg-t", "journalctl-short-iso"])
def test_open_modules_required_is_the_cause_not_a_lost_gpu(tmp_path: Path, text: str) -> None:
    report = analyse(drv_files([gpu_node("gpu-bw"), gpu_node("gpu-hw")],
                    {"nodes/gpu-bw/dmesg.txt": text, "nodes/gpu-hw/dmesg.txt": FALLEN}),
                     tmp=tmp_path)
    refused = of(report, "DRV008")
    assert sorted(refused) == ["DRV008:gpu-bw"]
    finding = refused["DRV008:gpu-bw"]
    assert "requires the open kernel modules" in finding.summary
    assert "driver.kernelModuleType=open" in finding.remediation
    assert "proprietary" not in finding.remediation.replace("the proprietary module", "")
    lost = of(report, "DRV002")
    assert sorted(lost) == ["DRV002:gpu-hw/0000:3b:00.0"]
    assert finding.confidence.value == "confirmed"


def test_open_module_refusing_a_consumer_gpu(tmp_path: Path) -> None:
    report = analyse(drv_files([gpu_node("gpu-c")],
                    {"nodes/gpu-c/dmesg.txt": OPEN_DATACENTER_ONLY}), tmp=tmp_path)
    assert sorted(of(report, "DRV008")) == ["DRV008:gpu-c"]
    assert "Data Center GPUs" in of(report, "DRV008")["DRV008:gpu-c"].summary
    assert of(report, "DRV002") == {}


@pytest.mark.parametrize("text,node,branch", [(LEGACY_TALOS, "talos-1", "470.xx"),
                                              (LEGACY_DMESG_T, "nix-1", "580.xx")])
def test_legacy_branch_wording(tmp_path: Path, text: str, node: str, branch: str) -> None:
    report = analyse(drv_files([gpu_node(node)], {f"nodes/{node}/dmesg.txt": text}), tmp=tmp_path)
    finding = of(report, "DRV008")[f"DRV008:{node}"]
    assert f"{branch} legacy branch" in finding.summary
    assert of(report, "DRV002") == {}


def test_a_refusal_on_another_address_does_not_hide_a_loss(tmp_path: Path) -> None:
    """Deferring is per PCI address: a GPU refused at 02:00.0 says nothing about the one
    that fell off the bus at 3b:00.0 on the same node."""
    text = OPEN_REQUIRED_DMESG + FALLEN
    report = analyse(drv_files([gpu_node("gpu-m")], {"nodes/gpu-m/dmesg.txt": text}), tmp=tmp_path)
    assert sorted(of(report, "DRV002")) == ["DRV002:gpu-m/0000:3b:00.0"]
    assert sorted(of(report, "DRV008")) == ["DRV008:gpu-m"]
    assert status(report, "DRV002")[0] == "failed"


def test_the_driver_container_log_alone_names_the_flavour(tmp_path: Path) -> None:
    """The installer repeats the kernel's lines under 'Kernel messages:' (as in
    tests/rules/test_drv008.py); an empty dmesg still lets the container's log speak."""
    from kit.objects import pod

    driver = pod("nvidia-driver-daemonset-bw1", "gpu-l", app="nvidia-driver-daemonset")
    log = ("Kernel messages:\n"
           "[    5.559842] NVRM: The NVIDIA GPU 0000:02:00.0 (PCI ID: 10de:2b85)\n"
           "               NVRM: installed in this system requires use of the NVIDIA open "
           "kernel modules.\n")
    path = "logs/gpu-operator/nvidia-driver-daemonset-bw1/nvidia-driver-ctr.log"
    report = analyse(drv_files([gpu_node("gpu-l")],
                    {"nodes/gpu-l/dmesg.txt": "", path: log}, pods=[driver]), tmp=tmp_path)
    finding = of(report, "DRV008")["DRV008:gpu-l"]
    assert "requires the open kernel modules" in finding.summary
    assert [(e.path, e.line) for e in finding.evidence] == [(path, 3)]
