"""Issue 25, case 7: claims that say more than the bundle shows.

- OP001 said "the driver is not usable" when only the driver pod's ``nvidia-peermem-ctr``
  container failed (``could not insert 'nvidia_peermem': Invalid argument``,
  https://github.com/NVIDIA/gpu-operator/issues/2868) while ``nvidia-driver-ctr`` ran.
- OP008 said "the runtime did not inject the driver libraries" when the driver itself
  could not drive the GPU (the proprietary module on a Blackwell GPU,
  https://github.com/NVIDIA/open-gpu-kernel-modules/issues/862; the device plugin's
  v0.14 wording, https://github.com/NVIDIA/k8s-device-plugin/issues/377 era, as in
  tests/rules/test_op004_op005_op008.py).
- DRV009 said "no NVIDIA kernel module is loaded" while ``host/modules.txt`` listed
  ``nvidia`` (nvidia-smi's own wording, https://github.com/NVIDIA/gpu-operator/issues/751;
  a loaded module with that message: https://github.com/fady-saied/Nvidia-Fedora-Guide/issues/9).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse
from kit import findings as of_rule
from kit.cluster import Cluster, gpu_node, operand_pod

from analyzers.results.models import Severity

PEERMEM = [
    "+ modprobe nvidia-peermem",
    "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument",
]
OPEN_REQUIRED_DMESG = (
    "[    5.559842] NVRM: The NVIDIA GPU 0000:02:00.0 (PCI ID: 10de:2b85)\n"
    "               NVRM: installed in this system requires use of the NVIDIA open kernel "
    "modules.\n"
    "[    5.559858] NVRM: GPU 0000:02:00.0: RmInitAdapter failed! (0x22:0x56:884)\n"
)
NVML_V014 = [
    "I0417 07:12:59.758810       1 main.go:256] Retreiving plugins.",
    "I0417 07:12:59.758922       1 factory.go:107] Detected non-NVML platform: could not "
    "load NVML library: libnvidia-ml.so.1: cannot open shared object file: No such file or "
    "directory",
    "E0417 07:12:59.758986       1 factory.go:115] Incompatible platform detected",
]
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
             "Make sure that the latest NVIDIA driver is installed and running.")
MODULES = ("nvidia_uvm 1437696 0 - Live 0x0000000000000000 (POE)\n"
           "nvidia 54255616 1 nvidia_uvm, Live 0x0000000000000000 (POE)\n")


def _driver_pod(node: str, peermem: str) -> dict[str, Any]:
    pod = operand_pod("nvidia-driver-daemonset", node)
    pod["spec"]["containers"].append({"name": "nvidia-peermem-ctr",
                                      "image": "nvcr.io/nvidia/driver:570"})
    pod["status"]["containerStatuses"].append({
        "name": "nvidia-peermem-ctr", "ready": peermem == "running", "restartCount": 40,
        "state": ({"running": {}} if peermem == "running" else
                  {"waiting": {"reason": "CrashLoopBackOff"}})})
    if peermem != "running":
        pod["status"]["phase"] = "Running"
    return pod


def test_op001_a_failing_peermem_sidecar_is_not_an_unusable_driver(tmp_path: Path) -> None:
    cluster = Cluster(gpu_nodes=("gpu-r",))
    cluster.put(_driver_pod("gpu-r", "crash"))
    cluster.log("nvidia-driver-daemonset", "gpu-r", "nvidia-peermem-ctr", PEERMEM,
                previous=True)
    report = analyse(cluster, tmp=tmp_path)
    op001 = of_rule(report, "OP001")
    assert sorted(op001) == ["OP001:gpu-r"]
    finding = op001["OP001:gpu-r"]
    assert "the driver is not usable" not in finding.summary
    assert "nvidia-peermem-ctr" in finding.summary
    assert "GPUDirect RDMA" in finding.summary
    assert finding.severity is Severity.MEDIUM
    # the same pod with its sidecar running is healthy
    cluster = Cluster(gpu_nodes=("gpu-ok",))
    cluster.put(_driver_pod("gpu-ok", "running"))
    assert of_rule(analyse(cluster, tmp=tmp_path / "ok"), "OP001") == {}


def test_op008_names_the_driver_when_it_cannot_drive_the_gpu(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-device-plugin-daemonset", "gpu-d",
                            mains={"nvidia-device-plugin": "waiting:CrashLoopBackOff"},
                            restarts=30))
    cluster.log("nvidia-device-plugin-daemonset", "gpu-d", "nvidia-device-plugin", NVML_V014,
                previous=True)
    cluster.nodes["gpu-d"] = gpu_node("gpu-d", gpus=0)
    cluster.files["nodes/gpu-d/dmesg.txt"] = OPEN_REQUIRED_DMESG
    report = analyse(cluster, tmp=tmp_path)
    op = of_rule(report, "OP008")["OP008:gpu-d"]
    assert "did not inject" not in op.summary
    assert "the driver on the node cannot serve the GPU (see DRV008)" in op.summary
    assert "DRV008:gpu-d" in op.caused_by
    assert "check the injection" not in op.remediation


def test_op008_still_blames_injection_when_the_driver_is_fine(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-device-plugin-daemonset", "gpu-e",
                            mains={"nvidia-device-plugin": "waiting:CrashLoopBackOff"},
                            restarts=30))
    cluster.log("nvidia-device-plugin-daemonset", "gpu-e", "nvidia-device-plugin", NVML_V014,
                previous=True)
    cluster.nodes["gpu-e"] = gpu_node("gpu-e", gpus=0)
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP008")["OP008:gpu-e"]
    assert "the runtime did not inject the driver libraries" in op.summary
    assert op.confidence.value == "likely"


def _smi_item(node: str) -> dict[str, Any]:
    return {"path": f"nodes/{node}/nvidia-smi.xml", "node": node,
            "command": ["nvidia-smi", "-q", "-x"], "exit_code": 9, "error": NO_DRIVER}


def test_drv009_does_not_deny_a_module_modules_txt_lists(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.failed.append(_smi_item("gpu-m"))
    cluster.files["nodes/gpu-m/host/modules.txt"] = MODULES
    cluster.failed.append(_smi_item("gpu-n"))
    cluster.files["nodes/gpu-n/host/modules.txt"] = "i2c_core 106496 0 - Live 0x0\n"
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "DRV009")
    loaded = found["DRV009:gpu-m"]
    assert "no NVIDIA kernel module is loaded" not in loaded.summary
    assert "host/modules.txt lists the nvidia module as loaded" in loaded.summary
    assert ("nodes/gpu-m/host/modules.txt", 2) in [(e.path, e.line) for e in loaded.evidence]
    assert "no NVIDIA kernel module is loaded" in found["DRV009:gpu-n"].summary
