"""DRV008: the loaded NVIDIA driver cannot drive this GPU (branch or open-module flavour):
what to do about it; the refusal itself is read by analyzers/facts/driver.py."""

from __future__ import annotations

from analyzers import commands as sh
from analyzers.facts.driver import GpuRefusal


def _remediation(name: str, refusal: GpuRefusal) -> str:
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
