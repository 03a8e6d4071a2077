"""OP015 on bundles built from real public threads its own tests do not use.

- OpenShift 4.7.21 after an update: dnf finds neither headers nor devel package for
  the new kernel, https://github.com/NVIDIA/gpu-operator/issues/234;
- RHEL 9 EUS worker nodes: the same refusal, the EUS AppStream repository not enabled,
  https://github.com/NVIDIA/gpu-driver-container/issues/793;
- RHCOS 4.6 (operator 1.8.2): a build prerequisite other than the headers,
  ``Unable to find a match: elfutils-libelf-devel.x86_64``, which the rule did not read
  before (signature ``driver-build-package-unavailable``),
  https://github.com/NVIDIA/gpu-operator/issues/338.
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse, paths
from kit import findings as of_rule
from kit.cluster import Cluster, operand_pod

from analyzers.results.models import Finding

DRIVER = "nvidia-driver-daemonset"
CTR = "nvidia-driver-ctr"


def _broken(tmp_path: Path, node: str, kernel: str, os_image: str, lines: list[str]
            ) -> tuple[dict[str, Finding], str]:
    cluster = Cluster()
    cluster.nodes[node]["status"]["nodeInfo"].update(kernelVersion=kernel, osImage=os_image)
    cluster.put(operand_pod(DRIVER, node, mains={CTR: "waiting:CrashLoopBackOff"},
                            restarts=11))
    log = cluster.log(DRIVER, node, CTR, lines)
    return of_rule(analyse(cluster, tmp=tmp_path), "OP015"), log


def test_ocp_update_without_headers(tmp_path: Path) -> None:
    kernel = "4.18.0-240.23.2.el8_3.x86_64"
    found, log = _broken(tmp_path, "gpu-a", kernel, "Red Hat Enterprise Linux CoreOS 47.83", [
        "Installing Linux kernel headers...",
        "+ echo 'Installing Linux kernel headers...'",
        f"+ dnf -q -y --releasever=8.3 install kernel-headers-{kernel} kernel-devel-{kernel}",
        f"Error: Unable to find a match: kernel-headers-{kernel} kernel-devel-{kernel}",
    ])
    assert sorted(found) == ["OP015:gpu-a"]
    finding = found["OP015:gpu-a"]
    assert f"the headers to build the module for kernel {kernel}" in finding.summary
    assert paths(finding) == [(log, 4)]
    # and the driver container's crash loop, Kubernetes' record of it (CMP007)
    assert finding.causes == ["CMP007:gpu-operator/nvidia-driver-daemonset", "OP001:gpu-a"]


def test_rhel9_eus_kernel(tmp_path: Path) -> None:
    kernel = "5.14.0-570.112.1.el9_6.x86_64"
    found, log = _broken(tmp_path, "gpu-b", kernel, "Red Hat Enterprise Linux 9.6 (Plow)", [
        f"+ dnf -q -y --releasever=9.6 install kernel-headers-{kernel} kernel-devel-{kernel}",
        f"Error: Unable to find a match: kernel-headers-{kernel} kernel-devel-{kernel}",
    ])
    assert sorted(found) == ["OP015:gpu-b"]
    assert paths(found["OP015:gpu-b"]) == [(log, 2)]


def test_build_prerequisite_missing_on_rhcos(tmp_path: Path) -> None:
    found, log = _broken(tmp_path, "gpu-a", "4.18.0-193.47.1.el8_2.x86_64",
                         "Red Hat Enterprise Linux CoreOS 46.82", [
                             "Proceeding with RHEL version 8.2",
                             "Error: Unable to find a match: elfutils-libelf-devel.x86_64",
                         ])
    assert sorted(found) == ["OP015:gpu-a"]
    finding = found["OP015:gpu-a"]
    assert ("a package it needs to build the module (elfutils-libelf-devel.x86_64) is not in "
            "the repositories it reaches") in finding.summary
    assert "headers" not in finding.summary
    assert paths(finding) == [(log, 2)]
    assert "driver.repoConfig" in finding.remediation


def test_quiet_on_a_driver_that_built(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod(DRIVER, "gpu-a"))
    cluster.log(DRIVER, "gpu-a", CTR, ["Installing Linux kernel headers...",
                                       "Compiling NVIDIA driver kernel modules...",
                                       "Done, now waiting for signal"])
    assert of_rule(analyse(cluster, tmp=tmp_path), "OP015") == {}
