"""OP005: NVSwitch node without a working Fabric Manager."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.fabric import FM_JOURNAL, FabricState
from analyzers.results.models import Confidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.op._common import (
    capped,
    namespace,
    quote,
)
from bundle import specs


class FabricManagerNotWorking(Rule):
    """NVSwitch node without a working Fabric Manager.

    On NVSwitch systems (HGX/DGX) the GPUs must join the NVLink fabric before CUDA can
    use them, and Fabric Manager sets that fabric up. Three sources show it is not
    done: the CUDA validator (or any CUDA workload) failing with ``system not yet
    initialized`` (CUDA error 802), nvidia-smi reporting a fabric state other than
    ``Completed`` / ``Success`` (``gpu/fabric/state``, ``gpu/fabric/status``), and
    Fabric Manager's own errors in its journal or the driver container's log (version
    mismatch, service failed, bad config, no NVSwitch found). A GPU node without node
    files leaves only the first source: the rule is then ``partial``, never ``passed``.

    Why it matters:
    ``nvidia-smi`` works, so the node looks healthy, but no CUDA program can run: the
    validator never passes ``cuda-validation`` and every operand above it stays in
    Init, so the node advertises no GPU.

    Remediation:
    On the node: ``nvidia-smi -q | grep -i -A2 Fabric`` and
    ``systemctl status nvidia-fabricmanager`` (host driver) or
    ``kubectl -n gpu-operator logs <driver pod> -c nvidia-driver-ctr | grep -i fabric``
    (driver container). Install Fabric Manager of exactly the driver's version and
    start it, one node at a time.
    """

    id = "OP005"
    slug = "fabric-manager-not-working"
    severity = Severity.CRITICAL
    confidence = Confidence.LIKELY
    inputs = (cluster(specs.PODS), LOGS, node(specs.NVIDIA_SMI, optional=True),
              node(FM_JOURNAL, optional=True))
    tags = ("operator", "nvswitch", "fabric-manager")

    def check(self, ctx: Context) -> Iterable[Finding]:
        blind = [name for name in ctx.facts.gpu_nodes if name not in ctx.facts.node_dirs]
        if blind:
            # the pod logs alone cannot show an idle fabric: no nvidia-smi, no FM journal
            self.unjudged(f"{len(blind)} GPU node(s) have no node files ({', '.join(blind[:3])}"
                          f"{', …' if len(blind) > 3 else ''}): nvidia-smi's fabric state and "
                          "the Fabric Manager journal were not collected, only pod logs read")
        for name, fabric in sorted(ctx.facts.nvlink_fabric.items()):
            if fabric.broken:
                yield self._finding(ctx, name, fabric)

    def _finding(self, ctx: Context, name: str, fabric: FabricState) -> Finding:
        ns = namespace(ctx)
        artifacts = ctx.facts.node(name)
        driver = ctx.facts.operands.get(name, {}).get("driver")
        facts: list[str] = []
        if fabric.not_initialized:
            facts.append("CUDA fails with 'system not yet initialized' "
                         f"({fabric.not_initialized[0].path.split('/')[-1]})")
        unregistered = fabric.unregistered
        if unregistered:
            states = sorted({g.state + (f"/{g.status}" if g.status else "")
                             for g in unregistered})
            facts.append(f"nvidia-smi shows {len(unregistered)} of {len(fabric.fabric_gpus)} "
                         f"GPU(s) not registered with the fabric (state {', '.join(states)})")
        if fabric.fm_errors:
            facts.append(f"Fabric Manager reports: {quote(fabric.fm_errors[0].excerpt)}")
        if fabric.no_switch:
            facts.append("Fabric Manager found no NVSwitch to manage")
        if driver is not None and not fabric.fm_started:
            facts.append(f"the driver container ({driver.pod.name}) never logged starting "
                         "Fabric Manager")
        elif driver is None and not artifacts.has(FM_JOURNAL) and name in ctx.facts.node_dirs:
            facts.append("the host has no nvidia-fabricmanager journal (with a host driver "
                         "the admin must install and enable Fabric Manager)")
        unregistered_cuda = bool(fabric.not_initialized or unregistered)
        summary = (f"On {name} (NVSwitch system), the NVLink fabric is not set up: "
                   f"{'; '.join(facts)}.")
        if unregistered_cuda:
            summary += " No CUDA program can run on the node until Fabric Manager runs."
        evidence = capped(fabric.not_initialized, 2)
        evidence += capped([g.where for g in unregistered], 2)
        evidence += capped(fabric.fm_errors, 3) + capped(fabric.no_switch, 1)
        lines = ["# on the node, look first:",
                 "nvidia-smi -q | grep -i -A2 Fabric      # State Completed / Status Success "
                 "when healthy",
                 "ls /proc/driver/nvidia-nvswitch/devices/ 2>/dev/null | wc -l"]
        if driver is not None:
            lines.append(sh.cmd("kubectl", "-n", sh.namespace(ns), "logs",
                                sh.pod(driver.pod.name), "-c", "nvidia-driver-ctr",
                                tail=" | grep -i fabric"))
        else:
            lines += ["systemctl status nvidia-fabricmanager --no-pager",
                      "journalctl -u nvidia-fabricmanager --since -1d | tail -30",
                      "# install nvidia-fabricmanager of exactly the driver version "
                      "(nvidia-smi --query-gpu=driver_version --format=csv,noheader), hold it, "
                      "then: systemctl enable --now nvidia-fabricmanager"]
        lines += [sh.cmd("kubectl", "-n", sh.namespace(ns), "logs", "-l",
                         "app=nvidia-cuda-validator", "-c", "cuda-validation", "--tail=20"),
                  sh.note("# then let the validator retry: kubectl -n {ns} delete pod -l "
                          "app=nvidia-operator-validator --field-selector spec.nodeName={node}",
                          ns=sh.namespace(ns), node=sh.node(name))]
        return self.finding(
            name, summary, severity=self.severity if unregistered_cuda else Severity.HIGH,
            nodes=[name], objects=[node_ref(name)], evidence=evidence,
            remediation=sh.lines(lines), causes=[refs.link("OP001", name)],
        )
