"""RT013's inputs on hostile bundles: CDI names read in linear time, CDI specs within a
node budget, device names that cannot be turned into text.

Each case ended in minutes, gigabytes or a rule ``error`` before the change; no timing is
asserted, the outcome is: the exact names, or the recorded problem naming the file.

- ``requested`` kept its names in a list and looked each new one up in it: a 390 KB
  message of distinct names took 43 s (quadratic), and RT013 did the same across events.
- ``load_yaml`` had no node budget: an 8 MiB CDI spec ``[1,1,…]`` (4 million nodes) cost
  40 s and 1.4 GB before anything looked at it.
- A YAML hex integer is read without Python's 4,300-digit limit, which ``str()`` then
  enforces: RT013 ended in ``error``.

Wording: NVIDIA/nvidia-container-toolkit#1239 (``unresolvable CDI devices
management.nvidia.com/gpu=GPU-…``), as in tests/rules/test_rt013.py.
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse, status
from kit import findings as of
from kit.runtime import dump, event, files, gpu_pod

from analyzers.facts.cdi import MAX_DEVICES, requested
from bundle.yamldoc import MAX_NODES, YamlOverBudget, load_yaml

PREFIX = ("Error: failed to create containerd task: failed to create shim task: OCI runtime "
          "create failed: could not apply required modification to OCI specification: error "
          "modifying OCI spec: failed to inject CDI devices: unresolvable CDI devices ")
SPEC = """cdiVersion: 0.5.0
kind: management.nvidia.com/gpu
devices:
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
"""


def test_many_distinct_names_keep_the_first_in_order() -> None:
    message = PREFIX + " ".join(f"nvidia.com/gpu={i}" for i in range(200_000))
    assert requested(message) == [("nvidia.com/gpu", str(i)) for i in range(MAX_DEVICES)]
    repeated = PREFIX + "nvidia.com/gpu=1, nvidia.com/gpu=1, nvidia.com/gpu=0"
    assert requested(repeated) == [("nvidia.com/gpu", "1"), ("nvidia.com/gpu", "0")]


def test_rt013_explains_the_first_four_names_of_many_events(tmp_path: Path) -> None:
    events = [event("train-0", "Failed", PREFIX + ", ".join(
        f"management.nvidia.com/gpu=GPU-{e:04x}{i:04x}-0000" for i in range(MAX_DEVICES)),
        namespace="ml") for e in range(400)]
    for index, item in enumerate(events):
        item["metadata"]["name"] = f"train-0.{index}"
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(cdi=True), "cdi/spec.yaml": SPEC}},
        [gpu_pod("train-0", "gpu-a")], events), tmp=tmp_path)
    summary = of(report, "RT013")["RT013:gpu-a"].summary
    explained = [f"management.nvidia.com/gpu=GPU-0000{i:04x}-0000:" for i in range(4)]
    assert all(name in summary for name in explained), summary
    assert "GPU-00000004-0000" not in summary


def test_a_spec_of_too_many_nodes_is_refused_and_named(tmp_path: Path) -> None:
    flood = "kind: management.nvidia.com/gpu\ndevices: [" + "1," * 2_000_000 + "1]\n"
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(cdi=True), "cdi/flood.yaml": flood}},
        [gpu_pod("train-0", "gpu-a")],
        [event("train-0", "Failed", PREFIX + "management.nvidia.com/gpu=all", namespace="ml")]),
                     tmp=tmp_path)
    assert [(p.path, p.kind, p.message) for p in report.problems] == [
        ("nodes/gpu-a/cdi/flood.yaml", "refused",
         f"CDI spec refused: more than {MAX_NODES:,} YAML nodes, over the cap on one "
         "document; not read")]
    finding = of(report, "RT013")["RT013:gpu-a"]
    assert "management.nvidia.com/gpu=all: the node's CDI specs could not be read" in \
        finding.summary
    assert status(report, "RT013") == "failed"
    assert [r.rule_id for r in report.rules if r.status.value == "error"] == []


def test_the_node_budget_from_both_sides() -> None:
    at_cap = "[" + ",".join(["1"] * (MAX_NODES - 1)) + "]"  # the list is a node too
    assert len(load_yaml(at_cap)) == MAX_NODES - 1
    try:
        load_yaml("[" + ",".join(["1"] * MAX_NODES) + "]")
    except YamlOverBudget as exc:
        assert str(exc) == (f"more than {MAX_NODES:,} YAML nodes, over the cap on one "
                            "document; not read")
    else:
        raise AssertionError("a document over the node cap was loaded")


def test_a_device_name_no_text_can_hold_is_no_device(tmp_path: Path) -> None:
    """``0x`` and 4,000 hex digits: an integer of about 4,800 decimal digits."""
    spec = SPEC.replace("- name: all", "- name: 0x" + "f" * 4000 + "\n- name: 7\n- name: all")
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(cdi=True), "cdi/spec.yaml": spec}},
        [gpu_pod("train-0", "gpu-a")],
        [event("train-0", "Failed", PREFIX + "management.nvidia.com/gpu=3", namespace="ml")]),
                     tmp=tmp_path)
    assert [r.rule_id for r in report.rules if r.status.value == "error"] == []
    summary = of(report, "RT013")["RT013:gpu-a"].summary
    assert "management.nvidia.com/gpu=3: the management.nvidia.com/gpu spec defines only " \
           "7, all" in summary
