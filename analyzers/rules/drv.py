"""DRV: the node, the kernel and the GPU hardware.

The rules live in ``drv_*`` modules (one per diagnosis or small pair); this module
only lists them for the ``gpu_triage.rules`` entry point, in ID order.
"""

from __future__ import annotations

from analyzers.rule import Rule
from analyzers.rules.drv_binding import GpuBoundToOtherDriver
from analyzers.rules.drv_driver import DriverNotUsable, SecureBootRefusedModule
from analyzers.rules.drv_health import GpuHealth
from analyzers.rules.drv_host import AutomaticKernelUpgrades
from analyzers.rules.drv_idle import IdleButNotEmpty
from analyzers.rules.drv_lost import GpuLost
from analyzers.rules.drv_smi import NvidiaSmiFailed
from analyzers.rules.drv_support import DriverCannotDriveGpu
from analyzers.rules.drv_sxid import NvswitchSXid
from analyzers.rules.drv_xid import XidEvents

RULES: list[type[Rule]] = [
    XidEvents,  # DRV001
    GpuLost,  # DRV002
    DriverNotUsable,  # DRV003
    SecureBootRefusedModule,  # DRV004
    AutomaticKernelUpgrades,  # DRV005
    GpuHealth,  # DRV006
    IdleButNotEmpty,  # DRV007
    DriverCannotDriveGpu,  # DRV008
    NvidiaSmiFailed,  # DRV009
    GpuBoundToOtherDriver,  # DRV010
    NvswitchSXid,  # DRV011
]
