"""OP011: node labelling is broken, so the operator deploys nothing.

The operator learns which nodes have GPUs only from labels: NFD's PCI label
``feature.node.kubernetes.io/pci-10de.present`` becomes ``nvidia.com/gpu.present``,
which becomes the deploy labels every operand DaemonSet selects on; GPU Feature
Discovery's ``nvidia.com/gpu.*`` labels reach the node through NFD's master. OP003
says per node that a label is missing; this rule names why for the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzers.facts.evidence import field as object_field
from analyzers.facts.operands import HEALTHY_STATES, pod_state
from analyzers.facts.podlogs import ContainerLog
from analyzers.facts.refusals import CreateRefusal
from analyzers.results.models import Evidence
from analyzers.rule import Context
from analyzers.rules.common import PRESENT
from analyzers.rules.op._labels import NFD_REASONS, gpu_signs, has_pci_label
from analyzers.rules.op._refused import is_nfd_worker
from bundle.evidence import Locator
from bundle.kube import Pod

SUBJECT = "node-feature-discovery"


NO_GPU_NODE = ("operator-no-gpu-node", "operator-nfd-labels-missing")


UNREACHABLE = "nfd-master-unreachable"


DENIED = "nfd-label-namespace-denied"


_NFD_NAMES = ("node-feature-discovery", "-nfd-")


_CAP = 3


def nfd_role(pod: Pod) -> str | None:
    """``master``, ``worker``, ``gc`` or ``other`` for an NFD pod, None for other pods."""
    labels = pod.metadata.labels
    name = pod.name
    is_nfd = labels.get("app.kubernetes.io/name") == "node-feature-discovery" or \
        name.startswith("nfd-") or any(part in name for part in _NFD_NAMES)
    if not is_nfd:
        return None
    role = labels.get("role") or labels.get("app.kubernetes.io/component") or ""
    for wanted in ("master", "worker", "gc"):
        if role == wanted or f"nfd-{wanted}" in name or f"discovery-{wanted}" in name:
            return wanted
    return "other"


def _is_gfd(pod: Pod) -> bool:
    return pod.metadata.labels.get("app") == "gpu-feature-discovery" or \
        pod.name.startswith(("gpu-feature-discovery", "nvidia-gpu-feature-discovery"))


@dataclass
class Labelling:
    """What the bundle says about node labelling."""

    unlabelled: dict[str, list[Evidence]] = field(default_factory=dict)   # node → GPU signs
    nfd_pods: dict[str, list[Pod]] = field(default_factory=dict)          # role → pods
    broken: list[tuple[Pod, str]] = field(default_factory=list)            # NFD pod, state
    unreachable: list[tuple[ContainerLog, Locator]] = field(default_factory=list)
    denied: list[tuple[ContainerLog, Locator]] = field(default_factory=list)
    no_gpu_node: list[Locator] = field(default_factory=list)
    conditions: list[Evidence] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)
    labeller_logs: bool = False   # a log line of an NFD or GFD pod was collected
    refused: list[CreateRefusal] = field(default_factory=list)  # NFD worker DaemonSets

    @property
    def nfd_absent(self) -> bool:
        return not self.nfd_pods.get("master") and not self.nfd_pods.get("worker")

    @property
    def nfd_at_fault(self) -> bool:
        """NFD cannot label anything: absent, its master down, its workers unable to reach
        the master, or every worker down (one worker down elsewhere is OP003's)."""
        masters = self.nfd_pods.get("master", [])
        workers = self.nfd_pods.get("worker", [])
        down = {id(pod) for pod, _ in self.broken}
        return self.nfd_absent or bool(self.unreachable) or bool(self.refused) or \
            any(id(pod) in down for pod in masters) or \
            (bool(workers) and all(id(pod) in down for pod in workers))


def _log_hits(ctx: Context, pods: Iterable[Pod], wanted: tuple[str, ...]
              ) -> list[tuple[ContainerLog, Locator]]:
    found: list[tuple[ContainerLog, Locator]] = []
    for pod in pods:
        for log in ctx.facts.pod_logs.of(pod):
            seen: set[int] = set()
            for hit in log.matches():
                if hit.signature.id in wanted and hit.line not in seen:
                    seen.add(hit.line)
                    found.append((log, log.locate(hit)))
    return found


def labelling(ctx: Context) -> Labelling:
    """Read nodes, NFD and GFD pods, their logs, the operator's log and the policy."""
    picture = Labelling()
    for obj in ctx.facts.node_objects:
        if not has_pci_label(obj):
            signs = [s for s in gpu_signs(ctx, obj) if not s.excerpt.startswith(PRESENT)]
            if signs:
                picture.unlabelled[obj.name] = signs
    labellers: list[Pod] = []
    for pod in ctx.facts.pods:
        role = nfd_role(pod)
        if role is not None:
            picture.nfd_pods.setdefault(role, []).append(pod)
            labellers.append(pod)
            state = pod_state(pod)
            if role in ("master", "worker") and state not in HEALTHY_STATES:
                picture.broken.append((pod, state))
        elif _is_gfd(pod):
            labellers.append(pod)
    picture.labeller_logs = any(ctx.facts.pod_logs.of(pod) for pod in labellers)
    picture.refused = [r for _, r in sorted(ctx.facts.refused_daemonsets.items())
                       if is_nfd_worker(r.daemonset)]
    picture.unreachable = _log_hits(ctx, labellers, (UNREACHABLE,))
    picture.denied = _log_hits(ctx, labellers, (DENIED,))
    picture.no_gpu_node = [hit for _, hit in
                           _log_hits(ctx, ctx.facts.operator_pods, NO_GPU_NODE)][-1:]
    for policy in ctx.facts.clusterpolicies:
        for index, condition in enumerate(policy.status.conditions):
            if condition.reason in NFD_REASONS:
                picture.policies.append(policy.metadata.name)
                picture.conditions.append(object_field(
                    policy, f"{condition.type}={condition.status} {condition.reason}: "
                            f"{condition.message or ''}".strip(),
                    "status", "conditions", index))
    return picture
