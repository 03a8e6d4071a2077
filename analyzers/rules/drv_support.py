"""DRV008: the loaded NVIDIA driver cannot drive this GPU (branch or open-module flavour)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzers import commands as sh
from analyzers import refs, signatures
from analyzers.facts.stages import Stage
from analyzers.models import Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.drv_common import line_evidence, node_logs
from analyzers.rules.drv_driver import DriverNotUsable
from bundle.evidence import clip
from bundle.lspci import PciDevice, parse_lspci

SIGNATURE = "kernel-gpu-unsupported-by-driver"
_OPEN = re.compile(r"not supported by\s+(?:NVRM:\s*)?open", re.IGNORECASE)
_VERSION = re.compile(r"NVIDIA (?P<a>\d+\.\d+(?:\.\d+)?) driver release"
                      r"|the (?P<b>\d+\.\d+(?:\.\d+)?) NVIDIA", re.IGNORECASE)
_PCI_ID = re.compile(r"PCI ID:\s*(?P<id>10de:[0-9a-fA-F]{4})")
_BDF = re.compile(r"(?:[0-9a-fA-F]{4,8}:)?(?P<bdf>[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])")
EVIDENCE_CAP = 4


@dataclass
class _Refusal:
    """What the node's kernel (and the driver container's log) said about its GPUs."""

    open_flavour: bool = False
    branch: bool = False
    version: str = ""
    pci_ids: set[str] = field(default_factory=set)
    addresses: set[str] = field(default_factory=set)
    evidence: list[Evidence] = field(default_factory=list)

    def read(self, text: str, evidence: Evidence) -> None:
        if _OPEN.search(text):
            self.open_flavour = True
        else:
            self.branch = True
        version = _VERSION.search(text)
        if version and not self.version:
            self.version = version["a"] or version["b"]
        if pci := _PCI_ID.search(text):
            self.pci_ids.add(pci["id"].lower())
        if len(self.evidence) < EVIDENCE_CAP and evidence not in self.evidence:
            self.evidence.append(evidence)


def _short(address: str) -> str:
    found = _BDF.search(address)
    return found["bdf"].lower() if found else address.lower()


def _refusal(ctx: Context, name: str) -> _Refusal | None:
    refusal = _Refusal()
    kernel = ctx.facts.kernel_events.get(name)
    if kernel is not None:
        for signal in kernel.signals_of("unsupported_gpu"):
            refusal.read(signal.source.message, line_evidence(signal.source))
            if signal.pci:
                refusal.addresses.add(_short(signal.pci))
    wanted = (signatures.get(SIGNATURE),)
    for path, container, text in node_logs(ctx, name, components=("driver",)):
        for hit in signatures.match(text, "log", container=container, signatures=wanted):
            refusal.read(hit.text, Evidence(path=path, line=hit.line, excerpt=clip(hit.text)))
            break
    return refusal if refusal.evidence else None


def _devices(ctx: Context, name: str, refusal: _Refusal) -> list[PciDevice]:
    """The lspci entries of the refused GPUs (by address, else by PCI ID)."""
    text = ctx.bundle.node(name).host("lspci.txt")
    if not text:
        return []
    gpus = [device for device in parse_lspci(text) if device.is_gpu]
    matched = [d for d in gpus if _short(d.address) in refusal.addresses]
    return matched or [d for d in gpus if f"10de:{d.device_id}" in refusal.pci_ids]


class DriverCannotDriveGpu(Rule):
    """The loaded NVIDIA driver cannot drive this GPU.

    Per node, the kernel's probe refusal — ``NVRM: The NVIDIA GPU <bdf> (PCI ID:
    10de:<id>) installed in this system is not supported by the NVIDIA <version> driver
    release`` (a GPU newer than the branch, or one the branch dropped) or ``... is not
    supported by open nvidia.ko because it does not include the required GPU System
    Processor (GSP)`` (the open kernel modules on a pre-Turing GPU) — from ``dmesg.txt``
    and the kernel journal, or repeated in the driver container's log. The GPU's
    ``host/lspci.txt`` line names the model. The finding causes DRV003's "driver not
    usable" finding and OP001's driver stage on the same node when those fire.

    Why it matters:
    The module loads, refuses the GPU and leaves the node without one: nvidia-smi finds
    no device, the driver container or validator fails, and restarting pods never helps.
    Only a different driver branch or flavour does.

    Remediation:
    Open modules on a pre-Turing GPU (Maxwell, Pascal, Volta): install the proprietary
    flavour (GPU Operator: ``driver.kernelModuleType=proprietary``; older releases
    ``driver.useOpenKernelModules=false``). A branch that does not list the GPU: choose
    a driver version whose README (Appendix A, supported products) lists its PCI ID —
    newer for a new GPU, a legacy branch for one the current branch dropped.
    """

    id = "DRV008"
    slug = "driver-cannot-drive-gpu"
    severity = Severity.CRITICAL
    inputs = (
        node("dmesg.txt"),
        node("journal/*.jsonl", optional=True),
        node("host/lspci.txt", optional=True),
        node("host/modules.txt", optional=True),
        cluster("pods.json", optional=True),
        cluster("events.json", optional=True),  # the operand stages' evidence
        node("nvidia-smi.xml", optional=True),
        LOGS,
    )
    tags = ("driver", "kernel")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name in sorted(ctx.bundle.node_names):
            refusal = _refusal(ctx, name)
            if refusal is not None:
                yield self._finding(ctx, name, refusal)

    @classmethod
    def explains(cls, ctx: Context, name: str) -> bool:
        """Whether this rule fires on ``name`` (for OP001's driver stage, which links
        to it and names it in its summary)."""
        if cls.skip_reason(ctx.bundle) is not None:
            return False
        return _refusal(ctx, name) is not None

    def _finding(self, ctx: Context, name: str, refusal: _Refusal) -> Finding:
        devices = _devices(ctx, name, refusal)
        evidence = list(refusal.evidence)
        path = ctx.bundle.node(name).path("host/lspci.txt")
        evidence += [Evidence(path=path, line=d.line, excerpt=clip(d.text)) for d in devices[:2]]
        what = ", ".join(sorted({d.name for d in devices})) or ", ".join(
            sorted(refusal.pci_ids)) or "its NVIDIA GPU"
        version = f" {refusal.version}" if refusal.version else ""
        reasons = []
        if refusal.open_flavour:
            reasons.append("the open kernel modules were loaded, and this GPU has no GSP "
                           "(it predates Turing): it needs the proprietary flavour")
        if refusal.branch:
            reasons.append(f"the NVIDIA{version} driver branch does not list this GPU: it "
                           "needs a branch that supports it")
        summary = (f"On {name}, the NVIDIA driver refused {what}: " + "; ".join(reasons)
                   + ". The node has no usable GPU until the driver changes.")
        causes = []
        if DriverNotUsable.explains(ctx, name):
            causes.append(refs.DRV003(name))
        stages = ctx.facts.operand_stages.get(name)
        if stages is not None and stages.first is Stage.DRIVER:
            causes.append(refs.OP001(name))
        return self.finding(name, summary, nodes=[name], objects=[node_ref(name)],
                            evidence=evidence, causes=causes,
                            remediation=_remediation(name, refusal))


def _remediation(name: str, refusal: _Refusal) -> str:
    node_arg = sh.node(name)
    lines = [
        sh.node_shell(node_arg),
        "lspci -nnk -d 10de:; cat /proc/driver/nvidia/version",
        "dmesg --time-format iso | grep -A3 'not supported by' | head -20",
        "kubectl get clusterpolicies.nvidia.com -o jsonpath='{.items[*].spec.driver}'; echo",
    ]
    if refusal.open_flavour:
        lines.append("# pre-Turing GPU: set driver.kernelModuleType=proprietary in the "
                     "ClusterPolicy (older operators: driver.useOpenKernelModules=false)")
    if refusal.branch:
        lines.append("# set driver.version to a branch whose README (Appendix A) lists this "
                     "GPU's PCI ID, then let the driver pod on this node restart")
    return sh.lines(lines)

