"""Issue 25, case 8: a rule that could not read its input never says ``passed``.

- DRV003 passed while a troubleshoot bundle's host collector recorded nvidia-smi exiting
  18 with ``Failed to initialize NVML: Driver/library version mismatch``. nvidia-smi
  exits with NVML's return code, and 18 is ``NVML_ERROR_LIB_RM_VERSION_MISMATCH``
  (https://nvidia.github.io/cuda-python/cuda-bindings/latest/module/generated/cuda.bindings.nvml.Return.html);
  the words are nvidia-smi's own (https://github.com/greshake/i3status-rust/pull/771).
  troubleshoot's run-host ``-info.json`` keeps ``exitCode`` as a string and ``error`` as
  the stderr (replicatedhq/troubleshoot pkg/collect/host_run.go); nvidia-smi prints its
  failure on stdout, which stays in the collector's ``.txt``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kit import analyse
from layouts_kit import troubleshoot_files, write

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.results.models import Report
from bundle import open_bundle

RUN = "host-collectors/gpu-a/run-host"
MISMATCH_OUT = ("Failed to initialize NVML: Driver/library version mismatch\n"
                "NVML library version: 570.124\n")


def _report(path: Path) -> Report:
    with open_bundle(path) as opened:
        return analyze(opened, discover().rules)


def test_nvidia_smi_exit_18_in_a_troubleshoot_bundle_is_a_version_mismatch(
        tmp_path: Path) -> None:
    files = troubleshoot_files()
    files[f"{RUN}/nvidia-smi.txt"] = MISMATCH_OUT
    files[f"{RUN}/nvidia-smi-info.json"] = json.dumps(
        {"command": "/usr/bin/nvidia-smi -q -x", "exitCode": "18", "error": ""})
    files[f"{RUN}/dmesg.txt"] = "[    5.240000] nvidia: loading out-of-tree module taints kernel.\n"
    files[f"{RUN}/dmesg-info.json"] = json.dumps({"command": "/usr/bin/dmesg", "exitCode": "0"})
    report = _report(write(tmp_path / "sb", files))
    found = {f.id: f for f in report.findings}
    assert "DRV003:gpu-a" in found, [r for r in report.rules if r.rule_id == "DRV003"]
    drv003 = found["DRV003:gpu-a"]
    assert "differ in version" in drv003.summary
    assert any("exited with status 18: Failed to initialize NVML: Driver/library version "
               "mismatch" in e.excerpt for e in drv003.evidence), drv003.evidence
    # the collection gap names nvidia-smi's own words, not only its exit status
    [gap] = [g for g in report.collection_gaps if g.path == "nodes/gpu-a/nvidia-smi.xml"]
    assert gap.error.startswith("exited with status 18: Failed to initialize NVML")


# ----------------------------------------------------------------------------- RT014
# The situation of NVIDIA/nvidia-container-toolkit#1227 and #251 (``Failed to initialize
# NVML: Unknown Error`` after ``systemctl daemon-reload``), its files holding the plain
# output of the commands: the kubelet's KubeletConfiguration line ``cgroupDriver:
# systemd`` (https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/configure-cgroup-driver/)
# and GNU ``ls -l /dev/nvidia* /dev/char``, which lists the named files first and then
# the directory under a ``/dev/char:`` heading.
PLAIN_CGROUP = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" \
               "cgroupDriver: systemd\n"
PLAIN_LS = ("crw-rw-rw- 1 root root 195,   0 Jul 14 16:20 /dev/nvidia0\n"
            "crw-rw-rw- 1 root root 195, 255 Jul 14 16:20 /dev/nvidiactl\n"
            "crw-rw-rw- 1 root root 509,   0 Jul 14 16:20 /dev/nvidia-uvm\n"
            "\n"
            "/dev/char:\n"
            "total 0\n"
            "lrwxrwxrwx 1 root root 8 Jul 14 16:20 10:1 -> ../psaux\n"
            "lrwxrwxrwx 1 root root 7 Jul 14 16:20 1:3 -> ../null\n")
PLAIN_LS_LINKED = PLAIN_LS + "lrwxrwxrwx 1 root root 10 Jul 14 16:21 195:0 -> ../nvidia0\n"
LOST = ("2025-07-14T16:20:01Z GPU 0: NVIDIA A10 (UUID: GPU-f15ae561-21b1-6003-c768-861fc285203b)\n"
        "2025-07-14T16:25:58Z Failed to initialize NVML: Unknown Error\n")


def _rt014(tmp_path: Path, cgroup: str, dev: str) -> Report:
    from kit.runtime import dump, files, gpu_pod

    node = {"containerd/config-dump.toml": dump(), "host/cgroup.txt": cgroup,
            "host/dev-nvidia.txt": dev}
    return analyse(files({"gpu-a": node}, [gpu_pod("train-0", "gpu-a")],
                               logs={"ml/train-0/main": LOST}), tmp=tmp_path)


def test_rt014_reads_plain_command_output(tmp_path: Path) -> None:
    report = _rt014(tmp_path, PLAIN_CGROUP, PLAIN_LS)
    finding = {f.id: f for f in report.findings}["RT014:gpu-a"]
    assert "systemd manages the containers' cgroups (cgroupDriver: systemd)" in finding.summary
    assert "although nvidia0 and the other NVIDIA devices exist" in finding.summary
    assert [(e.path, e.line) for e in finding.evidence][-2:] == [
        ("nodes/gpu-a/host/cgroup.txt", 3), ("nodes/gpu-a/host/dev-nvidia.txt", 5)]
    linked = _rt014(tmp_path / "linked", PLAIN_CGROUP, PLAIN_LS_LINKED)
    assert not [f for f in linked.findings if f.rule_id == "RT014"]
    assert {r.rule_id: r.status.value for r in linked.rules}["RT014"] == "passed"


@pytest.mark.parametrize("cgroup,dev,unread", [
    ("permission denied\n", PLAIN_LS, "host/cgroup.txt"),
    (PLAIN_CGROUP, "ls: cannot access '/dev/nvidia*': No such file or directory\n",
     "host/dev-nvidia.txt"),
])
def test_rt014_never_passes_on_a_file_it_cannot_read(tmp_path: Path, cgroup: str, dev: str,
                                                    unread: str) -> None:
    report = _rt014(tmp_path, cgroup, dev)
    [result] = [r for r in report.rules if r.rule_id == "RT014"]
    assert result.status.value == "partial"
    assert result.reason is not None and f"its {unread} held no line" in result.reason


# ------------------------------------------------------------- lists the collector shortened
def test_a_shortened_list_makes_its_rules_partial_and_counts_lower_bounds(
        tmp_path: Path) -> None:
    """The collector keeps the items of a kubectl List that fit --max-file-bytes and
    records how many it kept (collectors/collect.py ``write_json``); the file is valid
    JSON. Rules judging it must not say passed, and the counts are lower bounds."""
    from kit.bundles import kube_list, kube_node, manifest
    from kit.cluster import plain_node
    pass

    from analyzers.engine.coverage import required_inputs
    from collectors.collect import Bundle as Collected
    from reports import markdown, text

    nodes = [plain_node("cp-1")] + [kube_node(f"gpu-{n}", 8) for n in range(39)]
    staged = Collected(str(tmp_path / "staged"), 700, quiet=True)
    (tmp_path / "staged" / "cluster").mkdir(parents=True)
    _, truncated, extra = staged.write_json("cluster/nodes.json", kube_list(*nodes))
    assert truncated and extra == {"items_kept": 1, "items_total": 40}
    files = {"cluster/nodes.json": (tmp_path / "staged/cluster/nodes.json").read_bytes(),
             "cluster/pods.json": kube_list()}
    data = manifest(files)
    for item in data["items"]:
        if item["path"] == "cluster/nodes.json":
            item.update(truncated=True, **extra)
    report = analyse({"manifest.json": json.dumps(data), **files}, tmp=tmp_path)
    assert [(n.path, n.note) for n in report.bundle.shortened] == [
        ("cluster/nodes.json", "shortened by the collector to fit --max-file-bytes: 1 of 40 "
                               "items kept")]
    rules = {loaded.rule.id: loaded.rule for loaded in discover().rules}
    statuses = {r.rule_id: r for r in report.rules}
    readers = [rid for rid, rule in rules.items()
               if any(i.path == "cluster/nodes.json" for i in required_inputs(rule))]
    assert readers
    for rid in readers:
        assert statuses[rid].status.value != "passed", rid
    judged = [statuses[rid] for rid in readers if statuses[rid].status.value == "partial"]
    assert judged and all("1 of 40 items kept" in (r.reason or "") for r in judged)
    assert "at least 1 nodes" in text.render(report)
    assert "Counts are lower bounds: the collector shortened cluster/nodes.json" \
        in text.render(report)
    assert "of at least 1" in markdown.render(report)
    from datetime import UTC, datetime

    from reports import html

    page = html.render(report, generated_at=datetime(2026, 12, 1, tzinfo=UTC))
    assert "at least 1 nodes" in page and "of at least 1 nodes" in page
    assert "Counts are lower bounds" in page


# ------------------------------------------------------- damage past the cap on problems
def test_a_worker_past_the_problem_cap_still_hands_on_its_damaged_files() -> None:
    """Node-file workers hand their problems back with ``since(mark)``; past ``keep``
    problems are only counted, and the files they damaged were lost with them, so a cut
    nvidia-smi.xml read by a worker (--jobs 2) left its rules passed."""
    from bundle.problems import ProblemLog

    log = ProblemLog(limit=10, keep=3)
    for n in range(3):
        log.add(f"nodes/gpu-{n}/dmesg.txt", "odd line", where=f"line {n}")
    mark = log.mark()
    log.add("nodes/gpu-7/nvidia-smi.xml", "XML ends early (truncated)", lost=True)
    later = log.since(mark)
    assert list(later.damaged()) == ["nodes/gpu-7/nvidia-smi.xml"]
    assert later.damaged()["nodes/gpu-7/nvidia-smi.xml"].lost
    parent = ProblemLog(limit=10, keep=3)
    parent.absorb(later)
    assert "nodes/gpu-7/nvidia-smi.xml" in parent.damaged()


# ----------------------------------------------------------- an unreadable optional input
def test_rules_say_what_they_fell_back_on_when_runtime_json_is_unreadable(
        tmp_path: Path) -> None:
    """runtime.json (bundle format 1.1, what the node script detected) damaged on every
    node: the runtime facts fall back on the Node objects, and the rules that use them
    were passed as if they had read it."""
    from kit.runtime import dump, files, gpu_pod

    node = {"containerd/config-dump.toml": dump(), "runtime.json": "{\"runtime\": \"contai"}
    report = analyse(files({"gpu-a": dict(node), "gpu-b": dict(node)},
                                 [gpu_pod("train-0", "gpu-a")]), tmp=tmp_path)
    results = {r.rule_id: r for r in report.rules}
    assert results["RT008"].status.value == "partial", results["RT008"]
    rules = {loaded.rule.id: loaded.rule for loaded in discover().rules}
    fallback = sorted(rid for rid, rule in rules.items()
                      if any(getattr(i, "fallback", None) and i.path == "runtime.json"
                             for i in rule.inputs))
    assert {"RT001", "RT008", "RT009"} <= set(fallback)
    for rid in fallback:
        result = results[rid]
        if result.status.value in ("skipped", "error"):
            continue
        assert result.status.value != "passed", rid
        assert "judged with the runtime and distribution the Node objects report" in (
            result.reason or ""), (rid, result.reason)
        assert "nodes/gpu-a/runtime.json" in (result.reason or "")
    healthy = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(),
                   "runtime.json": '{"runtime": "containerd", "distribution": "kubeadm"}'}},
        [gpu_pod("train-0", "gpu-a")]), tmp=tmp_path / "ok")
    assert {r.rule_id: r.status.value for r in healthy.rules}["RT008"] == "passed"
