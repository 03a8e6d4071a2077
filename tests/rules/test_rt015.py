"""RT015 (Docker's runtime gate) and the containerd rules on Docker nodes (issue 25, case 2).

Wordings and shapes from public threads:
- ``Failed create pod sandbox: rpc error: code = Unknown desc = RuntimeHandler "nvidia" not
  supported`` on a dockershim node: https://github.com/NVIDIA/gpu-operator/issues/250
  (and issue #236, ``docker://19.3.15``, kubelet v1.21.3)
- Docker's packaged containerd runs with ``disabled_plugins = ["cri"]``:
  https://github.com/containerd/containerd/issues/8139
- daemon.json with and without the nvidia runtime: https://github.com/NVIDIA/gpu-operator/issues/42
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit import analyse
from kit import lookalikes as kit

REFUSED = ('Failed create pod sandbox: rpc error: code = Unknown desc = RuntimeHandler '
           '"nvidia" not supported')
NO_NVIDIA = json.dumps({"exec-opts": ["native.cgroupdriver=systemd"],
                        "log-driver": "json-file"}, indent=4) + "\n"
RUNC_DEFAULT = json.dumps({"runtimes": {"nvidia": {
    "path": "/usr/bin/nvidia-container-runtime", "runtimeArgs": []}}}, indent=4) + "\n"



def _event(pod: dict[str, Any], message: str) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.17f", "namespace": meta["namespace"]},
            "involvedObject": {"kind": "Pod", "namespace": meta["namespace"],
                               "name": meta["name"]},
            "reason": "FailedCreatePodSandBox", "message": message, "type": "Warning",
            "count": 25, "lastTimestamp": "2026-11-20T11:00:00Z",
            "source": {"component": "kubelet", "host": meta.get("spec", {}).get("nodeName")}}


def dockershim_with_runtime_class(tmp_path: Path) -> Path:
    """The plugin pods name runtimeClassName nvidia on dockershim nodes: refused."""
    root = kit.docker_dockershim(tmp_path / "b")
    bundle = kit.Bundle(root)
    pods = bundle.items("pods")
    events = bundle.items("events")
    for pod in pods:
        if pod["metadata"]["name"].startswith("nvidia-device-plugin-daemonset-"):
            pod["spec"]["runtimeClassName"] = "nvidia"
            pod["status"] = {"phase": "Pending", "containerStatuses": [{
                "name": "nvidia-device-plugin-ctr", "ready": False, "restartCount": 0,
                "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", "imageID": "",
                "state": {"waiting": {"reason": "ContainerCreating"}}}]}
            events.append(_event(pod, REFUSED))
    bundle.set_items("pods", pods)
    bundle.set_items("events", events)
    bundle.set_items("runtimeclasses", [{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                         "metadata": {"name": "nvidia"}, "handler": "nvidia"}])
    return bundle.save()


def test_dockershim_refusing_the_runtime_class(tmp_path: Path) -> None:
    report = analyse(dockershim_with_runtime_class(tmp_path))
    found = {f.id: f for f in report.findings}
    rt015 = found["RT015:gpu-a"]
    assert rt015.severity.value == "critical"
    assert rt015.summary.startswith(
        "On gpu-a, the kubelet talks to Docker (docker (dockershim), from kubelet "
        "--container-runtime=docker (nodes/gpu-a/host/kubelet.txt)): 1 event(s) say "
        "RuntimeHandler \"nvidia\" not supported")
    assert any(e.path == "cluster/events.json" and "RuntimeHandler" in (e.excerpt or "")
               for e in rt015.evidence)
    assert sorted(f.id for f in report.findings if f.rule_id == "RT015") == [
        "RT015:gpu-a", "RT015:gpu-b", "RT015:gpu-c", "RT015:gpu-d"]
    # containerd is not the CRI: no containerd claim about these nodes
    assert not [f.id for f in report.findings if f.rule_id in ("RT001", "RT005", "RT011",
                                                                "RT012")]
    # the standalone plugin stuck behind it hangs under RT015
    op008 = found["OP008:gpu-b"]
    assert "the node's CRI is Docker (docker (dockershim)), which runs no 'nvidia' " \
        "RuntimeClass handler (see RT015)" in op008.summary
    assert op008.caused_by == ["RT015:gpu-b"]
    assert [f.id for f in report.findings if f.severity.value in ("medium", "high",
                                                                   "critical")
            and f.rule_id not in ("RT015", "OP008")] == []
    remediation = rt015.remediation or ""
    assert "docker info --format '{{json .Runtimes}} {{.DefaultRuntime}}'" in remediation
    assert "# nvidia-ctk runtime configure --runtime=docker --set-as-default" in remediation


def test_daemon_json_without_the_nvidia_runtime(tmp_path: Path) -> None:
    root = kit.docker_cri_dockerd(tmp_path / "b")
    (root / "nodes/gpu-b/docker/files/etc/docker/daemon.json").write_text(NO_NVIDIA)
    (root / "nodes/gpu-c/docker/files/etc/docker/daemon.json").write_text(RUNC_DEFAULT)
    report = analyse(root)
    found = {f.id: f for f in report.findings if f.rule_id == "RT015"}
    assert sorted(found) == ["RT015:gpu-b", "RT015:gpu-c"]
    missing = found["RT015:gpu-b"]
    assert missing.severity.value == "critical"
    assert ("nodes/gpu-b/docker/files/etc/docker/daemon.json registers no 'nvidia' runtime "
            "(runtimes: none), while 1 GPU pod(s) run or wait on the node") in missing.summary
    assert "kubelet --container-runtime-endpoint=unix:///var/run/cri-dockerd.sock" in \
        missing.summary
    not_default = found["RT015:gpu-c"]
    assert not_default.severity.value == "high"
    assert ("'nvidia' is registered but default-runtime is runc (unset) and 1 GPU pod(s) "
            "name no RuntimeClass") in not_default.summary
    assert [(e.path, e.line) for e in not_default.evidence if e.path.endswith("daemon.json")] \
        == [("nodes/gpu-c/docker/files/etc/docker/daemon.json", None)]
    # Docker's own containerd has CRI disabled on every node: normal, not RT005
    assert not [f for f in report.findings if f.rule_id == "RT005"]


def test_daemon_json_not_collected_is_partial(tmp_path: Path) -> None:
    root = kit.docker_cri_dockerd(tmp_path / "b")
    bundle = kit.Bundle(root)
    for name in kit.GPU_NODES:
        bundle.remove(f"nodes/{name}/docker")
    report = analyse(bundle.save())
    result = next(r for r in report.rules if r.rule_id == "RT015")
    assert result.status.value == "partial"
    assert result.reason is not None and \
        "gpu-a: nodes/gpu-a/docker/files/etc/docker/daemon.json was not collected" in result.reason


def test_rt005_still_fires_where_containerd_is_the_cri(tmp_path: Path) -> None:
    """The negative: a containerd node (nodeInfo containerd://) with CRI disabled."""
    root = kit.standalone_plugin(tmp_path / "b")
    dump = root / "nodes/gpu-a/containerd/config-dump.toml"
    dump.write_text(dump.read_text().replace("disabled_plugins = []",
                                             'disabled_plugins = ["cri"]'))
    report = analyse(root)
    assert [(f.id, f.severity.value) for f in report.findings if f.rule_id == "RT005"] == [
        ("RT005:gpu-a", "critical")]
    assert next(r for r in report.rules if r.rule_id == "RT015").status.value == "skipped"


def test_op008_on_a_dockershim_node_blames_docker_not_containerd(tmp_path: Path) -> None:
    """The operator on dockershim nodes (gpu-operator#236/#250): the plugin's sandbox is
    refused with dockershim's wording. OP008 says Docker runs no RuntimeClass handler and
    links RT015, never 'containerd has no nvidia runtime handler'."""
    root = kit.operator_host_driver(tmp_path / "b")
    bundle = kit.Bundle(root)

    def docker(node: dict[str, Any]) -> None:
        node["status"]["nodeInfo"].update(containerRuntimeVersion="docker://19.3.15",
                                          kubeletVersion="v1.21.3")
    bundle.edit_nodes(docker)
    pods = bundle.items("pods")
    events = bundle.items("events")
    for pod in pods:
        if pod["metadata"]["name"] == "nvidia-device-plugin-daemonset-ghb77":   # on gpu-a
            pod["status"] = {"phase": "Pending", "containerStatuses": [{
                "name": "nvidia-device-plugin", "ready": False, "restartCount": 0,
                "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", "imageID": "",
                "state": {"waiting": {"reason": "ContainerCreating"}}}]}
            pod["status"].pop("initContainerStatuses", None)
            events.append(_event(pod, REFUSED))
    bundle.set_items("pods", pods)
    bundle.set_items("events", events)
    report = analyse(bundle.save())
    found = {f.id: f for f in report.findings}
    op008 = found["OP008:gpu-a"]
    assert "containerd" not in op008.summary
    assert ("its sandbox cannot be created: the node's CRI is Docker (docker (dockershim)), "
            "which runs no 'nvidia' RuntimeClass handler (see RT015)") in op008.summary
    assert op008.caused_by == ["RT015:gpu-a"]
    assert found["RT015:gpu-a"].severity.value == "critical"
    assert not [f.id for f in report.findings if f.rule_id in ("RT001", "RT005")]


def test_rt005_is_conditional_where_the_cri_is_not_known(tmp_path: Path) -> None:
    """Nothing says which CRI gpu-a's kubelet talks to (no containerRuntimeVersion, no
    kubelet flags, no runtime.json): RT005 says so at medium, never a confident CRITICAL."""
    root = kit.standalone_plugin(tmp_path / "b")
    bundle = kit.Bundle(root)

    def unknown(node: dict[str, Any]) -> None:
        if node["metadata"]["name"] == "gpu-a":
            node["status"]["nodeInfo"].pop("containerRuntimeVersion")
    bundle.edit_nodes(unknown)
    dump = root / "nodes/gpu-a/containerd/config-dump.toml"
    dump.write_text(dump.read_text().replace("disabled_plugins = []",
                                             'disabled_plugins = ["cri"]'))
    report = analyse(bundle.save())
    rt005 = [f for f in report.findings if f.rule_id == "RT005"]
    assert [(f.id, f.severity.value) for f in rt005] == [("RT005:gpu-a", "medium")]
    assert "Whether containerd is this node's CRI is not known (neither the kubelet's " \
        "flags, nodeInfo nor runtime.json names the node's CRI)" in rt005[0].summary
