"""OP002 and OP003: the labels and taints that decide where operands run."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from analyzers.facts.evidence import field
from analyzers.facts.gpu import count as gpu_count
from analyzers.facts.gpu import is_gpu_resource
from analyzers.facts.operands import NFD_WORKER, OperandPod, component_of, node_of, pod_state
from analyzers.facts.scheduling import BLOCKING_EFFECTS, taint_text, tolerates
from analyzers.results.models import Evidence
from analyzers.rule import Context
from analyzers.rules.common import PRESENT
from bundle import specs
from bundle.evidence import clip
from bundle.kube import DaemonSet, Node, Pod

DEPLOY = "nvidia.com/gpu.deploy."


PCI_LABELS = (
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-0302_10de.present",
    "feature.node.kubernetes.io/pci-0300_10de.present",
)


# Deploy labels of the container workload (operator state_manager.go), MIG manager aside.
CONTAINER_DEPLOY = frozenset({
    "driver", "gpu-feature-discovery", "container-toolkit", "device-plugin", "dcgm",
    "dcgm-exporter", "node-status-exporter", "operator-validator", "mig-manager",
})


CRITICAL_DEPLOY = frozenset({"driver", "container-toolkit", "device-plugin",
                             "operator-validator"})


# Taints every DaemonSet pod tolerates (the DaemonSet controller adds these tolerations).
DAEMONSET_TOLERATED = frozenset({
    "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
    "node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/network-unavailable",
})


PAUSED = "paused-for-"


# ClusterPolicy condition reasons that say the operator found no GPU node.
NFD_REASONS = frozenset({"NFDLabelsMissing", "NoGPUNodes"})


@dataclass(frozen=True, slots=True)
class Miss:
    """Why a DaemonSet places no pod on a node."""

    kind: str            # "paused", "missing", "mismatch", "taint", "disabled"
    text: str
    where: Evidence


def _label_evidence(obj: Node, key: str, excerpt: str) -> Evidence:
    if key in obj.labels:
        return field(obj, excerpt, "metadata", "labels", key)
    return field(obj, excerpt, "metadata", "labels")


def misses(ds: DaemonSet, obj: Node) -> list[Miss]:
    """Everything that keeps ``ds`` off ``obj``: selector labels and untolerated taints."""
    found: list[Miss] = []
    spec = ds.spec.template.spec
    for key, want in sorted(spec.node_selector.items()):
        have = obj.labels.get(key)
        if have == want:
            continue
        if have is not None and have.startswith(PAUSED):
            found.append(Miss("paused", f"{key}={have}",
                              _label_evidence(obj, key, f"{key}={have}")))
        elif have == "false":
            found.append(Miss("disabled", f"{key}=false",
                              _label_evidence(obj, key, f"{key}=false")))
        elif have is None:
            found.append(Miss("missing", f"no {key} label",
                              _label_evidence(obj, key, f"(no {key} label)")))
        else:
            found.append(Miss("mismatch", f"{key}={have} (selector wants {want})",
                              _label_evidence(obj, key, f"{key}={have}")))
    for index, taint in enumerate(obj.spec.taints):
        if taint.effect not in BLOCKING_EFFECTS or taint.key in DAEMONSET_TOLERATED:
            continue
        if not tolerates(spec.tolerations, taint):
            text = f"untolerated taint {taint_text(taint)}"
            found.append(Miss("taint", text, field(obj, text, "spec", "taints", index)))
    return found


def _generic(miss: Miss) -> str:
    """A reason without the component's name, so DaemonSets with the same cause group."""
    if miss.kind == "missing" and miss.text.startswith(f"no {DEPLOY}"):
        return f"no {DEPLOY}<component> label"
    return miss.text


def _deploy_key(ds: DaemonSet) -> str | None:
    for key in sorted(ds.spec.template.spec.node_selector):
        if key.startswith(DEPLOY):
            return key
    return None


def has_pci_label(obj: Node) -> bool:
    return any(obj.labels.get(key) == "true" for key in PCI_LABELS)


def gpu_signs(ctx: Context, obj: Node) -> list[Evidence]:
    """Evidence that a node has NVIDIA GPUs, independent of NFD's PCI label."""
    found: list[Evidence] = []
    product = obj.labels.get("nvidia.com/gpu.product")
    if product:
        found.append(field(obj, f"nvidia.com/gpu.product={product}", "metadata", "labels",
                           "nvidia.com/gpu.product"))
    for resource, value in sorted(obj.status.capacity.items()):
        if is_gpu_resource(resource) and (gpu_count(value) or 0) > 0:
            found.append(field(obj, f"capacity {resource}: {value}", "status", "capacity",
                               resource))
            break
    smi = ctx.facts.node(obj.name).nvidia_smi
    if smi is not None and smi.gpus:
        product_name = smi.gpus[0].product_name or "GPU"
        found.append(Evidence(path=ctx.facts.node(obj.name).path(specs.NVIDIA_SMI),
                              excerpt=f"nvidia-smi lists {len(smi.gpus)} GPU(s): "
                                      f"{product_name}"))
    found += _lspci_signs(ctx, obj.name)
    if obj.labels.get(PRESENT) == "true":
        found.append(field(obj, f"{PRESENT}=true", "metadata", "labels", PRESENT))
    return found


def _lspci_signs(ctx: Context, name: str) -> list[Evidence]:
    """The first NVIDIA GPU of the node's ``host/lspci.txt``: the one sign that needs
    neither the driver nor any operand, so it holds on a fresh install."""
    artifacts = ctx.facts.node(name)
    gpus = [d for d in artifacts.lspci or () if d.is_gpu]
    if not gpus:
        return []
    return [Evidence(path=artifacts.path(specs.LSPCI), line=gpus[0].line,
                     excerpt=f"lspci lists {len(gpus)} NVIDIA GPU(s): {clip(gpus[0].text)}")]


def _nfd_workers(pods: Iterable[Pod]) -> dict[str, OperandPod]:
    """node → its NFD worker pod (the least healthy one if several)."""
    found: dict[str, OperandPod] = {}
    for pod in pods:
        node_name = node_of(pod)
        if node_name is None or component_of(pod) != NFD_WORKER:
            continue
        operand = OperandPod(NFD_WORKER, pod, pod_state(pod))
        current = found.get(node_name)
        if current is None or (current.healthy and not operand.healthy):
            found[node_name] = operand
    return found


def _nfd_daemonset(daemonsets: Iterable[DaemonSet]) -> DaemonSet | None:
    for ds in daemonsets:
        name = ds.metadata.name
        if "nfd-worker" in name or "node-feature-discovery-worker" in name:
            return ds
    return None


def _no_gpu_node(ctx: Context) -> bool:
    """The ClusterPolicy says the operator found no GPU node."""
    return any(condition.reason in NFD_REASONS
               for policy in ctx.facts.clusterpolicies
               for condition in policy.status.conditions)
