"""What the analyzer must find in the node, kernel and driver-life-cycle samples
(``samples/scenarios_node.py``, described in samples/README.md).

Each sample is run through the real analyzer (``open_bundle`` and ``analyze`` with
every discovered rule). For each sample the test pins:

- the exact set of findings at medium severity or above (rule, subject with node and
  GPU bus id, severity): the diagnosis, with nothing missing and nothing invented;
- the Xid numbers, GPU and evidence that make the diagnosis;
- the chain: which finding is the root cause (no ``caused_by``) and what hangs under it.

Where a rule does not deliver what rule-catalog.md promises on a sample, the
expectation stays as written and is marked ``xfail(strict=True)`` with the reason, so
it turns into a failure the day the rule is fixed and the marker must go.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.facts import Facts
from analyzers.facts.scheduling import Branch
from analyzers.results.models import Finding, Report
from bundle import open_bundle

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@functools.cache
def report(sample: str) -> Report:
    return analyze(open_bundle(SAMPLES / sample), discover().rules)


@functools.cache
def facts(sample: str) -> Facts:
    return Facts(open_bundle(SAMPLES / sample))


def finding(sample: str, finding_id: str) -> Finding:
    found = {f.id: f for f in report(sample).findings}
    assert finding_id in found, f"{finding_id} not among {sorted(found)}"
    return found[finding_id]


def of_rule(sample: str, *rules: str) -> list[Finding]:
    return [f for f in report(sample).findings if f.rule_id in rules]


def ancestors(sample: str, finding_id: str) -> set[str]:
    """Every finding reachable upwards through ``caused_by``."""
    by_id = {f.id: f for f in report(sample).findings}
    seen: set[str] = set()
    todo = list(by_id[finding_id].caused_by)
    while todo:
        current = todo.pop()
        if current in seen or current not in by_id:
            continue
        seen.add(current)
        todo.extend(by_id[current].caused_by)
    return seen


def cited(f: Finding, path_end: str, text: str) -> bool:
    """Some evidence of ``f`` is in a file ending with ``path_end`` and quotes ``text``."""
    return any(e.path.endswith(path_end) and text in e.excerpt for e in f.evidence)


# ------------------------------------------------------------ every serious finding

HGX_BUSES = ("17", "31", "4b", "65", "97", "b1", "ca", "e3")

EXPECTED: dict[str, dict[str, str]] = {
    "xid79-fallen-off-bus": {
        "DRV002:hgx-1/0000:ca:00.0": "critical",
        "DRV001:hgx-1/0000:ca:00.0": "critical",
        "OP008:hgx-1": "high",
        "SC001:llm/pretrain-13b-0": "high",
    },
    "app-xids-only": {},
    "h100-ecc-row-remap": {
        "DRV006:hgx-1/0000:4b:00.0": "high",
        "DRV001:hgx-1/0000:4b:00.0": "medium",
        "DRV006:hgx-1/0000:b1:00.0": "high",
        "DRV001:hgx-1/0000:b1:00.0": "high",
        "OP008:hgx-1": "high",
    },
    "nouveau-loaded": {
        "DRV003:gpu-2": "critical",
        "OP001:gpu-2": "high",
        "OP008:gpu-2": "high",
        "OP006:cluster-policy": "high",
        # the toolkit and the device plugin never ran after the reboot: no CDI spec
        "RT006:gpu-2": "high",
    },
    "secureboot-dkms-refused": {
        "CMP007:gpu-operator/nvidia-driver-daemonset": "high",
        "DRV004:gpu-2": "critical",
        "DRV003:gpu-2": "critical",
        "OP001:gpu-2": "high",
        "OP008:gpu-2": "high",
        "OP006:cluster-policy": "high",
        "RT006:gpu-2": "high",
    },
    "hgx-no-fabricmanager": {
        # the validators' failing cuda-validation init containers, under OP005
        "CMP006:gpu-operator/nvidia-cuda-validator": "high",
        "CMP006:gpu-operator/nvidia-operator-validator": "high",
        "OP005:hgx-1": "critical",
        "OP001:hgx-1": "high",
        "OP006:cluster-policy": "high",
        # every GPU reports the fabric 'In Progress'
        **{f"DRV006:hgx-1/0000:{bus}:00.0": "high" for bus in HGX_BUSES},
    },
    "driver-upgrade-failed": {
        "CMP004:gpu-operator/nvidia-driver-daemonset-6.8.0-90-generic-ubuntu24.04": "high",
        "OP007:gpu-1": "high",
        "OP010:gpu-2": "critical",
        "OP001:gpu-2": "high",
        "OP008:gpu-2": "high",
        "OP006:cluster-policy": "high",
        "RT006:gpu-2": "high",
        # no driver pod ran since the reboot, so no nvidia module either
        "DRV003:gpu-2": "critical",
        # unattended-upgrades on driver-container nodes, and the kernels now differ
        "DRV005:gpu-1": "medium",
        "DRV005:gpu-2": "medium",
        "DRV005:kernels/ubuntu24.04": "medium",
    },
}


@pytest.mark.parametrize("sample", sorted(EXPECTED))
def test_serious_findings_are_exactly_the_diagnosis(sample: str) -> None:
    got = {f.id: f.severity.value for f in report(sample).findings if f.severity.rank >= 2}
    assert got == EXPECTED[sample]


@pytest.mark.parametrize("sample", sorted(EXPECTED))
def test_no_rule_errors(sample: str) -> None:
    errors = [(r.rule_id, r.reason) for r in report(sample).rules if r.status.value == "error"]
    assert errors == []


# ------------------------------------------------------------- xid79-fallen-off-bus

LOST = "hgx-1/0000:ca:00.0"


def test_xid79_gpu_lost_is_the_root() -> None:
    drv002 = finding("xid79-fallen-off-bus", f"DRV002:{LOST}")
    assert drv002.caused_by == [] and drv002.nodes == ["hgx-1"]
    assert "fell off the bus" in drv002.summary and "Xid 79" in drv002.summary
    assert "missing from nvidia-smi" in drv002.summary
    assert cited(drv002, "hgx-1/dmesg.txt", "NVRM: Xid (PCI:0000:ca:00): 79")
    assert cited(drv002, "hgx-1/dmesg.txt", "AER: Uncorrected (Fatal) error message received "
                                            "from 0000:ca:00.0")
    assert f"DRV001:{LOST}" in drv002.causes


def test_xid79_xid_event_hangs_under_the_loss() -> None:
    drv001 = finding("xid79-fallen-off-bus", f"DRV001:{LOST}")
    assert drv001.caused_by == [f"DRV002:{LOST}"]
    assert "Xid 79 (GPU fell off the bus) x1" in drv001.summary
    assert "capacity 8, allocatable 7" in drv001.summary
    assert "marked" in drv001.summary and "unhealthy after Xid 79" in drv001.summary
    # only the lost GPU has Xid events
    assert [f.id for f in of_rule("xid79-fallen-off-bus", "DRV001", "DRV002", "DRV006")] \
        == [f"DRV001:{LOST}", f"DRV002:{LOST}"]


def test_xid79_unhealthy_branch_and_plugin_hang_under_the_loss() -> None:
    verdict = facts("xid79-fallen-off-bus").gate_verdicts[("llm", "pretrain-13b-0")]
    result = next(r for r in verdict.resources if r.resource == "nvidia.com/gpu")
    assert result.branch is Branch.UNHEALTHY and result.culprits == ("hgx-1",)
    assert {row.node: (row.capacity, row.allocatable, row.assigned) for row in result.rows} \
        == {"hgx-1": (8, 7, 0)}
    sc001 = finding("xid79-fallen-off-bus", "SC001:llm/pretrain-13b-0")
    assert sc001.nodes == ["hgx-1"] and "unhealthy" in sc001.summary
    assert f"DRV002:{LOST}" in sc001.caused_by
    op008 = finding("xid79-fallen-off-bus", "OP008:hgx-1")
    assert f"DRV002:{LOST}" in ancestors("xid79-fallen-off-bus", op008.id)
    assert "marked 1 GPU(s) unhealthy" in op008.summary


# -------------------------------------------------------------------- app-xids-only


def test_app_xids_are_information_not_a_hardware_fault() -> None:
    found = of_rule("app-xids-only", "DRV001", "DRV002", "DRV006")
    assert [f.id for f in found] == ["DRV001:gpu-1/0000:31:00.0"]
    drv001 = found[0]
    assert drv001.severity.value == "info" and drv001.caused_by == [] and drv001.causes == []
    assert "application Xids: Xid 13 (Graphics/SM exception) x3, Xid 43 (Channel reset after " \
           "a fault) x1" in drv001.summary
    assert "hardware/driver Xids" not in drv001.summary
    assert "not a hardware fault" in drv001.summary
    assert not of_rule("app-xids-only", "OP008", "SC001", "SC005")
    count = facts("app-xids-only").accounting["gpu-1"].count()
    assert (count.capacity, count.allocatable) == (4, 4)


# -------------------------------------------------------------- h100-ecc-row-remap

REMAP = "hgx-1/0000:4b:00.0"
RESET = "hgx-1/0000:b1:00.0"


def test_h100_contained_error_and_pending_remap() -> None:
    drv006 = finding("h100-ecc-row-remap", f"DRV006:{REMAP}")
    assert drv006.caused_by == [] and drv006.causes == [f"DRV001:{REMAP}"]
    assert "NVIDIA H100 80GB HBM3" in drv006.summary
    assert "row remapping pending" in drv006.summary and "dram_uncorrectable 1" in drv006.summary
    assert cited(drv006, "hgx-1/nvidia-smi.xml", "<remapped_row_pending>Yes")
    drv001 = finding("h100-ecc-row-remap", f"DRV001:{REMAP}")
    assert drv001.caused_by == [f"DRV006:{REMAP}"]
    assert "Xid 63 (Row remap / page retirement recorded) x1" in drv001.summary
    assert "Xid 94 (Memory error confined to one app) x1" in drv001.summary
    assert "Lead: Xid 94" in drv001.summary


def test_h100_uncontained_error_needs_a_reset() -> None:
    drv006 = finding("h100-ecc-row-remap", f"DRV006:{RESET}")
    assert drv006.caused_by == [] and drv006.causes == [f"DRV001:{RESET}"]
    assert "reset_required: Yes" in drv006.summary
    drv001 = finding("h100-ecc-row-remap", f"DRV001:{RESET}")
    assert drv001.caused_by == [f"DRV006:{RESET}"]
    assert "Xid 95 (Memory error not confined) x1" in drv001.summary
    assert "RESET_GPU" in drv001.summary


def test_h100_plugin_withdrew_both_gpus() -> None:
    op008 = finding("h100-ecc-row-remap", "OP008:hgx-1")
    assert "marked 2 GPU(s) unhealthy" in op008.summary
    assert {f"DRV006:{REMAP}", f"DRV006:{RESET}"} <= ancestors("h100-ecc-row-remap", op008.id)
    count = facts("h100-ecc-row-remap").accounting["hgx-1"].count()
    assert (count.capacity, count.allocatable) == (8, 6)
    assert not of_rule("h100-ecc-row-remap", "DRV002", "OP005")


# ------------------------------------------------------------------ nouveau-loaded


def test_nouveau_owns_the_gpus_and_nvidia_is_not_loaded() -> None:
    drv003 = finding("nouveau-loaded", "DRV003:gpu-2")
    assert drv003.caused_by == [] and drv003.nodes == ["gpu-2"]
    assert "nouveau holds the GPU" in drv003.summary
    assert "the nvidia kernel module is not loaded" in drv003.summary
    assert cited(drv003, "gpu-2/host/modules.txt", "nouveau ")
    assert cited(drv003, "gpu-2/dmesg.txt", "nouveau 0000:17:00.0")
    assert not [f for f in report("nouveau-loaded").findings
                if f.rule_id.startswith(("DRV", "OP")) and "gpu-1" in f.nodes]


def test_nouveau_operands_wait_at_the_driver_stage() -> None:
    op001 = finding("nouveau-loaded", "OP001:gpu-2")
    assert "stops at the driver stage" in op001.summary
    assert cited(op001, "driver-validation.log", "NVIDIA-SMI has failed")


def test_nouveau_operands_hang_under_the_driver_finding() -> None:
    for fid in ("OP001:gpu-2", "OP008:gpu-2", "RT006:gpu-2"):
        assert "DRV003:gpu-2" in ancestors("nouveau-loaded", fid), fid


# --------------------------------------------------------- secureboot-dkms-refused


def test_secure_boot_refusal_is_the_root_of_the_missing_module() -> None:
    drv004 = finding("secureboot-dkms-refused", "DRV004:gpu-2")
    assert drv004.caused_by == []
    assert drv004.causes == ["CMP007:gpu-operator/nvidia-driver-daemonset", "DRV003:gpu-2",
                             "OP001:gpu-2", "RT006:gpu-2"]
    assert drv004.severity.value == "critical"
    assert "the kernel refused to load an unsigned module" in drv004.summary
    assert "builds it on the node, unsigned" in drv004.summary
    assert cited(drv004, "gpu-2/host/secureboot.txt", "SecureBoot enabled")
    assert cited(drv004, "gpu-2/dmesg.txt", "Lockdown: modprobe: unsigned module loading is "
                                            "restricted")
    drv003 = finding("secureboot-dkms-refused", "DRV003:gpu-2")
    assert drv003.caused_by == ["DRV004:gpu-2"]
    assert "not loaded" in drv003.summary


def test_secure_boot_off_node_with_the_same_unsigned_module_is_fine() -> None:
    """gpu-1 logs 'module verification failed' but Secure Boot is off: no finding."""
    dmesg = (SAMPLES / "secureboot-dkms-refused/nodes/gpu-1/dmesg.txt").read_text()
    assert "module verification failed" in dmesg
    assert not [f for f in report("secureboot-dkms-refused").findings
                if f.rule_id.startswith(("DRV", "OP")) and "gpu-1" in f.nodes]


def test_secure_boot_driver_pod_crash_loops_at_the_driver_stage() -> None:
    op001 = finding("secureboot-dkms-refused", "OP001:gpu-2")
    assert "stops at the driver stage" in op001.summary and "CrashLoopBackOff" in op001.summary
    assert not of_rule("secureboot-dkms-refused", "OP010")


def test_secure_boot_operands_hang_under_the_refusal() -> None:
    for fid in ("OP001:gpu-2", "OP008:gpu-2"):
        assert "DRV004:gpu-2" in ancestors("secureboot-dkms-refused", fid), fid


# ----------------------------------------------------------- hgx-no-fabricmanager


def test_hgx_fabric_manager_missing_is_the_root() -> None:
    op005 = finding("hgx-no-fabricmanager", "OP005:hgx-1")
    assert op005.caused_by == []
    assert "OP001:hgx-1" in op005.causes
    assert sorted(c for c in op005.causes if c.startswith("CMP")) == [
        "CMP006:gpu-operator/nvidia-cuda-validator",
        "CMP006:gpu-operator/nvidia-operator-validator"]
    assert sorted(c for c in op005.causes
                  if c != "OP001:hgx-1" and not c.startswith("CMP")) == sorted(
        f.id for f in report("hgx-no-fabricmanager").findings if f.rule_id == "DRV006")
    assert "system not yet initialized" in op005.summary
    assert "8 of 8 GPU(s) not registered with the fabric (state In Progress)" in op005.summary
    assert "no nvidia-fabricmanager journal" in op005.summary
    assert cited(op005, "cuda-validation.log", "error code system not yet initialized")
    op001 = finding("hgx-no-fabricmanager", "OP001:hgx-1")
    assert op001.caused_by == ["OP005:hgx-1"]
    assert "stops at the cuda stage" in op001.summary


def test_hgx_fabric_state_is_read_per_gpu() -> None:
    for bus in HGX_BUSES:
        drv006 = finding("hgx-no-fabricmanager", f"DRV006:hgx-1/0000:{bus}:00.0")
        assert "fabric registration not complete (state In Progress)" in drv006.summary
    assert not of_rule("hgx-no-fabricmanager", "DRV001", "DRV002", "DRV003")


def test_hgx_fabric_state_hangs_under_fabric_manager() -> None:
    for bus in HGX_BUSES:
        fid = f"DRV006:hgx-1/0000:{bus}:00.0"
        assert "OP005:hgx-1" in ancestors("hgx-no-fabricmanager", fid), fid


# ----------------------------------------------------------- driver-upgrade-failed


def test_upgrade_failed_node_left_cordoned() -> None:
    op007 = finding("driver-upgrade-failed", "OP007:gpu-1")
    assert op007.nodes == ["gpu-1"] and op007.caused_by == []
    assert "nvidia.com/gpu-driver-upgrade-state=upgrade-failed" in op007.summary
    assert "still cordoned" in op007.summary
    assert [f.id for f in of_rule("driver-upgrade-failed", "OP007")] == ["OP007:gpu-1"]


def test_missing_precompiled_image_is_the_root_of_the_stuck_stack() -> None:
    op010 = finding("driver-upgrade-failed", "OP010:gpu-2")
    assert op010.caused_by == [] and op010.causes == [
        "CMP004:gpu-operator/nvidia-driver-daemonset-6.8.0-90-generic-ubuntu24.04",
        "DRV003:gpu-2", "OP001:gpu-2"]
    assert "nvcr.io/nvidia/driver:570-6.8.0-90-generic-ubuntu24.04 does not exist" \
        in op010.summary
    assert "precompiled tag for the node's kernel 6.8.0-90-generic" in op010.summary
    assert cited(op010, "gpu-2/host/uname.txt", "6.8.0-90-generic")
    op001 = finding("driver-upgrade-failed", "OP001:gpu-2")
    assert op001.caused_by == ["DRV003:gpu-2", "OP010:gpu-2"]
    assert "stops at the driver stage" in op001.summary and "ImagePullBackOff" in op001.summary
    assert "OP010:gpu-2" in ancestors("driver-upgrade-failed", "OP008:gpu-2")
    assert [f.id for f in of_rule("driver-upgrade-failed", "OP010")] == ["OP010:gpu-2"]


def test_missing_module_hangs_under_the_missing_image() -> None:
    assert "OP010:gpu-2" in ancestors("driver-upgrade-failed", "DRV003:gpu-2")
