"""OP012: the host's own driver and the operator's driver setting disagree."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzers import commands as sh
from analyzers import refs, signatures
from analyzers.facts.preconditions import Need
from analyzers.models import Confidence, Evidence, Finding, Severity
from analyzers.refs import Link
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.common import field as object_field
from analyzers.rules.drv_binding import foreign_gpus
from analyzers.rules.drv_common import node_logs
from analyzers.rules.drv_driver import DriverNotUsable, read_modules
from analyzers.rules.helm import flatten
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
    modules = read_modules(ctx, name)
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
    modules = read_modules(ctx, name)
    return (modules is not None and modules.loaded("nouveau")) or bool(foreign_gpus(ctx, name))


def _has_gpu(ctx: Context, name: str) -> bool:
    if name in ctx.facts.gpu_node_set:
        return True
    text = ctx.bundle.node(name).host("lspci.txt")
    return any(device.is_gpu for device in parse_lspci(text or ""))


def _driver_enabled(policy: ClusterPolicy) -> bool:
    enabled = policy.component_enabled("driver")
    return True if enabled is None else enabled  # the operator's default


class HostDriverConflict(Rule):
    """The host driver and the operator's driver setting disagree.

    Per node, against the ClusterPolicy's ``driver.enabled`` (absent means true):
    the driver container is enabled on a node whose host already has an NVIDIA driver
    loaded (``nvidia`` in ``host/modules.txt``, the version in
    ``host/nvidia-driver-version.txt``) and the container fails — its log says ``Could not
    unload NVIDIA driver kernel modules, driver is in use``, or its pod is failing while
    the host's loaded version differs from the policy's ``driver.version``. Nodes the
    operator itself labelled ``nvidia.com/gpu.deploy.driver=pre-installed`` are left
    alone: there the operator saw the host driver and stood its container down; so are
    nodes in a driver upgrade (``nvidia.com/gpu-driver-upgrade-state`` other than
    ``upgrade-done``), where the loaded module is the previous container's. Or the
    other way round: ``driver.enabled=false`` on a GPU node with no NVIDIA module loaded,
    no ``/proc/driver/nvidia/version`` and no trace of a host driver in the kernel log
    (no ``NVRM`` load banner, refusal or probe failure, no nouveau or other driver on the
    GPU — those are DRV003, DRV004, DRV008 and DRV010), so nothing provides a driver. The
    finding causes OP001's stage finding and DRV003's "driver not usable" finding on the
    node when those fire, and is caused by HELM001 when the latest Helm upgrade dropped
    ``driver.enabled: false``.

    Why it matters:
    The operator assumes one owner of the kernel module. A host-installed driver blocks
    the container from loading its own (it keeps restarting, and the validator and every
    operand wait); with the container disabled and no host driver, the validator waits
    forever for a driver nobody installs.

    Remediation:
    Pick one owner. Keep the host driver: set ``driver.enabled=false`` in the
    ClusterPolicy (or the Helm value ``driver.enabled=false``). Let the operator own the
    driver: remove the host's driver packages, reboot, and let the driver container load
    its own. With the container disabled: install the driver on the host, or enable
    the container.
    """

    id = "OP012"
    slug = "host-driver-conflict"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (
        cluster("clusterpolicies.json"),
        node("host/modules.txt", optional=True),
        node(VERSION_FILE, optional=True),
        node("host/lspci.txt", optional=True),
        node("dmesg.txt", optional=True),
        node("journal/*.jsonl", optional=True),
        cluster("nodes.json", optional=True),
        cluster("pods.json", optional=True),
        cluster("helm/*.json", optional=True),
        LOGS,
        cluster("events.json", optional=True),
        node("nvidia-smi.xml", optional=True),
    )
    needs = (Need.OPERATOR,)
    tags = ("operator", "driver")

    def check(self, ctx: Context) -> Iterable[Finding]:
        policy = ctx.facts.cluster_policy
        if policy is None:
            return
        names = sorted(set(ctx.bundle.node_names) | ctx.facts.gpu_node_set)
        for name in names:
            host = _host_driver(ctx, name)
            if host is None:
                continue
            if _driver_enabled(policy):
                finding = self._fight(ctx, policy, name, host)
            else:
                finding = self._nobody(ctx, policy, name, host)
            if finding is not None:
                yield finding

    @classmethod
    def explains(cls, ctx: Context, name: str) -> bool:
        """Whether this rule fires on ``name`` (for OP001's driver stage, which links
        to it and names it in its summary)."""
        if cls.skip_reason(ctx.bundle) is not None:
            return False
        policy = ctx.facts.cluster_policy
        host = _host_driver(ctx, name) if policy is not None else None
        if policy is None or host is None:
            return False
        rule = cls()
        found = (rule._fight(ctx, policy, name, host) if _driver_enabled(policy)
                 else rule._nobody(ctx, policy, name, host))
        return found is not None

    def _fight(self, ctx: Context, policy: ClusterPolicy, name: str,
               host: _HostDriver) -> Finding | None:
        node_obj = ctx.facts.nodes.get(name)
        labels = node_obj.labels if node_obj is not None else {}
        if (not host.loaded or labels.get(DEPLOY_LABEL) == "pre-installed"
                or labels.get(UPGRADE_LABEL, "") not in _SETTLED):
            return None
        in_use = _in_use(ctx, name)
        operand = ctx.facts.operands.get(name, {}).get("driver")
        wanted = policy.spec.get("driver", {}).get("version") if isinstance(
            policy.spec.get("driver"), dict) else None
        differs = bool(isinstance(wanted, str) and wanted and host.version
                       and not wanted.startswith(host.version))
        failing = operand is not None and not operand.healthy
        if operand is not None and operand.healthy:
            return None  # whatever its old log says, the container runs now
        if not in_use and not (failing and differs):
            return None
        why = []
        if in_use:
            why.append("its container cannot unload the loaded module ('driver is in use')")
        if failing and differs and operand is not None:
            why.append(f"the host runs {host.version} while the policy asks for {wanted}, "
                       f"and the driver pod is {operand.state}")
        loaded = f" {host.version}" if host.version else ""
        summary = (f"On {name}, an NVIDIA driver{loaded} is already loaded outside the "
                   "driver container while the ClusterPolicy enables the container: "
                   + "; ".join(why) + ". Host and operator fight over the kernel module.")
        evidence = [*host.evidence, *in_use, _enabled_evidence(policy)]
        return self.finding(name, summary, nodes=[name], objects=[node_ref(name)],
                            evidence=evidence, causes=_causes(ctx, name),
                            caused_by=_dropped_by_helm(ctx),
                            remediation=_remediation(name, fight=True))

    def _nobody(self, ctx: Context, policy: ClusterPolicy, name: str,
                host: _HostDriver) -> Finding | None:
        if host.loaded or not _has_gpu(ctx, name) or _host_driver_tried(ctx, name):
            return None
        artifacts = ctx.bundle.node(name)
        evidence = [_enabled_evidence(policy)]
        modules = read_modules(ctx, name)
        if modules is not None:
            evidence.append(Evidence(path=modules.path,
                                     excerpt="(no 'nvidia' module in /proc/modules)"))
        item = ctx.bundle.manifest.item(artifacts.path(VERSION_FILE))
        if item is not None and item.error:
            evidence.append(Evidence(path="manifest.json",
                                     excerpt=clip(f"{item.path}: {item.error}")))
        summary = (f"On {name}, the ClusterPolicy disables the driver container "
                   "(driver.enabled=false) but the host has no NVIDIA driver loaded either: "
                   "nothing provides a driver, so the validator and every operand wait.")
        return self.finding(name, summary, severity=Severity.CRITICAL, nodes=[name],
                            objects=[node_ref(name)], evidence=evidence,
                            causes=_causes(ctx, name),
                            remediation=_remediation(name, fight=False))


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
    for path, container, text in node_logs(ctx, name, components=("driver",)):
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

