"""RT014: running containers lose their GPUs when systemd rewrites their device cgroup."""

from __future__ import annotations

from analyzers import commands as sh
from bundle.kube import Pod

_SIGNATURE = "workload-nvml-unknown-error"


_GPU_PREFIX = "nvidia.com/"


_SHOWN_PODS = 3


def _recreate(pods: list[Pod]) -> list[str]:
    """The last step, after the links exist: recreate the affected pods. Deleting a pod
    is offered only where an owner starts it again (a Job, ReplicaSet, StatefulSet,
    DaemonSet or an operator's resource); a pod without one, or a node's static pod,
    would be gone or untouched, so it is named, not deleted."""
    lines = ["# then, from your workstation and once the links exist, recreate the affected "
             "pods one at a time (their running work is lost):"]
    for pod in pods[:_SHOWN_PODS]:
        owners = {o.kind for o in pod.metadata.owner_references}
        if owners and "Node" not in owners:
            lines.append(sh.cmd("kubectl", "-n", sh.namespace(pod.namespace), "delete", "pod",
                                sh.pod(pod.name), tail="   # its owner starts it again"))
        else:
            lines.append(sh.note("# {pod} has no owner that would start it again: re-create "
                                 "it from its manifest", pod=sh.pod(pod.name)))
    if len(pods) > _SHOWN_PODS:
        lines.append(sh.note("# and {count} more affected pod(s) on this node",
                             count=len(pods) - _SHOWN_PODS))
    return lines


def _gpu_pod(pod: Pod) -> bool:
    return pod.status.phase == "Running" and any(
        k.startswith(_GPU_PREFIX) for c in pod.spec.containers
        for k in (*c.resources.limits, *c.resources.requests))
