"""The samples of issue 27 whose only explanation is the generic layer (samples/README.md,
"Generic-layer samples"): the driver container's first failing step (CMP020), an OOM kill
the kernel's log records, a DaemonSet refused by Pod Security. Each pins the serious
findings, the chain, and the exact words the root section shows.

The component rules of issue 27 part A (CMP001-CMP010) add a finding per component and
cause: the OOM-killed exporter (CMP008, the root, OP001 under it) and the driver
container's crash loop (CMP007, under CMP020); OP017's refused device plugin explains
OP008 on the nodes it leaves without a plugin."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.results.models import Finding, Report
from bundle import Bundle, open_bundle

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
_OPENED: dict[str, Bundle] = {}

EXPECTED: dict[str, dict[str, str]] = {
    "driver-build-compile-error": {
        "CMP020:gpu-2": "high", "DRV003:gpu-2": "critical", "OP001:gpu-2": "high",
        "OP008:gpu-2": "high", "RT006:gpu-2": "high", "OP006:cluster-policy": "high",
        "DRV005:kernels/ubuntu24.04": "medium",
        "CMP007:gpu-operator/nvidia-driver-daemonset": "high",
    },
    "exporter-oomkilled": {"OP001:gpu-2": "medium", "OP006:cluster-policy": "high",
                           "CMP008:gpu-operator/nvidia-dcgm-exporter": "medium",
                           # the known failure behind it: the chart's memory limit too low
                           "KI001:KI-DCGM-003/gpu-operator/nvidia-dcgm-exporter": "high"},
    "plugin-daemonset-refused": {
        "OP017:nvidia-device-plugin/nvdp-nvidia-device-plugin": "high",
        "OP008:gpu-1": "high", "OP008:gpu-2": "high", "SC001:research/vit-finetune-0": "high",
    },
}


@pytest.fixture(scope="module", autouse=True)
def _close_bundles() -> Iterator[None]:
    yield
    report.cache_clear()
    for bundle in _OPENED.values():
        bundle.close()
    _OPENED.clear()


@functools.cache
def report(sample: str) -> Report:
    if sample not in _OPENED:
        _OPENED[sample] = open_bundle(SAMPLES / sample)
    return analyze(_OPENED[sample], discover().rules)


def finding(sample: str, finding_id: str) -> Finding:
    found = {f.id: f for f in report(sample).findings}
    assert finding_id in found, f"{finding_id} not among {sorted(found)}"
    return found[finding_id]


@pytest.mark.parametrize("sample", sorted(EXPECTED))
def test_serious_findings_are_exactly_the_diagnosis(sample: str) -> None:
    got = {f.id: f.severity.value for f in report(sample).findings if f.severity.rank >= 2}
    assert got == EXPECTED[sample]
    assert not [r.rule_id for r in report(sample).rules if r.status.value == "error"]


@pytest.mark.parametrize("sample", sorted(EXPECTED))
def test_no_root_section_ends_on_no_rule_identified(sample: str) -> None:
    for f in report(sample).findings:
        assert "No rule identified" not in f.summary, f.id


def test_driver_compile_error_root_is_the_first_failing_step() -> None:
    sample = "driver-build-compile-error"
    cmp = finding(sample, "CMP020:gpu-2")
    assert cmp.caused_by == []
    assert cmp.causes == ["CMP007:gpu-operator/nvidia-driver-daemonset", "DRV003:gpu-2",
                          "OP001:gpu-2"]
    log = "logs/gpu-operator/nvidia-driver-daemonset-9f2jr/nvidia-driver-ctr.previous.log"
    assert cmp.summary == (
        "On gpu-2, the driver container of nvidia-driver-daemonset-9f2jr (CrashLoopBackOff) "
        "fails: the first error of its previous instance's log is '/usr/src/nvidia-570.195.03/"
        "kernel/nvidia-drm/nvidia-drm-gem-user-memory.c:63:48: error: passing argument 1 of "
        "'drm_prime_pages_to_sg' from incompatible pointer type "
        f"[-Werror=incompatible-pointer-types]' ({log} line 22), in the step 'Compiling NVIDIA "
        "driver kernel modules...'. That means the NVIDIA kernel module does not compile "
        "against the node's kernel (a driver release older than the kernel's API, or a "
        "compiler other than the kernel's).")
    assert [(e.path, e.line) for e in cmp.evidence] == [(log, 20), (log, 22)]
    assert cmp.remediation.splitlines()[0] == (
        "kubectl -n gpu-operator logs nvidia-driver-daemonset-9f2jr -c nvidia-driver-ctr "
        "--previous --tail=200")
    op001 = finding(sample, "OP001:gpu-2")
    assert op001.caused_by == ["CMP020:gpu-2", "DRV003:gpu-2"]
    assert "(see CMP020)" in op001.summary
    assert finding(sample, "DRV003:gpu-2").caused_by == ["CMP020:gpu-2"]
    # gpu-1 builds and runs its driver: no CMP020 there
    assert [f.id for f in report(sample).findings if f.rule_id == "CMP020"] == ["CMP020:gpu-2"]


def test_oom_killed_exporter_quotes_the_kernel_kill() -> None:
    op001 = finding("exporter-oomkilled", "OP001:gpu-2")
    assert op001.caused_by == ["CMP008:gpu-operator/nvidia-dcgm-exporter"]
    assert (
        "nvidia-dcgm-exporter-9pm9d: its container nvidia-dcgm-exporter was killed for memory "
        "(OOMKilled, exit code 137) at its memory limit 512Mi, so its log stops without an "
        "error. The node's kernel log records the kill: 'Memory cgroup out of memory: Killed "
        "process 3833171 (dcgm-exporter) total-vm:4478432kB, anon-rss:517656kB, "
        "file-rss:47148kB, shmem-rss:0kB, UID:0 pgtables:1636kB oom_score_adj:-997' "
        "(nodes/gpu-2/dmesg.txt line 29).") in op001.summary
    assert finding("exporter-oomkilled", "OP006:cluster-policy").caused_by == ["OP001:gpu-2"]


def test_refused_plugin_daemonset_is_quoted() -> None:
    sample = "plugin-daemonset-refused"
    op017 = finding(sample, "OP017:nvidia-device-plugin/nvdp-nvidia-device-plugin")
    assert op017.caused_by == []
    assert ('violates PodSecurity "baseline:latest": hostPath volumes (volumes '
            '"device-plugin")') in op017.summary
    assert "(desired 2, current 0, ready 0)" in op017.summary
    # the refusal is why no node has a plugin: OP008 hangs under OP017
    assert finding(sample, "OP008:gpu-1").caused_by == [
        "OP017:nvidia-device-plugin/nvdp-nvidia-device-plugin"]
    assert finding(sample, "SC001:research/vit-finetune-0").caused_by == [
        "OP008:gpu-1", "OP008:gpu-2"]


def test_in_a_must_gather_the_oom_record_is_asked_for(tmp_path: Path) -> None:
    """NVIDIA's must-gather carries no node files: the kernel's record of the kill is
    what to ask for, through a debug pod on the node."""
    from samples.foreign_layouts import must_gather

    must_gather(SAMPLES / "exporter-oomkilled", tmp_path / "mg")
    with open_bundle(tmp_path / "mg") as bundle:
        found = {f.id: f for f in analyze(bundle, discover().rules).findings}
    op001 = found["OP001:gpu-2"]
    assert ("The kernel's OOM record says how much memory it held when killed; this nvidia "
            "must-gather bundle holds no files of the node itself. Ask next for the output of: "
            "kubectl debug node/gpu-2 -it --image=ubuntu -- chroot /host sh -c \"journalctl -k "
            "--no-pager | grep -iE 'out of memory|oom-kill|Killed process' | tail -20\"") \
        in op001.summary
