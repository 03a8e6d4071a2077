"""OP014: a MIG change blocked by processes holding the GPU.

Log wordings from public threads (sources also in signatures.toml):
- nvidia-mig-parted's refusal, one line per GPU, with nvidia_drm as the holder:
  https://github.com/NVIDIA/mig-parted/issues/181;
- the Go reconfigure logging it as one escaped message:
  https://github.com/ComputeCanada/puppet-magic_castle/issues/387;
- nvidia-persistenced holding the GPU so the reset fails:
  https://github.com/NVIDIA/gpu-operator/issues/118.
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse, paths, status
from kit import findings as of_rule
from kit.cluster import Cluster, operand_pod
from kit.objects import pod

MIG = "nvidia-mig-manager"
PARTED_LINES = [
    "The following GPUs could not be reset:",
    "  GPU 00000000:01:00.0: In use by another client",
    "  GPU 00000000:47:00.0: In use by another client",
    "Error applying MIG configuration with hooks: error resetting all GPUs: exit status 255",
]
ESCAPED = ('time="2024-09-30T19:49:46Z" level=error msg="\\nThe following GPUs could not be '
           'reset:\\n  GPU 00000000:00:06.0: In use by another client\\n\\n1 device is currently '
           'being used by one or more other processes"')
PROCESSES = ("2114\tnvidia-persiste\t/usr/bin/nvidia-persistenced --user nvidia-persistenced "
             "--persistence-mode --verbose\n"
             "3377\tnv-hostengine\t/usr/bin/nv-hostengine -n --service-account nvidia-dcgm\n")
MODULES = ("nvidia_drm 122880 0 - Live 0x0000000000000000 (PO)\n"
           "nvidia 104071168 28 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (PO)\n")


def _mig_cluster() -> Cluster:
    cluster = Cluster()
    for name in cluster.gpu_nodes:
        cluster.put(operand_pod(MIG, name))
    return cluster


def test_names_host_processes_the_drm_module_and_gpu_pods(tmp_path: Path) -> None:
    cluster = _mig_cluster()
    log = cluster.log(MIG, "gpu-a", MIG, PARTED_LINES)
    cluster.files["nodes/gpu-a/host/gpu-processes.txt"] = PROCESSES
    cluster.files["nodes/gpu-a/host/modules.txt"] = MODULES
    cluster.put(pod("train-7f9c", "gpu-a", namespace="ml", gpus=2))
    cluster.put(pod("train-other-node", "gpu-b", namespace="ml", gpus=1))
    cluster.nodes["gpu-a"]["metadata"]["labels"].update({
        "nvidia.com/mig.config": "all-1g.10gb", "nvidia.com/mig.config.state": "failed"})
    report = analyse(cluster, tmp=tmp_path)
    # OP009 (the node's MIG state is failed) is the symptom this finding explains.
    assert of_rule(report, "OP009")["OP009:gpu-a"].caused_by == ["OP014:gpu-a"]
    found = of_rule(report, "OP014")
    assert sorted(found) == ["OP014:gpu-a"]
    finding = found["OP014:gpu-a"]
    assert finding.severity.value == "high"
    assert finding.nodes == ["gpu-a"]
    assert finding.causes == ["OP009:gpu-a"]
    assert ("could not reset GPU 00000000:01:00.0, 00000000:47:00.0 to change the MIG mode"
            in finding.summary)
    # The kit's healthy node runs the DCGM exporter, which keeps the GPU open too.
    assert ("Holding the GPU: nvidia-persiste (host pid 2114); nv-hostengine (host pid 3377); "
            "the nvidia_drm kernel module; pod gpu-operator/nvidia-dcgm-exporter-gpu-a (DCGM); "
            "pod ml/train-7f9c (nvidia.com/gpu: 2).") in finding.summary
    assert paths(finding)[:6] == [
        (log, 1), (log, 2), (log, 3),
        ("nodes/gpu-a/host/gpu-processes.txt", 1), ("nodes/gpu-a/host/gpu-processes.txt", 2),
        ("nodes/gpu-a/host/modules.txt", 1)]
    assert [p for p, _ in paths(finding)[6:]] == ["cluster/pods.json"] * 2
    assert "train-other-node" not in finding.summary
    assert "nvidia-smi -pm 0" in finding.remediation
    assert "rmmod nvidia_drm" in finding.remediation
    assert "kubectl -n gpu-operator logs nvidia-mig-manager-gpu-a" in finding.remediation


def test_escaped_go_message_and_dcgm_pods(tmp_path: Path) -> None:
    cluster = _mig_cluster()
    cluster.put(operand_pod("nvidia-dcgm", "gpu-b"))
    cluster.log(MIG, "gpu-b", MIG, [ESCAPED])
    finding = of_rule(analyse(cluster, tmp=tmp_path), "OP014")["OP014:gpu-b"]
    assert "could not reset GPU 00000000:00:06.0" in finding.summary
    assert "pod gpu-operator/nvidia-dcgm-gpu-b (DCGM)" in finding.summary
    assert "nvidia-smi -pm 0" not in finding.remediation


def test_pending_state_wording(tmp_path: Path) -> None:
    cluster = _mig_cluster()
    cluster.log(MIG, "gpu-a", MIG, [
        "Warning: MIG mode is in pending disable state for GPU 00000000:C1:00.0:In use by "
        "another client"])
    finding = of_rule(analyse(cluster, tmp=tmp_path), "OP014")["OP014:gpu-a"]
    assert "could not reset GPU 00000000:c1:00.0" in finding.summary
    assert "Holding the GPU: pod gpu-operator/nvidia-dcgm-exporter-gpu-a (DCGM)." \
        in finding.summary


def test_no_holder_in_the_bundle_says_where_to_look(tmp_path: Path) -> None:
    cluster = _mig_cluster()
    cluster.put(operand_pod("nvidia-dcgm-exporter", "gpu-b",
                            mains={"nvidia-dcgm-exporter": "waiting:CrashLoopBackOff"}))
    cluster.log(MIG, "gpu-b", MIG, PARTED_LINES[:2])
    finding = of_rule(analyse(cluster, tmp=tmp_path), "OP014")["OP014:gpu-b"]
    assert "The bundle names no holder" in finding.summary


def test_quiet_when_the_mig_change_applied(tmp_path: Path) -> None:
    cluster = _mig_cluster()
    cluster.log(MIG, "gpu-a", MIG, [
        'time="2026-11-29T13:00:00Z" level=info msg="Updating to MIG config: all-1g.10gb"',
        'time="2026-11-29T13:00:09Z" level=info msg="Successfully updated to MIG config: '
        'all-1g.10gb"'])
    cluster.files["nodes/gpu-a/host/gpu-processes.txt"] = PROCESSES
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP014") == {}
    assert status(report, "OP014").value == "passed"
