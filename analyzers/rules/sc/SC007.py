"""SC007: Pods on a GPU node see GPUs they were not allocated."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.results.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import names, node_ref
from analyzers.rules.sc._access import is_operand
from analyzers.rules.sc._common import pod_key, pod_ref
from analyzers.rules.sc._visibility import CAP, Overreach, _overreach
from bundle import specs


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
    inputs = (cluster(specs.PODS), cluster(specs.NODES, optional=True))
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
