"""OP004: DCGM exporter cannot reach DCGM."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.facts import dcgm as dcgm_logs
from analyzers.facts.operands import OperandPod
from analyzers.facts.podlogs import ContainerLog
from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.op._common import (
    HOSTENGINE_ENV,
    capped,
    hostengine_address,
    logs_cmd,
    namespace,
    on_node,
    operand_evidence,
    quote,
)
from bundle import specs
from bundle.evidence import Locator


class DcgmExporterNoDcgm(Rule):
    """DCGM exporter cannot reach DCGM.

    The DCGM exporter on a GPU node crash-loops or fails to collect because it cannot
    connect to the DCGM host engine (``Error connecting to nv-hostengine``,
    ``Failed to connect to remote hostengine``, ``Host engine connection invalid``) or
    cannot start its embedded DCGM. Matched through the signature knowledge base, so
    every exporter version's wording counts. The finding shows the configured host
    engine address and the state of the ``nvidia-dcgm`` pod on the same node. When the
    same exporter cannot collect profiling metrics (OP013), that is its cause.

    Why it matters:
    GPU metrics (utilisation, memory, Xid counters) disappear from Prometheus on that
    node; alerts and capacity dashboards go blind while GPU workloads keep running.

    Remediation:
    ``kubectl -n gpu-operator get pods -o wide -l app=nvidia-dcgm`` (is the host engine
    running on that node?), ``kubectl -n gpu-operator logs <exporter pod> --previous``,
    check ``DCGM_REMOTE_HOSTENGINE_INFO`` and NetworkPolicies between the two pods.
    """

    id = "OP004"
    slug = "dcgm-exporter-no-dcgm"
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.PODS), LOGS)
    needs = (Need.OPERATOR,)
    tags = ("operator", "monitoring")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name in ctx.facts.gpu_nodes:
            row = ctx.facts.operands.get(name, {})
            exporter = row.get("dcgm-exporter")
            if exporter is None:
                continue
            logs = dcgm_logs.exporter_logs(ctx.facts, exporter)
            hits = dcgm_logs.no_dcgm(ctx.facts, exporter)
            if hits:
                yield self._finding(ctx, name, exporter, row.get("dcgm"), hits, logs)

    def _finding(self, ctx: Context, name: str, exporter: OperandPod, dcgm: OperandPod | None,
                 hits: list[Locator], logs: tuple[ContainerLog, ...]) -> Finding:
        ns = namespace(ctx)
        pod = exporter.pod
        address = hostengine_address(pod)
        target = f" at {address}" if address else ""
        restarts = dcgm_logs.restarts(exporter)
        summary = (f"On {name}, the DCGM exporter {pod.name} ({exporter.state}, {restarts} "
                   f"restart(s)) cannot reach DCGM{target}: {quote(hits[-1].excerpt)}.")
        if dcgm is None:
            summary += (" No nvidia-dcgm pod runs on the node: if the exporter is meant to use "
                        "a separate DCGM, it is not deployed there (dcgm.enabled).")
        elif not dcgm.healthy:
            summary += f" The nvidia-dcgm pod there ({dcgm.pod.name}) is {dcgm.state}."
        else:
            summary += (f" The nvidia-dcgm pod there ({dcgm.pod.name}) is Running: check the "
                        "address and NetworkPolicies between the two pods.")
        evidence = [operand_evidence(exporter), *capped(hits, 3)]
        if dcgm is not None:
            evidence.append(operand_evidence(dcgm))
        remediation = sh.lines(
            on_node(ns, name),
            sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "pods", "-o", "wide",
                   "-l", "app=nvidia-dcgm"),
            [logs_cmd(ns, log, 40) for log in logs[:2]],
            sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "pod", sh.pod(pod.name),
                   "-o", sh.raw("jsonpath='{.spec.containers[0].env}'"), sh.raw("|"),
                   "tr", sh.raw("',' '\\n'"), sh.raw("|"), "grep", "-i", HOSTENGINE_ENV),
            sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "networkpolicy"),
        )
        objects = [node_ref(name), ObjectRef(kind="Pod", namespace=pod.namespace, name=pod.name)]
        return self.finding(name, summary, nodes=[name], objects=objects, evidence=evidence,
                            remediation=remediation)
