"""DRV003 (driver not usable) and DRV004 (Secure Boot refused the module)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse
from kit import findings as of
from kit.driver import DRIVER_APP, gpu_node, smi_gpu, smi_xml
from kit.driver import bundle_files as drv_files
from kit.objects import event, kube_list, pod

SMI = smi_xml(smi_gpu("00000000:01:00.0", "GPU-509665ad-b600-ac93-3616-d754b23d636d"))
NVIDIA_MODULES = (
    "nvidia_uvm 2076672 4 - Live 0x0000000000000000 (PO)\n"
    "nvidia_modeset 1638400 1 nvidia_drm, Live 0x0000000000000000 (PO)\n"
    "nvidia 104071168 28 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (PO)\n"
)
NOUVEAU_MODULES = "nouveau 2306048 0 - Live 0x0000000000000000\n"
SMI_FAILED = {"path": "nodes/gpu-n/nvidia-smi.xml",
              "error": "NVIDIA-SMI has failed because it couldn't communicate with the "
                       "NVIDIA driver. Make sure that the latest NVIDIA driver is installed "
                       "and running."}


def _policy(**driver: Any) -> dict[str, Any]:
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"},
            "spec": {"driver": {"enabled": True, **driver}}, "status": {"state": "notReady"}}


def test_nouveau_loaded_and_nvidia_missing(tmp_path: Path) -> None:
    dmesg = (
        "Jul 04 20:18:16 gpu-n kernel: NVRM: The NVIDIA probe routine was not called for 1 "
        "device(s).\n"
        "Jul 04 20:18:16 gpu-n kernel: NVRM: This can occur when a driver such as: \n"
        "                              NVRM: nouveau, rivafb, nvidiafb or rivatv \n"
    )
    report = analyse(drv_files([gpu_node("gpu-n"), gpu_node("gpu-ok")],
                    {"nodes/gpu-n/dmesg.txt": dmesg,
                     "nodes/gpu-n/host/modules.txt": NOUVEAU_MODULES,
                     "nodes/gpu-ok/dmesg.txt": "",
                     "nodes/gpu-ok/host/modules.txt": NVIDIA_MODULES,
                     "nodes/gpu-ok/nvidia-smi.xml": SMI}), tmp=tmp_path, failed=[SMI_FAILED])
    assert list(of(report, "DRV003")) == ["DRV003:gpu-n"]
    finding = of(report, "DRV003")["DRV003:gpu-n"]
    assert finding.severity.value == "critical"
    assert "nouveau holds the GPU" in finding.summary
    assert "the nvidia kernel module is not loaded (nvidia-smi failed: NVIDIA-SMI has failed" \
        in finding.summary
    located = [(e.path, e.line) for e in finding.evidence]
    assert ("nodes/gpu-n/host/modules.txt", 1) in located
    assert ("nodes/gpu-n/dmesg.txt", 1) in located
    assert "blacklist nouveau" in finding.remediation
    assert "DRV004:gpu-n" not in finding.caused_by  # Secure Boot not collected


def test_api_mismatch_in_syslog_and_nvml_mismatch_in_a_log(tmp_path: Path) -> None:
    dmesg = (
        "Jun 30 11:07:05 gpu-n kernel: NVRM: API mismatch: the client has the version "
        "535.54.03, but#012NVRM: this kernel module has the version 530.30.02.  Please#012NVRM: "
        "make sure that this kernel module and all NVIDIA driver#012NVRM: components have the "
        "same version.\n"
    )
    log = "Failed to initialize NVML: Driver/library version mismatch\n"
    report = analyse(drv_files([gpu_node("gpu-n")],
        {"nodes/gpu-n/dmesg.txt": dmesg, "nodes/gpu-n/host/modules.txt": NVIDIA_MODULES,
         "logs/gpu-operator/nvidia-operator-validator-x1/driver-validation.log": log},
        pods=[pod("nvidia-operator-validator-x1", "gpu-n", app="nvidia-operator-validator")]),
                     tmp=tmp_path, failed=[SMI_FAILED])
    finding = of(report, "DRV003")["DRV003:gpu-n"]
    assert finding.severity.value == "critical"
    assert "(client 535.54.03, kernel module 530.30.02)" in finding.summary
    assert "not loaded" not in finding.summary
    located = [(e.path, e.line) for e in finding.evidence]
    assert ("nodes/gpu-n/dmesg.txt", 1) in located
    assert ("logs/gpu-operator/nvidia-operator-validator-x1/driver-validation.log", 1) in located


def test_nvml_mismatch_in_events_is_evidence_on_the_pods_node(tmp_path: Path) -> None:
    """Each node's finding quotes the event of its own pod, not the other node's."""
    message = ("failed to create containerd task: nvidia-container-cli: initialization "
               "error: nvml error: driver/library version mismatch")
    events = kube_list(event("cuda-a", "Failed", message, namespace="ml"),
                       event("cuda-b", "Failed", message, namespace="ml"),
                       event("cuda-c", "Failed", message, namespace="ml"))
    report = analyse(drv_files([gpu_node("gpu-n"), gpu_node("gpu-m"), gpu_node("gpu-ok")],
                    {"nodes/gpu-n/dmesg.txt": "", "nodes/gpu-n/host/modules.txt": NVIDIA_MODULES,
                     "nodes/gpu-m/nvidia-smi.xml": SMI, "nodes/gpu-ok/nvidia-smi.xml": SMI,
                     "cluster/events.json": events},
                    pods=[pod("cuda-a", "gpu-n", namespace="ml", gpus=1),
                          pod("cuda-b", "gpu-m", namespace="ml", gpus=1),
                          pod("cuda-c", None, namespace="ml", gpus=1)]),
                     tmp=tmp_path, failed=[SMI_FAILED])
    found = of(report, "DRV003")
    assert sorted(found) == ["DRV003:gpu-m", "DRV003:gpu-n"]
    for node, pointer in (("gpu-n", "/items/0/message"), ("gpu-m", "/items/1/message")):
        assert [(e.path, e.pointer) for e in found[f"DRV003:{node}"].evidence
                if e.path == "cluster/events.json"] == [("cluster/events.json", pointer)]


def test_new_api_mismatch_wording_with_working_nvidia_smi_is_high(tmp_path: Path) -> None:
    dmesg = "[    9.424670] NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)\n"
    report = analyse(drv_files([gpu_node("gpu-n")],
                    {"nodes/gpu-n/dmesg.txt": dmesg, "nodes/gpu-n/nvidia-smi.xml": SMI}),
                     tmp=tmp_path)
    assert of(report, "DRV003")["DRV003:gpu-n"].severity.value == "high"


def _secure_boot_bundle(tmp_path: Path, state: str, dmesg: str, modules: str) -> Any:
    return analyse(drv_files([gpu_node("gpu-n")],
        {"nodes/gpu-n/host/secureboot.txt": f"SecureBoot {state}\n",
         "nodes/gpu-n/dmesg.txt": dmesg, "nodes/gpu-n/host/modules.txt": modules},
        pods=[pod("nvidia-driver-daemonset-x1", "gpu-n", app=DRIVER_APP)],
        policies=[_policy()]), tmp=tmp_path, failed=[SMI_FAILED])


UNSIGNED = ("[    4.201102] nvidia: module verification failed: signature and/or required key "
            "missing - tainting kernel\n")
LOCKDOWN = ("[  398.381052] Lockdown: modprobe: unsigned module loading is restricted; see man "
            "kernel_lockdown.7\n")


def test_secure_boot_with_unsigned_module_absent_is_critical_and_explains_drv003(
        tmp_path: Path) -> None:
    report = _secure_boot_bundle(tmp_path, "enabled", UNSIGNED + LOCKDOWN, "")
    finding = of(report, "DRV004")["DRV004:gpu-n"]
    assert finding.severity.value == "critical"
    assert "the kernel refused to load an unsigned module" in finding.summary
    assert "driver container builds it on the node, unsigned" in finding.summary
    located = [(e.path, e.line) for e in finding.evidence]
    assert ("nodes/gpu-n/host/secureboot.txt", 1) in located
    assert ("nodes/gpu-n/dmesg.txt", 1) in located and ("nodes/gpu-n/dmesg.txt", 2) in located
    assert "DRV003:gpu-n" in finding.causes
    assert "DRV004:gpu-n" in of(report, "DRV003")["DRV003:gpu-n"].caused_by


def test_module_verification_failed_but_loaded_is_medium(tmp_path: Path) -> None:
    report = _secure_boot_bundle(tmp_path, "enabled", UNSIGNED, NVIDIA_MODULES)
    finding = of(report, "DRV004")["DRV004:gpu-n"]
    assert finding.severity.value == "medium"
    assert "will be refused once it is on" in finding.summary


def test_driver_container_modprobe_refusal_in_its_log(tmp_path: Path) -> None:
    log = ("5.879228] driverdog[2088]: 23:10:41 [ERROR] '/usr/bin/modprobe' failed - stderr: "
           "modprobe: ERROR: could not insert 'nvidia': Operation not permitted\n")
    report = _secure_boot_bundle(tmp_path, "enabled", "", NVIDIA_MODULES)
    assert not of(report, "DRV004")
    files = {"nodes/gpu-n/host/secureboot.txt": "SecureBoot enabled\n",
             "nodes/gpu-n/dmesg.txt": "", "nodes/gpu-n/host/modules.txt": NVIDIA_MODULES,
             "logs/gpu-operator/nvidia-driver-daemonset-x1/nvidia-driver-ctr.log": log}
    report = analyse(drv_files([gpu_node("gpu-n")], files,
                    pods=[pod("nvidia-driver-daemonset-x1", "gpu-n", app=DRIVER_APP)],
                    policies=[_policy(usePrecompiled=True)]), tmp=tmp_path / "b")
    finding = of(report, "DRV004")["DRV004:gpu-n"]
    assert finding.severity.value == "critical"
    assert finding.evidence[1].path.endswith("nvidia-driver-ctr.log")


def test_secure_boot_disabled_is_quiet(tmp_path: Path) -> None:
    report = _secure_boot_bundle(tmp_path, "disabled", UNSIGNED + LOCKDOWN, "")
    assert not of(report, "DRV004")


def test_nova_core_bound_to_the_gpu(tmp_path: Path) -> None:
    dmesg = "[    6.100000] NVRM: GPU 0000:01:00.0 is already bound to NovaCore.\n"
    report = analyse(drv_files([gpu_node("gpu-n")],
                    {"nodes/gpu-n/dmesg.txt": dmesg,
                     "nodes/gpu-n/host/modules.txt": NVIDIA_MODULES}),
                     tmp=tmp_path, failed=[SMI_FAILED])
    finding = of(report, "DRV003")["DRV003:gpu-n"]
    assert "nova_core holds the GPU" in finding.summary
    assert finding.severity.value == "critical"


def test_lockdown_for_another_module_while_nvidia_is_loaded_is_quiet(tmp_path: Path) -> None:
    report = _secure_boot_bundle(tmp_path, "enabled", LOCKDOWN, NVIDIA_MODULES)
    assert not of(report, "DRV004")
