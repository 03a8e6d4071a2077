"""Catalog-2 driver causes on bundles built from real public threads not used before.

Each case carries the wording a user posted (names and versions as in the thread, in
this project's bundle layout) and asserts the rule fires on the right node and names
the right cause:

- DRV004 (Secure Boot refuses the driver container's unsigned module; OP010 and OP001
  its symptoms): the installer's own question and refusal on RTX 3090 worker nodes,
  ``Kernel module load error: Operation not permitted``,
  https://github.com/NVIDIA/gpu-operator/issues/1142; the same refusal with
  ``Key was rejected by service`` on an RKE2 Ubuntu 24.04 node,
  https://github.com/NVIDIA/gpu-driver-container/issues/44.
- DRV008 (the driver branch does not list the GPU): a Tesla P40 (10de:1b38) refused by
  535.54.03 in a Talos VM, https://github.com/siderolabs/extensions/issues/227.
- DRV009 (nvidia-smi failed): ``No devices were found`` with the driver container up but
  not ready (its startup probe failing), https://github.com/NVIDIA/gpu-operator/issues/653.
- DRV010 (GPUs bound to another driver): Tesla T4s bound to vfio-pci for KubeVirt,
  https://github.com/kubevirt/kubevirt/issues/14593; quiet once the node is labelled for
  passthrough.
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of
from kit import findings as of_rule
from kit.cluster import Cluster, operand_pod
from kit.driver import bundle_files as drv_files
from kit.driver import gpu_node

from analyzers.results.models import Finding

CTR = "nvidia-driver-ctr"


def _secure_boot_node(cluster: Cluster, node: str, log: list[str]) -> None:
    cluster.put(operand_pod("nvidia-driver-daemonset", node,
                            mains={CTR: "waiting:CrashLoopBackOff"}, restarts=12))
    cluster.log("nvidia-driver-daemonset", node, CTR, log, previous=True)
    cluster.files[f"nodes/{node}/host/secureboot.txt"] = "SecureBoot enabled\n"
    cluster.files[f"nodes/{node}/host/modules.txt"] = "i2c_core 106496 0 - Live 0x0\n"
    cluster.files[f"nodes/{node}/dmesg.txt"] = ""


def test_drv004_installer_operation_not_permitted(tmp_path: Path) -> None:
    # gpu-operator#1142: the .run installer's Secure Boot question, then its refusal
    cluster = Cluster()
    _secure_boot_node(cluster, "gpu-a", [
        "The target kernel has CONFIG_MODULE_SIG set, which means that it supports "
        "cryptographic signatures on kernel modules. On some systems, the kernel may refuse "
        "to load modules without a valid signature from a trusted key. This system also has "
        "UEFI Secure Boot enabled; many distributions enforce module signature verification "
        "on UEFI systems when Secure Boot is enabled. Would you like to sign the NVIDIA "
        "kernel module? (Answer: Install without signing)",
        "Kernel module load error: Operation not permitted",
    ])
    report = analyse(cluster, tmp=tmp_path)
    drv004 = of_rule(report, "DRV004")
    assert sorted(drv004) == ["DRV004:gpu-a"]
    assert drv004["DRV004:gpu-a"].caused_by == []
    assert "Secure Boot is enabled" in drv004["DRV004:gpu-a"].summary
    ids = report.by_id()
    assert "DRV004:gpu-a" in ids["OP001:gpu-a"].caused_by


def test_drv004_installer_cannot_load_on_rke2_ubuntu(tmp_path: Path) -> None:
    # gpu-driver-container#44: the installer's refusal of the self-built 535.161.07 module
    cluster = Cluster()
    _secure_boot_node(cluster, "gpu-b", [
        "Starting installation of NVIDIA driver version 535.161.07 for Linux kernel version "
        "6.8.0-36-generic",
        "ERROR: Unable to load the kernel module 'nvidia.ko'.",
    ])
    report = analyse(cluster, tmp=tmp_path)
    drv004 = of_rule(report, "DRV004")
    assert sorted(drv004) == ["DRV004:gpu-b"]
    assert drv004["DRV004:gpu-b"].caused_by == []
    assert "DRV004:gpu-b" in report.by_id()["OP001:gpu-b"].caused_by


def test_drv004_quiet_without_secure_boot(tmp_path: Path) -> None:
    cluster = Cluster()
    _secure_boot_node(cluster, "gpu-c", [
        "Kernel module load error: Operation not permitted"])
    cluster.files["nodes/gpu-c/host/secureboot.txt"] = "SecureBoot disabled\n"
    assert of_rule(analyse(cluster, tmp=tmp_path), "DRV004") == {}


# siderolabs/extensions#227: the P40 vGPU in a Talos VM, refused by the 535.54.03 branch.
# The thread shows the record as Talos prints /dev/kmsg (newlines escaped as \x0a); here
# it is as the collector's util-linux dmesg prints one record (lines indented).
P40_RECORD = [
    "NVRM: The NVIDIA GPU 0000:00:10.0 (PCI ID: 10de:1b38)",
    "NVRM: installed in this system is not supported by the",
    "NVRM: NVIDIA 535.54.03 driver release.",
    "NVRM: Please see 'Appendix A - Supported NVIDIA GPU Products'",
    "NVRM: in this release's README, available on the operating system",
    "NVRM: specific graphics driver download page at www.nvidia.com.",
]
P40_TAIL = ("2023-09-14T03:08:37,433482+00:00 nvidia: probe of 0000:00:10.0 failed with error -1\n"
            "2023-09-14T03:08:37,434129+00:00 NVRM: The NVIDIA probe routine failed for 1 "
            "device(s).\n")


def _p40(tmp_path: Path, dmesg: str) -> dict[str, Finding]:
    report = analyse(drv_files([gpu_node("talos-gpu")], {"nodes/talos-gpu/dmesg.txt": dmesg}),
                     tmp=tmp_path)
    return dict(of(report, "DRV008"))


def test_drv008_p40_on_535_as_dmesg_prints_it(tmp_path: Path) -> None:
    stamp = "2023-09-14T03:08:37,411164+00:00"
    pad = " " * len(stamp)
    record = stamp + " " + ("\n" + pad + " ").join(P40_RECORD) + "\n"
    found = _p40(tmp_path, record + P40_TAIL)
    assert sorted(found) == ["DRV008:talos-gpu"]
    summary = found["DRV008:talos-gpu"].summary
    assert "10de:1b38" in summary and "535.54.03 driver branch does not list" in summary


# kubevirt/kubevirt#14593: a node's Tesla T4s bound to vfio-pci for KubeVirt passthrough,
# as `lspci -nnk` printed them in the thread (the first two of its cards).
T4_VFIO = (
    "18:00.0 3D controller [0302]: NVIDIA Corporation TU104GL [Tesla T4] [10de:1eb8] (rev a1)\n"
    "\tSubsystem: NVIDIA Corporation TU104GL [Tesla T4] [10de:12a2]\n"
    "\tKernel driver in use: vfio-pci\n"
    "\tKernel modules: nvidia_drm, nvidia\n"
    "19:00.0 3D controller [0302]: NVIDIA Corporation TU104GL [Tesla T4] [10de:1eb8] (rev a1)\n"
    "\tSubsystem: NVIDIA Corporation TU104GL [Tesla T4] [10de:12a2]\n"
    "\tKernel driver in use: vfio-pci\n"
    "\tKernel modules: nvidia_drm, nvidia\n"
)


def test_drv010_t4s_bound_to_vfio_for_kubevirt(tmp_path: Path) -> None:
    report = analyse(drv_files([gpu_node("kv-gpu-1")],
                    {"nodes/kv-gpu-1/host/lspci.txt": T4_VFIO}), tmp=tmp_path)
    found = of(report, "DRV010")
    assert sorted(found) == ["DRV010:kv-gpu-1"]
    assert ("2 NVIDIA GPU(s) are bound to vfio-pci instead of nvidia: 18:00.0 (vfio-pci), "
            "19:00.0 (vfio-pci)") in found["DRV010:kv-gpu-1"].summary


def test_drv010_quiet_when_the_node_is_meant_for_passthrough(tmp_path: Path) -> None:
    node = gpu_node("kv-gpu-1")
    node["metadata"]["labels"]["nvidia.com/gpu.workload.config"] = "vm-passthrough"
    report = analyse(drv_files([node], {"nodes/kv-gpu-1/host/lspci.txt": T4_VFIO}), tmp=tmp_path)
    assert of(report, "DRV010") == {}


# gpu-operator#653 (A100, OpenShift 4.12): the driver container runs but its startup probe
# fails with nvidia-smi's "No devices were found", the other operands wait in Init; the
# collector's nvidia-smi says the same. A Running container counts as up, so nvidia-smi's
# failure is what the bundle can name: DRV009 is the root and OP001's stage hangs under it.
def test_drv009_driver_container_finds_no_device(tmp_path: Path) -> None:
    cluster = Cluster()
    pod = operand_pod("nvidia-driver-daemonset", "gpu-a")
    for status in pod["status"]["containerStatuses"]:
        status["ready"] = False  # Running, startup probe failing
    cluster.put(pod)
    cluster.put(operand_pod("nvidia-operator-validator", "gpu-a",
                            inits={"driver-validation": "running"}))
    cluster.failed.append({"path": "nodes/gpu-a/nvidia-smi.xml", "node": "gpu-a",
                           "command": ["nvidia-smi", "-q", "-x"], "exit_code": 6,
                           "error": "No devices were found"})
    report = analyse(cluster, tmp=tmp_path)
    smi = of_rule(report, "DRV009")["DRV009:gpu-a"]
    assert "the driver is loaded but found no GPU" in smi.summary
    assert smi.caused_by == [] and smi.severity.value == "high"
    op001 = of_rule(report, "OP001")["OP001:gpu-a"]
    assert op001.caused_by == ["DRV009:gpu-a"]
    assert "(see DRV009)" in op001.summary


# The contrast (a case of this file, not a thread): when the driver container itself
# crash-loops, it explains nvidia-smi's failure, not the other way round.
def test_drv009_under_a_crashing_driver_container(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-driver-daemonset", "gpu-a",
                            mains={"nvidia-driver-ctr": "waiting:CrashLoopBackOff"}))
    cluster.failed.append({"path": "nodes/gpu-a/nvidia-smi.xml", "node": "gpu-a",
                           "command": ["nvidia-smi", "-q", "-x"], "exit_code": 6,
                           "error": "No devices were found"})
    report = analyse(cluster, tmp=tmp_path)
    smi = of_rule(report, "DRV009")["DRV009:gpu-a"]
    assert smi.caused_by == ["OP001:gpu-a"] and smi.severity.value == "low"
    assert of_rule(report, "OP001")["OP001:gpu-a"].caused_by == []
