"""DRV005: Automatic kernel upgrades or differing kernels on driver-container nodes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from analyzers import refs
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import names, node_ref
from analyzers.rules.drv._host import (
    _kernel,
    _os_key,
    _remediation,
    driver_container_nodes,
    read_apt,
)
from bundle import specs


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
    subject = refs.NODE_OR_KERNELS
    severity = Severity.MEDIUM
    confidence = Confidence.LIKELY
    inputs = (
        node(specs.UNAME),
        node(specs.UNATTENDED_UPGRADES, optional=True),
        node(specs.OS_RELEASE, optional=True),
        cluster(specs.CLUSTERPOLICIES, optional=True),
        cluster(specs.NODES, optional=True),
        cluster(specs.PODS, optional=True),
    )
    tags = ("driver", "kernel", "upgrade")

    def check(self, ctx: Context) -> Iterable[Finding]:
        drivers = driver_container_nodes(ctx)
        upgrading: set[str] = set()
        uncollected = []
        for name in drivers:
            if not ctx.facts.node(name).has(specs.UNATTENDED_UPGRADES):
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
        path = specs.node_file(name, specs.UNATTENDED_UPGRADES)
        text = ctx.facts.node(name).text(specs.UNATTENDED_UPGRADES)
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
                caused_by=[refs.link("DRV005", n) for n in members if n in upgrading],
            )
