"""OP012 on bundles built from real public threads its own tests do not use: the
driver container started on hosts that already load a driver.

- MicroK8s on an AWS host with its own driver, the container 450.80.02 on kernel
  5.4.0-1034-aws: https://github.com/NVIDIA/gpu-operator/issues/126;
- a VM whose ``cuda-drivers-fabricmanager-460`` package pulled the driver in, the
  container 460.32.03 on kernel 4.15.0-136-generic:
  https://github.com/NVIDIA/gpu-operator/issues/163.

The driver container's lines are the threads' own; /proc/modules holds the loaded
``nvidia`` module (the threads show only its effect).
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of_rule
from kit.cluster import Cluster, operand_pod

from analyzers.results.models import Report

DRIVER = "nvidia-driver-daemonset"
CTR = "nvidia-driver-ctr"
MODULES = ("nvidia_uvm 1011712 0 - Live 0x0000000000000000 (POE)\n"
           "nvidia 19578880 17 nvidia_uvm, Live 0x0000000000000000 (POE)\n")


def _in_use(version: str, kernel: str) -> list[str]:
    return [
        "========== NVIDIA Software Installer ==========",
        "",
        f"Starting installation of NVIDIA driver version {version} for Linux kernel version "
        f"{kernel}",
        "",
        "Stopping NVIDIA persistence daemon...",
        "Unloading NVIDIA driver kernel modules...",
        "Could not unload NVIDIA driver kernel modules, driver is in use",
        "Stopping NVIDIA persistence daemon...",
        "Unloading NVIDIA driver kernel modules...",
        "Could not unload NVIDIA driver kernel modules, driver is in use",
    ]


def _analyze(tmp_path: Path, node: str, lines: list[str]) -> tuple[Report, str]:
    cluster = Cluster()
    cluster.files[f"nodes/{node}/host/modules.txt"] = MODULES
    cluster.put(operand_pod(DRIVER, node, mains={CTR: "waiting:CrashLoopBackOff"},
                            restarts=14))
    log = cluster.log(DRIVER, node, CTR, lines)
    return analyse(cluster, tmp=tmp_path), log


def test_microk8s_host_with_its_own_driver(tmp_path: Path) -> None:
    report, log = _analyze(tmp_path, "gpu-a", _in_use("450.80.02", "5.4.0-1034-aws"))
    found = of_rule(report, "OP012")
    assert sorted(found) == ["OP012:gpu-a"]
    finding = found["OP012:gpu-a"]
    assert finding.caused_by == []
    assert "cannot unload the loaded module ('driver is in use')" in finding.summary
    assert (log, 7) in [(e.path, e.line) for e in finding.evidence]
    op001 = of_rule(report, "OP001")["OP001:gpu-a"]
    assert op001.caused_by == ["OP012:gpu-a"]
    assert "(see OP012)" in op001.summary


def test_fabricmanager_package_pulled_in_the_driver(tmp_path: Path) -> None:
    report, _ = _analyze(tmp_path, "gpu-b", _in_use("460.32.03", "4.15.0-136-generic"))
    assert sorted(of_rule(report, "OP012")) == ["OP012:gpu-b"]
    assert of_rule(report, "OP001")["OP001:gpu-b"].caused_by == ["OP012:gpu-b"]


def test_quiet_when_the_host_has_no_driver_loaded(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.files["nodes/gpu-a/host/modules.txt"] = "i2c_core 106496 0 - Live 0x0\n"
    cluster.put(operand_pod(DRIVER, "gpu-a", mains={CTR: "waiting:CrashLoopBackOff"}))
    cluster.log(DRIVER, "gpu-a", CTR, _in_use("450.80.02", "5.4.0-1034-aws"))
    assert of_rule(analyse(cluster, tmp=tmp_path), "OP012") == {}
