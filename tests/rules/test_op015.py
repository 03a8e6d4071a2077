"""OP015: the driver container cannot build or load its module on this OS.

Wordings from public threads (sources also in signatures.toml):
- no kernel-devel for an OpenShift 4.7 kernel (dnf): https://github.com/NVIDIA/gpu-operator/issues/190;
- the build tree missing on Ubuntu 22.04 (make): https://github.com/NVIDIA/gpu-operator/issues/583;
- SELinux Enforcing on RHEL 8 refusing the module:
  https://github.com/NVIDIA/gpu-operator/issues/553.
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse, paths, status
from kit import findings as of_rule
from kit.cluster import Cluster, operand_pod

DRIVER = "nvidia-driver-daemonset"
CTR = "nvidia-driver-ctr"
CRASHING = {CTR: "waiting:CrashLoopBackOff"}


def _broken(cluster: Cluster, node: str, lines: list[str]) -> str:
    cluster.put(operand_pod(DRIVER, node, mains=CRASHING, restarts=9))
    return cluster.log(DRIVER, node, CTR, lines)


def test_kernel_devel_missing_on_rhcos(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.nodes["gpu-a"]["status"]["nodeInfo"].update(
        kernelVersion="4.18.0-240.22.1.el8_3.x86_64",
        osImage="Red Hat Enterprise Linux CoreOS 47.83.202105041523-0 (Ootpa)")
    log = _broken(cluster, "gpu-a", [
        "Installing Linux kernel headers...",
        "+ dnf -q -y --releasever=8.2 install kernel-headers-4.18.0-240.22.1.el8_3.x86_64 "
        "kernel-devel-4.18.0-240.22.1.el8_3.x86_64",
        "Error: Unable to find a match: kernel-devel-4.18.0-240.22.1.el8_3.x86_64",
    ])
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP015")
    assert sorted(found) == ["OP015:gpu-a"]
    finding = found["OP015:gpu-a"]
    assert finding.severity.value == "high"
    assert finding.nodes == ["gpu-a"]
    assert finding.summary == (
        "On gpu-a, the driver container cannot install the driver: the headers to build the "
        "module for kernel 4.18.0-240.22.1.el8_3.x86_64 (Red Hat Enterprise Linux CoreOS "
        "47.83.202105041523-0 (Ootpa)) are not available to it.")
    assert paths(finding) == [(log, 3)]
    # and the driver container's crash loop, Kubernetes' record of it
    assert finding.causes == ["CMP007:gpu-operator/nvidia-driver-daemonset", "OP001:gpu-a"]
    assert "driver.usePrecompiled=true" in finding.remediation


def test_build_tree_missing(tmp_path: Path) -> None:
    cluster = Cluster()
    log = _broken(cluster, "gpu-b", [
        "make[1]: *** /lib/modules/5.15.0-60-generic/build: No such file or directory.  Stop."])
    finding = of_rule(analyse(cluster, tmp=tmp_path), "OP015")["OP015:gpu-b"]
    assert "for kernel 5.15.0-100-generic (Ubuntu 22.04.5 LTS)" in finding.summary
    assert paths(finding) == [(log, 1)]


def test_selinux_enforcing_denies_the_module(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.files["nodes/gpu-a/host/selinux.txt"] = "Enforcing\n"
    cluster.files["nodes/gpu-b/host/selinux.txt"] = "Permissive\n"
    log = _broken(cluster, "gpu-a", [
        "Loading NVIDIA driver kernel modules...",
        "modprobe: ERROR: could not insert 'nvidia': Permission denied"])
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP015")
    assert sorted(found) == ["OP015:gpu-a"]
    finding = found["OP015:gpu-a"]
    assert "SELinux (Enforcing) denies loading the built module" in finding.summary
    assert paths(finding) == [(log, 2), ("nodes/gpu-a/host/selinux.txt", 1)]
    assert "ausearch -m avc" in finding.remediation


def test_denied_without_selinux_state_says_so(tmp_path: Path) -> None:
    cluster = Cluster()
    _broken(cluster, "gpu-a", ["modprobe: ERROR: could not insert 'nvidia': Permission denied"])
    finding = of_rule(analyse(cluster, tmp=tmp_path), "OP015")["OP015:gpu-a"]
    assert "loading the built module is denied (SELinux state not collected)" in finding.summary


def test_quiet_on_secure_boot_refusals_and_healthy_drivers(tmp_path: Path) -> None:
    """Secure Boot's 'Operation not permitted' is DRV004's, not a build problem."""
    cluster = Cluster()
    cluster.files["nodes/gpu-a/host/selinux.txt"] = "Enforcing\n"
    _broken(cluster, "gpu-a", ["modprobe: ERROR: could not insert 'nvidia': "
                               "Operation not permitted"])
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP015") == {}
    assert status(report, "OP015").value == "passed"
