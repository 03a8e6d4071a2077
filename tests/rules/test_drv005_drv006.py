"""DRV005 (automatic kernel upgrades, kernel drift) and DRV006 (nvidia-smi GPU health)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kit import analyse
from kit import findings as of
from kit import verdict as status
from kit.driver import H100, ecc_legacy, ecc_new, gpu_node, remap, smi_gpu, smi_xml, throttle
from kit.driver import bundle_files as drv_files

AUTO = ('==> /etc/apt/apt.conf.d/20auto-upgrades <==\n'
        'APT::Periodic::Update-Package-Lists "1";\n'
        'APT::Periodic::Unattended-Upgrade "1";\n')
BLACKLIST = ('==> /etc/apt/apt.conf.d/50unattended-upgrades <==\n'
             'Unattended-Upgrade::Package-Blacklist {\n'
             '\t"linux-";\n'
             '};\n')
OS_RELEASE = 'NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\n'


def _uname(release: str, host: str) -> str:
    return (f"Linux {host} {release} #89-Ubuntu SMP PREEMPT_DYNAMIC Sat Oct 11 01:02:03 UTC "
            "2025 x86_64 x86_64 x86_64 GNU/Linux\n")


def _policy(driver: bool) -> dict[str, Any]:
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"},
            "spec": {"driver": {"enabled": driver}}, "status": {"state": "ready"}}


def _hosts(kernels: dict[str, str], apt: dict[str, str]) -> dict[str, str]:
    files = {}
    for name, release in kernels.items():
        files[f"nodes/{name}/host/uname.txt"] = _uname(release, name)
        files[f"nodes/{name}/host/os-release"] = OS_RELEASE
        files[f"nodes/{name}/host/unattended-upgrades.txt"] = apt.get(name, "")
    return files


def test_unattended_upgrades_and_kernel_drift_in_the_driver_pool(tmp_path: Path) -> None:
    kernels = {"gpu-a": "6.8.0-88-generic", "gpu-b": "6.8.0-88-generic",
               "gpu-c": "6.8.0-90-generic"}
    apt = {"gpu-a": AUTO, "gpu-b": AUTO + BLACKLIST, "gpu-c": AUTO}
    report = analyse(drv_files([gpu_node(n) for n in kernels], _hosts(kernels, apt),
                    policies=[_policy(True)]), tmp=tmp_path)
    found = of(report, "DRV005")
    assert sorted(found) == ["DRV005:gpu-a", "DRV005:gpu-c", "DRV005:kernels/ubuntu22.04"]
    node_a = found["DRV005:gpu-a"]
    assert node_a.evidence[0].path == "nodes/gpu-a/host/unattended-upgrades.txt"
    assert node_a.evidence[0].line == 3
    drift = found["DRV005:kernels/ubuntu22.04"]
    assert drift.nodes == ["gpu-a", "gpu-b", "gpu-c"]
    assert "6.8.0-88-generic: gpu-a, gpu-b; 6.8.0-90-generic: gpu-c" in drift.summary
    assert drift.caused_by == ["DRV005:gpu-a", "DRV005:gpu-c"]
    assert ("nodes/gpu-c/host/uname.txt", 1) in [(e.path, e.line) for e in drift.evidence]


H100_A = "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a"
H100_B = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"


def test_h100_with_xid_94_95_and_pending_row_remap(tmp_path: Path) -> None:
    smi = smi_xml(
        smi_gpu("00000000:01:00.0", H100_A, H100, ecc_new(volatile_dram=1, aggregate_dram=1)
                + remap(pending="Yes")),
        smi_gpu("00000000:02:00.0", H100_B, H100, ecc_new() + remap()),
    )
    dmesg = (
        "[ 5000.100000] NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User "
        "Channel (0x9). RST: No, D-RST: No\n"
        "[ 5001.200000] NVRM: Xid (PCI:0000:01:00): 95, pid=7062, Uncontained: LTC TAG "
        "(0x2,0x0). RST: Yes, D-RST: No\n"
    )
    report = analyse(drv_files([gpu_node("gpu-h", 8, 7)],
                    {"nodes/gpu-h/nvidia-smi.xml": smi, "nodes/gpu-h/dmesg.txt": dmesg}),
                     tmp=tmp_path)
    xid = of(report, "DRV001")
    assert list(xid) == ["DRV001:gpu-h/0000:01:00.0"]
    assert xid["DRV001:gpu-h/0000:01:00.0"].severity.value == "high"
    assert "Xid 94" in xid["DRV001:gpu-h/0000:01:00.0"].summary
    assert "Lead: Xid 95" in xid["DRV001:gpu-h/0000:01:00.0"].summary
    health = of(report, "DRV006")
    assert list(health) == ["DRV006:gpu-h/0000:01:00.0"]
    finding = health["DRV006:gpu-h/0000:01:00.0"]
    assert finding.severity.value == "high"
    assert f"GPU 0 ({H100}, {H100_A})" in finding.summary
    assert "row remapping pending" in finding.summary
    assert "uncorrectable ECC errors since the driver loaded (dram_uncorrectable 1)" \
        in finding.summary
    pending_line = smi.splitlines().index("\t\t\t<remapped_row_pending>Yes</remapped_row_pending>")
    located = [(e.path, e.line) for e in finding.evidence]
    assert ("nodes/gpu-h/nvidia-smi.xml", pending_line + 1) in located
    assert "DRV001:gpu-h/0000:01:00.0" in finding.causes
    assert "DRV006:gpu-h/0000:01:00.0" in xid["DRV001:gpu-h/0000:01:00.0"].caused_by


@pytest.mark.parametrize(("extra", "severity", "text"), [
    (remap(failure="Yes"), "critical", "row remapping failed"),
    (ecc_new(threshold="Yes"), "critical", "SRAM uncorrectable errors passed"),
    (ecc_new(aggregate_dram=4), "medium", "lifetime (dram_uncorrectable 4)"),
    (ecc_legacy(2), "high", "since the driver loaded (total 2)"),
    ("\t\t<retired_pages>\n\t\t\t<pending_retirement>Yes</pending_retirement>\n"
     "\t\t</retired_pages>\n", "high", "retired pages pending"),
    ("\t\t<gpu_recovery_action>Drain and Reset</gpu_recovery_action>\n", "high",
     "gpu_recovery_action: Drain and Reset"),
    ("\t\t<gpu_reset_status>\n\t\t\t<reset_required>Yes</reset_required>\n"
     "\t\t</gpu_reset_status>\n", "high", "reset_required: Yes"),
    ("\t\t<fabric>\n\t\t\t<state>In Progress</state>\n\t\t\t<status>N/A</status>\n"
     "\t\t</fabric>\n", "high", "fabric registration not complete (state In Progress)"),
    ("\t\t<fabric>\n\t\t\t<state>Completed</state>\n\t\t\t<status>Failure</status>\n"
     "\t\t</fabric>\n", "high", "status Failure"),
    (throttle("event", hw_thermal_slowdown=True), "medium", "hardware thermal slowdown"),
    (throttle("throttle", hw_power_brake_slowdown=True)
     + "\t\t<power_readings>\n\t\t\t<power_draw>301.20 W</power_draw>\n"
       "\t\t\t<power_limit>400.00 W</power_limit>\n\t\t</power_readings>\n",
     "medium", "power brake (external power-supply signal) (301.20 W of 400.00 W)"),
])
def test_each_health_reading_in_every_schema(tmp_path: Path, extra: str, severity: str,
                                             text: str) -> None:
    smi = smi_xml(smi_gpu("00000000:3B:00.0", H100_A, H100, extra))
    report = analyse(drv_files([gpu_node("gpu-h")], {"nodes/gpu-h/nvidia-smi.xml": smi}),
                     tmp=tmp_path)
    finding = of(report, "DRV006")["DRV006:gpu-h/0000:3b:00.0"]
    assert finding.severity.value == severity
    assert text in finding.summary
    assert all(e.line is not None for e in finding.evidence)


def test_healthy_gpus_and_normal_clock_reasons_are_quiet(tmp_path: Path) -> None:
    healthy = (ecc_new() + remap()
               + "\t\t<gpu_recovery_action>None</gpu_recovery_action>\n"
               + "\t\t<fabric>\n\t\t\t<state>N/A</state>\n\t\t\t<status>N/A</status>\n"
               + "\t\t</fabric>\n" + throttle("event", gpu_idle=True, sw_power_cap=True))
    smi = smi_xml(smi_gpu("00000000:3B:00.0", H100_A, H100, healthy))
    report = analyse(drv_files([gpu_node("gpu-h")], {"nodes/gpu-h/nvidia-smi.xml": smi}),
                     tmp=tmp_path)
    assert not of(report, "DRV006")
    assert status(report, "DRV006") == ("passed", None)
