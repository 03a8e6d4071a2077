"""RT012: pods without a RuntimeClass get no driver because nvidia is not the default.

Wordings: NVIDIA/k8s-device-plugin#655 (``Detected non-NVML platform: could not load NVML
library``), k0sproject/k0s#1769 (``/bin/sh: 1: nvidia-smi: not found``),
NVIDIA/nvidia-docker#1382 (``exec: "nvidia-smi": executable file not found in $PATH``);
the requirement itself: NVIDIA/k8s-device-plugin#314 (default_runtime_name).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse, status
from kit import findings as of
from kit.objects import node
from kit.runtime import dump, event, files, gpu_pod, pod

from analyzers.results.models import Severity

# https://github.com/NVIDIA/k8s-device-plugin/issues/655
PLUGIN_LOG = (
    "2023-04-17T07:12:59.758922Z I0417 07:12:59.758922       1 factory.go:107] Detected "
    "non-NVML platform: could not load NVML library: libnvidia-ml.so.1: cannot open shared "
    "object file: No such file or directory\n"
    "2023-04-17T07:12:59.758986Z E0417 07:12:59.758986       1 factory.go:115] Incompatible "
    "platform detected\n")
# https://github.com/k0sproject/k0s/issues/1769
SMI_LOG = "2022-06-01T10:00:00Z /bin/sh: 1: nvidia-smi: not found\n"
# https://github.com/NVIDIA/nvidia-docker/issues/1382 (the runc wording, as a pod event)
SMI_EXEC = ('Error: failed to create containerd task: failed to create shim task: OCI runtime '
            'create failed: runc create failed: unable to start container process: exec: '
            '"nvidia-smi": executable file not found in $PATH: unknown')
K3S_CONFIG = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"


def standalone(node_name: str, runtime: str | None = None) -> dict[str, Any]:
    found = pod(f"nvdp-nvidia-device-plugin-{node_name}", node_name,
                namespace="nvidia-device-plugin", runtime_class=runtime)
    found["spec"]["containers"][0]["name"] = "nvidia-device-plugin-ctr"
    return found


def k3s_nodes(bundle: dict[str, Any]) -> dict[str, Any]:
    nodes = bundle["cluster/nodes.json"]["items"]
    for item in nodes:
        item["status"]["nodeInfo"] = {"kubeletVersion": "v1.30.4+k3s1",
                                      "containerRuntimeVersion": "containerd://1.7.20-k3s1"}
    return bundle


def test_standalone_plugin_on_k3s_without_default(tmp_path: Path) -> None:
    logs = {f"nvidia-device-plugin/nvdp-nvidia-device-plugin-{n}/nvidia-device-plugin-ctr":
            PLUGIN_LOG for n in ("gpu-a", "gpu-b")}
    bundle = k3s_nodes(files(
        {"gpu-a": {"containerd/config-dump.toml": dump()},
         "gpu-b": {"containerd/config-dump.toml": dump(default="nvidia")}},
        [standalone("gpu-a"), standalone("gpu-b")], logs=logs, policy=None))
    report = analyse(bundle, tmp=tmp_path)
    found = of(report, "RT012")
    assert set(found) == {"RT012:gpu-a"}
    finding = found["RT012:gpu-a"]
    assert finding.severity is Severity.CRITICAL
    assert finding.summary.startswith(
        "On gpu-a (k3s/containerd), containerd's default runtime is runc, not nvidia: the "
        "device plugin pod(s) nvdp-nvidia-device-plugin-gpu-a cannot load NVML")
    assert "It has an nvidia runtime, but these pods name no runtimeClassName" in \
        finding.summary
    default, log = finding.evidence[0], finding.evidence[1]
    assert default.path == "nodes/gpu-a/containerd/config-dump.toml" and default.line == 6
    assert log.path == ("logs/nvidia-device-plugin/nvdp-nvidia-device-plugin-gpu-a/"
                        "nvidia-device-plugin-ctr.log") and log.line == 1
    lines = finding.remediation.splitlines()
    assert lines[2] == (f"/var/lib/rancher/k3s/data/current/bin/containerd --config {K3S_CONFIG}"
                        " config dump | grep -nE 'default_runtime_name|enable_cdi'")
    assert "#   k3s: default-runtime: nvidia in its config.yaml" in finding.remediation


def test_gpu_workloads_without_driver(tmp_path: Path) -> None:
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(nvidia=None)}},
        [gpu_pod("train-0", "gpu-a"), gpu_pod("smi-1", "gpu-a", phase="Pending")],
        [event("smi-1", "Failed", SMI_EXEC, namespace="ml")],
        logs={"ml/train-0/main": SMI_LOG}, policy=None), tmp=tmp_path)
    finding = of(report, "RT012")["RT012:gpu-a"]
    assert finding.severity is Severity.HIGH
    assert "GPU pod(s) smi-1, train-0 start without the driver" in finding.summary
    assert "It has no nvidia runtime at all" in finding.summary
    assert {e.path for e in finding.evidence} == {
        "nodes/gpu-a/containerd/config-dump.toml", "logs/ml/train-0/main.log",
        "cluster/events.json"}
    assert '#   default_runtime_name = "nvidia" in /etc/containerd/config.toml' in \
        finding.remediation


def test_quiet_with_runtime_class_or_nvidia_default(tmp_path: Path) -> None:
    logs = {"nvidia-device-plugin/nvdp-nvidia-device-plugin-gpu-a/nvidia-device-plugin-ctr":
            PLUGIN_LOG}
    named = analyse(files({"gpu-a": {"containerd/config-dump.toml": dump()}},
                                      [standalone("gpu-a", runtime="nvidia")], logs=logs,
                                      policy=None), tmp=tmp_path / "a")
    assert of(named, "RT012") == {} and status(named, "RT012") == "passed"
    healthy = analyse(files({"gpu-a": {"containerd/config-dump.toml": dump()}},
                                        [standalone("gpu-a")], policy=None), tmp=tmp_path / "b")
    assert of(healthy, "RT012") == {}
    bare = files({"gpu-a": {"dmesg.txt": ""}}, [standalone("gpu-a")], logs=logs, policy=None)
    bare["cluster/nodes.json"]["items"] = [node("gpu-a", gpus=1)]
    assert status(analyse(bare, tmp=tmp_path / "c"), "RT012") == "skipped"
