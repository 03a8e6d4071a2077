"""DRV007: idle but not empty — allocated GPUs at ~0 % holding framebuffer."""

from __future__ import annotations

from pathlib import Path

from kit import analyse, findings
from kit.gate import bundle_files as gate_files
from kit.gate import gpu_node, smi_gpu, smi_xml, workload

from analyzers.results.models import Severity

SMI = "nodes/gpu-a/nvidia-smi.xml"


def test_idle_gpu_holding_memory_is_flagged(tmp_path: Path) -> None:
    xml = smi_xml(smi_gpu(product="NVIDIA GeForce RTX 4090", brand="GeForce", used_mib=14029,
                          total_mib=24564, processes=[(90210, "python", 14000)]),
                  smi_gpu(bus_id="00000000:5E:00.0", util="87 %", used_mib=20000))
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 2, 2)],
                 pods=[workload("notebook", "gpu-a", gpus=1),
                       workload("trainer", "gpu-a", gpus=1)],
                 files={SMI: xml}), tmp=tmp_path)
    found = findings(report, "DRV007")
    assert list(found) == ["DRV007:gpu-a/0000:3b:00.0"]
    finding = found["DRV007:gpu-a/0000:3b:00.0"]
    assert finding.severity is Severity.LOW
    assert finding.nodes == ["gpu-a"]
    assert ("On gpu-a, NVIDIA GeForce RTX 4090 00000000:3B:00.0 (GPU 0) shows 0 % utilisation "
            "while holding 13.7 GiB of 24.0 GiB of framebuffer, drawing 21 W: idle, not empty."
            ) in finding.summary
    assert "python (pid 90210, 14000 MiB)" in finding.summary
    assert "allocated to ml/notebook, ml/trainer" in finding.summary
    assert finding.evidence[0].path == SMI
    assert finding.evidence[0].line == 8  # <gpu id="00000000:3B:00.0">


def test_busy_empty_or_unallocated_gpus_are_quiet(tmp_path: Path) -> None:
    busy = smi_xml(smi_gpu(util="63 %"))
    empty = smi_xml(smi_gpu(used_mib=300))
    idle = smi_xml(smi_gpu())
    mig = smi_xml(smi_gpu(util="N/A"))
    holder = [workload("h", "gpu-a", gpus=1)]
    for name, xml, pods in (("busy", busy, holder), ("empty", empty, holder),
                            ("nobody", idle, [workload("web", "gpu-a")]),
                            ("done", idle, [workload("h", "gpu-a", gpus=1, phase="Succeeded")]),
                            ("mig", mig, holder)):
        report = analyse(gate_files(nodes=[gpu_node("gpu-a", 1, 1)], pods=pods,
                     files={SMI: xml}), tmp=tmp_path / name)
        assert findings(report, "DRV007") == {}, name


def test_full_branch_of_sc001_links_the_idle_gpu(tmp_path: Path) -> None:
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 1, 1)],
                 pods=[workload("trainer", gpus=1), workload("notebook", "gpu-a", gpus=1)],
                 files={SMI: smi_xml(smi_gpu())}), tmp=tmp_path)
    sc001 = report.by_id()["SC001:ml/trainer"]
    assert sc001.title == "GPU pod pending: every node that could hold it is full"
    assert sc001.caused_by == ["DRV007:gpu-a/0000:3b:00.0"]
    assert "1 of those GPUs show ~0 % utilisation while holding memory (DRV007)" in sc001.summary
