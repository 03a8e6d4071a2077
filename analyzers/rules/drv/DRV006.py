"""DRV006: nvidia-smi reports an unhealthy GPU."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.gpu_health import Issue
from analyzers.facts.kernel_events import GpuIdentity, gpu_address
from analyzers.results.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule, node
from analyzers.rules.common import KERNEL_LINES, node_ref
from analyzers.rules.drv._common import smi_evidence
from analyzers.rules.drv._health import _remediation
from bundle import specs


class GpuHealth(Rule):
    """nvidia-smi reports an unhealthy GPU.

    Reads each ``<gpu>`` of ``nvidia-smi.xml`` whatever the driver's schema:
    uncorrectable ECC errors (volatile, else aggregate; new and old layouts), SRAM
    threshold exceeded, retired pages pending, row remapping pending or failed,
    channel/TPC repair pending, a recovery action other than None (or the older
    reset-required flags), NVSwitch fabric state not Completed or status not Success,
    and active hardware or thermal clock slowdowns. One finding per GPU, at the
    severity of its worst reading.

    Why it matters:
    These are the GPU's own health counters. Pending remaps and retirements take
    effect only after a GPU reset; a failed remap or exceeded SRAM threshold is a
    replacement criterion; an incomplete fabric registration makes CUDA fail on
    NVSwitch systems; slowdowns cost performance and point at cooling or power.

    Remediation:
    On the node: ``nvidia-smi -q -i <pci> -d ECC,ROW_REMAPPER,PAGE_RETIREMENT`` (and
    ``-d PERFORMANCE,TEMPERATURE,POWER`` for slowdowns). To apply pending repairs:
    ``kubectl cordon <node>``, drain one node at a time, ``nvidia-smi -r -i <pci>`` or
    reboot, then run ``dcgmi diag -r 3``. Failed remaps or exceeded thresholds: open a
    hardware case. Fabric: check ``nvidia-fabricmanager`` on the node.
    """

    id = "DRV006"
    slug = "gpu-health"
    subject = refs.GPU
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (node(specs.NVIDIA_SMI), *KERNEL_LINES)
    tags = ("gpu", "hardware", "ecc")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name in ctx.facts.node_names:
            found = ctx.facts.node(name).gpu_issues
            kernel = ctx.facts.kernel_events.get(name) if found else None
            for bus_id, issues in found:
                pci = gpu_address(bus_id)
                if pci is None:
                    continue
                identity = kernel.gpu(pci) if kernel is not None else None
                yield self._finding(ctx, name, pci, bus_id, identity, list(issues))

    def _finding(self, ctx: Context, name: str, pci: str, bus_id: str,
                 identity: GpuIdentity | None, issues: list[Issue]) -> Finding:
        severity = max((i.severity for i in issues), key=lambda s: s.rank)
        who = identity.describe() if identity is not None else "GPU"
        summary = f"On {name}, {who} at {pci}: " + "; ".join(i.text for i in issues) + "."
        evidence = [smi_evidence(ctx, name, bus_id, r) for i in issues for r in i.readings]
        kinds = {i.kind for i in issues}
        causes = [refs.link("DRV001", name, pci)] \
            if "memory" in kinds or "recovery" in kinds else []
        # A fabric that never finished initialising is Fabric Manager's doing (OP005).
        explained_by = [refs.link("OP005", name)] if kinds == {"fabric"} else []
        return self.finding(
            refs.GPU.of(name, pci), summary, severity=severity, nodes=[name],
            objects=[node_ref(name)], evidence=evidence[:8],
            remediation=_remediation(name, pci, identity, kinds), causes=causes,
            caused_by=explained_by,
        )
