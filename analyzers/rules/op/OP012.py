"""OP012: The host driver and the operator's driver setting disagree."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers.facts import driver
from analyzers.facts.driver import VERSION_FILE, HostConflict
from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.op._hostdriver import (
    _causes,
    _dropped_by_helm,
    _enabled_evidence,
    _remediation,
)
from bundle import specs


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
        cluster(specs.CLUSTERPOLICIES),
        node(specs.MODULES, optional=True),
        node(VERSION_FILE, optional=True),
        node(specs.LSPCI, optional=True),
        node(specs.DMESG, optional=True),
        node(specs.JOURNALS, optional=True),
        cluster(specs.NODES, optional=True),
        cluster(specs.PODS, optional=True),
        cluster(specs.HELM_RELEASES, optional=True),
        LOGS,
        cluster(specs.EVENTS, optional=True),
        node(specs.NVIDIA_SMI, optional=True),
    )
    needs = (Need.OPERATOR,)
    tags = ("operator", "driver")

    def check(self, ctx: Context) -> Iterable[Finding]:
        names = sorted(set(ctx.facts.node_names) | ctx.facts.gpu_node_set)
        for name in names:
            conflict = driver.host_conflict(ctx.facts, name)
            if conflict is not None:
                yield self._fight(ctx, conflict) if conflict.fight else self._nobody(ctx, conflict)

    def _fight(self, ctx: Context, conflict: HostConflict) -> Finding:
        name, host = conflict.node, conflict.host
        why = []
        if conflict.in_use:
            why.append("its container cannot unload the loaded module ('driver is in use')")
        if conflict.pod_state is not None:
            why.append(f"the host runs {host.version} while the policy asks for "
                       f"{conflict.wanted}, and the driver pod is {conflict.pod_state}")
        loaded = f" {host.version}" if host.version else ""
        summary = (f"On {name}, an NVIDIA driver{loaded} is already loaded outside the "
                   "driver container while the ClusterPolicy enables the container: "
                   + "; ".join(why) + ". Host and operator fight over the kernel module.")
        evidence = [*host.evidence, *conflict.in_use, _enabled_evidence(conflict.policy)]
        return self.finding(name, summary, nodes=[name], objects=[node_ref(name)],
                            evidence=evidence, causes=_causes(ctx, name),
                            caused_by=_dropped_by_helm(ctx),
                            remediation=_remediation(name, fight=True))

    def _nobody(self, ctx: Context, conflict: HostConflict) -> Finding:
        name = conflict.node
        evidence = [_enabled_evidence(conflict.policy)]
        modules = ctx.facts.modules(name)
        if modules is not None:
            evidence.append(Evidence(path=modules.path,
                                     excerpt="(no 'nvidia' module in /proc/modules)"))
        if conflict.version_error is not None:
            evidence.append(conflict.version_error)
        summary = (f"On {name}, the ClusterPolicy disables the driver container "
                   "(driver.enabled=false) but the host has no NVIDIA driver loaded either: "
                   "nothing provides a driver, so the validator and every operand wait.")
        return self.finding(name, summary, severity=Severity.CRITICAL, nodes=[name],
                            objects=[node_ref(name)], evidence=evidence,
                            causes=_causes(ctx, name),
                            remediation=_remediation(name, fight=False))
