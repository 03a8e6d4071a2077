"""A rule whose inputs are damaged never says "passed": partial, skipped, or failed with
the damaged files named (analyzers/engine/coverage.py)."""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of
from kit import verdict as status
from kit.bundles import kube_list, write_dir, write_tar
from kit.driver import bundle_files as drv_files
from kit.driver import gpu_node, remap, smi_gpu, smi_xml

from analyzers.engine import analyze
from analyzers.engine.diff import compare
from analyzers.engine.plugins import discover
from analyzers.facts import Facts
from analyzers.results.models import Report
from bundle import Limits, open_bundle

HEALTHY = smi_xml(smi_gpu("00000000:3B:00.0", "GPU-aaaa-0001"))
PENDING = smi_xml(smi_gpu("00000000:3B:00.0", "GPU-aaaa-0002", extra=remap(pending="Yes")))
BROKEN = "<nvidia_smi_log><gpu id='00000000:3B:00.0'>"  # cut off mid-file


def _smi(tmp_path: Path, **per_node: str) -> Report:
    files = {f"nodes/{name}/nvidia-smi.xml": text for name, text in per_node.items()}
    return analyse(drv_files([gpu_node(name) for name in per_node], files), tmp=tmp_path)


def test_clean_inputs_pass(tmp_path: Path) -> None:
    report = _smi(tmp_path, **{"gpu-a": HEALTHY, "gpu-b": HEALTHY})
    assert status(report, "DRV006") == ("passed", None)
    # KI001 alone is partial here: the bundle holds no log or journal for its entries
    # (absent, not damaged: "judged in part", never "read in part")
    partial = {r.rule_id: r.reason or "" for r in report.rules if r.status.value == "partial"}
    assert list(partial) == ["KI001"] and "read in part" not in partial["KI001"]


def test_one_unreadable_node_file_makes_the_rule_partial(tmp_path: Path) -> None:
    report = _smi(tmp_path, **{"gpu-a": HEALTHY, "gpu-b": BROKEN})
    state, reason = status(report, "DRV006")
    assert state == "partial"
    assert reason is not None
    assert reason.startswith("read in part: nodes/gpu-b/nvidia-smi.xml: nvidia-smi XML not "
                             "understood")
    assert "gpu-a" not in reason


def test_every_node_file_unreadable_skips_the_rule(tmp_path: Path) -> None:
    report = _smi(tmp_path, **{"gpu-a": BROKEN, "gpu-b": BROKEN})
    state, reason = status(report, "DRV006")
    assert state == "skipped"
    assert reason is not None
    assert reason.startswith("cannot judge: nodes/gpu-a/nvidia-smi.xml: ")
    assert "nodes/gpu-b/nvidia-smi.xml" in reason


def test_a_failed_rule_keeps_its_findings_and_names_the_damage(tmp_path: Path) -> None:
    report = _smi(tmp_path, **{"gpu-a": PENDING, "gpu-b": BROKEN})
    assert list(of(report, "DRV006")) == ["DRV006:gpu-a/0000:3b:00.0"]
    state, reason = status(report, "DRV006")
    assert state == "failed"
    assert reason is not None
    assert reason.startswith("judged without damaged input: nodes/gpu-b/nvidia-smi.xml")


def test_a_damaged_node_list_reaches_every_rule_with_node_inputs(tmp_path: Path) -> None:
    path = write_dir(tmp_path / "b", {"cluster/nodes.json": '{"items": [',
                                      "nodes/gpu-a/nvidia-smi.xml": HEALTHY})
    with open_bundle(path) as opened:
        report = analyze(opened, discover().rules)
    state, reason = status(report, "DRV006")
    # the node directory still stands for its node, so the rule judged it, in part
    assert state == "partial"
    assert reason is not None and reason.startswith("read in part: cluster/nodes.json: invalid "
                                                    "JSON")
    assert report.bundle.gpu_nodes == 1
    # a rule that reads no node file is judged on its own inputs only
    assert "cluster/nodes.json" not in (status(report, "HELM001")[1] or "")


def test_optional_inputs_do_not_change_the_status(tmp_path: Path) -> None:
    files = {"nodes/gpu-a/nvidia-smi.xml": HEALTHY, "nodes/gpu-a/host/modules.txt": b"\xff\xfe",
             "nodes/gpu-a/dmesg.txt": "[    1.000000] NVRM: loading NVIDIA UNIX Kernel Module\n"}
    report = analyse(drv_files([gpu_node("gpu-a")], files), tmp=tmp_path)
    # DRV003 needs dmesg.txt and only corroborates with host/modules.txt
    assert status(report, "DRV003")[0] == "passed"


def test_a_refused_member_is_named_as_the_reason_for_skipping(tmp_path: Path) -> None:
    padded = HEALTHY.replace("<nvidia_smi_log>", "<nvidia_smi_log><!--" + "x" * 100_000 + "-->")
    archive = write_tar(tmp_path / "b.tgz", {"cluster/nodes.json": kube_list(gpu_node("gpu-a")),
                                             "nodes/gpu-a/nvidia-smi.xml": padded})
    with open_bundle(archive, Limits(max_member_bytes=64 * 1024)) as opened:
        report = analyze(opened, discover().rules)
    state, reason = status(report, "DRV006")
    assert state == "skipped"
    assert reason is not None
    assert reason.startswith("nodes/*/nvidia-smi.xml could not be read: "
                             "nodes/gpu-a/nvidia-smi.xml: 100414 bytes exceeds the 65536 byte "
                             "cap; not read")


def test_diff_does_not_call_a_finding_resolved_when_its_input_was_damaged(
        tmp_path: Path) -> None:
    before_dir = write_dir(tmp_path / "before", {
        "cluster/nodes.json": kube_list(gpu_node("gpu-a")),
        "nodes/gpu-a/nvidia-smi.xml": PENDING})
    after_dir = write_dir(tmp_path / "after", {
        "cluster/nodes.json": kube_list(gpu_node("gpu-a"), gpu_node("gpu-b")),
        "nodes/gpu-a/nvidia-smi.xml": HEALTHY, "nodes/gpu-b/nvidia-smi.xml": BROKEN})
    rules = discover().rules
    with open_bundle(before_dir) as before, open_bundle(after_dir) as after:
        old, new = analyze(before, rules), analyze(after, rules)
        result = compare(old, new, Facts(before), Facts(after))
    assert status(new, "DRV006")[0] == "partial"
    assert [f.id for f in result.resolved] == []
    assert [u.finding.id for u in result.unverified] == ["DRV006:gpu-a/0000:3b:00.0"]


def test_a_clobbered_node_is_still_found_when_the_node_list_is_damaged(
        tmp_path: Path, samples: Path) -> None:
    import shutil

    copy = shutil.copytree(samples / "dropin-clobber", tmp_path / "b")
    (copy / "cluster" / "nodes.json").write_text('{"kind": "List", "items": [{"metadata": ')
    with open_bundle(copy) as opened:
        report = analyze(opened, discover().rules)
    assert sorted(of(report, "RT002")) == ["RT002:gpu-2", "RT002:gpu-3"]
    state, reason = status(report, "RT002")
    assert state == "failed"
    assert reason is not None and "cluster/nodes.json: invalid JSON" in reason
    assert report.bundle.gpu_nodes == 4


def test_a_node_file_the_collector_was_refused_makes_the_rule_partial(tmp_path: Path) -> None:
    refused = [{"path": "nodes/gpu-b/nvidia-smi.xml", "node": "gpu-b",
                "error": "Error from server (Forbidden): pods \"node-debugger-gpu-b\" is "
                         "forbidden: User \"collector\" cannot create resource \"pods\""}]
    report = analyse(drv_files([gpu_node("gpu-a"), gpu_node("gpu-b")],
                    {"nodes/gpu-a/nvidia-smi.xml": HEALTHY}), tmp=tmp_path, failed=refused)
    state, reason = status(report, "DRV006")
    assert state == "partial"
    assert reason is not None
    assert reason.startswith("read in part: nodes/gpu-b/nvidia-smi.xml: not collected: Error "
                             "from server (Forbidden)")


def test_a_file_missing_on_the_node_is_no_damage(tmp_path: Path) -> None:
    """An absent directory (no drop-ins) or a log not yet written is nothing lost."""
    absent = [{"path": "nodes/gpu-b/nvidia-smi.xml", "node": "gpu-b",
               "error": "sh: nvidia-smi: not found"}]
    report = analyse(drv_files([gpu_node("gpu-a"), gpu_node("gpu-b")],
                    {"nodes/gpu-a/nvidia-smi.xml": HEALTHY}), tmp=tmp_path, failed=absent)
    assert status(report, "DRV006") == ("passed", None)
