"""OP: the GPU Operator and its operands.

The rules live in ``op_*`` modules by theme; this module only lists them for the
``gpu_triage.rules`` entry point, in ID order.
"""

from __future__ import annotations

from analyzers.rule import Rule
from analyzers.rules.op_components import (
    DcgmExporterNoDcgm,
    DevicePluginUnhealthy,
    FabricManagerNotWorking,
)
from analyzers.rules.op_crd import ClusterPolicySchemaRejected
from analyzers.rules.op_dcgm import DcgmProfilingUnavailable
from analyzers.rules.op_driverbuild import DriverBuildFails
from analyzers.rules.op_hostdriver import HostDriverConflict
from analyzers.rules.op_labels import NfdNotLabelling, OperandsNotScheduled
from analyzers.rules.op_lifecycle import (
    ClusterPolicyNotReady,
    DriverKernelMismatch,
    DriverUpgradeStuck,
)
from analyzers.rules.op_mig import MigMisconfigured
from analyzers.rules.op_migbusy import MigChangeBlocked
from analyzers.rules.op_nfd import NodeLabellingBroken
from analyzers.rules.op_refused import DaemonSetRefused
from analyzers.rules.op_stack import OperandsStuck

RULES: list[type[Rule]] = [
    OperandsStuck,  # OP001
    OperandsNotScheduled,  # OP002
    NfdNotLabelling,  # OP003
    DcgmExporterNoDcgm,  # OP004
    FabricManagerNotWorking,  # OP005
    ClusterPolicyNotReady,  # OP006
    DriverUpgradeStuck,  # OP007
    DevicePluginUnhealthy,  # OP008
    MigMisconfigured,  # OP009
    DriverKernelMismatch,  # OP010
    NodeLabellingBroken,  # OP011
    HostDriverConflict,  # OP012
    DcgmProfilingUnavailable,  # OP013
    MigChangeBlocked,  # OP014
    DriverBuildFails,  # OP015
    ClusterPolicySchemaRejected,  # OP016
    DaemonSetRefused,  # OP017
]
