"""OP015: the driver container cannot build or load its module on this OS."""

from __future__ import annotations

from analyzers import commands as sh
from analyzers.facts.logindex import node_logs
from analyzers.knowledge import signatures
from analyzers.results.models import Evidence
from analyzers.rule import Context
from bundle.evidence import clip

HEADERS = "driver-kernel-headers-unavailable"


PACKAGES = "driver-build-package-unavailable"


DENIED = "driver-module-insert-permission-denied"


SELINUX_FILE = "host/selinux.txt"


_ENFORCING = frozenset({"enforcing", "1"})


def _hits(ctx: Context, name: str) -> dict[str, Evidence]:
    """The first line of each wording in the node's driver container logs."""
    wanted = (signatures.get(HEADERS), signatures.get(PACKAGES), signatures.get(DENIED))
    found: dict[str, Evidence] = {}
    for path, container, text in node_logs(ctx.facts, name, components=("driver",)):
        for hit in signatures.match(text, "log", container=container, signatures=wanted):
            found.setdefault(hit.signature.id,
                             Evidence(path=path, line=hit.line, excerpt=clip(hit.text)))
    return found


def _selinux(ctx: Context, name: str) -> tuple[str | None, Evidence | None]:
    artifacts = ctx.bundle.node(name)
    text = artifacts.host("selinux.txt")
    if not text or not text.strip():
        return None, None
    first = text.strip().splitlines()[0].strip()
    return first, Evidence(path=artifacts.path(SELINUX_FILE), line=1, excerpt=clip(first))


def _remediation(name: str, kinds: set[str]) -> str:
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
