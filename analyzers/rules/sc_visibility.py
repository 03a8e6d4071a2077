"""SC007: pods on a GPU node see GPUs they were not allocated."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from analyzers import commands as sh
from analyzers.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import field as obj_field
from analyzers.rules.common import names, node_ref
from analyzers.rules.sc_access import HIDDEN_VALUES, is_operand, is_privileged, nvidia_image
from analyzers.rules.sc_common import container_limits, containers_of, pod_key, pod_ref
from bundle.kube import Container, Pod

VISIBLE = "NVIDIA_VISIBLE_DEVICES"
CAP = 5


@dataclass(frozen=True, slots=True)
class Overreach:
    """One container that sees more GPUs than it was allocated, and how."""

    pod: Pod
    container: str
    allocated: int
    how: str
    evidence: Evidence


def _visible_env(container: Container) -> tuple[int, str] | None:
    """(env index, value) of a ``NVIDIA_VISIBLE_DEVICES`` the pod sets itself."""
    for index, env in enumerate(container.env):
        if env.name != VISIBLE:
            continue
        if env.value is None:
            return (index, "(from valueFrom)") if env.value_from is not None else None
        if env.value.strip().lower() not in HIDDEN_VALUES:
            return index, env.value
    return None


def _overreach(pod: Pod) -> Iterator[Overreach]:
    for section, index, container in containers_of(pod):
        allocated = sum(container_limits(container).values())
        where = f"{pod_key(pod)} container {container.name}"
        limit = f"a limit of {allocated}" if allocated else "no nvidia.com limit"
        env = _visible_env(container)
        if env is not None:
            env_index, value = env
            how = (f"sets {VISIBLE}={value} itself" + (" (every GPU)" if value == "all" else "")
                   + f" with {limit}")
            yield Overreach(pod, container.name, allocated, how, obj_field(
                pod, f"{where}: {VISIBLE}={value}, {limit}",
                "spec", section, index, "env", env_index))
        # A privileged container gets the device nodes; it can use them when it was given
        # the driver (a limit, the nvidia runtime) or brings it (an NVIDIA/CUDA image).
        # Privileged system daemons (kube-proxy, CNI) do neither.
        usable = allocated or pod.spec.runtime_class_name or nvidia_image(container.image)
        if is_privileged(container) and usable:
            how = f"runs privileged (every /dev/nvidia* device of the host) with {limit}"
            yield Overreach(pod, container.name, allocated, how, obj_field(
                pod, f"{where}: privileged, {limit}",
                "spec", section, index, "securityContext", "privileged"))


class GpusSeenNotAllocated(Rule):
    """Pods on a GPU node see GPUs they were not allocated.

    On each GPU node, containers of workload pods (the GPU Operator's own operands are
    left out) that reach GPUs past the device plugin: a ``NVIDIA_VISIBLE_DEVICES`` set
    in the pod's env (``all``, or indexes chosen by hand, with or without a limit) or a
    privileged container (it gets every ``/dev/nvidia*`` device node of the host,
    whatever its limit) that can drive them: one with a GPU limit, a RuntimeClass, or an
    NVIDIA/CUDA image (privileged system daemons such as kube-proxy are not counted).
    Containers without a limit are reported when other pods on the node hold
    allocated GPUs (their GPUs are the ones being shared); containers with a limit
    always, since they see more than they were given. SC003 lists the
    limitless ones per workload; this rule shows the node's accounting they break.
    CUDA images set ``NVIDIA_VISIBLE_DEVICES=all`` in their own ENV, which a bundle
    cannot see: ``nvidia-smi -L`` in the pod is the check.

    Why it matters:
    The scheduler and the device plugin count a GPU as given to one pod, while another
    pod uses it too: jobs slow down or run out of memory for no visible reason, MIG and
    time-slicing guarantees no longer hold, and the node's numbers stop describing it.

    Remediation:
    In each named pod, ``kubectl exec <pod> -- nvidia-smi -L`` lists what it sees.
    Remove ``NVIDIA_VISIBLE_DEVICES`` and ``privileged`` from workloads and request
    ``nvidia.com/gpu`` instead; for images that set the variable, have the toolkit
    ignore it for unprivileged pods (``accept-nvidia-visible-devices-envvar-when-
    unprivileged = false``, with the plugin's ``volume-mounts`` or CDI strategy).
    """

    id = "SC007"
    slug = "gpus-seen-not-allocated"
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (cluster("pods.json"), cluster("nodes.json", optional=True))
    tags = ("scheduling", "isolation")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        for name in facts.gpu_nodes:
            found: list[Overreach] = []
            for pod in facts.pods_by_node.get(name, []):
                if pod.terminated or is_operand(facts, pod):
                    continue
                found += _overreach(pod)
            accounting = facts.accounting.get(name)
            holders = set(accounting.pods) if accounting is not None else set()
            kept = [o for o in found if o.allocated or holders - {pod_key(o.pod)}]
            if kept:
                yield self._finding(name, kept, holders)

    def _finding(self, name: str, found: list[Overreach], holders: set[str]) -> Finding:
        pods = sorted({pod_key(o.pod) for o in found})
        others = sorted(holders - set(pods))
        shown = "; ".join(f"{pod_key(o.pod)} ({o.container}) {o.how}" for o in found[:CAP])
        more = f"; and {len(found) - CAP} more" if len(found) > CAP else ""
        summary = (f"On {name}, {len(pods)} pod(s) see GPUs the device plugin did not give "
                   f"them: {shown}{more}.")
        if others:
            summary += (f" The node's GPUs are allocated to {names(others, 3)}, which share them "
                        "without the scheduler knowing.")
        severity = Severity.HIGH if others else self.severity
        first = found[0].pod
        remediation = sh.lines(
            sh.cmd("kubectl", "-n", sh.namespace(first.namespace), "exec", sh.pod(first.name),
                   "-c", sh.container(found[0].container), "--", "nvidia-smi", "-L",
                   tail="   # what it really sees"),
            sh.cmd("kubectl", "get", "pods", "-A", "-o", "wide", "--field-selector",
                   sh.join("spec.nodeName=", sh.node(name))),
            "# drop NVIDIA_VISIBLE_DEVICES and privileged from workloads and request "
            "nvidia.com/gpu instead;",
            "# for images that set the variable: toolkit "
            "accept-nvidia-visible-devices-envvar-when-unprivileged=false with the plugin's "
            "volume-mounts or CDI strategy",
        )
        evidence = [o.evidence for o in found[:CAP]]
        unique = {pod_key(o.pod): o.pod for o in found}
        objects = [node_ref(name)] + [pod_ref(unique[key]) for key in pods[:10]]
        return self.finding(name, summary, severity=severity, nodes=[name], objects=objects,
                            evidence=evidence, remediation=remediation)

