"""DRV008: The loaded NVIDIA driver cannot drive this GPU."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import refs
from analyzers.facts import driver
from analyzers.facts.driver import GpuRefusal
from analyzers.facts.stages import Stage
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.drv._support import _remediation
from bundle import specs
from bundle.evidence import clip


class DriverCannotDriveGpu(Rule):
    """The loaded NVIDIA driver cannot drive this GPU.

    Per node, the kernel's refusal — ``NVRM: The NVIDIA GPU <bdf> (PCI ID: 10de:<id>)
    installed in this system is not supported by the NVIDIA <version> driver release``
    (a GPU newer than the branch, or one the branch dropped), ``... is supported through
    the NVIDIA 470.xx Legacy drivers`` (a GPU only a legacy branch drives), ``... is not
    supported by open nvidia.ko because it does not include the required GPU System
    Processor (GSP)`` (the open kernel modules on a pre-Turing GPU), ``... requires use
    of the NVIDIA open kernel modules`` (the proprietary module on a Blackwell GPU) or
    ``Open nvidia.ko is only ready for use on Data Center GPUs`` — from ``dmesg.txt`` and
    the kernel journal (dmesg with or without timestamps, ``-T``, syslog and journalctl
    prefixes), or repeated in the driver container's log. The GPU's ``host/lspci.txt``
    line names the model. The ``RmInitAdapter failed`` lines that follow a refusal are
    its consequence, not a lost GPU: DRV002 leaves them to this finding. It causes
    DRV003's "driver not usable" finding and OP001's driver stage on the same node when
    those fire.

    Why it matters:
    The module loads, refuses the GPU and leaves the node without one: nvidia-smi finds
    no device, the driver container or validator fails, and restarting pods never helps.
    Only a different driver branch or flavour does.

    Remediation:
    Open modules on a pre-Turing GPU (Maxwell, Pascal, Volta): install the proprietary
    flavour (GPU Operator: ``driver.kernelModuleType=proprietary``; older releases
    ``driver.useOpenKernelModules=false``). A GPU that requires the open modules: the
    open flavour (``driver.kernelModuleType=open``). A branch that does not list the GPU: choose
    a driver version whose README (Appendix A, supported products) lists its PCI ID —
    newer for a new GPU, a legacy branch for one the current branch dropped.
    """

    id = "DRV008"
    slug = "driver-cannot-drive-gpu"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (
        node(specs.DMESG),
        node(specs.JOURNALS, optional=True),
        node(specs.LSPCI, optional=True),
        node(specs.MODULES, optional=True),
        cluster(specs.PODS, optional=True),
        cluster(specs.EVENTS, optional=True),  # the operand stages' evidence
        node(specs.NVIDIA_SMI, optional=True),
        LOGS,
    )
    tags = ("driver", "kernel")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name in sorted(ctx.facts.node_names):
            refusal = driver.gpu_refusal(ctx.facts, name)
            if refusal is not None:
                yield self._finding(ctx, name, refusal)

    def _finding(self, ctx: Context, name: str, refusal: GpuRefusal) -> Finding:
        devices = refusal.devices
        evidence = list(refusal.evidence)
        evidence += [Evidence(path=refusal.lspci_path, line=d.line, excerpt=clip(d.text))
                     for d in devices[:2]]
        what = ", ".join(sorted({d.name for d in devices})) or ", ".join(
            sorted(refusal.pci_ids)) or "its NVIDIA GPU"
        version = f" {refusal.version}" if refusal.version else ""
        reasons = []
        if refusal.open_flavour:
            reasons.append("the open kernel modules were loaded, and this GPU has no GSP "
                           "(it predates Turing): it needs the proprietary flavour")
        if refusal.needs_open:
            reasons.append(f"the proprietary NVIDIA{version} kernel module was loaded, and "
                           "this GPU requires the open kernel modules (Blackwell and newer)")
        if refusal.open_datacenter:
            reasons.append("the open kernel modules of this release are only ready for use "
                           "on Data Center GPUs, and this GPU is not one: it needs the "
                           "proprietary flavour or a newer release")
        if refusal.legacy:
            reasons.append(f"the NVIDIA{version} driver no longer supports this GPU: the "
                           f"kernel names the {refusal.legacy} legacy branch for it")
        if refusal.branch:
            reasons.append(f"the NVIDIA{version} driver branch does not list this GPU: it "
                           "needs a branch that supports it")
        summary = (f"On {name}, the NVIDIA driver refused {what}: " + "; ".join(reasons)
                   + ". The node has no usable GPU until the driver changes.")
        causes = []
        if driver.unusable(ctx.facts, name) is not None:
            causes.append(refs.link("DRV003", name))
        stages = ctx.facts.operand_stages.get(name)
        if stages is not None and stages.first is Stage.DRIVER:
            causes.append(refs.link("OP001", name))
        return self.finding(name, summary, nodes=[name], objects=[node_ref(name)],
                            evidence=evidence, causes=causes,
                            remediation=_remediation(name, refusal))
