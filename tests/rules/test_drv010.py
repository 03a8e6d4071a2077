"""DRV010: NVIDIA GPUs bound to another kernel driver (host/lspci.txt, host/modules.txt).

The listings follow real ``lspci -nnk`` output from public threads:
- vfio-pci on a T4 node meant for GPU pods, and the card's other functions left to their
  own drivers: https://github.com/NVIDIA/gpu-operator/issues/1328 (``lspci -Dnnkv -d
  10de:`` of a TU104GL with its audio, USB and UCSI functions) and
  https://github.com/cloud-hypervisor/cloud-hypervisor/issues/4353 (``Kernel driver in
  use: vfio-pci`` on a TU104 function);
- nouveau on a GA102 next to ``Kernel modules: nouveau, nvidia_drm, nvidia``:
  https://github.com/vanities/GPU-Passthrough-Arch-Linux-to-Windows10/issues/6 (same
  layout, with nvidia in use there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse
from kit import findings as of
from kit.driver import bundle_files as drv_files
from kit.driver import gpu_node

VFIO_LSPCI = (
    "0000:52:00.0 VGA compatible controller [0300]: NVIDIA Corporation TU104GL [Quadro RTX "
    "4000] [10de:1eb1] (rev a1)\n"
    "\tSubsystem: NVIDIA Corporation Device [10de:12a0]\n"
    "\tKernel driver in use: vfio-pci\n"
    "\tKernel modules: nouveau\n"
    "0000:52:00.1 Audio device [0403]: NVIDIA Corporation TU104 HD Audio Controller "
    "[10de:10f8] (rev a1)\n"
    "\tSubsystem: NVIDIA Corporation Device [10de:12a0]\n"
    "\tKernel driver in use: snd_hda_intel\n"
    "\tKernel modules: snd_hda_intel\n"
    "0000:52:00.3 Serial bus controller [0c80]: NVIDIA Corporation TU104 USB Type-C UCSI "
    "Controller [10de:1ad7] (rev a1)\n"
    "\tKernel driver in use: nvidia-gpu\n"
    "\tKernel modules: i2c_nvidia_gpu\n"
)
NOUVEAU_LSPCI = (
    "3e:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA102 [GeForce RTX 3080] "
    "[10de:2206] (rev a1)\n"
    "\tSubsystem: Gigabyte Technology Co., Ltd Device [1458:404b]\n"
    "\tKernel driver in use: nouveau\n"
    "\tKernel modules: nouveau, nvidia_drm, nvidia\n"
    "3e:00.1 Audio device [0403]: NVIDIA Corporation GA102 High Definition Audio Controller "
    "[10de:1aef] (rev a1)\n"
    "\tKernel driver in use: snd_hda_intel\n"
)
NVIDIA_LSPCI = (
    "0000:17:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 80GB] "
    "[10de:20b2] (rev a1)\n"
    "\tSubsystem: NVIDIA Corporation Device [10de:1463]\n"
    "\tKernel driver in use: nvidia\n"
    "\tKernel modules: nvidiafb, nouveau, nvidia_drm, nvidia\n"
)
VFIO_MODULES = (
    "vfio_pci 16384 0 - Live 0x0000000000000000\n"
    "vfio_pci_core 94208 1 vfio_pci, Live 0x0000000000000000\n"
)
NOUVEAU_MODULES = "nouveau 2306048 0 - Live 0x0000000000000000\n"


def _labelled(name: str, **labels: str) -> dict[str, Any]:
    node = gpu_node(name)
    node["metadata"]["labels"].update(labels)
    return node


def test_vfio_pci_on_a_gpu_node(tmp_path: Path) -> None:
    report = analyse(drv_files([gpu_node("gpu-v"), gpu_node("gpu-ok")],
                    {"nodes/gpu-v/host/lspci.txt": VFIO_LSPCI,
                     "nodes/gpu-v/host/modules.txt": VFIO_MODULES,
                     "nodes/gpu-ok/host/lspci.txt": NVIDIA_LSPCI}), tmp=tmp_path)
    found = of(report, "DRV010")
    assert sorted(found) == ["DRV010:gpu-v"]
    finding = found["DRV010:gpu-v"]
    assert finding.severity.value == "critical"
    assert finding.nodes == ["gpu-v"]
    # Only the VGA function counts: audio (snd_hda_intel) and UCSI (nvidia-gpu) are normal.
    assert "1 NVIDIA GPU(s) are bound to vfio-pci instead of nvidia: 0000:52:00.0 " \
           "(vfio-pci)" in finding.summary
    located = [(e.path, e.line) for e in finding.evidence]
    assert located == [("nodes/gpu-v/host/lspci.txt", 1), ("nodes/gpu-v/host/lspci.txt", 3),
                       ("nodes/gpu-v/host/modules.txt", 1)]
    assert finding.evidence[1].excerpt == "Kernel driver in use: vfio-pci"
    assert "vfio-pci.ids=" in finding.remediation
    assert "kubectl drain gpu-v" in finding.remediation
    assert "blacklist nouveau" not in finding.remediation


def test_nouveau_bound_causes_drv003(tmp_path: Path) -> None:
    dmesg = ("[    4.221] nouveau 0000:3e:00.0: NVIDIA GA102 (172000a1)\n"
             "[    4.310] nouveau 0000:3e:00.0: bios: version 94.02.42.00.a9\n")
    report = analyse(drv_files([gpu_node("gpu-n")],
                    {"nodes/gpu-n/host/lspci.txt": NOUVEAU_LSPCI,
                     "nodes/gpu-n/host/modules.txt": NOUVEAU_MODULES,
                     "nodes/gpu-n/dmesg.txt": dmesg}), tmp=tmp_path)
    finding = of(report, "DRV010")["DRV010:gpu-n"]
    assert "bound to nouveau instead of nvidia: 3e:00.0 (nouveau)" in finding.summary
    assert ("nodes/gpu-n/host/modules.txt", 1) in [(e.path, e.line) for e in finding.evidence]
    assert "blacklist nouveau" in finding.remediation
    assert list(of(report, "DRV003")) == ["DRV003:gpu-n"]
    assert finding.causes == ["DRV003:gpu-n"]


def test_sandbox_default_workload_keeps_unlabelled_nodes_quiet(tmp_path: Path) -> None:
    policy = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
              "metadata": {"name": "cluster-policy"},
              "spec": {"sandboxWorkloads": {"enabled": True,
                                            "defaultWorkload": "vm-passthrough"}},
              "status": {"state": "ready"}}
    report = analyse(drv_files([gpu_node("gpu-vm")],
                    {"nodes/gpu-vm/host/lspci.txt": VFIO_LSPCI}, policies=[policy]), tmp=tmp_path)
    assert of(report, "DRV010") == {}
