"""RT013: requested CDI devices that no spec on the node defines.

Wordings and setups: NVIDIA/nvidia-container-toolkit#1239 (``failed to inject CDI devices:
unresolvable CDI devices management.nvidia.com/gpu=GPU-e78e68c0-…``) and
NVIDIA/nvidia-container-toolkit#1895 (a v0.5.0 spec that lists only
``management.nvidia.com/gpu=all`` while the device plugin asks for GPU UUIDs).
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of
from kit.driver import smi_gpu, smi_xml
from kit.runtime import dump, event, files, gpu_pod

UUID = "GPU-e78e68c0-4e6a-737e-f9cc-4223fe50aead"
OTHER = "GPU-466be1f8-6148-1a27-a450-592604f3df54"
# https://github.com/NVIDIA/nvidia-container-toolkit/issues/1239
UNRESOLVED = ("Error: failed to create containerd task: failed to create shim task: OCI runtime "
              "create failed: could not apply required modification to OCI specification: "
              "error modifying OCI spec: failed to inject CDI devices: unresolvable CDI devices "
              f"management.nvidia.com/gpu={UUID}: unknown")
WRONG_KIND = ("Error: failed to create containerd container: CDI device injection failed: "
              "unresolvable CDI devices nvidia.com/gpu=0")
# the shape of the spec in NVIDIA/nvidia-container-toolkit#1895: only the "all" device
ALL_ONLY = """---
cdiVersion: 0.5.0
kind: management.nvidia.com/gpu
devices:
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
containerEdits:
  env:
  - NVIDIA_VISIBLE_DEVICES=void
"""


def node_files(uuid: str) -> dict[str, str]:
    return {"containerd/config-dump.toml": dump(cdi=True),
            "cdi/management.nvidia.com-gpu.yaml": ALL_ONLY,
            "nvidia-smi.xml": smi_xml(smi_gpu("00000000:17:00.0", uuid))}


def test_spec_older_than_the_gpu(tmp_path: Path) -> None:
    report = analyse(files(
        {"gpu-a": node_files(UUID), "gpu-b": node_files(OTHER)},
        [gpu_pod("train-0", "gpu-a"), gpu_pod("train-1", "gpu-b")],
        [event("train-0", "Failed", UNRESOLVED, namespace="ml")]), tmp=tmp_path)
    found = of(report, "RT013")
    assert set(found) == {"RT013:gpu-a"}
    finding = found["RT013:gpu-a"]
    assert finding.summary == (
        f"On gpu-a, 1 pod(s) (train-0) ask for CDI devices that do not resolve: "
        f"management.nvidia.com/gpu={UUID}: the GPU is on the node but the "
        "management.nvidia.com/gpu spec does not list it (defines all): the spec is older "
        "than the GPU.")
    assert [e.path for e in finding.evidence] == [
        "cluster/events.json", "nodes/gpu-a/cdi/management.nvidia.com-gpu.yaml",
        "nodes/gpu-a/nvidia-smi.xml"]
    assert finding.evidence[1].excerpt == "kind: management.nvidia.com/gpu; devices: all"


def test_stale_uuid_and_wrong_kind(tmp_path: Path) -> None:
    report = analyse(files(
        {"gpu-a": node_files(OTHER)}, [gpu_pod("train-0", "gpu-a"), gpu_pod("infer", "gpu-a")],
        [event("train-0", "Failed", UNRESOLVED, namespace="ml"),
         event("infer", "Failed", WRONG_KIND, namespace="ml")]), tmp=tmp_path)
    summary = of(report, "RT013")["RT013:gpu-a"].summary
    assert f"management.nvidia.com/gpu={UUID}: {UUID} is not a GPU of this node (nvidia-smi " \
           f"lists {OTHER}): a stale UUID" in summary
    assert ("nvidia.com/gpu=0: no spec has kind nvidia.com/gpu (the node's specs have "
            "management.nvidia.com/gpu)") in summary
