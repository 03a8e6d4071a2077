"""OP012: the host's own driver and the operator's driver setting disagree."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.logindex import node_logs
from analyzers.knowledge import signatures
from analyzers.refs import Link
from analyzers.results.models import Evidence
from analyzers.rule import Context
from analyzers.rules.common import field as object_field
from analyzers.rules.common import flatten
from analyzers.rules.drv.DRV003 import DriverNotUsable
from bundle.evidence import clip
from bundle.kube import ClusterPolicy
from bundle.lspci import parse_lspci

IN_USE_SIGNATURE = "driver-module-in-use"


DEPLOY_LABEL = "nvidia.com/gpu.deploy.driver"


# The upgrade controller's per-node state: any value but these means an upgrade is under
# way, where the loaded module is the previous container's (OP007's case, not this one).
UPGRADE_LABEL = "nvidia.com/gpu-driver-upgrade-state"


_SETTLED = frozenset({"", "upgrade-done"})


# Kernel signals that show a host driver was there and tried (or another driver won).
_DRIVER_TRIED = ("driver_loaded", "nouveau", "nova_core", "probe_failed", "unsupported_gpu",
                 "lockdown", "module_load_failed", "module_verification", "api_mismatch")


VERSION_FILE = "host/nvidia-driver-version.txt"


# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..." and
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build ..."
_VERSION = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(?P<version>\d+\.\d+(?:\.\d+)?)")


@dataclass
class _HostDriver:
    """What the node says about a driver loaded outside the operator's control."""

    loaded: bool = False
    version: str = ""
    evidence: list[Evidence] = field(default_factory=list)


def _host_driver(ctx: Context, name: str) -> _HostDriver | None:
    """The node's loaded NVIDIA driver, or None when the bundle cannot tell."""
    host = _HostDriver()
    modules = ctx.facts.modules(name)
    artifacts = ctx.bundle.node(name)
    text = artifacts.host("nvidia-driver-version.txt")
    if modules is None and text is None:
        return None
    if modules is not None and modules.loaded("nvidia"):
        host.loaded = True
        host.evidence.append(modules.evidence("nvidia"))
    if text:
        first = text.splitlines()[0] if text.splitlines() else ""
        if found := _VERSION.search(first):
            host.loaded = True
            host.version = found["version"]
            host.evidence.append(Evidence(path=artifacts.path(VERSION_FILE), line=1,
                                          excerpt=clip(first)))
    return host


def _host_driver_tried(ctx: Context, name: str) -> bool:
    """Whether the node shows a host driver that exists but did not load, or another
    driver holding the GPU: then DRV003, DRV004, DRV008 or DRV010 name the cause."""
    kernel = ctx.facts.kernel_events.get(name)
    if kernel is not None and kernel.signals_of(*_DRIVER_TRIED):
        return True
    modules = ctx.facts.modules(name)
    return (modules is not None and modules.loaded("nouveau")) or bool(ctx.facts.foreign_gpus(name))


def _has_gpu(ctx: Context, name: str) -> bool:
    if name in ctx.facts.gpu_node_set:
        return True
    text = ctx.bundle.node(name).host("lspci.txt")
    return any(device.is_gpu for device in parse_lspci(text or ""))


def _driver_enabled(policy: ClusterPolicy) -> bool:
    enabled = policy.component_enabled("driver")
    return True if enabled is None else enabled  # the operator's default


def _dropped_by_helm(ctx: Context) -> list[Link]:
    """HELM001's findings for a latest upgrade that dropped ``driver.enabled: false``:
    that is how the container came back over a host driver."""
    found = []
    for release, revisions in sorted(ctx.bundle.cluster.helm.items()):
        if len(revisions) < 2:
            continue
        before, after = revisions[-2], revisions[-1]
        if (flatten(before.values).get("driver.enabled") in (False, "false")
                and "driver.enabled" not in flatten(after.values)):
            found.append(refs.HELM001(release, after.revision))
    return found


def _in_use(ctx: Context, name: str) -> list[Evidence]:
    wanted = (signatures.get(IN_USE_SIGNATURE),)
    for path, container, text in node_logs(ctx.facts, name, components=("driver",)):
        for hit in signatures.match(text, "log", container=container, signatures=wanted):
            return [Evidence(path=path, line=hit.line, excerpt=clip(hit.text))]
    return []


def _enabled_evidence(policy: ClusterPolicy) -> Evidence:
    enabled = policy.component_enabled("driver")
    shown = "unset (defaults to true)" if enabled is None else str(enabled).lower()
    return object_field(policy, f"{policy.metadata.name}: spec.driver.enabled = {shown}",
                        "spec", "driver", "enabled")


def _causes(ctx: Context, name: str) -> list[Link]:
    causes = []
    stages = ctx.facts.operand_stages.get(name)
    if stages is not None and stages.first is not None:
        causes.append(refs.OP001(name))
    if DriverNotUsable.explains(ctx, name):
        causes.append(refs.DRV003(name))
    return causes


def _remediation(name: str, *, fight: bool) -> str:
    node_arg = sh.node(name)
    lines = [
        "kubectl get clusterpolicies.nvidia.com -o jsonpath='{.items[*].spec.driver}'; echo",
        sh.cmd("kubectl", "get", "node", node_arg, "-L", DEPLOY_LABEL),
        sh.node_shell(node_arg),
        "cat /proc/driver/nvidia/version; lsmod | grep -E '^nvidia'",
        "dpkg -l | grep -iE 'nvidia-(driver|dkms|kernel)' || rpm -qa | grep -i nvidia",
    ]
    if fight:
        lines += [
            "# keep the host driver: set driver.enabled=false (helm upgrade ... --set "
            "driver.enabled=false)",
            "# or let the operator own it: remove the host driver packages, reboot the node",
        ]
    else:
        lines.append("# install the driver on the host, or set driver.enabled=true so the "
                     "operator's driver container provides it")
    return sh.lines(lines)
