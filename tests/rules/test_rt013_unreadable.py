"""RT013 where the node's CDI specs were collected but none could be read: the reason
says so, instead of claiming that no spec exists on the node.

Wording: NVIDIA/nvidia-container-toolkit#1239 (``unresolvable CDI devices
management.nvidia.com/gpu=GPU-e78e68c0-…``).
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of
from kit.driver import smi_gpu, smi_xml
from kit.runtime import dump, event, files, gpu_pod

UUID = "GPU-e78e68c0-4e6a-737e-f9cc-4223fe50aead"
# https://github.com/NVIDIA/nvidia-container-toolkit/issues/1239
UNRESOLVED = ("Error: failed to create containerd task: failed to create shim task: OCI runtime "
              "create failed: could not apply required modification to OCI specification: "
              "error modifying OCI spec: failed to inject CDI devices: unresolvable CDI devices "
              f"management.nvidia.com/gpu={UUID}: unknown")


def bundle(spec: str) -> dict[str, object]:
    return files({"gpu-a": {"containerd/config-dump.toml": dump(cdi=True),
                            "cdi/nvidia.yaml": spec,
                            "nvidia-smi.xml": smi_xml(smi_gpu("00000000:17:00.0", UUID))}},
                 [gpu_pod("train-0", "gpu-a")],
                 [event("train-0", "Failed", UNRESOLVED, namespace="ml")])


def test_unreadable_spec_is_not_called_absent(tmp_path: Path) -> None:
    finding = of(analyse(bundle("kind: [unclosed\n"), tmp=tmp_path), "RT013")["RT013:gpu-a"]
    assert finding.summary == (
        "On gpu-a, 1 pod(s) (train-0) ask for CDI devices that do not resolve: "
        f"management.nvidia.com/gpu={UUID}: the node's CDI specs could not be read.")
    assert "no CDI spec exists" not in finding.summary
    assert [(e.path, e.excerpt) for e in finding.evidence[1:2]] == [
        ("nodes/gpu-a/cdi/", "(no readable CDI spec)")]


def test_a_spec_without_devices_is_not_called_absent(tmp_path: Path) -> None:
    summary = of(analyse(bundle("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n"), tmp=tmp_path),
                 "RT013")["RT013:gpu-a"].summary
    assert summary.endswith(": the node's CDI specs could not be read.")
