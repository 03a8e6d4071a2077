"""Which container runtime and Kubernetes distribution each node runs, and where that
distribution keeps its runtime's configuration.

The same failure (no ``nvidia`` handler in the loaded configuration) hides behind other
files, sockets, templates and systemd units on k3s, RKE2, k0s, MicroK8s and OpenShift.
Rules ask this module which layout a node has instead of assuming ``/etc/containerd``.

Sources, best first:

1. ``nodes/<n>/runtime.json`` (bundle format 1.1): what the node collector detected on
   the host (runtime, distribution, config path, socket, binary).
2. The Node object: ``status.nodeInfo.kubeletVersion`` suffixes (``+k3s1``,
   ``+rke2r1``, ``+k0s``), ``status.nodeInfo.containerRuntimeVersion``
   (``containerd://1.7.23-k3s2``, ``cri-o://1.29.1``, ``docker://…``) and labels
   (``microk8s.io/cluster``, ``node.openshift.io/os_id``).

A node with no sign of a distribution is ``None``: rules treat it as the stock layout,
exactly as before these facts existed, so an old bundle analyses as it did.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from analyzers.results.models import Evidence
from bundle import NodeArtifacts, specs, versions
from bundle.kube import Node

CONTAINERD = "containerd"
CRIO = "cri-o"
DOCKER = "docker"
RUNTIMES = (CONTAINERD, CRIO, DOCKER)

KUBEADM = "kubeadm"
K3S = "k3s"
RKE2 = "rke2"
K0S = "k0s"
MICROK8S = "microk8s"
OPENSHIFT = "openshift"
DISTRIBUTIONS = (KUBEADM, K3S, RKE2, K0S, MICROK8S, OPENSHIFT)


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a distribution's containerd lives (``distributions.md`` of the project)."""

    distribution: str
    config: str                   # the file containerd runs with
    templates: tuple[str, ...]    # files it is rebuilt from at every start (users edit these)
    dropin_dir: str | None        # the directory the config imports by default
    socket: str
    binary: str                   # containerd binary on the host
    units: tuple[str, ...]        # systemd units whose process runs containerd
    toolkit_config: str           # the value the toolkit's CONTAINERD_CONFIG should have
    log_file: str | None = None   # where containerd logs when not to the journal

    @property
    def regenerated(self) -> bool:
        """The config is rewritten from a template at every start: edits to it are lost."""
        return bool(self.templates)

    @property
    def stock(self) -> bool:
        return self.distribution == KUBEADM


STOCK = Layout(KUBEADM, "/etc/containerd/config.toml", (), "/etc/containerd/conf.d",
               "/run/containerd/containerd.sock", "containerd", ("containerd",),
               "/etc/containerd/config.toml")

LAYOUTS: dict[str, Layout] = {
    KUBEADM: STOCK,
    K3S: Layout(
        K3S, "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
        ("/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl",
         "/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.tmpl"),
        None, "/run/k3s/containerd/containerd.sock",
        "/var/lib/rancher/k3s/data/current/bin/containerd", ("k3s", "k3s-agent"),
        "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl",
        "/var/lib/rancher/k3s/agent/containerd/containerd.log"),
    RKE2: Layout(
        RKE2, "/var/lib/rancher/rke2/agent/etc/containerd/config.toml",
        ("/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl",
         "/var/lib/rancher/rke2/agent/etc/containerd/config-v3.toml.tmpl"),
        None, "/run/k3s/containerd/containerd.sock", "/var/lib/rancher/rke2/bin/containerd",
        ("rke2-agent", "rke2-server"),
        "/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl",
        "/var/lib/rancher/rke2/agent/containerd/containerd.log"),
    K0S: Layout(
        K0S, "/etc/k0s/containerd.toml", (), "/etc/k0s/containerd.d", "/run/k0s/containerd.sock",
        "/var/lib/k0s/bin/containerd", ("k0sworker", "k0scontroller"),
        "/etc/k0s/containerd.d/nvidia.toml"),
    MICROK8S: Layout(
        MICROK8S, "/var/snap/microk8s/current/args/containerd.toml",
        ("/var/snap/microk8s/current/args/containerd-template.toml",), None,
        "/var/snap/microk8s/common/run/containerd.sock", "/snap/microk8s/current/bin/containerd",
        ("snap.microk8s.daemon-containerd", "snap.microk8s.daemon-kubelite"),
        "/var/snap/microk8s/current/args/containerd-template.toml"),
}


@dataclass(frozen=True, slots=True)
class NodeRuntime:
    """One node's runtime and distribution, and what they were read from."""

    node: str
    runtime: str | None           # containerd | cri-o | docker | None (unknown)
    distribution: str | None      # kubeadm | k3s | rke2 | k0s | microk8s | openshift | None
    source: str                   # "runtime.json", "nodeInfo", "labels" or "none"
    basis: str                    # the values that decided it, for summaries
    evidence: Evidence | None
    config_path: str | None = None   # from runtime.json, when the collector saw it
    socket: str | None = None
    runtime_version: str | None = None   # nodeInfo's containerRuntimeVersion

    @property
    def toolkit_config(self) -> str:
        """The value the toolkit's CONTAINERD_CONFIG should have on this node. k3s and
        RKE2 built with containerd 2.x render ``config-v3.toml.tmpl`` and read
        ``config.toml.tmpl`` only when that file is missing
        (https://docs.k3s.io/advanced#configuring-containerd)."""
        layout = self.layout
        if versions.containerd_major(self.runtime_version) >= 2:
            v3 = [t for t in layout.templates if t.endswith("/config-v3.toml.tmpl")]
            if v3:
                return v3[0]
        return layout.toolkit_config

    def templates_in_effect(self, paths: list[str]) -> list[str]:
        """``paths`` (templates found on the node), the one the distribution renders from
        first. k3s and RKE2 on containerd 2.x render ``config-v3.toml.tmpl`` and fall back
        to ``config.toml.tmpl`` only without it; their containerd 1.x releases know no
        v3 template. Unknown versions keep the given order."""
        major = versions.containerd_major(self.runtime_version)
        v3 = [p for p in paths if p.endswith("/config-v3.toml.tmpl")]
        rest = [p for p in paths if p not in v3]
        if major >= 2:
            return v3 + rest
        return rest if major == 1 else paths

    @property
    def layout(self) -> Layout:
        """The containerd layout to judge: the distribution's, else the stock one."""
        return LAYOUTS.get(self.distribution or KUBEADM, STOCK)

    @property
    def config(self) -> str:
        """The file containerd runs with (runtime.json's when collected)."""
        return self.config_path or self.layout.config

    @property
    def containerd(self) -> bool:
        """containerd is (or may be: unknown runtime) the node's runtime."""
        return self.runtime in (None, CONTAINERD)

    @property
    def non_stock_containerd(self) -> bool:
        """containerd run by a distribution (k3s, RKE2, k0s, MicroK8s), not a system unit."""
        return self.containerd and not self.layout.stock

    def describe(self) -> str:
        parts = [p for p in (self.distribution, self.runtime) if p]
        return "/".join(parts) or "unknown"



def detect(artifacts: NodeArtifacts | None, node: Node | None, name: str) -> NodeRuntime:
    """The node's runtime and distribution from runtime.json, else from the Node object."""
    if artifacts is not None:
        found = _from_runtime_json(artifacts)
        if found is not None:
            version = node.status.node_info.container_runtime_version if node else None
            return replace(found, runtime_version=version or None)
    if node is not None:
        return _from_node(node)
    return NodeRuntime(name, None, None, "none", "no Node object and no runtime.json", None)


def _text_field(data: dict[str, Any], key: str, allowed: tuple[str, ...] | None = None
                ) -> str | None:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        return None
    if allowed is not None and value not in allowed:
        return None
    return value


def _from_runtime_json(artifacts: NodeArtifacts) -> NodeRuntime | None:
    if not artifacts.has(specs.RUNTIME_JSON):
        return None
    path = artifacts.path(specs.RUNTIME_JSON)
    data = artifacts.bundle.read_json(path)
    if not isinstance(data, dict):
        artifacts.bundle.problem(path, "runtime.json is not a JSON object", lost=True)
        return None
    runtime = _text_field(data, "runtime", RUNTIMES)
    distribution = _text_field(data, "distribution", DISTRIBUTIONS)
    if runtime is None and distribution is None:
        return None
    config = _text_field(data, "config_path")
    socket = _text_field(data, "socket")
    basis = f"runtime.json: runtime={runtime or 'unknown'}, distribution=" \
            f"{distribution or 'unknown'}"
    return NodeRuntime(artifacts.name, runtime, distribution, specs.RUNTIME_JSON, basis,
                       Evidence(path=path, excerpt=basis), config_path=config
                       if config and config.startswith("/") else None,
                       socket=socket if socket and socket.startswith("/") else None)


def _from_node(node: Node) -> NodeRuntime:
    info = node.status.node_info
    kubelet = info.kubelet_version or ""
    runtime_version = info.container_runtime_version or ""
    runtime = None
    scheme = runtime_version.split("://", 1)[0].lower() if "://" in runtime_version else ""
    if scheme == "containerd":
        runtime = CONTAINERD
    elif scheme in ("cri-o", "crio"):
        runtime = CRIO
    elif scheme == "docker":
        runtime = DOCKER
    distribution = None
    pointer = "/status/nodeInfo/kubeletVersion"
    excerpt = f"kubeletVersion: {kubelet}"
    if "+k3s" in kubelet:
        distribution = K3S
    elif "+rke2" in kubelet:
        distribution = RKE2
    elif "+k0s" in kubelet:
        distribution = K0S
    elif "microk8s.io/cluster" in node.labels:
        distribution, pointer = MICROK8S, "/metadata/labels/microk8s.io~1cluster"
        excerpt = f"microk8s.io/cluster: {node.labels['microk8s.io/cluster']}"
    elif "node.openshift.io/os_id" in node.labels:
        distribution, pointer = OPENSHIFT, "/metadata/labels/node.openshift.io~1os_id"
        excerpt = f"node.openshift.io/os_id: {node.labels['node.openshift.io/os_id']}"
    elif runtime == CONTAINERD and "-k3s" in runtime_version:
        # k3s and RKE2 ship the same k3s-built containerd; the kubelet suffix decides
        # above, this catches a kubelet version without it.
        distribution, pointer = K3S, "/status/nodeInfo/containerRuntimeVersion"
        excerpt = f"containerRuntimeVersion: {runtime_version}"
    if distribution is None and runtime is None:
        return NodeRuntime(node.name, None, None, "none", "no distribution signal in nodeInfo "
                           "or labels", None)
    source = "labels" if distribution in (MICROK8S, OPENSHIFT) else "nodeInfo"
    if distribution is None:
        pointer = "/status/nodeInfo/containerRuntimeVersion"
        excerpt = f"containerRuntimeVersion: {runtime_version}"
    basis = excerpt if runtime_version in excerpt else \
        f"{excerpt}, containerRuntimeVersion: {runtime_version}"
    evidence = Evidence(path=node.source_path, pointer=node.source_pointer + pointer,
                        excerpt=excerpt) if node.source_path else None
    return NodeRuntime(node.name, runtime, distribution, source, basis, evidence,
                       runtime_version=runtime_version or None)
