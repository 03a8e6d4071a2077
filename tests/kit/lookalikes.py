"""Healthy clusters that look unlike the one the rules were first written for.

Each look-alike starts from ``samples/healthy-toolkit-enabled`` (the GPU Operator with
``driver.enabled=false`` on a host driver, the toolkit on, every operand Running) and
changes what a real cluster of that kind changes: who deploys the device plugin, which
CRI the kubelet talks to, whether node files exist at all, the bundle's layout. Nothing
in them is broken, so no rule may report anything at medium or above, and no rule may
say ``passed`` about a thing the bundle does not hold.

Public sources of the shapes and wordings used (facts, not copied text):

- the static device-plugin manifest (DaemonSet ``nvidia-device-plugin-daemonset`` in
  ``kube-system``, label ``name: nvidia-device-plugin-ds``, container
  ``nvidia-device-plugin-ctr``):
  https://github.com/NVIDIA/k8s-device-plugin/blob/main/deployments/static/nvidia-device-plugin.yml
- Docker needs ``default-runtime: nvidia`` with non-CRI (dockershim) Docker:
  https://github.com/NVIDIA/k8s-device-plugin/pull/1125 ; the daemon.json form
  (``runtimes.nvidia.path`` ``/usr/bin/nvidia-container-runtime``, ``runtimeArgs``):
  https://github.com/NVIDIA/gpu-operator/issues/42
- a dockershim node as ``kubectl get nodes -o wide`` shows it (``docker://19.3.15``):
  https://github.com/NVIDIA/gpu-operator/issues/236
- cri-dockerd's socket ``unix:///var/run/cri-dockerd.sock`` given to the kubelet as
  ``--container-runtime-endpoint``: https://github.com/Mirantis/cri-dockerd (README)
- Docker's packaged containerd config disables CRI (``disabled_plugins = ["cri"]``):
  https://github.com/containerd/containerd/issues/8139
- GKE's managed plugin and driver installer in ``kube-system``
  (``nvidia-gpu-device-plugin``, ``nvidia-driver-installer``, label
  ``cloud.google.com/gke-accelerator``):
  https://cloud.google.com/kubernetes-engine/docs/how-to/gpus
- AKS: the plugin DaemonSet in namespace ``gpu-resources``, label
  ``kubernetes.azure.com/accelerator: nvidia``:
  https://learn.microsoft.com/azure/aks/gpu-cluster
- Bottlerocket's NVIDIA variants run the device plugin as a host service (no pod):
  https://github.com/bottlerocket-os/bottlerocket/blob/develop/QUICKSTART-EKS.md
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "samples" / "healthy-toolkit-enabled"
OPERATOR_NS = "gpu-operator"
GPU_NODES = ("gpu-a", "gpu-b", "gpu-c", "gpu-d")
NO_CRD = 'error: the server doesn\'t have a resource type "clusterpolicies"'
NO_DRIVER_CRD = 'error: the server doesn\'t have a resource type "nvidiadrivers"'

# What `nvidia-ctk runtime configure --runtime=docker --set-as-default` leaves in
# /etc/docker/daemon.json (the form of https://github.com/NVIDIA/gpu-operator/issues/42).
DAEMON_JSON = json.dumps({
    "default-runtime": "nvidia",
    "exec-opts": ["native.cgroupdriver=systemd"],
    "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}},
}, indent=4) + "\n"
# Docker's containerd.io package: /etc/containerd/config.toml disables the CRI plugin.
DOCKER_CONTAINERD_DUMP = ('disabled_plugins = ["cri"]\nimports = []\nroot = "/var/lib/containerd"\n'
                          'state = "/run/containerd"\nversion = 2\n\n[grpc]\n'
                          '  address = "/run/containerd/containerd.sock"\n')
PLUGIN_LOG = ("I1120 09:29:40.114433       1 main.go:235] \"Starting NVIDIA Device Plugin\" "
              "version=<\n\t4.0.0\n\tcommit: abc\n >\n"
              "I1120 09:29:40.114512       1 main.go:238] Starting FS watcher for "
              "/var/lib/kubelet/device-plugins\n"
              "I1120 09:29:40.220186       1 server.go:195] Starting GRPC server for "
              "'nvidia.com/gpu'\n"
              "I1120 09:29:40.220930       1 server.go:139] Starting to serve 'nvidia.com/gpu' "
              "on /var/lib/kubelet/device-plugins/nvidia-gpu.sock\n"
              "I1120 09:29:40.224511       1 server.go:146] Registered device plugin for "
              "'nvidia.com/gpu' with Kubelet\n")


class Bundle:
    """A bundle directory being changed: JSON lists by name, files by path."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.manifest: dict[str, Any] = json.loads((root / "manifest.json").read_text())

    # -- files -------------------------------------------------------------------------
    def items(self, name: str) -> list[dict[str, Any]]:
        path = self.root / "cluster" / f"{name}.json"
        return list(json.loads(path.read_text())["items"]) if path.exists() else []

    def set_items(self, name: str, items: list[dict[str, Any]]) -> None:
        self.write(f"cluster/{name}.json", json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": items,
             "metadata": {"resourceVersion": ""}}, indent=2))

    def write(self, rel: str, text: str) -> None:
        target = self.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        if not any(i["path"] == rel for i in self.manifest["items"]):
            parts = rel.split("/")
            self.manifest["items"].append({
                "path": rel, "command": ["test"], "node": parts[1] if parts[0] == "nodes"
                else None, "exit_code": 0, "started_at": "2026-11-20T11:05:09Z",
                "duration_ms": 1, "bytes": len(text.encode()), "truncated": False,
                "error": None})

    def remove(self, rel: str) -> None:
        target = self.root / rel
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        self.manifest["items"] = [i for i in self.manifest["items"]
                                  if i["path"] != rel and not i["path"].startswith(rel + "/")]

    def failed(self, rel: str, error: str) -> None:
        self.remove(rel)
        self.manifest["items"].append({
            "path": rel, "command": ["kubectl", "get", rel.split("/")[-1][:-5], "-o", "json"],
            "node": None, "exit_code": 1, "started_at": "2026-11-20T11:05:03Z",
            "duration_ms": 100, "bytes": 0, "truncated": False, "error": error})

    def save(self) -> Path:
        (self.root / "manifest.json").write_text(json.dumps(self.manifest, indent=2))
        return self.root

    # -- objects -----------------------------------------------------------------------
    def edit_nodes(self, change: Callable[[dict[str, Any]], None]) -> None:
        nodes = self.items("nodes")
        for node in nodes:
            change(node)
        self.set_items("nodes", nodes)


def base(target: Path) -> Bundle:
    shutil.copytree(BASE, target)
    return Bundle(target)


def _without_operator(bundle: Bundle) -> None:
    """The cluster never had the GPU Operator: its namespace, CRDs, chart, labels and the
    RuntimeClasses it creates are gone; the collector found no operator namespace."""
    for name in ("pods", "daemonsets", "deployments", "configmaps", "events"):
        bundle.set_items(name, [o for o in bundle.items(name)
                                if o["metadata"].get("namespace") != OPERATOR_NS])
    bundle.set_items("namespaces", [n for n in bundle.items("namespaces")
                                    if n["metadata"]["name"] != OPERATOR_NS])
    bundle.set_items("runtimeclasses", [])
    bundle.failed("cluster/clusterpolicies.json", NO_CRD)
    bundle.failed("cluster/nvidiadrivers.json", NO_DRIVER_CRD)
    bundle.remove("cluster/helm")
    bundle.remove(f"logs/{OPERATOR_NS}")
    bundle.manifest["operator_namespace"] = None

    def plain(node: dict[str, Any]) -> None:
        labels = node["metadata"]["labels"]
        for key in list(labels):
            if key.startswith(("nvidia.com/", "feature.node.kubernetes.io/")):
                del labels[key]
    bundle.edit_nodes(plain)


def _default_nvidia(bundle: Bundle, binary: str = "/usr/bin/nvidia-container-runtime") -> None:
    """containerd with ``nvidia`` as its default runtime (``nvidia-ctk runtime configure
    --runtime=containerd --set-as-default``), as a plugin without RuntimeClass needs."""
    for name in GPU_NODES:
        for rel in (f"nodes/{name}/containerd/config-dump.toml",
                    f"nodes/{name}/containerd/files/etc/containerd/conf.d/99-nvidia.toml"):
            path = bundle.root / rel
            if path.exists():
                text = path.read_text().replace('default_runtime_name = "runc"',
                                                'default_runtime_name = "nvidia"')
                text = text.replace("/usr/local/nvidia/toolkit/nvidia-container-runtime", binary)
                path.write_text(text)


def _pod_from(template: dict[str, Any], *, name: str, namespace: str, node: str,
              labels: dict[str, str], owner: str, container: str, image: str,
              runtime_class: str | None = None) -> dict[str, Any]:
    pod = copy.deepcopy(template)
    meta = pod["metadata"]
    meta.update(name=name, namespace=namespace, labels=labels)
    meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": owner,
                                "uid": f"uid-{owner}", "controller": True,
                                "blockOwnerDeletion": True}]
    spec = pod["spec"]
    spec["nodeName"] = node
    spec.pop("initContainers", None)
    spec.pop("runtimeClassName", None)
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    main = spec["containers"][0]
    main.update(name=container, image=image)
    main.pop("env", None)
    spec["containers"] = [main]
    status = pod["status"]
    status.pop("initContainerStatuses", None)
    running = status["containerStatuses"][0]
    running.update(name=container, image=image)
    status["containerStatuses"] = [running]
    return pod


def _operator_plugin_pod(bundle: Bundle) -> dict[str, Any]:
    return next(p for p in json.loads((BASE / "cluster" / "pods.json").read_text())["items"]
                if p["metadata"]["name"].startswith("nvidia-device-plugin-daemonset-"))


def _daemonset(name: str, namespace: str, labels: dict[str, str], count: int,
               image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace, "labels": labels,
                         "uid": f"uid-{name}", "generation": 1},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": name, "image": image}]}}},
            "status": {"currentNumberScheduled": count, "desiredNumberScheduled": count,
                       "numberAvailable": count, "numberMisscheduled": 0,
                       "numberReady": count, "observedGeneration": 1,
                       "updatedNumberScheduled": count}}


def add_plugin(bundle: Bundle, *, namespace: str = "kube-system",
               ds_name: str = "nvidia-device-plugin-daemonset",
               labels: dict[str, str] | None = None, container: str = "nvidia-device-plugin-ctr",
               image: str = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
               runtime_class: str | None = None, nodes: tuple[str, ...] = GPU_NODES,
               log: bool = True) -> None:
    """A device plugin outside the operator: one Running pod per GPU node, its log."""
    labels = labels or {"name": "nvidia-device-plugin-ds"}
    template = _operator_plugin_pod(bundle)
    pods = bundle.items("pods")
    for index, node in enumerate(nodes):
        name = f"{ds_name}-{'kx7qa'[:4]}{index}"
        pods.append(_pod_from(template, name=name, namespace=namespace, node=node,
                              labels=dict(labels), owner=ds_name, container=container,
                              image=image, runtime_class=runtime_class))
        if log and index == 0:
            bundle.write(f"logs/{namespace}/{name}/{container}.log", PLUGIN_LOG)
    bundle.set_items("pods", pods)
    bundle.set_items("daemonsets", [*bundle.items("daemonsets"),
                                    _daemonset(ds_name, namespace, labels, len(nodes), image)])


def _node_info(bundle: Bundle, **info: str) -> None:
    def change(node: dict[str, Any]) -> None:
        node["status"].setdefault("nodeInfo", {}).update(info)
    bundle.edit_nodes(change)


def _node_labels(bundle: Bundle, labels: dict[str, str], gpu_only: bool = True) -> None:
    def change(node: dict[str, Any]) -> None:
        if not gpu_only or node["metadata"]["name"] in GPU_NODES:
            node["metadata"]["labels"].update(labels)
    bundle.edit_nodes(change)


def _docker_nodes(bundle: Bundle, kubelet_flags: str) -> None:
    """Docker is the CRI: daemon.json configured for nvidia, Docker's own containerd
    (CRI disabled) dumped, the kubelet's command line, no containerd drop-ins."""
    for name in GPU_NODES:
        bundle.remove(f"nodes/{name}/containerd/files")
        bundle.remove(f"nodes/{name}/systemd/containerd.txt")
        bundle.remove(f"nodes/{name}/cdi")
        bundle.write(f"nodes/{name}/containerd/config-dump.toml", DOCKER_CONTAINERD_DUMP)
        bundle.write(f"nodes/{name}/docker/files/etc/docker/daemon.json", DAEMON_JSON)
        bundle.write(f"nodes/{name}/host/kubelet.txt",
                     f"/usr/bin/kubelet {kubelet_flags} --config=/var/lib/kubelet/config.yaml\n")


def _no_node_files(bundle: Bundle) -> None:
    bundle.remove("nodes")


# -- the look-alikes ----------------------------------------------------------------------

def operator_host_driver(root: Path) -> Path:
    """The operator with driver.enabled=false on a host driver: the base sample itself."""
    return base(root).save()


def standalone_plugin(root: Path) -> Path:
    bundle = base(root)
    _without_operator(bundle)
    _default_nvidia(bundle)
    add_plugin(bundle)
    return bundle.save()


def standalone_dcgm_exporter(root: Path) -> Path:
    bundle = base(root)
    _without_operator(bundle)
    _default_nvidia(bundle)
    add_plugin(bundle)
    add_plugin(bundle, namespace="monitoring", ds_name="dcgm-exporter",
               labels={"app.kubernetes.io/name": "dcgm-exporter",
                       "app.kubernetes.io/instance": "dcgm-exporter"},
               container="exporter", log=False,
               image="nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04")
    return bundle.save()


def _docker_cluster(root: Path, runtime_version: str, kubelet_version: str,
                    kubelet_flags: str) -> Bundle:
    """A standalone plugin on Docker nodes: the kubelet's version and flags decide the shim."""
    bundle = base(root)
    _without_operator(bundle)
    add_plugin(bundle)
    _node_info(bundle, containerRuntimeVersion=runtime_version, kubeletVersion=kubelet_version)
    _docker_nodes(bundle, kubelet_flags)
    return bundle


def docker_dockershim(root: Path) -> Path:
    return _docker_cluster(root, "docker://20.10.24", "v1.23.17",
                           "--container-runtime=docker --network-plugin=cni").save()


def docker_cri_dockerd(root: Path) -> Path:
    bundle = _docker_cluster(root, "docker://24.0.7", "v1.28.15",
                             "--container-runtime-endpoint=unix:///var/run/cri-dockerd.sock")
    for name in GPU_NODES:
        bundle.write(f"nodes/{name}/runtime.json", json.dumps(
            {"runtime": "docker", "distribution": "kubeadm",
             "config_path": "/etc/docker/daemon.json", "socket": "/var/run/cri-dockerd.sock",
             "binary": "/usr/bin/dockerd", "signals": ["kubelet --container-runtime-endpoint"]}))
    return bundle.save()


def gke_managed(root: Path) -> Path:
    """GKE: Google installs the driver (nvidia-driver-installer) and runs its own device
    plugin in kube-system; COS nodes, no node files."""
    bundle = base(root)
    _without_operator(bundle)
    _no_node_files(bundle)
    _node_info(bundle, osImage="Container-Optimized OS from Google",
               kubeletVersion="v1.30.5-gke.1014001", containerRuntimeVersion="containerd://1.7.22")
    _node_labels(bundle, {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
                          "cloud.google.com/gke-gpu": "true"})
    add_plugin(bundle, ds_name="nvidia-gpu-device-plugin-small-cos",
               labels={"k8s-app": "nvidia-gpu-device-plugin"}, container="nvidia-gpu-device-plugin",
               image="gke.gcr.io/nvidia-gpu-device-plugin@sha256:4f1c", log=False)
    add_plugin(bundle, ds_name="nvidia-driver-installer",
               labels={"k8s-app": "nvidia-driver-installer"}, container="pause",
               image="gke.gcr.io/pause:3.8", log=False)
    return bundle.save()


def eks_managed(root: Path) -> Path:
    """EKS GPU AMI: driver and toolkit in the image, containerd's default runtime nvidia,
    the static device-plugin manifest in kube-system."""
    bundle = base(root)
    _without_operator(bundle)
    _default_nvidia(bundle)
    _node_info(bundle, osImage="Amazon Linux 2", kubeletVersion="v1.29.3-eks-ae9a62a",
               containerRuntimeVersion="containerd://1.7.11")
    _node_labels(bundle, {"eks.amazonaws.com/nodegroup": "gpu",
                          "node.kubernetes.io/instance-type": "g5.xlarge"})
    add_plugin(bundle)
    return bundle.save()


def aks_managed(root: Path) -> Path:
    """AKS GPU node pool: the plugin DaemonSet in gpu-resources, no node files."""
    bundle = base(root)
    _without_operator(bundle)
    _no_node_files(bundle)
    _node_info(bundle, osImage="Ubuntu 22.04.4 LTS", kubeletVersion="v1.29.7",
               containerRuntimeVersion="containerd://1.7.20-1")
    _node_labels(bundle, {"kubernetes.azure.com/accelerator": "nvidia",
                          "kubernetes.azure.com/cluster": "MC_rg_gpu_eastus"})
    add_plugin(bundle, namespace="gpu-resources")
    return bundle.save()


def talos_no_node_files(root: Path) -> Path:
    """Talos with the NVIDIA system extensions and the plugin's Helm chart (RuntimeClass
    nvidia); no node files: Talos has no shell to run the node script in."""
    bundle = base(root)
    _without_operator(bundle)
    _no_node_files(bundle)
    _node_info(bundle, osImage="Talos (v1.7.6)", containerRuntimeVersion="containerd://2.0.0")
    runtime_class = json.loads((BASE / "cluster" / "runtimeclasses.json").read_text())["items"][0]
    bundle.set_items("runtimeclasses", [runtime_class])
    add_plugin(bundle, ds_name="nvidia-device-plugin",
               labels={"app.kubernetes.io/name": "nvidia-device-plugin",
                       "app.kubernetes.io/instance": "nvidia-device-plugin"},
               container="nvidia-device-plugin-ctr", runtime_class="nvidia")
    return bundle.save()


def bottlerocket_no_node_files(root: Path) -> Path:
    """Bottlerocket's NVIDIA variant: the device plugin is a host service, no pod."""
    bundle = base(root)
    _without_operator(bundle)
    _no_node_files(bundle)
    _node_info(bundle, osImage="Bottlerocket OS 1.20.0 (aws-k8s-1.29-nvidia)",
               containerRuntimeVersion="containerd://1.6.31+bottlerocket",
               kubeletVersion="v1.29.1-eks-61c0bbb")
    return bundle.save()


def must_gather(root: Path) -> Path:
    from samples.foreign_layouts import must_gather as write
    write(BASE, root)
    return root


def troubleshoot(root: Path) -> Path:
    from samples.foreign_layouts import troubleshoot as write
    write(BASE, root)
    return root


LOOKALIKES: dict[str, Callable[[Path], Path]] = {
    "operator-host-driver": operator_host_driver,
    "standalone-plugin": standalone_plugin,
    "standalone-dcgm-exporter": standalone_dcgm_exporter,
    "docker-dockershim": docker_dockershim,
    "docker-cri-dockerd": docker_cri_dockerd,
    "gke-managed": gke_managed,
    "eks-managed": eks_managed,
    "aks-managed": aks_managed,
    "talos-no-node-files": talos_no_node_files,
    "bottlerocket-no-node-files": bottlerocket_no_node_files,
    "must-gather": must_gather,
    "troubleshoot": troubleshoot,
}


def names() -> Iterator[str]:
    yield from LOOKALIKES
