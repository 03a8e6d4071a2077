"""DRV005: automatic kernel upgrades and kernel drift on driver-container nodes."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from analyzers import commands as sh
from analyzers import refs
from analyzers.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import field, names, node_ref
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
    text = ctx.bundle.node(name).host("uname.txt")
    if text and text.split():
        fields = text.split()
        release = fields[2] if len(fields) > 2 and fields[0] == "Linux" else fields[0]
        first = text.splitlines()[0]
        return release, Evidence(path=f"nodes/{name}/host/uname.txt", line=1,
                                 excerpt=clip(first))
    obj = ctx.facts.nodes.get(name)
    if obj is not None and obj.status.node_info.kernel_version:
        version = obj.status.node_info.kernel_version
        return version, field(obj, f"kernelVersion: {version}", "status", "nodeInfo",
                              "kernelVersion")
    return None


_NFD_OS = "feature.node.kubernetes.io/system-os_release."


def _os_key(ctx: Context, name: str) -> str:
    text = ctx.bundle.node(name).host("os-release") or ""
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


class AutomaticKernelUpgrades(Rule):
    """Automatic kernel upgrades or differing kernels on driver-container nodes.

    Two findings: per node, unattended-upgrades enabled
    (``APT::Periodic::Unattended-Upgrade "1"`` in ``host/unattended-upgrades.txt``)
    without kernel packages held in ``Package-Blacklist``, on a node whose driver
    comes from the GPU Operator's driver container (ClusterPolicy ``driver.enabled``
    not false); and per OS pool of such nodes, kernels that differ (``host/uname.txt``,
    else the Node's ``kernelVersion``).

    Why it matters:
    The driver container builds or picks its module for the running kernel. An
    automatic kernel upgrade followed by a reboot leaves the node without a driver
    until a matching build (or precompiled image) exists, and a pool of nodes on
    different kernels behaves differently after each reboot.

    Remediation:
    Hold kernel packages (``apt-mark hold linux-image-generic linux-headers-generic``,
    or add ``"linux-"`` to ``Unattended-Upgrade::Package-Blacklist``), or turn off
    unattended upgrades on GPU nodes; roll kernels deliberately, one node at a time
    (cordon, drain, upgrade, reboot, check the driver pod).
    """

    id = "DRV005"
    slug = "automatic-kernel-upgrades"
    severity = Severity.MEDIUM
    confidence = Confidence.LIKELY
    inputs = (
        node("host/uname.txt"),
        node("host/unattended-upgrades.txt", optional=True),
        node("host/os-release", optional=True),
        cluster("clusterpolicies.json", optional=True),
        cluster("nodes.json", optional=True),
        cluster("pods.json", optional=True),
    )
    tags = ("driver", "kernel", "upgrade")

    def check(self, ctx: Context) -> Iterable[Finding]:
        drivers = driver_container_nodes(ctx)
        upgrading: set[str] = set()
        uncollected = []
        for name in drivers:
            if not ctx.bundle.has(f"nodes/{name}/host/unattended-upgrades.txt"):
                uncollected.append(name)  # the collector writes it, empty where no apt
                continue
            finding = self._unattended(ctx, name)
            if finding is not None:
                upgrading.add(name)
                yield finding
        if uncollected:
            self.unjudged("the unattended-upgrades settings (host/unattended-upgrades.txt) "
                          f"are not in the bundle for {names(uncollected)}")
        yield from self._drift(ctx, drivers, upgrading)

    def _unattended(self, ctx: Context, name: str) -> Finding | None:
        path = f"nodes/{name}/host/unattended-upgrades.txt"
        text = ctx.bundle.read_text(path)
        if not text:
            return None
        policy = read_apt(path, text)
        if policy.setting is None or policy.kernels_held:
            return None
        reboot = (" and reboots on its own (Automatic-Reboot true)" if policy.auto_reboot
                  else "; the next reboot boots the new kernel")
        summary = (f"On {name}, unattended-upgrades installs updates, kernels included"
                   f"{reboot}, while the driver comes from the GPU Operator's driver "
                   "container, built for the running kernel.")
        return self.finding(
            name, summary, nodes=[name], objects=[node_ref(name)], evidence=[policy.setting],
            remediation=_remediation(name),
        )

    def _drift(self, ctx: Context, drivers: list[str], upgrading: set[str]) -> Iterable[Finding]:
        pools: dict[str, dict[str, list[tuple[str, Evidence]]]] = defaultdict(
            lambda: defaultdict(list))
        for name in drivers:
            kernel = _kernel(ctx, name)
            if kernel is not None:
                pools[_os_key(ctx, name)][kernel[0]].append((name, kernel[1]))
        for os_key, kernels in sorted(pools.items()):
            if len(kernels) < 2:
                continue
            members = sorted(n for group in kernels.values() for n, _ in group)
            listing = "; ".join(f"{release}: {names([n for n, _ in group])}"
                                for release, group in sorted(kernels.items()))
            summary = (f"Driver-container nodes on {os_key} run {len(kernels)} different "
                       f"kernels ({listing}); each needs its own driver build or "
                       "precompiled image, and they drift further with every reboot.")
            evidence = [e for group in kernels.values() for _, e in group[:2]]
            yield self.finding(
                f"kernels/{os_key}", summary, nodes=members,
                objects=[node_ref(n) for n in members], evidence=evidence,
                remediation=_remediation(members[0]),
                caused_by=[refs.DRV005(n) for n in members if n in upgrading],
            )


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
