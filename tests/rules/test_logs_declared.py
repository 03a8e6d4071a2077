"""DRV002, DRV003, DRV008 and OP003 read container logs, and now declare them (``LOGS``).

Each finds something from a container log alone (firing), says nothing on the same
bundle with a harmless log (quiet), and is named by BND001 among the rules a failed log
collection left without input. Logs stay an optional input for each: the kernel log
(DRV002, DRV003, DRV008) or the nodes list (OP003) is what they judge, so a bundle
without logs is still judged (passed), and one without that main input is skipped as
before, container logs or not.

Log wordings, as in the rule tests that first used them: NVML's "Unable to determine the
device handle ... GPU is lost" (tests/rules/test_drv001_drv002.py), "Failed to
initialize NVML: Driver/library version mismatch" (tests/rules/test_drv003_drv004.py),
the driver installer's "not supported by the" kernel lines
(https://github.com/ZaidQureshi/bam/issues/38, tests/rules/test_drv008.py), and the
operator's "NFD labels missing in the cluster, GPU nodes cannot be discovered"
(the operator's controllers/clusterpolicy_controller.go, as signatures.toml cites it:
https://github.com/NVIDIA/gpu-operator/blob/a22dbf671f2e26f9a1e342f8eea28e196235e110/controllers/clusterpolicy_controller.go).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kit import analyse
from kit import findings as of
from kit import verdict as status
from kit.bundles import kube_node
from kit.driver import bundle_files as drv_files
from kit.driver import gpu_node, smi_gpu, smi_xml
from kit.objects import pod

from analyzers.results.models import Report

NS = "gpu-operator"
QUIET_DMESG = "[    5.120000] nvidia: loading out-of-tree module taints kernel.\n"
HARMLESS = "2026-11-29T09:00:00Z all good\n"
FORBIDDEN = ('Error from server (Forbidden): pods "{pod}" is forbidden: User '
             '"system:serviceaccount:support:collector" cannot get resource "pods/log" in '
             'API group "" in the namespace "gpu-operator"')
SMI = smi_xml(smi_gpu("00000000:5E:00.0", "GPU-509665ad-b600-ac93-3616-d754b23d636d"))


class Case:
    """One rule: the pod whose log it reads, and the line it finds there."""

    def __init__(self, rule: str, subject: str, pod: dict[str, Any], container: str,
                 line: str, files: dict[str, Any], found_line: int = 1) -> None:
        self.rule, self.subject, self.pod, self.container = rule, subject, pod, container
        self.line, self.files, self.found_line = line, files, found_line

    @property
    def log(self) -> str:
        return f"logs/{NS}/{self.pod['metadata']['name']}/{self.container}.log"

    def report(self, tmp_path: Path, log: str | None, *, failed: bool = False,
               dmesg: bool = True) -> Report:
        files = dict(self.files)
        if not dmesg:
            files = {k: v for k, v in files.items() if not k.endswith("/dmesg.txt")}
        if log is not None:
            files[self.log] = log
        lost = [{"path": self.log, "error": FORBIDDEN.format(pod=self.pod["metadata"]["name"])}]
        return analyse(drv_files([gpu_node("gpu-a")], files, pods=[self.pod]),
                       tmp=tmp_path, failed=lost if failed else None)


CASES = [
    Case("DRV002", "DRV002:gpu-a/0000:5e:00.0",
         pod("nvidia-device-plugin-daemonset-aaaaa", "gpu-a",
             app="nvidia-device-plugin-daemonset"), "nvidia-device-plugin",
         "2026-11-29T09:00:05Z Unable to determine the device handle for GPU0000:5E:00.0: "
         "GPU is lost.  Reboot the system to recover this GPU\n",
         {"nodes/gpu-a/dmesg.txt": QUIET_DMESG, "nodes/gpu-a/nvidia-smi.xml": SMI}),
    Case("DRV003", "DRV003:gpu-a",
         pod("nvidia-operator-validator-x1", "gpu-a", app="nvidia-operator-validator"),
         "driver-validation", "Failed to initialize NVML: Driver/library version mismatch\n",
         {"nodes/gpu-a/dmesg.txt": QUIET_DMESG, "nodes/gpu-a/nvidia-smi.xml": SMI}),
    Case("DRV008", "DRV008:gpu-a",
         pod("nvidia-driver-daemonset-x1", "gpu-a", app="nvidia-driver-daemonset"),
         "nvidia-driver-ctr",
         "Kernel messages:\n"
         "[   73.757880] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:13b0)\n"
         "               NVRM: installed in this system is not supported by the\n",
         {"nodes/gpu-a/dmesg.txt": QUIET_DMESG}, found_line=3),
]


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
def test_fires_from_the_container_log_alone(tmp_path: Path, case: Case) -> None:
    report = case.report(tmp_path, case.line)
    found = of(report, case.rule)
    assert sorted(found) == [case.subject]
    assert (case.log, case.found_line) in [(e.path, e.line) for e in found[case.subject].evidence]
    assert status(report, case.rule) == ("failed", None)


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
def test_quiet_on_a_harmless_log(tmp_path: Path, case: Case) -> None:
    report = case.report(tmp_path, HARMLESS)
    assert of(report, case.rule) == {}
    assert status(report, case.rule) == ("passed", None)


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
def test_a_lost_log_names_the_rule_and_the_kernel_is_still_judged(tmp_path: Path,
                                                                  case: Case) -> None:
    report = case.report(tmp_path, None, failed=True)
    gaps = [f for f in report.findings if f.rule_id == "BND001"]
    assert len(gaps) == 1
    left = gaps[0].summary.split("Rules left without these inputs: ", 1)[1]
    assert case.rule in left.rstrip(".").split(", ")
    assert of(report, case.rule) == {}
    assert status(report, case.rule) == ("passed", None)


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
def test_skipped_without_dmesg_even_with_the_log(tmp_path: Path, case: Case) -> None:
    report = case.report(tmp_path, case.line, dmesg=False)
    assert of(report, case.rule) == {}
    assert status(report, case.rule) == ("skipped", "no node collected dmesg.txt")


# -- OP003: the operator's log is what makes it judge only in part ---------------------

OPERATOR = pod("gpu-operator-7d6f9c8b5d-2kq7x", "cp-1", app="gpu-operator")
OPERATOR_LOG = f"logs/{NS}/gpu-operator-7d6f9c8b5d-2kq7x/gpu-operator.log"
NFD_MISSING = ("2026-11-29T13:00:00.000000000Z INFO controllers.ClusterPolicy WARNING: NFD "
               "labels missing in the cluster, GPU nodes cannot be discovered.\n")
OP003_PARTIAL = ("judged in part: the operator finds no GPU node, but no node's files were "
                 "collected (host/lspci.txt, nvidia-smi.xml): whether worker-1 have GPUs is "
                 "not in the bundle")


def op003(tmp_path: Path, log: str | None, *, failed: bool = False) -> Report:
    """A must-gather-like bundle: no node files, one node without any GPU sign."""
    files: dict[str, Any] = {} if log is None else {OPERATOR_LOG: log}
    lost = [{"path": OPERATOR_LOG, "error": FORBIDDEN.format(pod="gpu-operator-7d6f9c8b5d-2kq7x")}]
    return analyse(drv_files([kube_node("worker-1", gpu_label=False)], files,
                  pods=[OPERATOR]), tmp=tmp_path, failed=lost if failed else None)


def test_op003_judges_in_part_from_the_operators_log(tmp_path: Path) -> None:
    report = op003(tmp_path, NFD_MISSING)
    assert of(report, "OP003") == {}
    assert status(report, "OP003") == ("partial", OP003_PARTIAL)


def test_op003_passes_on_a_harmless_operator_log(tmp_path: Path) -> None:
    report = op003(tmp_path, HARMLESS)
    assert of(report, "OP003") == {}
    assert status(report, "OP003") == ("passed", None)


def test_op003_is_named_when_the_operators_log_is_lost(tmp_path: Path) -> None:
    report = op003(tmp_path, None, failed=True)
    gaps = [f for f in report.findings if f.rule_id == "BND001"]
    assert len(gaps) == 1
    left = gaps[0].summary.split("Rules left without these inputs: ", 1)[1]
    assert "OP003" in left.rstrip(".").split(", ")
    assert status(report, "OP003") == ("passed", None)
