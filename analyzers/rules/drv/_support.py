"""DRV008: the loaded NVIDIA driver cannot drive this GPU (branch or open-module flavour)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analyzers import commands as sh
from analyzers.facts.kernel_events import line_evidence
from analyzers.facts.logindex import node_logs
from analyzers.knowledge import signatures
from analyzers.results.models import Evidence
from analyzers.rule import Context
from bundle.evidence import clip
from bundle.lspci import PciDevice, parse_lspci

SIGNATURE = "kernel-gpu-unsupported-by-driver"


_OPEN = re.compile(r"not supported by\s+(?:NVRM:\s*)?open", re.IGNORECASE)


_NEEDS_OPEN = re.compile(r"requires use of the\s+(?:NVRM:\s*)?NVIDIA open", re.IGNORECASE)


_OPEN_DATACENTER = re.compile(r"Open nvidia\.ko is only ready for use on Data Center GPUs",
                              re.IGNORECASE)


_LEGACY = re.compile(r"supported through the\s+(?:NVRM:\s*)?NVIDIA\s+(?:NVRM:\s*)?"
                     r"(?P<branch>[\w.-]+)\s+(?:NVRM:\s*)?Legacy", re.IGNORECASE)


_VERSION = re.compile(r"NVIDIA (?P<a>\d+\.\d+(?:\.\d+)?) driver release"
                      r"|the (?P<b>\d+\.\d+(?:\.\d+)?) NVIDIA", re.IGNORECASE)


_PCI_ID = re.compile(r"PCI ID:\s*(?P<id>10de:[0-9a-fA-F]{4})")


_BDF = re.compile(r"(?:[0-9a-fA-F]{4,8}:)?(?P<bdf>[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])")


EVIDENCE_CAP = 4


@dataclass
class _Refusal:
    """What the node's kernel (and the driver container's log) said about its GPUs."""

    open_flavour: bool = False      # open modules on a GPU without GSP
    needs_open: bool = False        # proprietary module on a GPU that needs the open ones
    open_datacenter: bool = False   # early open modules on a non-data-center GPU
    branch: bool = False
    legacy: str = ""                # the legacy branch the kernel names ("470.xx")
    version: str = ""
    pci_ids: set[str] = field(default_factory=set)
    addresses: set[str] = field(default_factory=set)
    evidence: list[Evidence] = field(default_factory=list)

    def read(self, text: str, evidence: Evidence) -> None:
        legacy = _LEGACY.search(text)
        if _OPEN.search(text):
            self.open_flavour = True
        elif _NEEDS_OPEN.search(text):
            self.needs_open = True
        elif _OPEN_DATACENTER.search(text):
            self.open_datacenter = True
        elif legacy is not None:
            self.legacy = self.legacy or legacy["branch"]
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
    for path, container, text in node_logs(ctx.facts, name, components=("driver",)):
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


def _remediation(name: str, refusal: _Refusal) -> str:
    node_arg = sh.node(name)
    lines = [
        sh.node_shell(node_arg),
        "lspci -nnk -d 10de:; cat /proc/driver/nvidia/version",
        "dmesg --time-format iso | grep -A3 -E 'not supported by|requires use of|supported "
        "through|only ready for' | head -20",
        "kubectl get clusterpolicies.nvidia.com -o jsonpath='{.items[*].spec.driver}'; echo",
    ]
    if refusal.open_flavour or refusal.open_datacenter:
        lines.append("# pre-Turing GPU: set driver.kernelModuleType=proprietary in the "
                     "ClusterPolicy (older operators: driver.useOpenKernelModules=false)")
    if refusal.needs_open:
        lines.append("# this GPU needs the open kernel modules: set driver.kernelModuleType=open"
                     " in the ClusterPolicy (older operators: driver.useOpenKernelModules=true)"
                     "; on a host driver install the -open package flavour")
    if refusal.legacy:
        lines.append(f"# the kernel names the {refusal.legacy} legacy branch: set driver.version "
                     "to a release of that branch (or replace the GPU)")
    if refusal.branch:
        lines.append("# set driver.version to a branch whose README (Appendix A) lists this "
                     "GPU's PCI ID, then let the driver pod on this node restart")
    return sh.lines(lines)
