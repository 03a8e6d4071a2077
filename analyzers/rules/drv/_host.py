"""DRV005: automatic kernel upgrades and kernel drift on driver-container nodes."""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzers import commands as sh
from analyzers.results.models import Evidence
from analyzers.rule import Context
from bundle import specs
from bundle.evidence import clip

_SETTING_RE = re.compile(r'^\s*(?P<key>[\w:-]+)\s+"(?P<value>[^"]*)"\s*;')


_SECTION_RE = re.compile(r"^==> (?P<path>.+) <==$")


_BLOCK_START_RE = re.compile(r"^\s*Unattended-Upgrade::Package-Blacklist\s*\{")


_QUOTED_RE = re.compile(r'"([^"]*)"')


_KERNEL_PACKAGE_RE = re.compile(r"^\^?linux-")


_OFF = frozenset({"", "0", "false", "no", "off"})


UNATTENDED = "APT::Periodic::Unattended-Upgrade"


AUTO_REBOOT = "Unattended-Upgrade::Automatic-Reboot"


@dataclass(frozen=True, slots=True)
class AptPolicy:
    """What ``host/unattended-upgrades.txt`` says; ``setting`` is the line that
    enables unattended upgrades (None when they are off or not configured)."""

    setting: Evidence | None
    kernels_held: bool
    auto_reboot: bool


def read_apt(path: str, text: str) -> AptPolicy:
    """Later assignments win, as in apt's own configuration parsing."""
    values: dict[str, tuple[str, Evidence | None]] = {}
    held = False
    in_blacklist = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("//", 1)[0]
        if _SECTION_RE.match(raw.strip()):
            continue
        if _BLOCK_START_RE.match(line):
            in_blacklist = True
        if in_blacklist:
            held = held or any(_KERNEL_PACKAGE_RE.match(p) for p in _QUOTED_RE.findall(line))
            if "}" in line:
                in_blacklist = False
            continue
        m = _SETTING_RE.match(line)
        if m:
            values[m["key"]] = (m["value"], Evidence(path=path, line=number,
                                                     excerpt=clip(raw.strip())))
    value, setting = values.get(UNATTENDED, ("", None))
    reboot = values.get(AUTO_REBOOT, ("", None))[0]
    on = value.strip().lower() not in _OFF
    return AptPolicy(setting=setting if on else None, kernels_held=held,
                     auto_reboot=reboot.strip().lower() in ("true", "1", "yes"))


def driver_container_nodes(ctx: Context) -> list[str]:
    """GPU nodes where the GPU Operator's driver container provides the driver."""
    facts = ctx.facts
    policy = facts.cluster_policy
    enabled = policy.component_enabled("driver") if policy is not None else None
    found = []
    for name in facts.gpu_nodes:
        if "driver" in facts.operands.get(name, {}):
            found.append(name)
            continue
        obj = facts.nodes.get(name)
        opted_out = obj is not None and obj.labels.get("nvidia.com/gpu.deploy.driver") == "false"
        if policy is not None and enabled is not False and not opted_out:
            found.append(name)
    return found


def _kernel(ctx: Context, name: str) -> tuple[str, Evidence] | None:
    """The node's running kernel as the facts read it (``NodeFacts.kernel_release``:
    ``uname -a``, else the Node's ``kernelVersion``), with the line or field quoted."""
    release, where = ctx.facts.node(name).kernel_release
    if release is None or where is None:
        return None
    return release, Evidence(path=where.path, line=where.line, pointer=where.pointer,
                             excerpt=clip(where.excerpt))


_NFD_OS = "feature.node.kubernetes.io/system-os_release."


def _os_key(ctx: Context, name: str) -> str:
    text = ctx.facts.node(name).text(specs.OS_RELEASE) or ""
    values = dict(_os_pair(line) for line in text.splitlines() if "=" in line)
    if values.get("ID"):
        return f"{values['ID']}{values.get('VERSION_ID', '')}"
    obj = ctx.facts.nodes.get(name)
    # NFD copies /etc/os-release into labels: the same key without the host file
    labelled = obj.labels.get(_NFD_OS + "ID", "") if obj is not None else ""
    if obj is not None and labelled:
        return (labelled + obj.labels.get(_NFD_OS + "VERSION_ID", "")).lower()
    image = obj.status.node_info.os_image if obj is not None else ""
    return re.sub(r"[^a-z0-9.]+", "-", image.lower()).strip("-") or "unknown-os"


def _os_pair(line: str) -> tuple[str, str]:
    key, _, value = line.partition("=")
    return key.strip(), value.strip().strip('"').lower()


def _remediation(name: str) -> str:
    return sh.lines([
        sh.note("# on {node}:", node=sh.node(name)),
        "cat /etc/apt/apt.conf.d/20auto-upgrades; uname -r",
        "apt-mark hold linux-image-generic linux-headers-generic   # or blacklist \"linux-\" in "
        "50unattended-upgrades",
        "# roll kernels one node at a time: kubectl cordon, kubectl drain --ignore-daemonsets,"
        " upgrade, reboot,",
        "kubectl -n gpu-operator get pods -l app=nvidia-driver-daemonset -o wide   # driver "
        "pod Running again",
    ])
