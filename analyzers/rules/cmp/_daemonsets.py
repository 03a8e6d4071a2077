"""The DaemonSets of the inventory that are not operator operands, for CMP001/2/10.

The operator's own DaemonSets are left to the operator rules: a desired count of 0
there is its deploy labels (OP002/OP003), a refusal OP017's, unready pods OP001's.
"""

from __future__ import annotations

from collections.abc import Iterator

from analyzers.facts import Facts
from analyzers.facts.inventory import Workload
from analyzers.rule import Context
from bundle.kube import DaemonSet


def prepare_inventory(facts: Facts) -> object:
    """The inventory, made ahead of the rules (``Rule.prepares``): it reads only the
    cluster's workloads and pods."""
    return facts.inventory


def standalone(ctx: Context) -> Iterator[tuple[Workload, DaemonSet]]:
    for workload in ctx.facts.inventory.workloads:
        if workload.kind == "DaemonSet" and not workload.operator_managed and \
                isinstance(workload.obj, DaemonSet):
            yield workload, workload.obj
