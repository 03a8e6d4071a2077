"""Every workload of the GPU stack in the cluster: what it is, what it is for, who runs it.

A rule that asks "is the device plugin running?" must find it wherever it was installed:
as an operand of the GPU Operator, from the plugin's Helm chart or static manifest in any
namespace, as a cloud's managed add-on, beside a standalone dcgm-exporter or NFD. This
module recognises each DaemonSet, Deployment and lone pod of the stack by its labels,
its images and its owner, once, and groups the pods under the workload that owns them.

The patterns below are those of the public manifests and charts that install each
component (the labels they set, the images they run):

- GPU Operator operands: the operator's ``assets/state-*`` DaemonSets, label ``app=<name>``
  (https://github.com/NVIDIA/gpu-operator/tree/main/assets), found by ``facts.operands``.
- the device plugin's static manifest: DaemonSet ``nvidia-device-plugin-daemonset``,
  label ``name=nvidia-device-plugin-ds``, image ``nvcr.io/nvidia/k8s-device-plugin``
  (https://github.com/NVIDIA/k8s-device-plugin/blob/main/deployments/static/nvidia-device-plugin.yml);
  its Helm chart: ``app.kubernetes.io/name=nvidia-device-plugin``
  (https://github.com/NVIDIA/k8s-device-plugin/tree/main/deployments/helm/nvidia-device-plugin);
  EKS's GPU AMIs document the same static manifest
  (https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-optimized-ami.html).
- GKE: DaemonSet ``nvidia-gpu-device-plugin`` in ``kube-system``, label
  ``k8s-app=nvidia-gpu-device-plugin``, and the driver installer
  ``k8s-app=nvidia-driver-installer``
  (https://github.com/GoogleCloudPlatform/container-engine-accelerators, its
  ``cmd/nvidia_gpu/device-plugin.yaml`` and
  ``nvidia-driver-installer/cos/daemonset-preloaded.yaml``).
- AKS: the manifest of the AKS GPU guide runs ``mcr.microsoft.com/oss/nvidia/k8s-device-plugin``
  in namespace ``gpu-resources`` (https://learn.microsoft.com/azure/aks/gpu-cluster).
- dcgm-exporter's chart: ``app.kubernetes.io/name=dcgm-exporter``, image
  ``nvcr.io/nvidia/k8s/dcgm-exporter`` (https://github.com/NVIDIA/dcgm-exporter/tree/main/deployment).
- GFD's chart: ``app.kubernetes.io/name=gpu-feature-discovery``
  (https://github.com/NVIDIA/k8s-device-plugin/tree/main/deployments/helm/nvidia-device-plugin).
- NFD: ``app.kubernetes.io/name=node-feature-discovery`` with ``role`` master/worker/gc,
  image ``registry.k8s.io/nfd/node-feature-discovery``
  (https://github.com/kubernetes-sigs/node-feature-discovery/tree/master/deployment/helm).
- MIG manager: ``app=nvidia-mig-manager``, image ``nvcr.io/nvidia/cloud-native/k8s-mig-manager``
  (https://github.com/NVIDIA/mig-parted/tree/main/deployments).
- the Network Operator's MOFED/DOCA driver DaemonSet: label ``nvidia.com/ofed-driver``,
  image ``nvcr.io/nvidia/mellanox/mofed`` or ``doca-driver``
  (https://github.com/Mellanox/network-operator, ``manifests/state-ofed-driver``), and its
  former ``nv-peer-mem-driver`` DaemonSet (``manifests/state-nv-peer-mem``); the GPU
  Operator's own peermem runs as container ``nvidia-peermem-ctr`` of the driver pod.
- NVIDIA's DRA driver: ``app.kubernetes.io/name=nvidia-dra-driver-gpu``, image
  ``k8s-dra-driver-gpu`` (https://github.com/NVIDIA/k8s-dra-driver-gpu).

A look-alike is not matched: AMD's ``rocm/k8s-device-plugin``, Intel's GPU plugin, a
user's CUDA pod or a Prometheus node exporter carry none of these labels or images.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from analyzers.facts.operands import NFD_WORKER, component_of, operand_component
from analyzers.facts.preconditions import operator_made
from bundle.kube import DaemonSet, Deployment, ObjectMeta, Pod, PodSpec

# What each component is for: the gate or stage of the GPU stack it serves.
PURPOSE: dict[str, str] = {
    "operator": "deploys and reconciles the GPU stack (the GPU Operator itself)",
    "driver": "driver stage: builds or loads the NVIDIA kernel module",
    "toolkit": "toolkit stage: installs the NVIDIA container runtime into the CRI",
    "validator": "validation gates: checks driver, toolkit, CUDA and plugin in order",
    "cuda-validator": "CUDA stage: runs a CUDA workload on the node",
    "device-plugin": "plugin stage: advertises nvidia.com/gpu to the kubelet",
    "gfd": "labels: publishes the GPU model, count and MIG layout as node labels",
    "nfd": "labels: the PCI and kernel labels the operator deploys by",
    "nfd-worker": "labels: the PCI and kernel labels the operator deploys by",
    "dcgm": "monitoring: the DCGM host engine",
    "dcgm-exporter": "monitoring: GPU metrics for Prometheus",
    "mig-manager": "MIG: applies the node's MIG layout",
    "mofed": "RDMA: the Network Operator's MOFED/DOCA network driver",
    "peermem": "RDMA: GPUDirect peer memory between GPU and NIC",
    "dra-driver": "DRA: allocates GPUs through dynamic resource allocation",
    "mps-control-daemon": "sharing: the MPS control daemon behind MPS GPU sharing",
    "sandbox-validator": "validation gates for GPUs passed through to VMs",
    "vfio-manager": "VM passthrough: binds GPUs to vfio-pci",
    "sandbox-device-plugin": "VM passthrough: advertises GPUs to KubeVirt",
    "vgpu-manager": "vGPU: the vGPU host driver",
    "vgpu-device-manager": "vGPU: creates the node's vGPU devices",
    "kata-manager": "confidential containers: Kata runtime classes",
    "cc-manager": "confidential computing: the GPUs' CC mode",
}
# Operands of the operator's ``assets/state-*`` beyond the ones ``facts.operands`` orders
# into stages (https://github.com/NVIDIA/gpu-operator/tree/main/assets).
_MORE_OPERANDS: dict[str, str] = {
    "nvidia-device-plugin-mps-control-daemon": "mps-control-daemon",
    "nvidia-sandbox-validator": "sandbox-validator",
    "nvidia-vfio-manager": "vfio-manager",
    "nvidia-sandbox-device-plugin-daemonset": "sandbox-device-plugin",
    "nvidia-vgpu-manager-daemonset": "vgpu-manager",
    "nvidia-vgpu-device-manager": "vgpu-device-manager",
    "nvidia-kata-manager": "kata-manager",
    "nvidia-cc-manager": "cc-manager",
}
# Components whose failure leaves the node without usable GPUs (high severity).
GATES = frozenset({"driver", "toolkit", "validator", "cuda-validator", "device-plugin",
                   "dra-driver", "operator"})

OPERATOR = "gpu-operator"
_NVIDIA_REPO = r"(?:^|/)(?:nvidia|nvidia/cloud-native|nvidia/k8s|nvidia/mellanox)/"


@dataclass(frozen=True, slots=True)
class Sign:
    """One recognisable mark of a component: a label (``key=value``; value None: the key
    alone), or an image pattern; ``installer`` says who installs workloads with it."""

    component: str
    installer: str
    label: tuple[str, str | None] | None = None
    image: re.Pattern[str] | None = None

    def describe(self) -> str:
        if self.label is not None:
            key, value = self.label
            return f"label {key}" + (f"={value}" if value is not None else "")
        assert self.image is not None
        return f"image {self.image.pattern}"


def _image(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# First match wins: labels before images, specific installers before generic ones.
SIGNS: tuple[Sign, ...] = (
    Sign("device-plugin", "GKE (managed)", label=("k8s-app", "nvidia-gpu-device-plugin")),
    Sign("driver", "GKE (managed)", label=("k8s-app", "nvidia-driver-installer")),
    Sign("driver", "GKE (managed)", label=("name", "nvidia-driver-installer")),
    Sign("device-plugin", "AKS manifest",
         image=_image(r"(?:^|/)mcr\.microsoft\.com/oss/nvidia/k8s-device-plugin[:@]")),
    Sign("device-plugin", "static manifest", label=("name", "nvidia-device-plugin-ds")),
    Sign("device-plugin", "Helm chart nvidia-device-plugin",
         label=("app.kubernetes.io/name", "nvidia-device-plugin")),
    Sign("gfd", "Helm chart", label=("app.kubernetes.io/name", "gpu-feature-discovery")),
    Sign("dcgm-exporter", "Helm chart dcgm-exporter",
         label=("app.kubernetes.io/name", "dcgm-exporter")),
    Sign("dcgm-exporter", "manifest", label=("app", "dcgm-exporter")),
    Sign("nfd", "node-feature-discovery",
         label=("app.kubernetes.io/name", "node-feature-discovery")),
    Sign("mig-manager", "manifest", label=("app", "nvidia-mig-manager")),
    Sign("mofed", "Network Operator", label=("nvidia.com/ofed-driver", None)),
    Sign("dra-driver", "Helm chart nvidia-dra-driver-gpu",
         label=("app.kubernetes.io/name", "nvidia-dra-driver-gpu")),
    Sign("operator", "gpu-operator", label=("app", "gpu-operator")),
    # images, for workloads installed by hand with other labels
    Sign("device-plugin", "manifest", image=_image(_NVIDIA_REPO + r"k8s-device-plugin[:@]")),
    Sign("device-plugin", "GKE (managed)",
         image=_image(r"(?:^|/)nvidia-gpu-device-plugin[:@]")),
    Sign("gfd", "manifest", image=_image(_NVIDIA_REPO + r"gpu-feature-discovery[:@]")),
    Sign("dcgm-exporter", "manifest", image=_image(_NVIDIA_REPO + r"dcgm-exporter[:@]")),
    Sign("mig-manager", "manifest", image=_image(_NVIDIA_REPO + r"k8s-mig-manager[:@]")),
    Sign("nfd", "node-feature-discovery",
         image=_image(r"(?:^|/)nfd/node-feature-discovery[:@]")),
    Sign("mofed", "Network Operator", image=_image(_NVIDIA_REPO + r"(?:mofed|doca-driver)[:@]")),
    Sign("peermem", "Network Operator", image=_image(r"(?:^|/)nv-peer-mem-driver[:@]")),
    Sign("dra-driver", "manifest", image=_image(r"(?:^|/)k8s-dra-driver(?:-gpu)?[:@]")),
    Sign("operator", "gpu-operator", image=_image(_NVIDIA_REPO + r"gpu-operator[:@]")),
)
_NETWORK_OWNERS = frozenset({"NicClusterPolicy"})
_NETWORK_LABEL = "nvidia.network-operator.state"


@dataclass(frozen=True, slots=True)
class Workload:
    """One workload of the GPU stack: a DaemonSet, a Deployment or a lone pod."""

    component: str
    kind: str                   # DaemonSet | Deployment | Pod
    namespace: str
    name: str
    installer: str              # gpu-operator | Helm chart ... | static manifest | GKE ...
    operator_managed: bool      # the GPU Operator made it and reconciles it
    matched_by: str             # what recognised it, for explanations
    obj: DaemonSet | Deployment | Pod
    pods: tuple[Pod, ...] = field(default=())

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def purpose(self) -> str:
        return PURPOSE.get(self.component, "part of the GPU stack")

    @property
    def gate(self) -> bool:
        """Whether the node has no usable GPU while this component fails."""
        return self.component in GATES

    def describe(self) -> str:
        who = "the GPU Operator" if self.operator_managed else self.installer
        return f"{self.kind} {self.key} ({self.component}, {who})"


def _images(spec: PodSpec) -> list[str]:
    return [c.image for c in (*spec.init_containers, *spec.containers) if c.image]


def _sign(labels: Mapping[str, str], images: Iterable[str]) -> Sign | None:
    """The first of :data:`SIGNS` the object shows: a label it carries or an image."""
    shown = _image_signs(tuple(images))
    for index, sign in enumerate(SIGNS):
        if sign.label is not None:
            key, value = sign.label
            if key in labels and (value is None or labels[key] == value):
                return sign
        elif index in shown:
            return sign
    return None


@functools.lru_cache(maxsize=4096)
def _image_signs(images: tuple[str, ...]) -> frozenset[int]:
    """Which of :data:`SIGNS` (by index) these images show: the pods of one workload
    share their images, so each distinct list is searched once."""
    return frozenset(index for index, sign in enumerate(SIGNS)
                     if sign.image is not None and any(sign.image.search(i) for i in images))


def _more_operand(name: str) -> str | None:
    return next((component for prefix, component in _MORE_OPERANDS.items()
                 if name == prefix or name.startswith(prefix + "-")), None)


def _nfd_part(labels: Mapping[str, str], name: str) -> str:
    role = labels.get("role", labels.get("app.kubernetes.io/component", ""))
    if role == "worker" or "nfd-worker" in name or "feature-discovery-worker" in name:
        return "nfd-worker"
    return "nfd"


def recognise(meta: ObjectMeta, spec: PodSpec, template_labels: Mapping[str, str],
              operator_namespace: str | None,
              obj: DaemonSet | Deployment | Pod) -> tuple[str, str, bool, str] | None:
    """(component, installer, operator-managed, what matched) for one object, or None."""
    labels = {**template_labels, **meta.labels}
    name = meta.name
    network = any(o.kind in _NETWORK_OWNERS for o in meta.owner_references) or \
        _NETWORK_LABEL in labels
    if isinstance(obj, Deployment):
        made = not network and (meta.namespace == operator_namespace or labels.get(
            "helm.sh/chart", "").startswith("gpu-operator"))
    else:
        made = not network and operator_made(obj, operator_namespace)
    if made and not isinstance(obj, Deployment):
        app = labels.get("app", "")
        component = _more_operand(app) or operand_component(app) or \
            _more_operand(name) or operand_component(name)
        if component is None and isinstance(obj, Pod):
            component = component_of(obj)
        if component is not None and component != NFD_WORKER:
            return component, OPERATOR, True, f"operand {labels.get('app') or name}"
    sign = _sign(labels, _images(spec))
    if sign is None:
        return None
    component = sign.component
    if component == "nfd":
        component = _nfd_part(labels, name)
    if component == "operator" and isinstance(obj, DaemonSet):
        return None
    installer = "Network Operator" if network else sign.installer
    if made and component != "operator":
        # deployed beside the operator by its Helm chart (NFD), not reconciled by it
        installer = "gpu-operator Helm chart"
    return component, installer, False, sign.describe()


_STACK_OWNERS = frozenset({"DaemonSet", "ReplicaSet"})


def controller(pod: Pod, kinds: frozenset[str] = _STACK_OWNERS) -> tuple[str, str] | None:
    """The kind and name of the workload that made ``pod``, among owners of ``kinds``; a
    ReplicaSet stands for its Deployment (named ``<deployment>-<pod-template-hash>``)."""
    for owner in pod.metadata.owner_references:
        if owner.kind not in kinds or not owner.name:
            continue
        if owner.kind != "ReplicaSet":
            return owner.kind, owner.name
        template = pod.metadata.labels.get("pod-template-hash", "")
        if template and owner.name.endswith(f"-{template}"):
            return "Deployment", owner.name.removesuffix(f"-{template}")
        return "Deployment", owner.name.rpartition("-")[0] or owner.name
    return None


@dataclass(frozen=True, slots=True)
class Inventory:
    """The GPU stack's workloads, in (namespace, name) order."""

    workloads: tuple[Workload, ...]
    by_pod: Mapping[tuple[str, str], Workload]

    def of(self, pod: Pod) -> Workload | None:
        return self.by_pod.get((pod.namespace, pod.name))

    def components(self) -> dict[str, list[Workload]]:
        found: dict[str, list[Workload]] = {}
        for workload in self.workloads:
            found.setdefault(workload.component, []).append(workload)
        return found

    def get(self, namespace: str, name: str) -> Workload | None:
        return next((w for w in self.workloads
                     if w.namespace == namespace and w.name == name), None)


def build(daemonsets: Iterable[DaemonSet], deployments: Iterable[Deployment],
          pods: Iterable[Pod], operator_namespace: str | None) -> Inventory:
    """Recognise the stack's DaemonSets, Deployments and the pods they own; a pod whose
    owner was not collected or is not a workload counts on its own when it is
    recognisable."""
    owners: dict[tuple[str, str, str], Workload] = {}
    for ds in daemonsets:
        spec = ds.spec.template.spec
        found = recognise(ds.metadata, spec, ds.spec.template.metadata.labels,
                          operator_namespace, ds)
        if found is not None:
            owners[("DaemonSet", ds.metadata.namespace or "", ds.metadata.name)] = Workload(
                found[0], "DaemonSet", ds.metadata.namespace or "", ds.metadata.name,
                found[1], found[2], found[3], ds)
    for deployment in deployments:
        spec = deployment.spec.template.spec
        found = recognise(deployment.metadata, spec, deployment.spec.template.metadata.labels,
                          operator_namespace, deployment)
        if found is not None:
            where = ("Deployment", deployment.metadata.namespace or "",
                     deployment.metadata.name)
            owners[where] = Workload(found[0], "Deployment", where[1], where[2], found[1],
                                     found[2], found[3], deployment)
    owned: dict[tuple[str, str, str], list[Pod]] = {}
    lone: dict[tuple[str, str, str], Workload] = {}
    for pod in pods:
        owner = controller(pod)
        key = (owner[0], pod.namespace, owner[1]) if owner is not None else None
        if key is not None and key in owners:
            owned.setdefault(key, []).append(pod)
            continue
        found = recognise(pod.metadata, pod.spec, {}, operator_namespace, pod)
        if found is None:
            continue
        if key is not None:
            # the owner was not collected: group the pods under its name all the same
            if key not in owners:
                owners[key] = Workload(found[0], key[0], key[1], key[2], found[1], found[2],
                                       found[3], pod)
            owned.setdefault(key, []).append(pod)
        else:
            # pods without a workload (the validator's CUDA pods): one group per app label
            group = ("Pod", pod.namespace, pod.metadata.labels.get("app") or pod.name)
            lone.setdefault(group, Workload(found[0], "Pod", group[1], group[2], found[1],
                                            found[2], found[3], pod))
            owned.setdefault(group, []).append(pod)
    workloads = [Workload(w.component, w.kind, w.namespace, w.name, w.installer,
                          w.operator_managed, w.matched_by, w.obj, tuple(owned.get(k, ())))
                 for k, w in (*owners.items(), *lone.items())]
    workloads.sort(key=lambda w: (w.namespace, w.name, w.kind))
    by_pod = {(p.namespace, p.name): w for w in workloads for p in w.pods}
    return Inventory(tuple(workloads), by_pod)
