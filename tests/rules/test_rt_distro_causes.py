"""One root cause per node on distributions: what the distribution samples (issue 14)
showed the runtime-gate rules getting wrong.

- On a k3s node where the toolkit edits ``/etc/containerd`` (its default paths), the
  toolkit's own ``conf.d/99-nvidia.toml`` is not imported by k3s's containerd. RT003 used
  to call that a missing import beside RT008, so RT001 had two causes; it is RT008's
  evidence (the toolkit edits a file this containerd never reads:
  https://github.com/NVIDIA/gpu-operator/issues/415).
- On MicroK8s, ``CONTAINERD_CONFIG`` naming ``args/containerd.toml`` instead of
  ``containerd-template.toml``: the toolkit's edit lasts until containerd's next start,
  which its own restart brings about, and RT001 had no cause to name
  (https://github.com/NVIDIA/gpu-operator/issues/173,
  https://github.com/canonical/microk8s/issues/3959).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit import analyse
from kit.objects import DUMP_WITH_NVIDIA, DUMP_WITHOUT_NVIDIA, NVIDIA_DROPIN, cluster_policy, lists
from kit.objects import node as bare_node

from analyzers.results.models import Finding

K3S_CONFIG = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"
SNAP_ARGS = "/var/snap/microk8s/current/args"
MK8S_CONFIG = f"{SNAP_ARGS}/containerd.toml"
MK8S_TEMPLATE = f"{SNAP_ARGS}/containerd-template.toml"
MK8S_SOCKET = "/var/snap/microk8s/common/run/containerd.sock"
TOOLKIT_TOP = 'imports = ["/etc/containerd/conf.d/*.toml"]\nversion = 2\n'
K3S_WITH_NVIDIA = DUMP_WITH_NVIDIA.replace(
    'imports = ["/etc/containerd/conf.d/99-nvidia.toml"]\n', "")


def node(name: str, kubelet: str, runtime: str, **labels: str) -> dict[str, Any]:
    found = bare_node(name)
    found["status"]["nodeInfo"] = {"kubeletVersion": kubelet, "containerRuntimeVersion": runtime}
    found["metadata"]["labels"].update(labels)
    return found


def detected(distribution: str, config: str, socket: str) -> str:
    return json.dumps({"runtime": "containerd", "distribution": distribution,
                       "config_path": config, "socket": socket, "binary": None, "signals": []})


def analyze_files(tmp_path: Path, nodes: list[dict[str, Any]], per_node: dict[str, dict[str, str]],
                  env: dict[str, str] | None = None) -> dict[str, Finding]:
    policy = cluster_policy(True)
    if env:
        policy["spec"]["toolkit"]["env"] = [{"name": k, "value": v} for k, v in env.items()]
    files: dict[str, Any] = lists(nodes=nodes, clusterpolicies=[policy], pods=[], events=[],
                                  runtimeclasses=[{"apiVersion": "node.k8s.io/v1",
                                                   "kind": "RuntimeClass", "handler": "nvidia",
                                                   "metadata": {"name": "nvidia", "uid": "rc-1",
                                                                "creationTimestamp":
                                                                    "2026-11-01T00:00:00Z"}}])
    for name, found in per_node.items():
        for rel, text in found.items():
            files[f"nodes/{name}/{rel}"] = text
    return analyse(files, tmp=tmp_path).by_id()


def k3s_files(dump: str) -> dict[str, str]:
    """A k3s node where the toolkit (default paths) wrote /etc/containerd."""
    return {"runtime.json": detected("k3s", K3S_CONFIG, "/run/k3s/containerd/containerd.sock"),
            "containerd/config-dump.toml": dump,
            f"containerd/files{K3S_CONFIG}": DUMP_WITHOUT_NVIDIA,
            "containerd/files/etc/containerd/config.toml": TOOLKIT_TOP,
            "containerd/files/etc/containerd/conf.d/99-nvidia.toml": NVIDIA_DROPIN}


def test_toolkit_dropin_on_k3s_is_rt008_evidence_not_a_missing_import(tmp_path: Path) -> None:
    found = analyze_files(
        tmp_path,
        [node("gpu-k3s", "v1.31.4+k3s1", "containerd://1.7.23-k3s2"),
         node("gpu-kubeadm", "v1.31.4", "containerd://1.7.23")],
        {"gpu-k3s": k3s_files(DUMP_WITHOUT_NVIDIA),
         # a stock node with the same unimported drop-in keeps its RT003
         "gpu-kubeadm": {"containerd/config-dump.toml": DUMP_WITHOUT_NVIDIA,
                         "containerd/files/etc/containerd/config.toml": DUMP_WITHOUT_NVIDIA,
                         "containerd/files/etc/containerd/conf.d/99-nvidia.toml": NVIDIA_DROPIN}})
    assert sorted(k for k in found if k[:5] in ("RT001", "RT003", "RT008")) == [
        "RT001:gpu-k3s", "RT001:gpu-kubeadm", "RT003:gpu-kubeadm", "RT008:gpu-k3s"]
    assert found["RT001:gpu-k3s"].caused_by == ["RT008:gpu-k3s"]
    assert found["RT001:gpu-kubeadm"].caused_by == ["RT003:gpu-kubeadm"]


def test_k3s_node_with_the_runtime_has_no_dropin_finding(tmp_path: Path) -> None:
    """k3s added the runtime itself (it finds the toolkit's binaries at start)."""
    found = analyze_files(tmp_path, [node("gpu-k3s", "v1.31.4+k3s1", "containerd://1.7.23-k3s2")],
                          {"gpu-k3s": k3s_files(K3S_WITH_NVIDIA)})
    assert not any(k.startswith(("RT001", "RT003", "RT008", "RT009")) for k in found)


def microk8s_files(loaded: str, template_runtime: bool) -> dict[str, str]:
    template = K3S_WITH_NVIDIA if template_runtime else DUMP_WITHOUT_NVIDIA
    return {"runtime.json": detected("microk8s", MK8S_CONFIG, MK8S_SOCKET),
            "containerd/config-dump.toml": loaded,
            f"containerd/files{MK8S_CONFIG}": loaded,
            f"containerd/files{MK8S_TEMPLATE}": template}


MK8S_ENV = {"CONTAINERD_CONFIG": MK8S_CONFIG, "CONTAINERD_SOCKET": MK8S_SOCKET}


def test_rt009_toolkit_told_to_edit_the_generated_file(tmp_path: Path) -> None:
    labels = {"microk8s.io/cluster": "true"}
    found = analyze_files(
        tmp_path,
        [node("gpu-lost", "v1.31.1", "containerd://1.6.28", **labels),
         node("gpu-kept", "v1.31.1", "containerd://1.6.28", **labels)],
        {"gpu-lost": microk8s_files(DUMP_WITHOUT_NVIDIA, template_runtime=False),
         # the runtime is in this node's template: the rebuilt file keeps it
         "gpu-kept": microk8s_files(K3S_WITH_NVIDIA, template_runtime=True)},
        env=MK8S_ENV)
    assert sorted(k for k in found if k.startswith(("RT001", "RT008", "RT009"))) == [
        "RT001:gpu-lost", "RT009:gpu-lost"]
    rt009 = found["RT009:gpu-lost"]
    assert rt009.severity.value == "critical"
    assert (f"the toolkit is told to edit {MK8S_CONFIG}, which microk8s rebuilds from "
            f"{MK8S_TEMPLATE} at every start of containerd") in rt009.summary
    assert rt009.evidence[0].path == "cluster/clusterpolicies.json"
    assert rt009.evidence[0].excerpt == f"CONTAINERD_CONFIG={MK8S_CONFIG}"
    assert rt009.evidence[1].path == f"nodes/gpu-lost/containerd/files{MK8S_TEMPLATE}"
    assert f"#   CONTAINERD_CONFIG={MK8S_TEMPLATE}" in rt009.remediation
    assert found["RT001:gpu-lost"].caused_by == ["RT009:gpu-lost"]


def test_rt009_quiet_when_the_toolkit_edits_the_template(tmp_path: Path) -> None:
    found = analyze_files(
        tmp_path, [node("gpu-m", "v1.31.1", "containerd://1.6.28", **{"microk8s.io/cluster": "x"})],
        {"gpu-m": microk8s_files(DUMP_WITHOUT_NVIDIA, template_runtime=False)},
        env={"CONTAINERD_CONFIG": MK8S_TEMPLATE, "CONTAINERD_SOCKET": MK8S_SOCKET})
    assert "RT009:gpu-m" not in found and "RT008:gpu-m" not in found
    assert found["RT001:gpu-m"].caused_by == []


def test_rt009_finds_the_template_beside_the_revision_path(tmp_path: Path) -> None:
    """MicroK8s runs containerd with ``--config /var/snap/microk8s/<revision>/args/...``
    (https://github.com/canonical/microk8s/issues/3545 shows the command line); node.sh
    reports that path and copies the template from the same directory."""
    rev_args = "/var/snap/microk8s/8248/args"
    files = {"runtime.json": detected("microk8s", f"{rev_args}/containerd.toml", MK8S_SOCKET),
             "containerd/config-dump.toml": DUMP_WITHOUT_NVIDIA,
             f"containerd/files{rev_args}/containerd.toml": DUMP_WITHOUT_NVIDIA,
             f"containerd/files{rev_args}/containerd-template.toml": DUMP_WITHOUT_NVIDIA}
    found = analyze_files(
        tmp_path, [node("gpu-m", "v1.31.1", "containerd://1.6.28", **{"microk8s.io/cluster": "x"})],
        {"gpu-m": files}, env=MK8S_ENV)
    rt009 = found["RT009:gpu-m"]
    assert (f"the toolkit is told to edit {MK8S_CONFIG}, which microk8s rebuilds from "
            f"{rev_args}/containerd-template.toml") in rt009.summary
    template = f"nodes/gpu-m/containerd/files{rev_args}/containerd-template.toml"
    assert rt009.evidence[1].path == template
    assert "RT008:gpu-m" not in found
    assert found["RT001:gpu-m"].caused_by == ["RT009:gpu-m"]
