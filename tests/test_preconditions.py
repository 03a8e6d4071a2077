"""Each node's CRI as ``facts.preconditions`` derives it, source by source (issue 25).

Wordings: ``docker://19.3.15`` with kubelet v1.21.3 and ``RuntimeHandler "nvidia" not
supported`` (https://github.com/NVIDIA/gpu-operator/issues/236); cri-dockerd's socket
``unix:///var/run/cri-dockerd.sock`` (https://github.com/Mirantis/cri-dockerd, README).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit import lookalikes as kit

from analyzers.facts import Facts
from analyzers.facts.preconditions import Need
from bundle import open_bundle

REFUSED = ('Failed to create pod sandbox: rpc error: code = Unknown desc = RuntimeHandler '
           '"nvidia" not supported')


def node_info(bundle: kit.Bundle, name: str, **info: str | None) -> None:
    def change(node: dict[str, Any]) -> None:
        if node["metadata"]["name"] == name:
            for key, value in info.items():
                if value is None:
                    node["status"]["nodeInfo"].pop(key, None)
                else:
                    node["status"]["nodeInfo"][key] = value
    bundle.edit_nodes(change)


def test_each_source_of_a_nodes_cri(tmp_path: Path) -> None:
    bundle = kit.base(tmp_path / "b")
    # gpu-a: kubelet flags name cri-dockerd (nodeInfo says docker too)
    node_info(bundle, "gpu-a", containerRuntimeVersion="docker://24.0.7",
              kubeletVersion="v1.28.15")
    bundle.write("nodes/gpu-a/host/kubelet.txt",
                 "/usr/bin/kubelet --container-runtime-endpoint=unix:///var/run/cri-dockerd.sock\n")
    # gpu-b: nodeInfo alone, kubelet before 1.24: dockershim
    node_info(bundle, "gpu-b", containerRuntimeVersion="docker://19.3.15",
              kubeletVersion="v1.21.3")
    # gpu-c: nothing in nodeInfo; runtime.json says containerd
    node_info(bundle, "gpu-c", containerRuntimeVersion=None)
    bundle.write("nodes/gpu-c/runtime.json", json.dumps({"runtime": "containerd",
                                                         "distribution": "kubeadm"}))
    # gpu-d: nothing but dockershim's refusal about a pod on the node
    node_info(bundle, "gpu-d", containerRuntimeVersion=None)
    pods = bundle.items("pods")
    victim = next(p for p in pods if p["spec"].get("nodeName") == "gpu-d"
                  and p["metadata"]["name"].startswith("nvidia-device-plugin-daemonset-"))
    bundle.set_items("events", [*bundle.items("events"), {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "e1", "namespace": victim["metadata"]["namespace"]},
        "involvedObject": {"kind": "Pod", "namespace": victim["metadata"]["namespace"],
                           "name": victim["metadata"]["name"]},
        "reason": "FailedCreatePodSandBox", "message": REFUSED, "type": "Warning"}])
    with open_bundle(bundle.save()) as opened:
        facts = Facts(opened)
        found = {name: (c.cri, c.shim) for name, c in facts.node_cris.items()}
        assert found["gpu-a"] == ("docker", "cri-dockerd")
        assert facts.node_cri("gpu-a").basis == (
            "kubelet --container-runtime-endpoint=unix:///var/run/cri-dockerd.sock "
            "(nodes/gpu-a/host/kubelet.txt)")
        assert found["gpu-b"] == ("docker", "dockershim")
        assert found["gpu-c"] == ("containerd", None)
        assert found["gpu-d"] == ("docker", None)
        assert facts.node_cri("gpu-d").basis.startswith("an event about a pod on gpu-d says")
        assert found["cp-1"] == ("containerd", None)     # nodeInfo containerd://1.6.20
        # the CRI decides the runtime the containerd rules see
        assert not facts.node_runtime("gpu-a").containerd
        assert facts.node_runtime("gpu-c").containerd
        assert facts.unmet(Need.CONTAINERD) is None       # gpu-c runs containerd
        assert facts.unmet(Need.DOCKER) is None
        crio = facts.unmet(Need.CRIO) or ""
        assert crio.startswith(
            "no node is known to run cri-o as its CRI: containerd on 1 node(s) (gpu-c: "
            "runtime.json: runtime=containerd, distribution=kubeadm); docker on 1 node(s) "
            "(gpu-d: an event about a pod on gpu-d says")
        assert crio.endswith("docker (dockershim) on 1 node(s) (gpu-b: containerRuntimeVersion:"
                             " docker://19.3.15)")


def test_a_node_nothing_names_is_unknown(tmp_path: Path) -> None:
    bundle = kit.base(tmp_path / "b")
    node_info(bundle, "gpu-a", containerRuntimeVersion=None)
    with open_bundle(bundle.save()) as opened:
        cri = Facts(opened).node_cri("gpu-a")
    assert (cri.cri, cri.containerd_possible) == (None, True)
    assert cri.describe() == "not known"
