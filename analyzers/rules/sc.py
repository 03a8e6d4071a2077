"""SC: the number gate — scheduling and admission of GPU pods.

The rules live in ``sc_*`` modules by theme; this module only lists them for the
``gpu_triage.rules`` entry point, in ID order.
"""

from __future__ import annotations

from analyzers.rule import Rule
from analyzers.rules.sc_access import GpuAccessOutsideScheduler
from analyzers.rules.sc_admission import AdmissionAllocateFailed
from analyzers.rules.sc_capacity import InsufficientGPU
from analyzers.rules.sc_placement import PlacementBlocked
from analyzers.rules.sc_quota import GpuQuotaExhausted
from analyzers.rules.sc_sharing import SharedGpuMisuse
from analyzers.rules.sc_visibility import GpusSeenNotAllocated

RULES: list[type[Rule]] = [
    InsufficientGPU,  # SC001
    PlacementBlocked,  # SC002
    GpuAccessOutsideScheduler,  # SC003
    GpuQuotaExhausted,  # SC004
    AdmissionAllocateFailed,  # SC005
    SharedGpuMisuse,  # SC006
    GpusSeenNotAllocated,  # SC007
]
