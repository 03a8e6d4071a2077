"""DRV: the node, the kernel and the GPU hardware.

The rules live in ``drv_*`` modules (one per diagnosis or small pair); this module
only lists them for the ``gpu_triage.rules`` entry point.
"""

from __future__ import annotations

from analyzers.rule import Rule
from analyzers.rules.drv_driver import DriverNotUsable, SecureBootRefusedModule
from analyzers.rules.drv_health import GpuHealth
from analyzers.rules.drv_host import AutomaticKernelUpgrades
from analyzers.rules.drv_lost import GpuLost
from analyzers.rules.drv_xid import XidEvents

RULES: list[type[Rule]] = [
    XidEvents,
    GpuLost,
    DriverNotUsable,
    SecureBootRefusedModule,
    AutomaticKernelUpgrades,
    GpuHealth,
]

# DRV007 lives in its own module (number-gate work); keep this append last.
from analyzers.rules.drv_idle import IdleButNotEmpty  # noqa: E402

RULES.append(IdleButNotEmpty)

# DRV009 (issue 15): nvidia-smi's own failure, linked to what explains it.
from analyzers.rules.drv_smi import NvidiaSmiFailed  # noqa: E402

RULES.append(NvidiaSmiFailed)

# DRV010 (issue 15): GPUs bound to vfio-pci, nouveau or another driver (host/lspci.txt).
from analyzers.rules.drv_binding import GpuBoundToOtherDriver  # noqa: E402

RULES.append(GpuBoundToOtherDriver)

# DRV008 (issue 15): the driver branch or flavour refuses the GPU.
from analyzers.rules.drv_support import DriverCannotDriveGpu  # noqa: E402

RULES.append(DriverCannotDriveGpu)

# DRV011 (issue 15): NVSwitch SXid errors, linked to the GPU Xids and Fabric Manager.
from analyzers.rules.drv_sxid import NvswitchSXid  # noqa: E402

RULES.append(NvswitchSXid)
