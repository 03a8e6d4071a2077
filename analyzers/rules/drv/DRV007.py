"""DRV007: Idle but not empty: GPUs at ~0 % utilisation holding memory on nodes with GPU pods."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.usage import HELD_MIB, IDLE_UTIL_PERCENT, IdleGPU
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import names, node_ref
from analyzers.rules.drv._idle import _gib
from bundle import specs
from bundle.evidence import first_line


class IdleButNotEmpty(Rule):
    """Idle but not empty: GPUs at ~0 % utilisation holding memory on nodes with GPU pods.

    From each node's ``nvidia-smi -q -x``: a GPU whose utilisation is at most 1 % while it
    holds at least 1 GiB of framebuffer, on a node where non-terminated pods hold GPU
    resources. The bundle has no pod-to-device map, so the finding names the node's GPU
    pods; nvidia-smi's process list (host PIDs) is quoted when present.

    Why it matters:
    The scheduler counts assignments, not use: an allocated GPU that does nothing is
    unavailable to every pending pod, and the memory it holds says a process is still
    alive (a notebook, a stuck job, a server with no traffic). One snapshot can catch a
    pause, so confirm over time before reclaiming it.

    Remediation:
    Confirm over hours (DCGM ``DCGM_FI_DEV_GPU_UTIL`` / ``DCGM_FI_DEV_FB_USED``, or
    ``nvidia-smi dmon``), find the owning pod, and ask its owner to release the GPU;
    consider idle-culling for notebooks.
    """

    id = "DRV007"
    slug = "idle-but-not-empty"
    subject = refs.GPU
    severity = Severity.LOW
    confidence = Confidence.LIKELY
    inputs = (node(specs.NVIDIA_SMI), cluster(specs.PODS))
    tags = ("capacity",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        for _, idle in sorted(ctx.facts.idle_gpus.items()):
            for item in idle:
                yield self._finding(ctx, item)

    def _finding(self, ctx: Context, item: IdleGPU) -> Finding:
        gpu = item.gpu
        used = gpu.fb_used_mib or 0
        total = f" of {_gib(gpu.fb_total_mib)}" if gpu.fb_total_mib else ""
        power = f", drawing {item.power_watts:.0f} W" if item.power_watts is not None else ""
        model = gpu.product_name or "GPU"
        processes = [p for p in gpu.processes if p.used_memory_mib]
        procs = ""
        if processes:
            listed = ", ".join(f"{p.name or '?'} (pid {p.pid}, {p.used_memory_mib} MiB)"
                               for p in processes[:3])
            procs = f" Processes holding it: {listed}."
        summary = (f"On {item.node}, {model} {gpu.bus_id} (GPU {item.index}) shows "
                   f"{gpu.gpu_util_percent} % utilisation while holding {_gib(used)}{total} "
                   f"of framebuffer{power}: idle, not empty.{procs} GPUs on this node are "
                   f"allocated to {names(item.holders, 4)}; the scheduler counts them as "
                   "taken whether or not they work.")
        artifacts = ctx.facts.node(item.node)
        path = artifacts.path(specs.NVIDIA_SMI)
        text = artifacts.text(specs.NVIDIA_SMI) or ""
        hit = first_line(path, text, f'id="{gpu.bus_id}"')
        evidence = [Evidence(
            path=path, line=hit.line if hit else None,
            excerpt=(f"{gpu.bus_id} {model}: gpu_util {gpu.gpu_util_percent} % "
                     f"(≤ {IDLE_UTIL_PERCENT} %), fb_memory_usage used {used} MiB "
                     f"(≥ {HELD_MIB} MiB){power}"))]
        objects = [node_ref(item.node)]
        for holder in item.holders[:5]:
            namespace, _, name = holder.partition("/")
            objects.append(ObjectRef(kind="Pod", namespace=namespace, name=name))
        remediation = sh.lines(
            sh.note("# on {node}: watch it for a while before acting", node=sh.node(item.node)),
            sh.cmd("nvidia-smi", "dmon", "-i", item.index, "-s", "um", "-c", "60"),
            sh.cmd("nvidia-smi", "--query-compute-apps=pid,process_name,used_memory",
                   "--format=csv", "-i", item.index),
            sh.cmd("kubectl", "get", "pods", "-A", "-o", "wide", "--field-selector",
                   sh.join("spec.nodeName=", sh.node(item.node))),
            "# then ask the owner of the idle pod to release the GPU (or cull idle notebooks)")
        subject = refs.GPU.of(item.node, item.pci)
        return self.finding(subject, summary, nodes=[item.node], objects=objects,
                            evidence=evidence, remediation=remediation)
