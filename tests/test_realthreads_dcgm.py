"""OP013 on bundles built from real public threads not used by its own tests.

- An exporter 2.x crashing on a Quadro P5000 (no profiling on that GPU):
  ``level=fatal msg="Error watching fields: Profiling is not supported for this group
  of GPUs or GPU"``, https://github.com/NVIDIA/gpu-monitoring-tools/issues/119;
- the same exporter line with DCGM's other wording for it, ``This request is serviced
  by a module of DCGM that is not currently loaded``,
  https://github.com/NVIDIA/gpu-monitoring-tools/issues/141;
- an exporter 3.3.5 failing at its first start on the module error,
  https://github.com/NVIDIA/dcgm-exporter/issues/330.
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse, paths
from kit import findings as of_rule
from kit.cluster import Cluster, operand_pod

from analyzers.results.models import Finding

EXPORTER = "nvidia-dcgm-exporter"


def _crashing(tmp_path: Path, node: str, product: str | None, lines: list[str]
              ) -> tuple[dict[str, Finding], str, dict[str, Finding]]:
    cluster = Cluster()
    if product is not None:
        cluster.nodes[node]["metadata"]["labels"]["nvidia.com/gpu.product"] = product
    cluster.put(operand_pod(EXPORTER, node, mains={EXPORTER: "waiting:CrashLoopBackOff"},
                            restarts=9))
    log = cluster.log(EXPORTER, node, EXPORTER, lines, previous=True)
    report = analyse(cluster, tmp=tmp_path)
    return of_rule(report, "OP013"), log, of_rule(report, "OP001")


def test_quadro_without_profiling_crash_loops(tmp_path: Path) -> None:
    found, log, op001 = _crashing(tmp_path, "gpu-a", "Quadro-P5000", [
        'time="2020-10-27T00:53:32Z" level=info msg="Starting dcgm-exporter"',
        'time="2020-10-27T00:53:32Z" level=info msg="DCGM successfully initialized!"',
        'time="2020-10-27T00:53:32Z" level=fatal msg="Error watching fields: Profiling is not '
        'supported for this group of GPUs or GPU"',
    ])
    assert sorted(found) == ["OP013:gpu-a"]
    finding = found["OP013:gpu-a"]
    assert finding.nodes == ["gpu-a"]
    assert "the GPU (Quadro-P5000) does not support DCGM profiling" in finding.summary
    assert (log, 3) in paths(finding)
    assert op001["OP001:gpu-a"].caused_by == ["OP013:gpu-a"]


def test_module_not_loaded_is_the_same_cause(tmp_path: Path) -> None:
    found, log, _ = _crashing(tmp_path, "gpu-b", None, [  # the thread names no GPU model
        'time="2020-12-15T11:28:40Z" level=info msg="Starting dcgm-exporter"',
        'time="2020-12-15T11:28:40Z" level=info msg="DCGM successfully initialized!"',
        'time="2020-12-15T11:28:40Z" level=fatal msg="Error watching fields: This request is '
        'serviced by a module of DCGM that is not currently loaded"',
    ])
    assert sorted(found) == ["OP013:gpu-b"]
    assert "does not support DCGM profiling" in found["OP013:gpu-b"].summary
    assert (log, 3) in paths(found["OP013:gpu-b"])


def test_module_error_at_first_start(tmp_path: Path) -> None:
    # the thread names no GPU model: the node has no product label here
    found, log, _ = _crashing(tmp_path, "gpu-a", None, [
        'time="2024-05-23T08:12:40Z" level=info msg="Starting dcgm-exporter"',
        'time="2024-05-23T08:12:41Z" level=info msg="DCGM successfully initialized!"',
        'time="2024-05-23T08:13:14Z" level=fatal msg="Failed to watch metrics: Error watching '
        'fields: The third-party Profiling module returned an unrecoverable error"',
    ])
    assert sorted(found) == ["OP013:gpu-a"]
    assert (log, 3) in paths(found["OP013:gpu-a"])
    assert "another DCGM host engine or a profiler holds" in found["OP013:gpu-a"].summary
