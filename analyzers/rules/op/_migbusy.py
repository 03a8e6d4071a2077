"""OP014: a MIG change blocked because something holds the GPU."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analyzers import commands as sh
from analyzers.facts.evidence import field as object_field
from analyzers.facts.gpu import pod_gpu_request
from analyzers.facts.logindex import node_logs
from analyzers.knowledge import signatures
from analyzers.results.models import Evidence, ObjectRef
from analyzers.rule import Context
from analyzers.rules.common import ref
from bundle import specs
from bundle.evidence import clip

SIGNATURE = "mig-manager-gpu-in-use"


PROCESSES_FILE = specs.GPU_PROCESSES


_BDF = re.compile(r"GPU\s+(?P<bdf>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")


# Operands that keep GPUs open through NVML/DCGM while they run.
_HOLDING_OPERANDS = ("dcgm", "dcgm-exporter")


HIT_CAP = 3


POD_CAP = 5


@dataclass
class _Blocked:
    hits: list[Evidence] = field(default_factory=list)
    gpus: set[str] = field(default_factory=set)
    holders: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    objects: list[ObjectRef] = field(default_factory=list)
    host_processes: bool = False
    drm: bool = False


def _log_hits(ctx: Context, name: str, blocked: _Blocked) -> None:
    wanted = (signatures.get(SIGNATURE),)
    for path, container, text in node_logs(ctx.facts, name, components=("mig-manager",)):
        for hit in signatures.match(text, "log", container=container, signatures=wanted):
            blocked.gpus.update(m["bdf"].lower() for m in _BDF.finditer(hit.text))
            if len(blocked.hits) < HIT_CAP:
                blocked.hits.append(Evidence(path=path, line=hit.line, excerpt=clip(hit.text)))


def _holders(ctx: Context, name: str, blocked: _Blocked) -> None:
    artifacts = ctx.facts.node(name)
    for process in artifacts.gpu_processes:
        blocked.holders.append(f"{process.comm} (host pid {process.pid})")
        blocked.evidence.append(Evidence(path=artifacts.path(PROCESSES_FILE),
                                         line=process.line, excerpt=clip(process.text)))
        blocked.host_processes = True
    modules = ctx.facts.modules(name)
    if modules is not None and modules.loaded("nvidia_drm"):
        blocked.holders.append("the nvidia_drm kernel module")
        blocked.evidence.append(modules.evidence("nvidia_drm"))
        blocked.drm = True
    pods = []
    operands = ctx.facts.operands.get(name, {})
    for component in _HOLDING_OPERANDS:
        operand = operands.get(component)
        if operand is not None and operand.state == "Running":
            pods.append((operand.pod, "DCGM"))
    for pod in ctx.facts.pods_by_node.get(name, []):
        request = pod_gpu_request(pod)
        if request and pod.status.phase == "Running":
            pods.append((pod, ", ".join(f"{k}: {v}" for k, v in sorted(request.items()))))
    for pod, what in pods[:POD_CAP]:
        blocked.holders.append(f"pod {pod.namespace}/{pod.name} ({what})")
        blocked.evidence.append(object_field(pod, f"{pod.namespace}/{pod.name} Running on "
                                             f"{name} ({what})", "spec", "nodeName"))
        blocked.objects.append(ref(pod, "Pod"))
    if len(pods) > POD_CAP:
        blocked.holders.append(f"{len(pods) - POD_CAP} more pod(s)")


def _remediation(ctx: Context, name: str, blocked: _Blocked) -> str:
    node_arg = sh.node(name)
    lines = [sh.cmd("kubectl", "get", "node", node_arg, "-L",
                    "nvidia.com/mig.config,nvidia.com/mig.config.state")]
    manager = ctx.facts.operands.get(name, {}).get("mig-manager")
    if manager is not None:
        lines.append(sh.cmd("kubectl", "-n", sh.namespace(manager.pod.namespace), "logs",
                            sh.pod(manager.pod.name), "-c", "nvidia-mig-manager",
                            "--tail=120"))
    lines += [
        sh.cmd("kubectl", "get", "pods", "-A", "-o", "wide", "--field-selector",
               sh.join("spec.nodeName=", node_arg)),
        sh.node_shell(node_arg),
        "nvidia-smi --query-compute-apps=pid,process_name --format=csv; "
        "ps -eo pid,comm | grep -E 'nvidia-persiste|nv-hostengine|nv-fabricmanager|dcgm'",
    ]
    if blocked.host_processes:
        lines.append("# host holders: stop them or turn persistence mode off "
                     "(systemctl stop nvidia-persistenced, or nvidia-smi -pm 0) before the "
                     "MIG change")
    if blocked.drm:
        lines.append("rmmod nvidia_drm   # if no display stack needs it; load it back after")
    lines.append(sh.cmd("kubectl", "drain", node_arg, "--ignore-daemonsets",
                        "--delete-emptydir-data",
                        tail="   # moves GPU pods away; then relabel nvidia.com/mig.config"))
    return sh.lines(lines)
