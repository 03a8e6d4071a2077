"""OP012: the host's driver and the ClusterPolicy's driver setting disagree.

Real threads behind the scenarios:
- driver container on a host that already loads a driver (the driver manager's
  ``nvidia driver module is already loaded with refcount 236``, then the container
  restarting): https://github.com/NVIDIA/gpu-operator/issues/367 and MicroK8s with a
  host driver: https://github.com/canonical/microk8s/issues/2634; the wording ``Could not
  unload NVIDIA driver kernel modules, driver is in use`` is the driver container's own
  (signature ``driver-module-in-use``);
- the operator standing its container down on such nodes with the label
  ``nvidia.com/gpu.deploy.driver=pre-installed`` (the GPU Operator release notes: "NVIDIA
  driver container will auto-disable itself on the node with pre-installed drivers").
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse, paths, status
from kit import findings as of_rule
from kit.cluster import Cluster, cluster_policy, operand_pod

DRIVER = "nvidia-driver-daemonset"
CRASHING = {"nvidia-driver-ctr": "waiting:CrashLoopBackOff"}
HOST_535 = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 "
            "01:15:15 UTC 2023\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n")
MODULES_WITH_NVIDIA = (
    "ext4 1003520 1 - Live 0x0000000000000000\n"
    "nvidia_uvm 2076672 4 - Live 0x0000000000000000 (PO)\n"
    "nvidia 104071168 28 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (PO)\n"
)
MODULES_WITHOUT_NVIDIA = (
    "ext4 1003520 1 - Live 0x0000000000000000\n"
    "overlay 212992 12 - Live 0x0000000000000000\n"
)


def _host(cluster: Cluster, node: str, modules: str, version: str | None) -> None:
    cluster.files[f"nodes/{node}/host/modules.txt"] = modules
    if version is not None:
        cluster.files[f"nodes/{node}/host/nvidia-driver-version.txt"] = version


def test_container_cannot_unload_the_host_driver(tmp_path: Path) -> None:
    cluster = Cluster()
    _host(cluster, "gpu-a", MODULES_WITH_NVIDIA, HOST_535)
    _host(cluster, "gpu-b", MODULES_WITH_NVIDIA, None)
    cluster.put(operand_pod(DRIVER, "gpu-a", mains=CRASHING,
                            restarts=12))
    log = cluster.log(DRIVER, "gpu-a", "nvidia-driver-ctr", [
        "Unloading NVIDIA driver kernel modules...",
        "Could not unload NVIDIA driver kernel modules, driver is in use",
    ])
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP012")
    assert sorted(found) == ["OP012:gpu-a"]
    finding = found["OP012:gpu-a"]
    assert finding.severity.value == "high"
    assert finding.nodes == ["gpu-a"]
    assert finding.summary.startswith("On gpu-a, an NVIDIA driver 535.104.05 is already "
                                      "loaded outside the driver container")
    assert "cannot unload the loaded module ('driver is in use')" in finding.summary
    assert paths(finding)[:3] == [("nodes/gpu-a/host/modules.txt", 3),
                                  ("nodes/gpu-a/host/nvidia-driver-version.txt", 1),
                                  (log, 2)]
    assert paths(finding)[3][0] == "cluster/clusterpolicies.json"
    assert "OP001:gpu-a" in finding.causes
    assert "driver.enabled=false" in finding.remediation


def test_host_version_differs_and_the_driver_pod_fails(tmp_path: Path) -> None:
    cluster = Cluster(policies=[cluster_policy(spec={"driver": {"enabled": True,
                                                                "version": "570.148.08"}})])
    _host(cluster, "gpu-b", MODULES_WITH_NVIDIA, HOST_535)
    cluster.put(operand_pod(DRIVER, "gpu-b", inits={"k8s-driver-manager": "error"}))
    found = of_rule(analyse(cluster, tmp=tmp_path), "OP012")
    assert sorted(found) == ["OP012:gpu-b"]
    assert "the host runs 535.104.05 while the policy asks for 570.148.08, and the driver " \
           "pod is Init:Error" in found["OP012:gpu-b"].summary


def test_quiet_when_the_operator_owns_the_driver_or_saw_the_host_one(tmp_path: Path) -> None:
    cluster = Cluster(policies=[cluster_policy(spec={"driver": {"enabled": True,
                                                                "version": "570.148.08"}})])
    # gpu-a: the container's own driver (same version, pod running).
    _host(cluster, "gpu-a", MODULES_WITH_NVIDIA,
          HOST_535.replace("535.104.05", "570.148.08"))
    # gpu-b: a host driver the operator detected and labelled; its container stands down.
    _host(cluster, "gpu-b", MODULES_WITH_NVIDIA, HOST_535)
    cluster.nodes["gpu-b"]["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] = \
        "pre-installed"
    cluster.put(operand_pod(DRIVER, "gpu-b", mains=CRASHING))
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP012") == {}
    assert status(report, "OP012").value == "passed"


def test_quiet_when_the_driver_pod_runs_again(tmp_path: Path) -> None:
    """An old 'driver is in use' (previous log) with the container Running now."""
    cluster = Cluster()
    _host(cluster, "gpu-a", MODULES_WITH_NVIDIA, HOST_535)
    cluster.log(DRIVER, "gpu-a", "nvidia-driver-ctr",
                ["Could not unload NVIDIA driver kernel modules, driver is in use"],
                previous=True)
    assert of_rule(analyse(cluster, tmp=tmp_path), "OP012") == {}


def test_driver_disabled_and_no_host_driver(tmp_path: Path) -> None:
    cluster = Cluster(policies=[cluster_policy(spec={"driver": {"enabled": False},
                                                     "toolkit": {"enabled": True}})])
    _host(cluster, "gpu-a", MODULES_WITHOUT_NVIDIA, None)
    _host(cluster, "gpu-b", MODULES_WITH_NVIDIA, HOST_535)
    cluster.failed.append({"path": "nodes/gpu-a/host/nvidia-driver-version.txt",
                           "node": "gpu-a", "error": "cat: /proc/driver/nvidia/version: "
                           "No such file or directory"})
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP012")
    assert sorted(found) == ["OP012:gpu-a"]
    finding = found["OP012:gpu-a"]
    assert finding.severity.value == "critical"
    assert "disables the driver container (driver.enabled=false) but the host has no " \
           "NVIDIA driver loaded" in finding.summary
    assert [p for p, _ in paths(finding)] == ["cluster/clusterpolicies.json",
                                             "nodes/gpu-a/host/modules.txt", "manifest.json"]
    assert "set driver.enabled=true" in finding.remediation


def test_driver_disabled_quiet_when_the_host_driver_exists_but_lost(tmp_path: Path) -> None:
    """nouveau holds the GPU (gpu-a) or the kernel log shows the host's nvidia.ko refused
    it (gpu-b): the host does have a driver; DRV003/DRV008 name why it is not loaded."""
    cluster = Cluster(policies=[cluster_policy(spec={"driver": {"enabled": False}})])
    _host(cluster, "gpu-a", MODULES_WITHOUT_NVIDIA + "nouveau 3096576 0 - Live 0x0\n", None)
    _host(cluster, "gpu-b", MODULES_WITHOUT_NVIDIA, None)
    cluster.files["nodes/gpu-b/dmesg.txt"] = (
        "[  422.451145] nvidia: probe of 0000:8a:00.0 failed with error -1\n")
    assert of_rule(analyse(cluster, tmp=tmp_path), "OP012") == {}


def test_skipped_without_a_cluster_policy(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.policies = None
    _host(cluster, "gpu-a", MODULES_WITH_NVIDIA, HOST_535)
    assert status(analyse(cluster, tmp=tmp_path), "OP012").value == "skipped"


def test_quiet_during_a_driver_upgrade(tmp_path: Path) -> None:
    """Mid-upgrade the module in use is the previous container's: OP007's case."""
    cluster = Cluster()
    _host(cluster, "gpu-a", MODULES_WITH_NVIDIA, HOST_535)
    cluster.nodes["gpu-a"]["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = \
        "pod-restart-required"
    cluster.put(operand_pod(DRIVER, "gpu-a", mains=CRASHING))
    cluster.log(DRIVER, "gpu-a", "nvidia-driver-ctr",
                ["Could not unload NVIDIA driver kernel modules, driver is in use"])
    assert of_rule(analyse(cluster, tmp=tmp_path), "OP012") == {}


def test_on_the_helm_dropped_values_sample(samples: Path) -> None:
    """The sample's host-driver cluster: the upgrade that dropped driver.enabled=false
    (HELM001) is the root, the fight stands under it, the driver stage under both."""
    report = analyse(samples / "helm-dropped-values")
    found = of_rule(report, "OP012")
    assert sorted(found) == ["OP012:gpu-1", "OP012:gpu-2"]
    for node in ("gpu-1", "gpu-2"):
        fight = found[f"OP012:{node}"]
        assert fight.caused_by == ["HELM001:gpu-operator/2"]
        assert f"OP001:{node}" in fight.causes
        assert ("nodes/" + node + "/host/modules.txt") in [p for p, _ in paths(fight)]
