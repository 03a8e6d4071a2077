"""OP001: the operand matrix per GPU node and the first stage that fails."""

from __future__ import annotations

from analyzers.facts.podlogs import ContainerLog
from analyzers.facts.stages import SIDECARS, STAGE_LOGS, Blocked, NodeStages, Stage
from analyzers.rule import Context

_STAGE_HINT = {
    Stage.SANDBOX: "the node cannot create pod sandboxes for them (container runtime or "
                   "network), before any GPU stage runs",
    Stage.DRIVER: "the driver is not usable on the node (driver pod, host driver, "
                  "kernel module)",
    Stage.TOOLKIT: "the container runtime does not inject the driver (toolkit, nvidia "
                   "runtime handler, CDI)",
    Stage.CUDA: "a CUDA program cannot run on the GPU",
    Stage.PLUGIN: "the device plugin does not advertise the GPUs",
    Stage.OPERANDS: "an operand that no other stage waits for is failing",
}


_STAGE_LOOK = {
    Stage.SANDBOX: ["# on the node: crictl pods --state NotReady; journalctl -u kubelet "
                    "--since -1h | grep -i sandbox | tail"],
    Stage.DRIVER: ["# on the node: lsmod | grep -E '^nvidia|nouveau'; "
                   "dmesg --time-format iso | grep -iE 'NVRM|Xid' | tail -20"],
    Stage.TOOLKIT: ["# on the node: containerd config dump | grep -c 'runtimes.nvidia'   "
                    "# 0 = no handler (RT001)"],
    Stage.CUDA: ["# on the node: nvidia-smi -q | grep -i -A2 Fabric   "
                 "# 'In Progress' = Fabric Manager (OP005)"],
    Stage.PLUGIN: [],  # and _plugin_look
    Stage.OPERANDS: [],
}


def _stage_logs(ctx: Context, stages: NodeStages) -> list[ContainerLog]:
    """Logs that tell the first failing stage's story, in the order to read them."""
    first = stages.first
    if first is None:
        return []
    wanted = list(STAGE_LOGS[first])
    wanted += [(b.operand.component, b.container) for b in stages.at_first if b.container]
    found: list[ContainerLog] = []
    for component, container in wanted:
        operand = stages.row.get(component)
        if operand is None:
            continue
        for log in ctx.facts.pod_logs.container(operand.pod, container):
            if log not in found:
                found.append(log)
    if first is Stage.OPERANDS and not found:
        for blocked in stages.at_first:
            found.extend(ctx.facts.pod_logs.of(blocked.pod))
    return found


def _describe(blocked: Blocked) -> str:
    pod = blocked.pod
    if blocked.container and blocked.init:
        return f"{pod.name} is {blocked.operand.state} in init container {blocked.container}"
    sidecar = SIDECARS.get(blocked.container or "")
    if sidecar is not None:
        return (f"{pod.name} is {blocked.operand.state} ({blocked.container}: only "
                f"{sidecar} fails to load; the driver itself runs in nvidia-driver-ctr)")
    if blocked.container:
        return f"{pod.name} is {blocked.operand.state} ({blocked.container})"
    if not pod.spec.node_name:
        return f"{pod.name} is {blocked.operand.state} (not scheduled to the node yet)"
    return f"{pod.name} is {blocked.operand.state}"
