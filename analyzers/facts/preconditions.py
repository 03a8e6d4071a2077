"""What a rule's claim rests on, derived once: each node's CRI, whether the GPU Operator
runs and manages a component, whether a GPU-stack component exists at all.

A rule written for one world (the operator on containerd) judges wrongly in another: a
standalone device plugin in ``kube-system`` is not an operator operand; Docker's own
containerd runs with its CRI plugin disabled, which is normal where the kubelet talks
to Docker. Rules name the preconditions they need (``Rule.needs``); the engine skips a
rule whose precondition is false for the whole cluster, with the reason, and rules that
judge node by node ask :func:`node_cri` before a containerd claim.

The CRI of a node, best source first:

1. the kubelet's own command line (``host/kubelet.txt``): ``--container-runtime-endpoint``
   naming ``cri-dockerd.sock``, ``containerd.sock`` or ``crio.sock``, or, before
   Kubernetes 1.24, ``--container-runtime=docker`` (dockershim);
2. ``status.nodeInfo.containerRuntimeVersion`` (``docker://``, ``containerd://``,
   ``cri-o://``) — what the kubelet reports it talks to;
3. ``runtime.json`` (what the node script detected on the host);
4. events about pods on the node saying ``RuntimeHandler "nvidia" not supported``:
   dockershim's wording (kubernetes ``pkg/kubelet/dockershim/docker_sandbox.go``, quoted
   in https://github.com/NVIDIA/gpu-operator/issues/236), which cri-dockerd inherited
   until it learned RuntimeClass handlers (https://github.com/Mirantis/cri-dockerd/pull/350).

Docker nodes are ``docker`` with the shim named where known: ``dockershim`` (kubelet
before 1.24, no remote endpoint) or ``cri-dockerd``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from analyzers.facts.distro import CONTAINERD, CRIO, DOCKER, NodeRuntime
from analyzers.results.models import Evidence
from bundle import NodeArtifacts, specs
from bundle.evidence import clip, join_pointer
from bundle.kube import DaemonSet, Event, Node, Pod

DOCKERSHIM = "dockershim"
CRI_DOCKERD = "cri-dockerd"
RUNTIME_HANDLER_REFUSED = re.compile(r'RuntimeHandler "?[\w.-]+"? not supported')
_ENDPOINT = re.compile(r"--container-runtime-endpoint[= ](\S+)")
_RUNTIME_FLAG = re.compile(r"--container-runtime[= ](\S+)")
_CONFIG_ENDPOINT = re.compile(r"^\s*containerRuntimeEndpoint:\s*[\"']?(\S+?)[\"']?\s*$", re.M)
_KUBELET_MINOR = re.compile(r"v?1\.(\d{1,3})\.")


class Need(StrEnum):
    """A precondition a rule's claim needs, checked for the whole cluster."""

    OPERATOR = "the GPU Operator runs or is meant to"
    CONTAINERD = "a GPU node whose CRI is containerd (or not known)"
    CRIO = "a node whose CRI is CRI-O"
    DOCKER = "a GPU node whose CRI is Docker (dockershim or cri-dockerd)"


@dataclass(frozen=True, slots=True)
class NodeCri:
    """The container runtime the kubelet of one node talks to."""

    node: str
    cri: str | None          # containerd | cri-o | docker | None (not known)
    shim: str | None         # dockershim | cri-dockerd, for docker
    basis: str               # what decided it, for summaries and skip reasons
    evidence: Evidence | None = None

    @property
    def containerd_possible(self) -> bool:
        """containerd is, or may be (not known), the CRI."""
        return self.cri in (None, CONTAINERD)

    def describe(self) -> str:
        if self.cri is None:
            return "not known"
        return f"{self.cri} ({self.shim})" if self.shim else self.cri


def _scheme(endpoint: str) -> str | None:
    lowered = endpoint.lower()
    if "cri-dockerd" in lowered or "dockershim" in lowered:
        return DOCKER
    if "crio" in lowered or "cri-o" in lowered:
        return CRIO
    if "containerd" in lowered:
        return CONTAINERD
    return None


def _kubelet_minor(node: Node | None) -> int | None:
    version = node.status.node_info.kubelet_version if node is not None else None
    match = _KUBELET_MINOR.match(version or "")
    return int(match.group(1)) if match else None


def _from_kubelet(artifacts: NodeArtifacts, node: Node | None) -> NodeCri | None:
    path = artifacts.path(specs.KUBELET_FLAGS)
    text = artifacts.bundle.read_text(path)
    if not text:
        return None
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in (_ENDPOINT, _CONFIG_ENDPOINT):
            match = pattern.search(line)
            cri = _scheme(match.group(1)) if match else None
            if match and cri is not None:
                shim = CRI_DOCKERD if cri == DOCKER and "cri-dockerd" in match.group(1) else \
                    (DOCKERSHIM if cri == DOCKER else None)
                return NodeCri(artifacts.name, cri, shim,
                               f"kubelet {match.group(0).strip()} ({path})",
                               Evidence(path=path, line=number, excerpt=clip(line.strip())))
        flag = _RUNTIME_FLAG.search(line)
        if flag and flag.group(1).strip("'\"") == "docker":
            minor = _kubelet_minor(node)
            if minor is None or minor < 24:
                return NodeCri(artifacts.name, DOCKER, DOCKERSHIM,
                               f"kubelet --container-runtime=docker ({path})",
                               Evidence(path=path, line=number, excerpt=clip(line.strip())))
    return None


def _from_node_info(node: Node) -> NodeCri | None:
    version = node.status.node_info.container_runtime_version or ""
    scheme = version.split("://", 1)[0].lower() if "://" in version else ""
    cri = {"containerd": CONTAINERD, "cri-o": CRIO, "crio": CRIO, "docker": DOCKER}.get(scheme)
    if cri is None:
        return None
    shim = None
    if cri == DOCKER:
        minor = _kubelet_minor(node)
        # dockershim was removed in Kubernetes 1.24: Docker after it is cri-dockerd
        shim = CRI_DOCKERD if minor is not None and minor >= 24 else \
            (DOCKERSHIM if minor is not None else None)
    evidence = Evidence(path=node.source_path, pointer=join_pointer(
        node.source_pointer, "status", "nodeInfo", "containerRuntimeVersion"),
        excerpt=f"containerRuntimeVersion: {version}") if node.source_path else None
    return NodeCri(node.name, cri, shim, f"containerRuntimeVersion: {version}", evidence)


def node_cri(name: str, artifacts: NodeArtifacts | None, node: Node | None,
             detected: NodeRuntime, refusals: Iterable[Event] = ()) -> NodeCri:
    """The CRI of node ``name`` from the kubelet's flags, nodeInfo, runtime.json, events."""
    found = _from_kubelet(artifacts, node) if artifacts is not None else None
    reported = _from_node_info(node) if node is not None else None
    if found is not None:
        if reported is not None and reported.cri == found.cri and found.shim is None:
            return reported
        return found
    if reported is not None:
        return reported
    if detected.source == specs.RUNTIME_JSON and detected.runtime is not None:
        return NodeCri(name, detected.runtime, None, detected.basis, detected.evidence)
    for event in refusals:
        if RUNTIME_HANDLER_REFUSED.search(event.message or ""):
            return NodeCri(name, DOCKER, None,
                           f"an event about a pod on {name} says {event.message}",
                           Evidence(path=event.source_path, pointer=join_pointer(
                               event.source_pointer, "message"), excerpt=clip(event.message or "")))
    return NodeCri(name, None, None, "neither the kubelet's flags, nodeInfo nor runtime.json "
                   "names the node's CRI")


# -- who runs a GPU-stack component ---------------------------------------------------------

OPERATOR_NAMESPACES = ("gpu-operator", "gpu-operator-resources", "nvidia-gpu-operator")
_OPERATOR_OWNERS = frozenset({"ClusterPolicy", "NVIDIADriver"})

# Standalone components by their pods' labels and names: the device plugin's static
# manifest (label name=nvidia-device-plugin-ds) and Helm chart
# (app.kubernetes.io/name=nvidia-device-plugin), GKE's managed plugin and driver installer
# (k8s-app=nvidia-gpu-device-plugin / nvidia-driver-installer), the dcgm-exporter and GFD
# charts. https://github.com/NVIDIA/k8s-device-plugin (deployments/),
# https://cloud.google.com/kubernetes-engine/docs/how-to/gpus
_STANDALONE_LABELS: tuple[tuple[str, str, str], ...] = (
    ("name", "nvidia-device-plugin-ds", "device-plugin"),
    ("app.kubernetes.io/name", "nvidia-device-plugin", "device-plugin"),
    ("k8s-app", "nvidia-gpu-device-plugin", "device-plugin"),
    ("app.kubernetes.io/name", "gpu-feature-discovery", "gfd"),
    ("app.kubernetes.io/name", "dcgm-exporter", "dcgm-exporter"),
    ("app", "dcgm-exporter", "dcgm-exporter"),
    ("k8s-app", "nvidia-driver-installer", "driver"),
    ("app.kubernetes.io/name", "node-feature-discovery", "nfd"),
    # NVIDIA's DRA driver (kubelet plugin DaemonSet and controller): it sees GPUs by design.
    # https://github.com/NVIDIA/k8s-dra-driver-gpu (Helm chart; pods
    # nvidia-dra-driver-gpu-kubelet-plugin-*, label app.kubernetes.io/name=nvidia-dra-driver-gpu)
    ("app.kubernetes.io/name", "nvidia-dra-driver-gpu", "dra-driver"),
)
_STANDALONE_NAMES: tuple[tuple[str, str], ...] = (
    ("nvidia-device-plugin", "device-plugin"),
    ("nvidia-gpu-device-plugin", "device-plugin"),
    ("gpu-feature-discovery", "gfd"),
    ("nvidia-dcgm-exporter", "dcgm-exporter"),
    ("dcgm-exporter", "dcgm-exporter"),
    ("nvidia-driver-installer", "driver"),
    ("nvidia-dra-driver", "dra-driver"),
)


def operator_made(pod: Pod | DaemonSet, namespace: str | None) -> bool:
    """The object was made by the GPU Operator: in its namespace, labelled
    ``app.kubernetes.io/managed-by: gpu-operator`` or by its chart, or owned by a
    ClusterPolicy or NVIDIADriver. Without a known operator namespace, the operator's
    default namespaces count as its own."""
    meta = pod.metadata
    where = meta.namespace or ""
    if namespace is not None:
        if where == namespace:
            return True
    elif where in OPERATOR_NAMESPACES:
        return True
    labels = meta.labels
    if labels.get("app.kubernetes.io/managed-by") == "gpu-operator" or \
            labels.get("helm.sh/chart", "").startswith("gpu-operator"):
        return True
    return any(owner.kind in _OPERATOR_OWNERS for owner in meta.owner_references)


def stack_component(obj: Pod | DaemonSet) -> str | None:
    """Which GPU-stack component a pod or DaemonSet outside the operator is (device
    plugin, GFD, dcgm-exporter, a managed driver installer, NFD, the DRA driver), or None."""
    labels = obj.metadata.labels
    for key, value, component in _STANDALONE_LABELS:
        if labels.get(key) == value:
            return component
    name = obj.metadata.name
    for prefix, component in _STANDALONE_NAMES:
        if name.startswith(prefix):
            return component
    return None


@dataclass(frozen=True, slots=True)
class Component:
    """One GPU-stack component in the cluster and who runs it."""

    name: str
    # "operator" (it has operand pods) | "standalone" (pods of a plugin, exporter or
    # installer outside the operator) | "absent" (no pod runs it: not installed, or a
    # host install such as a host toolkit or Bottlerocket's device-plugin service)
    managed_by: str
    pods: tuple[Pod, ...] = ()

    @property
    def exists(self) -> bool:
        return self.managed_by != "absent"

    def describe(self) -> str:
        if not self.pods:
            return f"{self.name}: {self.managed_by}"
        namespaces = sorted({p.namespace for p in self.pods})
        return f"{self.name}: {self.managed_by} ({', '.join(namespaces)})"


def components(pods: Iterable[Pod], operands: Mapping[str, Mapping[str, object]],
               namespace: str | None) -> dict[str, Component]:
    """Per component name: run by the operator (it has operand pods), standalone (pods
    of a plugin, exporter or installer outside the operator) or absent."""
    operated = {component for by_component in operands.values() for component in by_component}
    standalone: dict[str, list[Pod]] = {}
    for pod in pods:
        if operator_made(pod, namespace):
            continue
        component = stack_component(pod)
        if component is not None:
            standalone.setdefault(component, []).append(pod)
    names = {"driver", "toolkit", "device-plugin", "gfd", "dcgm-exporter", "nfd",
             *operated, *standalone}
    found = {}
    for name in sorted(names):
        if name in operated:
            found[name] = Component(name, "operator")
        elif name in standalone:
            found[name] = Component(name, "standalone", tuple(standalone[name]))
        else:
            found[name] = Component(name, "absent")
    return found
