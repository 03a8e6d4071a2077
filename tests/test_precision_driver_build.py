"""Issue 25, case 6: OP010 said "the driver container cannot match the node's kernel"
whatever the driver container's log named. It now quotes the error the log names and
claims a kernel mismatch only where versions show one.

Wordings (driver container logs and kernel/installer messages from public threads):
- a signature refusal with Secure Boot off: the installer's load error with the errno
  text ``Key was rejected by service`` (the installer's ``Kernel module load error:``
  form, https://github.com/NVIDIA/gpu-operator/issues/1142; the nvidia module refused for
  its key under ``module.sig_enforce=1``, https://github.com/secureblue/secureblue/issues/1043),
  and insmod's ``Operation not permitted`` under lockdown
  (https://github.com/linux-apfs/linux-apfs-rw/issues/80);
- the installer's own error before its generic hint:
  ``ERROR: Unable to open 'kernel/dkms.conf' for copying (No such file or directory)``,
  https://github.com/NVIDIA/gpu-operator/issues/206;
- a compiler mismatch: ``make[2]: *** [cc_version_check] Error 1``,
  https://github.com/NVIDIA/gpu-operator/issues/18, and the kernel's kbuild warning
  ``The kernel was built by: ...`` / ``You are using: ...`` (quoted in many public module
  builds, e.g. https://github.com/clearlinux/distribution/issues/2069 for the versions);
- a real kernel mismatch: ``Could not resolve Linux kernel version``,
  https://github.com/NVIDIA/gpu-operator/issues/227.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kit import analyse
from kit import findings as of_rule
from kit.cluster import Cluster, operand_pod

from analyzers.results.models import Finding

GENERIC = ("ERROR: Unable to load the kernel module 'nvidia.ko'.  This happens most frequently "
           "when this kernel module was built against the wrong or improperly configured "
           "kernel sources, with a version of gcc that differs from the one used to build the "
           "target kernel, or if another driver, such as nouveau, is present and prevents the "
           "NVIDIA kernel module from obtaining ownership of the NVIDIA GPU(s), or no NVIDIA "
           "GPU installed in this system is supported by this NVIDIA Linux graphics driver "
           "release.")
FAILED = ("ERROR: Installation has failed.  Please see the file '/var/log/nvidia-installer.log' "
          "for details.  You may find suggestions on fixing installation problems in the "
          "README available on the Linux driver download page at www.nvidia.com.")
KEY_REJECTED = [
    "Starting installation of NVIDIA driver version 535.161.07 for Linux kernel version "
    "6.8.0-36-generic",
    GENERIC,
    "-> Kernel module load error: Key was rejected by service",
    FAILED,
]
INSMOD_LOCKDOWN = [
    "insmod: ERROR: could not insert module nvidia.ko: Operation not permitted",
    GENERIC,
    FAILED,
]
DKMS_CONF = [
    "WARNING: The nvidia-drm module will not be installed. As a result, DRM-KMS will not "
    "function with this installation of the NVIDIA driver.",
    "ERROR: Unable to open 'kernel/dkms.conf' for copying (No such file or directory)",
    GENERIC,
    "Please see the log entries 'Kernel module load error' and 'Kernel messages' at the end "
    "of the file '/var/log/nvidia-installer.log' for more information.",
    FAILED,
]
CC_CHECK = [
    "Compiling NVIDIA driver kernel modules...",
    "make[2]: *** [cc_version_check] Error 1",
    "make[2]: *** Waiting for unfinished jobs....",
    "make[1]: *** [_module_/usr/src/nvidia-418.40.04/kernel] Error 2",
    "make: *** [modules] Error 2",
]
KBUILD_DIFFERENT = [
    "warning: the compiler differs from the one used to build the kernel",
    "  The kernel was built by: x86_64-linux-gnu-gcc-12 (Ubuntu 12.3.0-1ubuntu1~22.04) 12.3.0",
    "  You are using:           gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0",
    GENERIC,
]
KBUILD_SAME = [
    "warning: the compiler differs from the one used to build the kernel",
    "  The kernel was built by: x86_64-linux-gnu-gcc-12 (Ubuntu 12.3.0-1ubuntu1~22.04) 12.3.0",
    "  You are using:           gcc-12 (Ubuntu 12.3.0-1ubuntu1~22.04) 12.3.0",
    GENERIC,
]
HEADERS = [
    "Resolving Linux kernel version...",
    "Could not resolve Linux kernel version",
    "Stopping NVIDIA persistence daemon...",
]


def _op010(tmp_path: Path, log: list[str], secure_boot: str | None = None) -> Finding:
    cluster = Cluster(gpu_nodes=("gpu-k",))
    cluster.put(operand_pod("nvidia-driver-daemonset", "gpu-k",
                            mains={"nvidia-driver-ctr": "waiting:CrashLoopBackOff"}, restarts=9))
    cluster.log("nvidia-driver-daemonset", "gpu-k", "nvidia-driver-ctr", log, previous=True)
    if secure_boot is not None:
        cluster.files["nodes/gpu-k/host/secureboot.txt"] = f"SecureBoot {secure_boot}\n"
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "DRV004") == {}
    found = of_rule(report, "OP010")
    assert sorted(found) == ["OP010:gpu-k"]
    return found["OP010:gpu-k"]


@pytest.mark.parametrize("log,quoted", [
    (KEY_REJECTED, "Key was rejected by service"),
    (INSMOD_LOCKDOWN, "could not insert module nvidia.ko: Operation not permitted"),
], ids=["key-rejected", "insmod-eperm"])
def test_signature_refusal_with_secure_boot_off(tmp_path: Path, log: list[str],
                                                quoted: str) -> None:
    finding = _op010(tmp_path, log, secure_boot="disabled")
    assert "the kernel refused the module for its signature" in finding.summary
    assert quoted in finding.summary
    assert "Secure Boot is off" in finding.summary
    assert "for kernel 5.15.0-100-generic" not in finding.summary
    assert "module.sig_enforce" in finding.remediation
    assert finding.evidence[-1].path.endswith("nvidia-driver-ctr.previous.log") or any(
        quoted in e.excerpt for e in finding.evidence)


def test_dkms_error_named_before_the_generic_hint(tmp_path: Path) -> None:
    finding = _op010(tmp_path, DKMS_CONF)
    assert ("the module's DKMS build or configuration failed: 'ERROR: Unable to open "
            "'kernel/dkms.conf' for copying") in finding.summary
    assert "kernel 5.15.0-100-generic" not in finding.summary
    assert any("dkms.conf" in e.excerpt and e.line == 2 for e in finding.evidence)


def test_compiler_versions_that_differ(tmp_path: Path) -> None:
    finding = _op010(tmp_path, KBUILD_DIFFERENT)
    assert ("compiled with gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, the kernel was built "
            "with x86_64-linux-gnu-gcc-12 (Ubuntu 12.3.0-1ubuntu1~22.04) 12.3.0") \
        in finding.summary
    assert [e.line for e in finding.evidence if e.path.endswith(".log")][:2] == [2, 3]


def test_compiler_check_error(tmp_path: Path) -> None:
    finding = _op010(tmp_path, CC_CHECK)
    assert "stopped at its compiler version check: 'make[2]: *** [cc_version_check] Error 1'" \
        in finding.summary


def test_same_compiler_under_another_name_is_not_a_mismatch(tmp_path: Path) -> None:
    finding = _op010(tmp_path, KBUILD_SAME)
    assert "compilers differ" not in finding.summary
    assert "the log names no more specific error" in finding.summary
    assert "kernel 5.15.0-100-generic" not in finding.summary


def test_a_real_kernel_mismatch_is_still_claimed(tmp_path: Path) -> None:
    finding = _op010(tmp_path, HEADERS)
    assert ("finds no kernel packages for the node's kernel 5.15.0-100-generic: 'Could not "
            "resolve Linux kernel version'") in finding.summary
