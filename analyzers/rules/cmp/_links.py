"""How CMP findings link to the findings they explain and to those that explain them.

All link code of the family is here, so the lead can move it to another mechanism in
one place:

- a CMP finding ``causes`` OP001 on the nodes its pods stop (the operator's operand at
  the node's first failing stage) when no specific rule explains that stage;
- a CMP finding is ``caused_by`` a specific rule that names the same object's cause
  (OP010's missing driver image, OP015's failing build, RT001's missing handler …, as
  ``op._causes`` finds them for the node's first stage) and, for a device plugin, by
  OP008, which reads the plugin's own log: that rule stays the root and the generic CMP
  finding is its evidence, never a competing root.
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.pod_causes import Problem
from analyzers.refs import Link
from analyzers.rule import Context
from analyzers.rules.op.OP001 import OperandsStuck

# The generic pod-cause rules (CMP020, the driver's failing build step, is specific).
GENERIC = frozenset({"CMP003", "CMP004", "CMP005", "CMP006", "CMP007", "CMP008", "CMP009"})


def _at_first(ctx: Context, problem: Problem) -> bool:
    if not problem.workload.operator_managed or problem.node is None:
        return False
    stages = ctx.facts.operand_stages.get(problem.node)
    return stages is not None and any(b.pod.name == problem.pod.name for b in stages.at_first)


def _specific(ctx: Context, problem: Problem) -> list[Link]:
    """What a specific rule names as the cause of the pod's node's first stage, and, for
    a device plugin, OP008 (it reads the plugin's own log: NVML, the socket …)."""
    found: list[Link] = []
    if problem.node is None:
        return found
    if problem.workload.component == "device-plugin" and \
            problem.node in ctx.facts.gpu_node_set:
        found.append(refs.OP008(problem.node))
    if _at_first(ctx, problem):
        found += [link for link in OperandsStuck.explained_by(ctx, problem.node)
                  if link.partition(":")[0] not in GENERIC]
    return found


def causes(ctx: Context, found: Iterable[Problem]) -> list[Link]:
    """The stage findings a CMP finding explains, on the nodes where no specific rule
    does (there the CMP finding hangs under that rule instead)."""
    links: set[Link] = set()
    for problem in found:
        if problem.node is None or _specific(ctx, problem):
            continue
        if _at_first(ctx, problem):
            links.add(refs.OP001(problem.node))
    return sorted(links)


def caused_by(ctx: Context, found: Iterable[Problem]) -> list[Link]:
    links: set[Link] = set()
    for problem in found:
        links.update(_specific(ctx, problem))
    return sorted(links)
