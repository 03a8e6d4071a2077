"""OP013: DCGM profiling metrics cannot be collected (real exporter lines, sources in
analyzers/data/signatures.toml)."""

from __future__ import annotations

from pathlib import Path

from kit import analyse, paths
from kit import findings as of_rule
from kit.cluster import Cluster, operand_pod

from analyzers.results.models import Severity

STARTED = ['time="2023-08-01T02:47:12Z" level=info msg="Starting dcgm-exporter"',
           'time="2023-08-01T02:47:13Z" level=info msg="DCGM successfully initialized!"']
# https://github.com/NVIDIA/dcgm-exporter/issues/148
MODULE_ERROR = ('time="2023-08-01T02:47:46Z" level=fatal msg="Failed to watch metrics: Error '
                'watching fields: The third-party Profiling module returned an unrecoverable '
                'error"')
# https://github.com/NVIDIA/dcgm-exporter/issues/327
NOT_SUPPORTED = ('time="2024-05-24T04:53:22Z" level=info msg="Not collecting DCP metrics: Error '
                 'getting supported metrics: Profiling is not supported for this group of GPUs '
                 'or GPU"')


def test_module_error_crash_loop_fires_and_explains_op001(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-dcgm-exporter", "gpu-a",
                            mains={"nvidia-dcgm-exporter": "waiting:CrashLoopBackOff"},
                            restarts=12))
    cluster.put(operand_pod("nvidia-dcgm", "gpu-a"))
    log = cluster.log("nvidia-dcgm-exporter", "gpu-a", "nvidia-dcgm-exporter",
                      [*STARTED, MODULE_ERROR], previous=True)
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP013")
    assert sorted(found) == ["OP013:gpu-a"]
    op = found["OP013:gpu-a"]
    assert op.severity is Severity.MEDIUM
    assert op.nodes == ["gpu-a"]
    assert (log, 3) in paths(op)
    assert "nvidia-dcgm-gpu-a runs a host engine" in op.summary
    assert "CrashLoopBackOff" in op.summary
    assert "spec.nodeName=gpu-a" in op.remediation
    stack = of_rule(report, "OP001")["OP001:gpu-a"]
    assert stack.caused_by == ["OP013:gpu-a"]
    assert "see OP013" in stack.summary
    assert of_rule(report, "OP004") == {}


def test_unsupported_gpu_on_a_running_exporter_is_low(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.nodes["gpu-b"]["metadata"]["labels"]["nvidia.com/gpu.product"] = \
        "NVIDIA-GeForce-RTX-3090"
    log = cluster.log("nvidia-dcgm-exporter", "gpu-b", "nvidia-dcgm-exporter",
                      [*STARTED, NOT_SUPPORTED])
    found = of_rule(analyse(cluster, tmp=tmp_path), "OP013")
    assert sorted(found) == ["OP013:gpu-b"]
    op = found["OP013:gpu-b"]
    assert op.severity is Severity.LOW
    assert "the GPU (NVIDIA-GeForce-RTX-3090) does not support DCGM profiling" in op.summary
    assert "runs without the DCGM_FI_PROF_* metrics" in op.summary
    assert (log, 3) in paths(op)


def test_an_old_run_of_a_healthy_exporter_is_history(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.log("nvidia-dcgm-exporter", "gpu-a", "nvidia-dcgm-exporter",
                [*STARTED, MODULE_ERROR], previous=True)
    assert of_rule(analyse(cluster, tmp=tmp_path), "OP013") == {}
