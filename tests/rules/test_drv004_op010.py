"""Catalog-2 correction: DRV004 is the root cause when the driver container's module is
refused for its signature; OP010 (the driver cannot install) is then its symptom."""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of_rule
from kit.cluster import Cluster, operand_pod

# Lines as the driver container prints them when Secure Boot refuses the module it built
# (installer: https://github.com/NVIDIA/gpu-operator/issues/206; modprobe refusal wording:
# kernel-module-load-blocked in analyzers/data/signatures.toml).
DRIVER_LOG = [
    "Compiling NVIDIA driver kernel modules...",
    "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service",
    "ERROR: Unable to load the kernel module 'nvidia.ko'.",
]
LOCKDOWN = ("[   12.345678] Lockdown: modprobe: unsigned module loading is restricted; see man "
            "kernel_lockdown.7\n")


def _refused(cluster: Cluster, node: str, *, secure_boot: bool) -> None:
    cluster.put(operand_pod("nvidia-driver-daemonset", node,
                            mains={"nvidia-driver-ctr": "waiting:CrashLoopBackOff"}, restarts=7))
    cluster.log("nvidia-driver-daemonset", node, "nvidia-driver-ctr", DRIVER_LOG, previous=True)
    cluster.files[f"nodes/{node}/host/secureboot.txt"] = \
        f"SecureBoot {'enabled' if secure_boot else 'disabled'}\n"
    cluster.files[f"nodes/{node}/host/modules.txt"] = "i2c_core 106496 0 - Live 0x0\n"
    cluster.files[f"nodes/{node}/dmesg.txt"] = LOCKDOWN if secure_boot else ""


def test_refused_module_makes_drv004_the_root_of_op010(tmp_path: Path) -> None:
    cluster = Cluster()
    _refused(cluster, "gpu-a", secure_boot=True)
    report = analyse(cluster, tmp=tmp_path)
    ids = report.by_id()
    root = ids["DRV004:gpu-a"]
    symptom = ids["OP010:gpu-a"]
    assert "OP010:gpu-a" in root.causes
    assert symptom.caused_by == ["DRV004:gpu-a"]
    assert "Secure Boot refuses the module for its signature" in symptom.summary
    assert "DRV004:gpu-a" in ids["OP001:gpu-a"].caused_by
    assert root.caused_by == []


def test_without_secure_boot_op010_stands_alone(tmp_path: Path) -> None:
    cluster = Cluster()
    _refused(cluster, "gpu-b", secure_boot=False)
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "DRV004") == {}
    symptom = of_rule(report, "OP010")["OP010:gpu-b"]
    assert symptom.caused_by == []
    # Secure Boot is not blamed; the signature refusal is named, not the kernel (issue 25)
    assert "Secure Boot is off" in symptom.summary
    assert "the kernel refused the module for its signature" in symptom.summary
