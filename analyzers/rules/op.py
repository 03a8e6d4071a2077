"""OP: the GPU Operator and its operands.

The rules live in ``op_*`` modules by theme; this module only lists them for the
``gpu_triage.rules`` entry point.
"""

from __future__ import annotations

from analyzers.rule import Rule
from analyzers.rules import (
    op_components,
    op_crd,
    op_dcgm,
    op_labels,
    op_lifecycle,
    op_mig,
    op_stack,
)

RULES: list[type[Rule]] = [
    *op_stack.RULES,          # OP001
    *op_labels.RULES,         # OP002, OP003
    *op_components.RULES,     # OP004, OP005, OP008
    *op_lifecycle.RULES,      # OP006, OP007, OP010
    *op_mig.RULES,            # OP009
    *op_dcgm.RULES,           # OP013
    *op_crd.RULES,            # OP016
]

# OP012 (issue 15): the host driver and the operator's driver setting disagree.
from analyzers.rules.op_hostdriver import HostDriverConflict  # noqa: E402

RULES.append(HostDriverConflict)

# OP014 (issue 15): a MIG change blocked by what holds the GPU.
from analyzers.rules.op_migbusy import MigChangeBlocked  # noqa: E402

RULES.append(MigChangeBlocked)

# OP015 (issue 15): the driver container cannot build or load its module on this OS.
from analyzers.rules.op_driverbuild import DriverBuildFails  # noqa: E402

RULES.append(DriverBuildFails)

# OP011 (issue 15): node labelling (NFD, GFD's label namespace) is broken.
from analyzers.rules.op_nfd import NodeLabellingBroken  # noqa: E402

RULES.append(NodeLabellingBroken)
