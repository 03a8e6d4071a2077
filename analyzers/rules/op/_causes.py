"""Why a node's first failing operand stage fails: the findings that explain it.

OP001 names the stage; the cause is another rule's finding (OP017 for an operand whose
DaemonSet's pods are refused at creation, RT001 for a missing runtime handler, RT015 for
Docker's shim refusing the RuntimeClass handler, OP010/DRV003/DRV004 for an unusable
driver, OP005 for the fabric, OP008 for the device plugin, OP004/OP013 for the DCGM
exporter; OP012, OP015, CMP020 (the driver container's first failing step), DRV008,
DRV010 and, when nothing else does, DRV009 for the driver stage too). A rule cannot see
another rule's findings, so each explanation here asks the same facts (or the same
judgement, through the rule's ``explains``) the explaining rule uses: OP001 then links
exactly the findings that exist; where none does, ``unexplained`` quotes the stage's
first error or names what to ask for next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from analyzers import refs
from analyzers.facts import next_step
from analyzers.facts.distro import DOCKER
from analyzers.facts.operands import operand_component
from analyzers.facts.pod_causes import problems
from analyzers.facts.preconditions import RUNTIME_HANDLER_REFUSED, operator_made
from analyzers.facts.secureboot import refusal as secure_boot_refusal
from analyzers.facts.stages import NodeStages, Stage
from analyzers.refs import Link
from analyzers.rule import Context
from analyzers.rules.common import unnamed_driver_step
from analyzers.rules.drv.DRV003 import DriverNotUsable
from analyzers.rules.drv.DRV008 import DriverCannotDriveGpu
from analyzers.rules.drv.DRV009 import NvidiaSmiFailed
from analyzers.rules.drv.DRV010 import GpuBoundToOtherDriver
from analyzers.rules.op._common import quote
from analyzers.rules.op._components import exporter_hits
from analyzers.rules.op._dcgm import profiling_hits
from analyzers.rules.op._refused import describe
from analyzers.rules.op.OP012 import HostDriverConflict
from analyzers.rules.op.OP015 import DriverBuildFails


@dataclass(frozen=True, slots=True)
class Cause:
    """A finding that explains the stage: its id and one sentence for OP001's summary."""

    finding: Link
    text: str
    generic: bool = False   # a CMP finding of the pod's own record, not a specific cause


def _runtime(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    cri = ctx.facts.node_cri(node)
    if cri.cri == DOCKER:
        # Docker's own containerd is not what starts the pods: its gate is daemon.json
        refused = [e for b in stages.at_first for e in b.sandbox
                   if RUNTIME_HANDLER_REFUSED.search(e.message or "")]
        if not refused:
            return []
        return [Cause(refs.RT015(node), f"Their sandboxes cannot be created: the node's CRI "
                                        f"is Docker ({cri.describe()}), which runs no "
                                        "'nvidia' RuntimeClass handler (see RT015).")]
    if ctx.facts.runtime(node).has_nvidia is not False:
        return []
    if stages.sandbox:
        text = ("Their sandboxes cannot be created because the node's runtime has no "
                "'nvidia' handler (see RT001).")
    else:
        text = "The node's containerd has no 'nvidia' runtime loaded (see RT001)."
    return [Cause(refs.RT001(node), text)]


def _fabric(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    fabric = ctx.facts.nvlink_fabric.get(node)
    if fabric is None or not fabric.not_initialized:
        return []
    return [Cause(refs.OP005(node), "CUDA reports 'system not yet initialized': the NVLink "
                                    "fabric is not set up (Fabric Manager, see OP005).")]


# Whether a cause holds on a node: a judgement of the facts, or (until it moves into the
# facts) the ``explains`` of the rule that reports it.
_Explainer = Callable[[Context, str], bool]


def _module_refused(ctx: Context, node: str) -> bool:
    return secure_boot_refusal(ctx.facts, node) is not None


# What can stop the driver stage, in the order OP001 names them.
_DRIVER_CAUSES: tuple[tuple[_Explainer, refs.NodeRef, str], ...] = (
    (_module_refused, refs.DRV004,
     "Secure Boot refuses the unsigned nvidia module (see DRV004)."),
    (DriverNotUsable.explains, refs.DRV003,
     "The NVIDIA driver is not usable on the node (see DRV003)."),
    (HostDriverConflict.explains, refs.OP012,
     "The host's own driver and the operator's driver setting disagree (see OP012)."),
    (DriverBuildFails.explains, refs.OP015,
     "The driver container cannot build or load its module on this OS (see OP015)."),
    (lambda ctx, node: unnamed_driver_step(ctx, node) is not None, refs.CMP020,
     "The driver container fails at a build or install step; its first error is quoted "
     "(see CMP020)."),
    (DriverCannotDriveGpu.explains, refs.DRV008,
     "The loaded driver cannot drive this GPU (see DRV008)."),
    (GpuBoundToOtherDriver.explains, refs.DRV010,
     "The GPUs are bound to another kernel driver (see DRV010)."),
)


def _driver(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    if stages.first is not Stage.DRIVER:
        return []
    found = []
    driver = ctx.facts.driver_kernel.get(node)
    if driver is not None and driver.broken:
        found.append(Cause(refs.OP010(node), "The driver container cannot install on the "
                                             "node (see OP010)."))
    found += [Cause(ref(node), text) for holds, ref, text in _DRIVER_CAUSES
              if holds(ctx, node)]
    if not found and NvidiaSmiFailed.explains(ctx, node):
        found.append(Cause(refs.DRV009(node), "nvidia-smi itself fails on the node "
                                              "(see DRV009)."))
    return found


def _plugin(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    components = {b.operand.component for b in stages.at_first}
    if stages.first is Stage.PLUGIN and "device-plugin" in components:
        return [Cause(refs.OP008(node), "The device plugin itself is failing (see OP008).")]
    return []


def _operands(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    components = {b.operand.component for b in stages.at_first}
    if stages.first is not Stage.OPERANDS or "dcgm-exporter" not in components:
        return []
    exporter = stages.row["dcgm-exporter"]
    found = []
    if profiling_hits(ctx, exporter):
        found.append(Cause(refs.OP013(node), "The DCGM exporter cannot collect profiling "
                                             "metrics (see OP013)."))
    if exporter_hits(ctx, exporter):
        found.append(Cause(refs.OP004(node), "The DCGM exporter cannot reach DCGM "
                                             "(see OP004)."))
    return found


def _refused(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    """An operand the stack waits for has no pod on the node because its DaemonSet's pods
    are refused at creation (OP017): the refusal, not the waiting pods, is the cause."""
    present = set(ctx.facts.operands.get(node, {}))
    found = []
    for key, refusal in sorted(ctx.facts.refused_daemonsets.items()):
        ds = refusal.daemonset
        component = operand_component(ds.metadata.name)
        if component is None or component in present or \
                not operator_made(ds, ctx.facts.operator_namespace):
            continue
        found.append(Cause(refs.OP017(key), f"The {component} has no pod on the node: "
                                            f"{describe(refusal)} (see OP017)."))
    return found


_EXPLAINERS: tuple[Callable[[Context, str, NodeStages], list[Cause]], ...] = (
    _refused, _runtime, _fabric, _driver, _plugin, _operands)


def _component(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    """What Kubernetes says stops the first stage's pods (the CMP family: an image that
    cannot be pulled, a crash loop with its first error …), when no specific rule does."""
    at_first = {b.pod.name for b in stages.at_first}
    found = []
    for cause, ref in _COMPONENT_REFS:
        rule_id = ref.rule_id
        here = {p.workload.key: p for p in problems(ctx.facts, cause)
                if p.node == node and p.pod.name in at_first}
        found += [Cause(ref(key), f"Kubernetes' record of the {p.workload.component} pod: "
                                  f"{p.container or 'scheduling'}: {quote(p.detail, 200)} "
                                  f"(see {rule_id}).", generic=True)
                  for key, p in sorted(here.items())]
    return found


_COMPONENT_REFS = (("unscheduled", refs.CMP003), ("image-pull", refs.CMP004),
                   ("cannot-start", refs.CMP005), ("init-fails", refs.CMP006),
                   ("crash-loop", refs.CMP007), ("oom-killed", refs.CMP008),
                   ("evicted", refs.CMP009))


def stage_causes(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    """The findings that explain why ``node``'s operand stack stops where it does; the
    generic CMP finding only where no specific rule explains it (then it is the root)."""
    found: list[Cause] = []
    for explainer in _EXPLAINERS:
        found += explainer(ctx, node, stages)
    return found or _component(ctx, node, stages)


def unexplained(ctx: Context, stages: NodeStages) -> str:
    """OP001's sentence when no rule names the cause of the node's first failing stage:
    the first error its logs show, or what to ask for next (see ``facts.next_step``)."""
    first = stages.first
    assert first is not None
    return next_step.for_stage(ctx.facts, stages).sentence(f"the {first.label} stage")
