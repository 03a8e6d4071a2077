"""Why a node's first failing operand stage fails: the findings that explain it.

OP001 names the stage; the cause is another rule's finding (OP017 for an operand whose
DaemonSet's pods are refused at creation, RT001 for a missing runtime handler, RT015 for
Docker's shim refusing the RuntimeClass handler, OP010/DRV003/DRV004 for an unusable
driver, OP005 for the fabric, OP008 for the device plugin, OP004/OP013 for the DCGM
exporter; OP012, OP015, CMP020 (the driver container's first failing step), DRV008,
DRV010 and, when nothing else does, DRV009 for the driver stage too). A rule cannot see
another rule's findings, so each explanation here asks the same verdict of the facts
(analyzers/facts/driver.py, ...) the explaining rule reports: OP001 then links exactly
the findings that exist; where none does, ``unexplained`` quotes the stage's first
error or names what to ask for next (``facts.next_step``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from analyzers import refs
from analyzers.facts import Facts, dcgm, driver, next_step
from analyzers.facts.distro import DOCKER
from analyzers.facts.operands import operand_component
from analyzers.facts.pod_causes import problems
from analyzers.facts.preconditions import RUNTIME_HANDLER_REFUSED, operator_made
from analyzers.facts.secureboot import refusal as secure_boot_refusal
from analyzers.facts.stages import NodeStages, Stage
from analyzers.refs import Link
from analyzers.rule import Context
from analyzers.rules.common import next_step_text
from analyzers.rules.op._common import quote
from analyzers.rules.op._refused import describe


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
        return [Cause(refs.link("RT015", node),
                      f"Their sandboxes cannot be created: the node's CRI "
                      f"is Docker ({cri.describe()}), which runs no "
                      "'nvidia' RuntimeClass handler (see RT015).")]
    if ctx.facts.runtime(node).has_nvidia is not False:
        return []
    if stages.sandbox:
        text = ("Their sandboxes cannot be created because the node's runtime has no "
                "'nvidia' handler (see RT001).")
    else:
        text = "The node's containerd has no 'nvidia' runtime loaded (see RT001)."
    return [Cause(refs.link("RT001", node), text)]


def _fabric(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    fabric = ctx.facts.nvlink_fabric.get(node)
    if fabric is None or not fabric.not_initialized:
        return []
    return [Cause(refs.link("OP005", node),
                  "CUDA reports 'system not yet initialized': the NVLink "
                  "fabric is not set up (Fabric Manager, see OP005).")]


# Whether a cause holds on a node: a verdict of the facts.
_Holds = Callable[[Facts, str], bool]


# What can stop the driver stage, in the order OP001 names them.
_DRIVER_CAUSES: tuple[tuple[_Holds, str, str], ...] = (
    (lambda facts, node: secure_boot_refusal(facts, node) is not None, "DRV004",
     "Secure Boot refuses the unsigned nvidia module (see DRV004)."),
    (lambda facts, node: driver.unusable(facts, node) is not None, "DRV003",
     "The NVIDIA driver is not usable on the node (see DRV003)."),
    (lambda facts, node: driver.host_conflict(facts, node) is not None, "OP012",
     "The host's own driver and the operator's driver setting disagree (see OP012)."),
    (lambda facts, node: driver.build_failure(facts, node) is not None, "OP015",
     "The driver container cannot build or load its module on this OS (see OP015)."),
    (lambda facts, node: next_step.unnamed_driver_step(facts, node) is not None,
     "CMP020", "The driver container fails at a build or install step; its first "
     "error is quoted (see CMP020)."),
    (lambda facts, node: driver.gpu_refusal(facts, node) is not None, "DRV008",
     "The loaded driver cannot drive this GPU (see DRV008)."),
    (lambda facts, node: driver.foreign_binding(facts, node) is not None, "DRV010",
     "The GPUs are bound to another kernel driver (see DRV010)."),
)


def _driver(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    if stages.first is not Stage.DRIVER:
        return []
    found = []
    install = ctx.facts.driver_kernel.get(node)
    if install is not None and install.broken:
        found.append(Cause(refs.link("OP010", node),
                           "The driver container cannot install on the "
                           "node (see OP010)."))
    found += [Cause(refs.link(rule_id, node), text) for holds, rule_id, text in _DRIVER_CAUSES
              if holds(ctx.facts, node)]
    if not found and driver.smi_unexplained(ctx.facts, node):
        found.append(Cause(refs.link("DRV009", node),
                           "nvidia-smi itself fails on the node "
                           "(see DRV009)."))
    return found


def _plugin(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    components = {b.operand.component for b in stages.at_first}
    if stages.first is Stage.PLUGIN and "device-plugin" in components:
        return [Cause(refs.link("OP008", node), "The device plugin itself is failing (see OP008).")]
    return []


def _operands(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    components = {b.operand.component for b in stages.at_first}
    if stages.first is not Stage.OPERANDS or "dcgm-exporter" not in components:
        return []
    exporter = stages.row["dcgm-exporter"]
    found = []
    if dcgm.profiling_failures(ctx.facts, exporter):
        found.append(Cause(refs.link("OP013", node),
                           "The DCGM exporter cannot collect profiling "
                           "metrics (see OP013)."))
    if dcgm.no_dcgm(ctx.facts, exporter):
        found.append(Cause(refs.link("OP004", node),
                           "The DCGM exporter cannot reach DCGM "
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
        found.append(Cause(refs.link("OP017", key),
                           f"The {component} has no pod on the node: "
                           f"{describe(refusal)} (see OP017)."))
    return found


_EXPLAINERS: tuple[Callable[[Context, str, NodeStages], list[Cause]], ...] = (
    _refused, _runtime, _fabric, _driver, _plugin, _operands)


def _component(ctx: Context, node: str, stages: NodeStages) -> list[Cause]:
    """What Kubernetes says stops the first stage's pods (the CMP family: an image that
    cannot be pulled, a crash loop with its first error …), when no specific rule does."""
    at_first = {b.pod.name for b in stages.at_first}
    found = []
    for cause, rule_id in _COMPONENT_RULES:
        here = {p.workload.key: p for p in problems(ctx.facts, cause)
                if p.node == node and p.pod.name in at_first}
        found += [Cause(refs.link(rule_id, key),
                        f"Kubernetes' record of the {p.workload.component} pod: "
                        f"{p.container or 'scheduling'}: {quote(p.detail, 200)} "
                        f"(see {rule_id}).", generic=True)
                  for key, p in sorted(here.items())]
    return found


# The pod causes of ``facts.pod_causes`` and the CMP rule that reports each.
_COMPONENT_RULES = (("unscheduled", "CMP003"), ("image-pull", "CMP004"),
                    ("cannot-start", "CMP005"), ("init-fails", "CMP006"),
                    ("crash-loop", "CMP007"), ("oom-killed", "CMP008"),
                    ("evicted", "CMP009"))


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
    return next_step_text(next_step.for_stage(ctx.facts, stages), f"the {first.label} stage")
