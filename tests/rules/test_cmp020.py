"""CMP020: the driver container's first failing build or install step, where no specific
rule (OP010, OP015, DRV004) names the failure; OP001's driver stage hangs under it."""

from __future__ import annotations

from pathlib import Path

import pytest
from kit import analyse, status
from kit import findings as of_rule
from kit.cluster import Cluster, operand_pod, pod_name

from analyzers.results.models import RuleStatus

DRIVER = "nvidia-driver-daemonset"
CTR = "nvidia-driver-ctr"
# Driver 450 compiled on a Rocky Linux 8.4 kernel: https://github.com/NVIDIA/gpu-operator/issues/264
GCC = ("/usr/src/nvidia-450.80.02/kernel/nvidia-drm/nvidia-drm-gem-user-memory.c:63:48: error: "
       "passing argument 1 of 'drm_prime_pages_to_sg' from incompatible pointer type "
       "[-Werror=incompatible-pointer-types]")
COMPILE_LOG = ["Installing Linux kernel module files...",
               "Generating Linux kernel version string for 4.18.0-305.19.1.el8_4.x86_64...",
               "Compiling NVIDIA driver kernel modules...", GCC,
               "Stopping NVIDIA persistence daemon..."]
# apt without DNS, the container dying before its own message:
# https://github.com/NVIDIA/gpu-operator/issues/1244
FETCH_LOG = ["Updating the package cache...",
             "Ign:1 http://archive.ubuntu.com/ubuntu noble InRelease",
             "Err:2 http://security.ubuntu.com/ubuntu noble-security InRelease",
             "  Temporary failure resolving 'security.ubuntu.com'"]
# The Ubuntu driver installer traced with set -x, no headers for the kernel:
# https://github.com/GoogleCloudPlatform/container-engine-accelerators/issues/140
HEADERS_LOG = ["+ apt-get install -y linux-headers-5.3.0-1029-gcp",
               "E: Unable to locate package linux-headers-5.3.0-1029-gcp"]


def _failing(lines: list[str], node: str = "gpu-a", *, state: str = "waiting:CrashLoopBackOff",
             restarts: int = 7) -> Cluster:
    cluster = Cluster()
    cluster.put(operand_pod(DRIVER, node, mains={CTR: state}, restarts=restarts))
    cluster.log(DRIVER, node, CTR, lines, previous=True)
    return cluster


def test_a_compile_error_is_quoted_with_its_step_and_explains_the_driver_stage(
        tmp_path: Path) -> None:
    report = analyse(_failing(COMPILE_LOG), tmp=tmp_path)
    found = of_rule(report, "CMP020")
    assert sorted(found) == ["CMP020:gpu-a"]
    cmp = found["CMP020:gpu-a"]
    path = f"logs/gpu-operator/{pod_name(DRIVER, 'gpu-a')}/{CTR}.previous.log"
    assert cmp.summary == (
        f"On gpu-a, the driver container of {pod_name(DRIVER, 'gpu-a')} (CrashLoopBackOff) "
        f"fails: the first error of its previous instance's log is '{GCC}' ({path} line 4), "
        "in the step 'Compiling NVIDIA driver kernel modules...'. That means the NVIDIA "
        "kernel module does not compile against the node's kernel (a driver release older "
        "than the kernel's API, or a compiler other than the kernel's).")
    assert [(e.path, e.line) for e in cmp.evidence] == [(path, 3), (path, 4)]
    # the driver container's crash loop (CMP007) hangs under it, beside OP001
    assert cmp.causes == ["CMP007:gpu-operator/nvidia-driver-daemonset", "OP001:gpu-a"]
    assert cmp.remediation.splitlines()[0] == (
        f"kubectl -n gpu-operator logs {pod_name(DRIVER, 'gpu-a')} -c {CTR} --previous "
        "--tail=200")
    op = of_rule(report, "OP001")["OP001:gpu-a"]
    assert op.caused_by == ["CMP020:gpu-a"]
    assert "(see CMP020)" in op.summary
    assert "Ask next" not in op.summary and "No known cause" not in op.summary


@pytest.mark.parametrize(("lines", "meaning"), [
    (FETCH_LOG, "the package manager cannot reach or fetch from its repositories"),
    (HEADERS_LOG, "the headers or build tree of the node's running kernel cannot be installed"),
])
def test_the_kind_of_step_is_named(tmp_path: Path, lines: list[str], meaning: str) -> None:
    cmp = of_rule(analyse(_failing(lines), tmp=tmp_path), "CMP020")["CMP020:gpu-a"]
    assert f"That means {meaning}" in cmp.summary


def test_silent_where_a_specific_rule_names_the_failure(tmp_path: Path) -> None:
    # the driver script's own message after apt failed: OP010's wording
    # (https://github.com/NVIDIA/gpu-driver-container/blob/06a208ca9747c82b1ba99b76ecdcf2469b0a0207/ubuntu22.04/nvidia-driver#L43)
    lines = [*FETCH_LOG, "ERROR: Failed to update package cache.  Ensure that the cluster can "
                         "access the proper networks."]
    report = analyse(_failing(lines), tmp=tmp_path)
    assert of_rule(report, "CMP020") == {}
    assert status(report, "CMP020") is RuleStatus.PASSED
    assert "OP010:gpu-a" in of_rule(report, "OP010")
    assert of_rule(report, "OP001")["OP001:gpu-a"].caused_by[0] == "OP010:gpu-a"


def test_silent_on_a_healthy_driver_pod_whatever_its_log_says(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.log(DRIVER, "gpu-a", CTR, COMPILE_LOG)
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "CMP020") == {}
    assert of_rule(report, "OP001") == {}


def test_a_failing_driver_pod_without_an_error_line_is_left_to_op001(tmp_path: Path) -> None:
    report = analyse(_failing(["Stopping NVIDIA persistence daemon...",
                       "Unloading NVIDIA driver kernel modules..."]), tmp=tmp_path)
    assert of_rule(report, "CMP020") == {}
    op = of_rule(report, "OP001")["OP001:gpu-a"]
    assert op.caused_by == []
    assert "Ask next for the output of:" in op.summary
