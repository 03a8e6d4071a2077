"""RT011: the nvidia handler exists but cannot work.

Wordings: containerd/containerd#6964 (``container.Runtime.Name must be set``),
aws/amazon-vpc-cni-k8s#3104 (``fork/exec /usr/bin/nvidia-container-runtime: no such file
or directory``), NVIDIA/gpu-operator#511 (``nvidia-container-cli.real: initialization
error: load library failed: libnvidia-ml.so.1``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse, status
from kit import findings as of
from kit.runtime import dump, event, files, pod

# https://github.com/containerd/containerd/issues/6964
NAME_UNSET = ("Failed to create pod sandbox: rpc error: code = InvalidArgument desc = failed to "
              "create containerd container: create container failed validation: "
              "container.Runtime.Name must be set: invalid argument")
# https://github.com/aws/amazon-vpc-cni-k8s/issues/3104
FORK = ("Failed to create pod sandbox: rpc error: code = Unknown desc = failed to create "
        "containerd task: failed to create shim task: OCI runtime create failed: unable to "
        "retrieve OCI runtime error (open /run/containerd/io.containerd.runtime.v2.task/k8s.io/"
        "6d014b312b6c69c22c2f12918f6719f9e87189aa230c41e3434719ffe20942e4/log.json: no such "
        "file or directory): fork/exec /usr/bin/nvidia-container-runtime: no such file or "
        "directory: unknown")
# https://github.com/NVIDIA/gpu-operator/issues/511
NVML_LOAD = ("Error: failed to create containerd task: failed to create shim task: OCI runtime "
             "create failed: runc create failed: unable to start container process: error "
             "during container init: error running hook #0: error running hook: exit status 1, "
             "stdout: , stderr: nvidia-container-cli.real: initialization error: load library "
             "failed: libnvidia-ml.so.1: cannot open shared object file: no such file or "
             "directory: unknown")

PLUGIN = "nvidia-device-plugin-daemonset-x1"


def plugin(node_name: str, name: str = PLUGIN) -> dict[str, Any]:
    return pod(name, node_name, app="nvidia-device-plugin-daemonset", runtime_class="nvidia",
               phase="Pending", init=1)


def toolkit(node_name: str, driver_root: str) -> dict[str, Any]:
    found = pod("nvidia-container-toolkit-daemonset-t1", node_name,
                app="nvidia-container-toolkit-daemonset")
    found["spec"]["volumes"] = [{"name": "driver-install-dir",
                                 "hostPath": {"path": driver_root, "type": ""}}]
    found["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "driver-install-dir", "mountPath": "/driver-root"}]
    return found


def test_no_runtime_type_fires_on_that_node_only(tmp_path: Path) -> None:
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(nvidia='runtime_type = ""')},
         "gpu-b": {"containerd/config-dump.toml": dump()}},
        [plugin("gpu-a"), plugin("gpu-b", "nvidia-device-plugin-daemonset-x2")],
        [event(PLUGIN, "FailedCreatePodSandBox", NAME_UNSET)]), tmp=tmp_path)
    found = of(report, "RT011")
    assert set(found) == {"RT011:gpu-a"}
    finding = found["RT011:gpu-a"]
    assert "no runtime_type" in finding.summary and PLUGIN in finding.summary
    table = finding.evidence[0]
    assert table.path == "nodes/gpu-a/containerd/config-dump.toml"
    assert table.line == 8 and "runtimes.nvidia]" in table.excerpt
    assert any(e.path == "cluster/events.json" and "Runtime.Name" in e.excerpt
               for e in finding.evidence)
    assert finding.remediation.splitlines()[1] == \
        "containerd config dump | grep -A4 'runtimes.nvidia'"


def test_missing_binary_names_the_binary_name(tmp_path: Path) -> None:
    # the EKS AL2023 thread: nvidia configured with /usr/bin/nvidia-container-runtime, absent
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(
            default="nvidia", binary="/usr/bin/nvidia-container-runtime")}},
        [pod("aws-node-abcde", "gpu-a", namespace="kube-system", phase="Pending")],
        [event("aws-node-abcde", "FailedCreatePodSandBox", FORK, namespace="kube-system")],
        policy=None), tmp=tmp_path)
    finding = of(report, "RT011")["RT011:gpu-a"]
    assert ("containerd cannot execute /usr/bin/nvidia-container-runtime (BinaryName of "
            "runtime nvidia)") in finding.summary
    binary = finding.evidence[0]
    assert binary.path == "nodes/gpu-a/containerd/config-dump.toml" and binary.line == 12
    assert "ls -l /usr/bin/nvidia-container-runtime" in finding.remediation


def test_driver_root_without_driver_container(tmp_path: Path) -> None:
    # driver.enabled (the default) points the hook at /run/nvidia/driver; the host has the
    # driver and no driver container runs (NVIDIA/gpu-operator#511)
    validator = pod("nvidia-operator-validator-v1", "gpu-a", app="nvidia-operator-validator",
                    runtime_class="nvidia", phase="Pending", init=1)
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump()}},
        [validator, toolkit("gpu-a", "/run/nvidia/driver")],
        [event("nvidia-operator-validator-v1", "Failed", NVML_LOAD)]), tmp=tmp_path)
    finding = of(report, "RT011")["RT011:gpu-a"]
    assert ("cannot load libnvidia-ml.so.1 from the driver root /run/nvidia/driver (hostPath "
            "of the toolkit pod nvidia-container-toolkit-daemonset-t1): no driver container "
            "runs on this node") in finding.summary
    root = finding.evidence[0]
    assert root.path == "cluster/pods.json" and root.pointer == \
        "/items/1/spec/volumes/0/hostPath/path"


def test_quiet_when_handler_works_and_skipped_without_dump(tmp_path: Path) -> None:
    healthy = analyse(files({"gpu-a": {"containerd/config-dump.toml": dump()}},
                                        [plugin("gpu-a")]), tmp=tmp_path / "a")
    assert of(healthy, "RT011") == {} and status(healthy, "RT011") == "passed"
    # the sandbox error without a broken table is not RT011's (no nvidia handler: RT001)
    absent = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(nvidia=None)}},
        [plugin("gpu-a")], [event(PLUGIN, "FailedCreatePodSandBox", FORK)]), tmp=tmp_path / "b")
    assert of(absent, "RT011") == {}
    skipped = analyse(files({"gpu-a": {"dmesg.txt": ""}}, [plugin("gpu-a")]), tmp=tmp_path / "c")
    assert status(skipped, "RT011") == "skipped"


def test_rt011_explains_the_device_plugin(tmp_path: Path) -> None:
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(nvidia='runtime_type = ""')}},
        [plugin("gpu-a")], [event(PLUGIN, "FailedCreatePodSandBox", NAME_UNSET)]), tmp=tmp_path)
    finding = of(report, "RT011")["RT011:gpu-a"]
    linked = {f.id for f in report.findings if "RT011:gpu-a" in f.caused_by}
    assert linked == set(finding.causes) and linked <= {"OP001:gpu-a", "OP008:gpu-a"}
    assert linked


def test_k3s_fix_names_the_template(tmp_path: Path) -> None:
    bundle = files({"gpu-a": {"containerd/config-dump.toml": dump(nvidia='runtime_type = ""')}},
                   [plugin("gpu-a")], [event(PLUGIN, "FailedCreatePodSandBox", NAME_UNSET)])
    bundle["cluster/nodes.json"]["items"][0]["status"]["nodeInfo"] = {
        "kubeletVersion": "v1.30.4+k3s1", "containerRuntimeVersion": "containerd://1.7.20-k3s1"}
    remediation = of(analyse(bundle, tmp=tmp_path), "RT011")["RT011:gpu-a"].remediation
    assert ('# add runtime_type = "io.containerd.runc.v2" to that table in '
            "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl") in remediation
    assert ("/var/lib/rancher/k3s/data/current/bin/containerd --config "
            "/var/lib/rancher/k3s/agent/etc/containerd/config.toml config dump") in remediation
