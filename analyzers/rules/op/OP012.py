"""OP012: The host driver and the operator's driver setting disagree."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.op._hostdriver import (
    _SETTLED,
    DEPLOY_LABEL,
    UPGRADE_LABEL,
    VERSION_FILE,
    _causes,
    _driver_enabled,
    _dropped_by_helm,
    _enabled_evidence,
    _has_gpu,
    _host_driver,
    _host_driver_tried,
    _HostDriver,
    _in_use,
    _remediation,
)
from bundle.evidence import clip
from bundle.kube import ClusterPolicy


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
        modules = ctx.facts.modules(name)
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
