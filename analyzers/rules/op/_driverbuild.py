"""OP015: the driver container cannot build or load its module on this OS: what to do
about it (the failure is read by analyzers/facts/driver.py)."""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from analyzers import commands as sh
from analyzers.facts.driver import DENIED, HEADERS, PACKAGES

_ENFORCING = frozenset({"enforcing", "1"})


def _remediation(name: str, kinds: AbstractSet[str]) -> str:
    node_arg = sh.node(name)
    lines = [
        sh.cmd("kubectl", "get", "node", node_arg, "-o",
               "jsonpath={.status.nodeInfo.kernelVersion} {.status.nodeInfo.osImage}",
               tail="; echo"),
        "kubectl get clusterpolicies.nvidia.com -o jsonpath='{.items[*].spec.driver}'; echo",
    ]
    if PACKAGES in kinds:
        lines.append("# give the container the repositories it builds from (driver.repoConfig, "
                     "a valid RHEL entitlement), or use precompiled images for this kernel")
    if HEADERS in kinds:
        lines.append("# use precompiled images for this kernel (driver.usePrecompiled=true), "
                     "a driver.repoConfig repository that has its kernel-devel, or a kernel "
                     "whose headers are published")
    if DENIED in kinds:
        lines += [
            sh.node_shell(node_arg),
            "getenforce; ausearch -m avc -ts recent | grep -iE 'module_load|nvidia' | tail",
        ]
    return sh.lines(lines)
