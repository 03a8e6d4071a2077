"""SC007: pods see GPUs they were not allocated (cases of k8s-device-plugin#87 and #1294,
gpu-operator#700, bottlerocket-os/bottlerocket#3718, nvidia-docker#1686)."""

from __future__ import annotations

from pathlib import Path

from kit import analyse, findings
from kit.gate import GPU, container, gpu_node, workload
from kit.gate import bundle_files as gate_files

from analyzers.results.models import Severity


def test_limitless_all_beside_allocated_pods_is_high(tmp_path: Path) -> None:
    """https://github.com/NVIDIA/k8s-device-plugin/issues/87: a pod without a limit sees
    every GPU of the node while another pod was allocated one."""
    sneaky = workload("sneaky", "gpu-a", containers=[
        container(env={"NVIDIA_VISIBLE_DEVICES": "all"})])
    trainer = workload("trainer", "gpu-a", gpus=1)
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)], pods=[sneaky, trainer]),
                     tmp=tmp_path)
    found = findings(report, "SC007")
    assert list(found) == ["SC007:gpu-a"]
    sc = found["SC007:gpu-a"]
    assert sc.severity is Severity.HIGH
    assert sc.nodes == ["gpu-a"]
    assert "ml/sneaky (main) sets NVIDIA_VISIBLE_DEVICES=all itself (every GPU) with no " \
        "nvidia.com limit" in sc.summary
    assert "allocated to ml/trainer" in sc.summary
    assert [e.pointer for e in sc.evidence] == ["/items/0/spec/containers/0/env/0"]
    assert "exec sneaky -c main -- nvidia-smi -L" in sc.remediation


def test_a_limit_does_not_hide_a_hand_picked_device_list(tmp_path: Path) -> None:
    """https://github.com/NVIDIA/k8s-device-plugin/issues/1294: NVIDIA_VISIBLE_DEVICES=1
    in env beside nvidia.com/gpu: 1."""
    picker = workload("vllm", "gpu-b", containers=[
        container(limits={GPU: 1}, env={"NVIDIA_VISIBLE_DEVICES": "1"})])
    found = findings(analyse(gate_files(nodes=[gpu_node("gpu-b", 2, 2)], pods=[picker]),
                             tmp=tmp_path), "SC007")
    assert list(found) == ["SC007:gpu-b"]
    assert "sets NVIDIA_VISIBLE_DEVICES=1 itself with a limit of 1" in found["SC007:gpu-b"].summary
    assert found["SC007:gpu-b"].severity is Severity.MEDIUM


def test_privileged_with_a_limit_sees_every_device(tmp_path: Path) -> None:
    """https://github.com/NVIDIA/nvidia-docker/issues/1686: a privileged dind sidecar."""
    dind = workload("dind", "gpu-a", containers=[
        container(name="dind", image="docker:24-dind", limits={GPU: 2}, privileged=True)])
    found = findings(analyse(gate_files(nodes=[gpu_node("gpu-a", 8, 8)], pods=[dind]),
                             tmp=tmp_path), "SC007")
    sc = found["SC007:gpu-a"]
    assert "ml/dind (dind) runs privileged (every /dev/nvidia* device of the host) with a " \
        "limit of 2" in sc.summary
    assert sc.evidence[0].pointer == "/items/0/spec/containers/0/securityContext/privileged"


def test_quiet_for_plain_allocations_operands_and_lonely_limitless_pods(tmp_path: Path) -> None:
    honest = workload("honest", "gpu-a", gpus=1)
    hidden = workload("hidden", "gpu-a", containers=[
        container(env={"NVIDIA_VISIBLE_DEVICES": "void"})])
    exporter = workload("nvidia-dcgm-exporter-x7k2p", "gpu-a", namespace="gpu-operator",
                        containers=[container(env={"NVIDIA_VISIBLE_DEVICES": "all"},
                                              privileged=True)])
    exporter["metadata"]["labels"] = {"app": "nvidia-dcgm-exporter"}
    # No GPU is allocated on gpu-b: a limitless pod there is SC003's (per workload) only.
    alone = workload("alone", "gpu-b", containers=[
        container(env={"NVIDIA_VISIBLE_DEVICES": "all"})])
    # A privileged system daemon has the device nodes but no driver to use them.
    proxy = workload("kube-proxy-x4lvs", "gpu-a", namespace="kube-system", containers=[
        container(name="kube-proxy", image="registry.k8s.io/kube-proxy:v1.31.2",
                  privileged=True)])
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4), gpu_node("gpu-b", 4, 4)],
                 pods=[honest, hidden, exporter, alone, proxy]), tmp=tmp_path)
    assert findings(report, "SC007") == {}
    assert list(findings(report, "SC003")) == ["SC003:ml/alone"]
