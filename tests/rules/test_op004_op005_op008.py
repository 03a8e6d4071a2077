"""OP004 (DCGM exporter), OP005 (Fabric Manager), OP008 (device plugin)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from kit import analyse, paths, status
from kit import findings as of_rule
from kit.cluster import Cluster, gpu_node, operand_pod, pod_name, smi_xml
from kit.objects import DUMP_WITHOUT_NVIDIA

from analyzers.facts import Facts
from analyzers.results.models import RuleStatus, Severity
from analyzers.rule import Context
from analyzers.rules.op.OP008 import DevicePluginUnhealthy
from bundle import open_bundle

DP = "nvidia-device-plugin-daemonset"
UUID = "GPU-3b6ec030-5adc-1847-e155-79f635584b4e"

# ----------------------------------------------------------------------------- OP004


def _exporter_cluster(dcgm: str | None) -> Cluster:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-dcgm-exporter", "gpu-a",
                            mains={"nvidia-dcgm-exporter": "waiting:CrashLoopBackOff"},
                            restarts=12, env={"DCGM_REMOTE_HOSTENGINE_INFO": "nvidia-dcgm:5555"}))
    if dcgm is not None:
        cluster.put(operand_pod("nvidia-dcgm", "gpu-a", mains={"nvidia-dcgm-ctr": dcgm}))
    cluster.log("nvidia-dcgm-exporter", "gpu-a", "nvidia-dcgm-exporter", [
        'time="2022-09-29T12:09:09Z" level=info msg="Starting dcgm-exporter"',
        'time="2022-09-29T12:09:09Z" level=info msg="Attemping to connect to remote hostengine '
        'at nvidia-dcgm:5555"',
        'time="2022-09-29T12:09:14Z" level=fatal msg="Error connecting to nv-hostengine: Host '
        'engine connection invalid/disconnected"',
    ], previous=True)
    return cluster


def test_exporter_cannot_reach_missing_dcgm(tmp_path: Path) -> None:
    report = analyse(_exporter_cluster(None), tmp=tmp_path)
    found = of_rule(report, "OP004")
    assert sorted(found) == ["OP004:gpu-a"]
    op = found["OP004:gpu-a"]
    assert "cannot reach DCGM at nvidia-dcgm:5555: " in op.summary
    assert "No nvidia-dcgm pod runs on the node" in op.summary
    log = "logs/gpu-operator/nvidia-dcgm-exporter-gpu-a/nvidia-dcgm-exporter.previous.log"
    assert (log, 3) in paths(op)
    assert op.severity is Severity.MEDIUM
    op1 = of_rule(report, "OP001")["OP001:gpu-a"]
    assert op1.caused_by == ["OP004:gpu-a"]
    assert op1.severity is Severity.MEDIUM


def test_exporter_with_running_dcgm_points_at_the_network(tmp_path: Path) -> None:
    op = of_rule(analyse(_exporter_cluster("running"), tmp=tmp_path), "OP004")["OP004:gpu-a"]
    assert "nvidia-dcgm-gpu-a) is Running: check the address and NetworkPolicies" in op.summary


# ----------------------------------------------------------------------------- OP005


def _nvswitch_cluster() -> Cluster:
    """gpu-a: HGX with a host driver and no Fabric Manager; CUDA validation fails."""
    cluster = Cluster()
    del cluster.pods[pod_name("nvidia-driver-daemonset", "gpu-a")]
    cluster.put(operand_pod("nvidia-operator-validator", "gpu-a",
                            inits={"cuda-validation": "running", "plugin-validation": "new"}))
    cluster.put(operand_pod("nvidia-cuda-validator", "gpu-a",
                            inits={"cuda-validation": "waiting:CrashLoopBackOff"},
                            mains={"nvidia-cuda-validator": "waiting:PodInitializing"}))
    log = cluster.log("nvidia-cuda-validator", "gpu-a", "cuda-validation", [
        "[Vector addition of 50000 elements]",
        "Failed to allocate device vector A (error code system not yet initialized)!",
    ], previous=True)
    cluster.files["expected-log"] = log
    gpus = [{"bus": f"00000000:{b}:00.0", "uuid": f"GPU-0000000{i}-2222-3333-4444-555555555555",
             "product": "NVIDIA H100 80GB HBM3", "device_id": "233010DE",
             "fabric_state": "In Progress", "fabric_status": "N/A"}
            for i, b in enumerate(("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"))]
    cluster.files["nodes/gpu-a/nvidia-smi.xml"] = smi_xml(gpus)
    return cluster


def test_system_not_yet_initialized_on_nvswitch_node_causes_op001(tmp_path: Path) -> None:
    cluster = _nvswitch_cluster()
    log = cluster.files.pop("expected-log")
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP005")
    assert sorted(found) == ["OP005:gpu-a"]
    op5 = found["OP005:gpu-a"]
    assert op5.severity is Severity.CRITICAL
    # and the CUDA validator's failing init container, Kubernetes' record of it
    assert [c for c in op5.causes if not c.startswith("DRV006:")] == [
        "CMP006:gpu-operator/nvidia-cuda-validator", "OP001:gpu-a"]
    assert all(c.startswith("DRV006:gpu-a/") for c in op5.causes
               if c not in ("OP001:gpu-a", "CMP006:gpu-operator/nvidia-cuda-validator"))
    assert "CUDA fails with 'system not yet initialized'" in op5.summary
    assert "8 of 8 GPU(s) not registered with the fabric (state In Progress)" in op5.summary
    assert "the host has no nvidia-fabricmanager journal" in op5.summary
    assert (log, 2) in paths(op5)
    assert ("nodes/gpu-a/nvidia-smi.xml", 15) in paths(op5)
    assert ("nodes/gpu-a/nvidia-smi.xml", 28) in paths(op5)  # the second GPU
    op1 = of_rule(report, "OP001")["OP001:gpu-a"]
    assert op1.caused_by == ["OP005:gpu-a"]
    assert "stops at the cuda stage" in op1.summary
    assert (log, 2) in paths(op1)
    assert "systemctl enable --now nvidia-fabricmanager" in op5.remediation


def test_fabric_manager_journal_errors(tmp_path: Path) -> None:
    cluster = Cluster()
    lines = [
        {"MESSAGE": "Starting NVIDIA fabric manager service...", "_PID": "1"},
        {"MESSAGE": "fabric manager NVIDIA GPU driver interface version 550.127.05 doesn't "
                    "match with driver version 550.120. Please update with the matching "
                    "NVIDIA driver package.", "_PID": "104230"},
        {"MESSAGE": "nvidia-fabricmanager.service: Control process exited, code=exited, "
                    "status=1/FAILURE", "_PID": "1"},
    ]
    journal = "nodes/gpu-b/journal/nvidia-fabricmanager.jsonl"
    cluster.files[journal] = "".join(orjson.dumps(line).decode() + "\n" for line in lines)
    report = analyse(cluster, tmp=tmp_path)
    op = of_rule(report, "OP005")["OP005:gpu-b"]
    assert op.severity is Severity.HIGH
    assert "Fabric Manager reports: fabric manager NVIDIA GPU driver interface version " \
           "550.127.05 doesn't match" in op.summary
    assert (journal, 2) in paths(op) and (journal, 3) in paths(op)
    assert "OP001:gpu-b" not in report.by_id()


def test_registered_fabric_and_pcie_nodes_are_quiet(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.files["nodes/gpu-a/nvidia-smi.xml"] = smi_xml(
        [{"fabric_state": "Completed", "fabric_status": "Success"}])
    cluster.files["nodes/gpu-b/nvidia-smi.xml"] = smi_xml([{"fabric_state": "N/A"}])
    cluster.files["nodes/gpu-b/journal/nvidia-fabricmanager.jsonl"] = orjson.dumps(
        {"MESSAGE": "request to query NVSwitch device information from NVSwitch driver failed "
                    "with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]"}).decode() + "\n"
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP005") == {}
    assert status(report, "OP005") is RuleStatus.PASSED


# ----------------------------------------------------------------------------- OP008

NVML_WORDINGS = {
    "v0.12": ["2022/05/13 23:09:23 Retreiving plugins.",
              "2022/05/13 23:09:23 Failed to initialize NVML: could not load NVML library."],
    "v0.14": ["I0417 07:12:59.758810       1 main.go:256] Retreiving plugins.",
              "I0417 07:12:59.758922       1 factory.go:107] Detected non-NVML platform: could "
              "not load NVML library: libnvidia-ml.so.1: cannot open shared object file: No "
              "such file or directory",
              "E0417 07:12:59.758986       1 factory.go:115] Incompatible platform detected"],
    "v0.17": ["I0506 17:45:45.421854       1 main.go:356] Retrieving plugins.",
              "E0506 17:45:45.421956       1 factory.go:112] Incompatible strategy detected auto",
              "E0506 17:45:45.421965       1 factory.go:113] If this is a GPU node, did you "
              "configure the NVIDIA Container Toolkit?"],
    "v0.20": ["I0820 09:12:41.531000       1 main.go:356] Retrieving plugins.",
              "W0820 09:12:41.532118       1 plugin-manager.go:108] Unsupported platform "
              "detected; defaulting to nvml",
              "E0820 09:12:41.532200       1 factory.go:99] Failed to initialize NVML: "
              "ERROR_LIBRARY_NOT_FOUND."],
}


@pytest.mark.parametrize("version", sorted(NVML_WORDINGS))
def test_nvml_missing_in_every_version_wording(tmp_path: Path, version: str) -> None:
    cluster = Cluster()
    cluster.put(operand_pod(DP, "gpu-a", mains={"nvidia-device-plugin": "waiting:"
                                                "CrashLoopBackOff"}, restarts=30))
    lines = NVML_WORDINGS[version]
    log = cluster.log(DP, "gpu-a", "nvidia-device-plugin", [
        "I0101 00:00:00.000000       1 main.go:1] Starting FS watcher.",
        "I0101 00:00:00.000000       1 main.go:2] Loading configuration.", *lines],
        previous=True)
    cluster.nodes["gpu-a"] = gpu_node("gpu-a", gpus=0)
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP008")
    assert sorted(found) == ["OP008:gpu-a"]
    op = found["OP008:gpu-a"]
    assert "it cannot load NVML (libnvidia-ml.so.1)" in op.summary or \
        "NVML failed to initialise" in op.summary
    marker = "Retreiving" if "Retreiving" in lines[0] else "Retrieving"
    assert f"'{marker} plugins.' line dates the plugin" in op.summary
    assert (log, 4) in paths(op)  # the first NVML line after the marker
    assert "no nvidia.com/* resource in capacity" in op.summary
    assert op.caused_by == []


def test_nvml_missing_with_no_runtime_links_rt001(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.files["nodes/gpu-a/containerd/config-dump.toml"] = DUMP_WITHOUT_NVIDIA
    cluster.put(operand_pod(DP, "gpu-a", mains={"nvidia-device-plugin": "error"}))
    cluster.log(DP, "gpu-a", "nvidia-device-plugin", NVML_WORDINGS["v0.17"])
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP008")["OP008:gpu-a"]
    assert op.caused_by == ["RT001:gpu-a"]


def test_unhealthy_device_links_the_gpu_by_pci_address(tmp_path: Path) -> None:
    cluster = Cluster()
    node = gpu_node("gpu-a", gpus=1)
    node["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    cluster.nodes["gpu-a"] = node
    log = cluster.log(DP, "gpu-a", "nvidia-device-plugin", [
        "I0809 13:30:00.000000       1 server.go:149] Registered device plugin for "
        "'nvidia.com/gpu' with Kubelet",
        f"I0809 13:32:51.873541       1 health.go:185] XidCriticalError: Xid=79 on Device="
        f"{UUID}; marking device as unhealthy.",
        f"I0809 13:32:51.873567       1 server.go:292] 'nvidia.com/gpu' device marked "
        f"unhealthy: {UUID}",
    ])
    cluster.files["nodes/gpu-a/nvidia-smi.xml"] = smi_xml([{"uuid": UUID,
                                                             "bus": "00000000:3B:00.0"}])
    cluster.files["nodes/gpu-a/dmesg.txt"] = (
        "2026-11-29T13:32:50,000000+00:00 NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
        "name=<unknown>, GPU has fallen off the bus.\n")
    files = cluster.bundle_files()
    from kit.bundles import write_dir

    with open_bundle(write_dir(tmp_path / "b", files)) as bundle:
        facts = Facts(bundle)
        raw = list(DevicePluginUnhealthy().check(Context(bundle, facts, [])))
    report = analyse(tmp_path / "b")
    assert [f.id for f in raw] == ["OP008:gpu-a"]
    assert raw[0].caused_by == ["DRV001:gpu-a/0000:3b:00.0", "DRV002:gpu-a/0000:3b:00.0"]
    op = of_rule(report, "OP008")["OP008:gpu-a"]
    assert f"it marked 1 GPU(s) unhealthy ({UUID})" in op.summary
    assert "nvidia.com/gpu capacity 1, allocatable 0" in op.summary
    assert (log, 2) in paths(op) and (log, 3) in paths(op)
    present = set(report.by_id())
    assert set(op.caused_by) == {i for i in raw[0].caused_by if i in present}


def test_plugin_waiting_for_an_earlier_stage_points_at_op001(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod("nvidia-operator-validator", "gpu-b",
                            inits={"driver-validation": "running", "toolkit-validation": "new",
                                   "cuda-validation": "new", "plugin-validation": "new"}))
    cluster.put(operand_pod(DP, "gpu-b", inits={"toolkit-validation": "running"}))
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP008")["OP008:gpu-b"]
    assert "the node's operands stop at the driver stage (see OP001)" in op.summary
    assert op.caused_by == ["OP001:gpu-b"]


def test_running_plugin_on_a_node_that_advertises_nothing(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.nodes["gpu-b"] = gpu_node("gpu-b", gpus=0)
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP008")["OP008:gpu-b"]
    assert "it is Running but the node advertises no GPU resource" in op.summary


def test_disabled_plugin_fires_only_when_a_pod_needs_gpus(tmp_path: Path) -> None:
    cluster = Cluster()
    del cluster.pods[pod_name(DP, "gpu-b")]
    assert cluster.policies is not None
    cluster.policies[0]["spec"]["devicePlugin"] = {"enabled": False}
    cluster.nodes["gpu-b"] = gpu_node("gpu-b", gpus=0)
    cluster.pods["ml/wants-gpu"] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "wants-gpu", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "image": "cuda",
                                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Pending"}}
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP008")
    assert sorted(found) == ["OP008:gpu-b"]
    assert "devicePlugin.enabled=false" in found["OP008:gpu-b"].summary
    assert found["OP008:gpu-b"].evidence[0].pointer.endswith("/spec/devicePlugin/enabled")


def test_healthy_and_disabled_plugins_are_quiet(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.log(DP, "gpu-a", "nvidia-device-plugin", [
        "I0506 17:45:45.421854       1 main.go:356] Retrieving plugins.",
        "I0506 17:45:45.521854       1 server.go:149] Registered device plugin for "
        "'nvidia.com/gpu' with Kubelet"])
    # a crash long ago: the previous log no longer matters once the plugin runs again
    cluster.log(DP, "gpu-a", "nvidia-device-plugin", NVML_WORDINGS["v0.17"], previous=True)
    del cluster.pods[pod_name(DP, "gpu-b")]
    assert cluster.policies is not None
    cluster.policies[0]["spec"]["devicePlugin"] = {"enabled": False}
    cluster.nodes["gpu-b"] = gpu_node("gpu-b", gpus=0)
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP008") == {}
    assert status(report, "OP008") is RuleStatus.PASSED
