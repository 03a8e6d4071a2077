"""The toolkit's host paths from its pod's hostPath volumes (toolkit_env.pod_settings).

The operator rewrites the toolkit's CONTAINERD_CONFIG / CONTAINERD_SOCKET to container
paths under /runtime/config-dir/ and /runtime/sock-dir/ and mounts the host directories
there as hostPath volumes ``containerd-config`` and ``containerd-socket`` (the volume
names and mount paths of NVIDIA/gpu-operator's toolkit DaemonSet, as shown in its
controller tests and in the toolkit log ``Loading config from
/runtime/config-dir/config.toml`` of public threads).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse
from kit import findings as of
from kit.bundles import write_dir
from kit.objects import cluster_policy
from kit.runtime import dump, files, pod

from analyzers.facts import Facts
from bundle import open_bundle

K3S_DIR = "/var/lib/rancher/k3s/agent/etc/containerd"


def toolkit_pod(node_name: str, config_dir: str, sock_dir: str,
                config: str = "/runtime/config-dir/config.toml") -> dict[str, Any]:
    found = pod("nvidia-container-toolkit-daemonset-t1", node_name,
                app="nvidia-container-toolkit-daemonset")
    container = found["spec"]["containers"][0]
    container["name"] = "nvidia-container-toolkit-ctr"
    container["env"] = [{"name": "RUNTIME", "value": "containerd"},
                        {"name": "RUNTIME_CONFIG", "value": config},
                        {"name": "CONTAINERD_CONFIG", "value": config},
                        {"name": "CONTAINERD_SOCKET",
                         "value": "/runtime/sock-dir/containerd.sock"}]
    container["volumeMounts"] = [{"name": "containerd-config", "mountPath": "/runtime/config-dir/"},
                                 {"name": "containerd-socket", "mountPath": "/runtime/sock-dir/"}]
    found["spec"]["volumes"] = [
        {"name": "toolkit-root", "hostPath": {"path": "/usr/local/nvidia"}},
        {"name": "containerd-config",
         "hostPath": {"path": config_dir, "type": "DirectoryOrCreate"}},
        {"name": "containerd-socket", "hostPath": {"path": sock_dir}}]
    return found


def k3s(bundle: dict[str, Any]) -> dict[str, Any]:
    for item in bundle["cluster/nodes.json"]["items"]:
        item["status"]["nodeInfo"] = {"kubeletVersion": "v1.30.4+k3s1",
                                      "containerRuntimeVersion": "containerd://1.7.20-k3s1"}
    return bundle


def settings(tmp_path: Path, bundle: dict[str, Any]) -> dict[str, tuple[str, str]]:
    path = write_dir(tmp_path / "bundle", bundle)
    with open_bundle(path) as opened:
        found = Facts(opened).toolkit_settings
    return {k: (s.value, s.origin) for k, s in found.items()}


def test_host_paths_come_from_the_hostpath_volumes(tmp_path: Path) -> None:
    bundle = files({"gpu-a": {"containerd/config-dump.toml": dump()}},
                   [toolkit_pod("gpu-a", K3S_DIR, "/run/k3s/containerd",
                                "/runtime/config-dir/config.toml.tmpl")])
    origin = "toolkit pod gpu-operator/nvidia-container-toolkit-daemonset-t1 (hostPath volume "
    assert settings(tmp_path, bundle) == {
        "RUNTIME_CONFIG": (K3S_DIR + "/config.toml.tmpl", origin + "containerd-config)"),
        "CONTAINERD_SOCKET": ("/run/k3s/containerd/containerd.sock",
                              origin + "containerd-socket)")}


def test_the_policy_wins_and_unmounted_paths_are_not_host_paths(tmp_path: Path) -> None:
    policy = cluster_policy(True)
    policy["spec"]["toolkit"]["env"] = [{"name": "CONTAINERD_CONFIG",
                                         "value": K3S_DIR + "/config.toml.tmpl"}]
    tk = toolkit_pod("gpu-a", "/etc/containerd", "/run/containerd",
                     config="/etc/containerd/config.toml")  # under no mount: not a host path
    found = settings(tmp_path, files({"gpu-a": {"containerd/config-dump.toml": dump()}}, [tk],
                                     policy=policy))
    assert found == {
        "CONTAINERD_CONFIG": (K3S_DIR + "/config.toml.tmpl", "ClusterPolicy cluster-policy"),
        "CONTAINERD_SOCKET": ("/run/containerd/containerd.sock",
                              "toolkit pod gpu-operator/nvidia-container-toolkit-daemonset-t1 "
                              "(hostPath volume containerd-socket)")}


def test_rt008_names_the_pods_stock_hostpaths_on_k3s(tmp_path: Path) -> None:
    no_nvidia = dump(nvidia=None)
    wrong = analyse(k3s(files(
        {"gpu-a": {"containerd/config-dump.toml": no_nvidia}},
        [toolkit_pod("gpu-a", "/etc/containerd", "/run/containerd")])), tmp=tmp_path / "a")
    finding = of(wrong, "RT008")["RT008:gpu-a"]
    assert ("toolkit pod gpu-operator/nvidia-container-toolkit-daemonset-t1 (hostPath volume "
            "containerd-config) sets RUNTIME_CONFIG=/etc/containerd/config.toml") in \
        finding.summary
    assert finding.evidence[0].pointer == "/items/0/spec/volumes/1/hostPath/path"
    right = analyse(k3s(files(
        {"gpu-a": {"containerd/config-dump.toml": no_nvidia}},
        [toolkit_pod("gpu-a", K3S_DIR, "/run/k3s/containerd",
                     "/runtime/config-dir/config.toml.tmpl")])), tmp=tmp_path / "b")
    assert of(right, "RT008") == {}
