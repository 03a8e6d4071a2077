"""How CMP findings link to the findings that explain them.

All link code of the family is here, so it can move to another mechanism in one place:

- where no specific rule explains a node's first failing operand stage, OP001 names the
  generic CMP finding of the stage's pods as its cause (``op._causes``): the CMP
  finding is then the root;
- a CMP finding is ``caused_by`` the specific rules that can explain the first stage
  its pod stops at (OP010's missing driver image, OP015's failing build, RT001's
  missing handler …, the same stages ``op._causes`` asks) and, for a device plugin, by
  OP008, which reads the plugin's own log: that rule stays the root and the generic CMP
  finding is its evidence, never a competing root. A rule names another by id only; a
  link to a finding that did not fire is dropped when the findings are linked.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.operands import operand_component
from analyzers.facts.pod_causes import Problem
from analyzers.facts.preconditions import operator_made
from analyzers.facts.stages import NodeStages, Stage
from analyzers.refs import Link
from analyzers.rule import Context

# What can explain any stage: the runtime handler, the NVLink fabric.
_ANY_STAGE = ("RT001", "RT015", "OP005")
# The rules that can explain a stage, by stage (and, past the driver, by component).
_DRIVER = ("OP010", "DRV004", "DRV003", "OP012", "OP015", "CMP020", "DRV008", "DRV010",
           "DRV009")
_BY_COMPONENT = {(Stage.PLUGIN, "device-plugin"): ("OP008",),
                 (Stage.OPERANDS, "dcgm-exporter"): ("OP013", "OP004")}


def _stages(ctx: Context, problem: Problem) -> NodeStages | None:
    """The node's operand stages, when the problem's pod is at its first failing one."""
    if not problem.workload.operator_managed or problem.node is None:
        return None
    stages = ctx.facts.operand_stages.get(problem.node)
    if stages is None or stages.first is None or \
            not any(b.pod.name == problem.pod.name for b in stages.at_first):
        return None
    return stages


def _refused(ctx: Context, node: str) -> list[Link]:
    """OP017 for an operator DaemonSet whose refused pods the node's stack waits for."""
    present = set(ctx.facts.operands.get(node, {}))
    found = []
    for key, refusal in sorted(ctx.facts.refused_daemonsets.items()):
        ds = refusal.daemonset
        component = operand_component(ds.metadata.name)
        if component is not None and component not in present and \
                operator_made(ds, ctx.facts.operator_namespace):
            found.append(refs.link("OP017", key))
    return found


def _specific(ctx: Context, problem: Problem) -> list[Link]:
    """The specific findings that may explain the problem's pod (those that fired)."""
    found: list[Link] = []
    if problem.node is None:
        return found
    node = problem.node
    if problem.workload.component == "device-plugin" and node in ctx.facts.gpu_node_set:
        found.append(refs.link("OP008", node))
    stages = _stages(ctx, problem)
    if stages is None or stages.first is None:
        return found
    ids = list(_ANY_STAGE)
    if stages.first is Stage.DRIVER:
        ids += _DRIVER
    for component in {b.operand.component for b in stages.at_first}:
        ids += _BY_COMPONENT.get((stages.first, component), ())
    found += [refs.link(rule_id, node) for rule_id in ids]
    return found + _refused(ctx, node)


def caused_by(ctx: Context, found: Iterable[Problem]) -> list[Link]:
    links: set[Link] = set()
    for problem in found:
        links.update(_specific(ctx, problem))
    return sorted(links)
