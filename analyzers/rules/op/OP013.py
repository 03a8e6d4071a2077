"""OP013: DCGM profiling metrics cannot be collected on a node."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts import dcgm as dcgm_logs
from analyzers.facts.operands import OperandPod
from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.op._common import (
    capped,
    hostengine_address,
    logs_cmd,
    namespace,
    operand_evidence,
    quote,
)
from analyzers.rules.op._dcgm import _product
from bundle import specs
from bundle.evidence import Locator


class DcgmProfilingUnavailable(Rule):
    """DCGM profiling metrics cannot be collected on a node.

    The DCGM exporter's log says DCGM's profiling (DCP) module cannot serve the
    ``DCGM_FI_PROF_*`` metrics: ``Profiling is not supported for this group of GPUs``
    or ``This request is serviced by a module of DCGM that is not currently loaded``
    (the GPU has no profiling support: GeForce cards, GPUs older than Volta, some
    virtual GPUs), or ``The third-party Profiling module returned an unrecoverable
    error`` (the profiling counters are held by another DCGM host engine or a
    profiler: one client at a time per system). Exporters up to 2.1.1, and any
    exporter on the module error, exit on it and crash-loop; newer ones start without
    the profiling metrics. When the exporter also reports a generic failure (OP004),
    this is its cause.

    Why it matters:
    A crash-looping exporter takes every GPU metric of the node with it; a running one
    silently lacks the ``DCGM_FI_PROF_*`` series, so utilisation dashboards and
    alerts built on them stay empty while nothing looks broken.

    Remediation:
    Read the exporter log (``kubectl -n gpu-operator logs <exporter pod> --previous``)
    and the GPU model (``nvidia.com/gpu.product``). Without profiling support, use a
    metrics file without ``DCGM_FI_PROF_*`` fields (``dcgmExporter.config``). With the
    module error, keep one DCGM host engine per node (``pgrep -a nv-hostengine`` on the
    node; point the exporter at it with ``DCGM_REMOTE_HOSTENGINE_INFO``) and stop
    profilers running beside it.
    """

    id = "OP013"
    slug = "dcgm-profiling-unavailable"
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.PODS), LOGS, node(specs.NVIDIA_SMI, optional=True))
    needs = (Need.OPERATOR,)
    tags = ("operator", "monitoring", "dcgm")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name in ctx.facts.gpu_nodes:
            row = ctx.facts.operands.get(name, {})
            exporter = row.get("dcgm-exporter")
            if exporter is None:
                continue
            hits = dcgm_logs.profiling_failures(ctx.facts, exporter)
            if hits:
                yield self._finding(ctx, name, exporter, row.get("dcgm"), hits)

    def _finding(self, ctx: Context, name: str, exporter: OperandPod,
                 dcgm: OperandPod | None, hits: list[tuple[str, Locator]]) -> Finding:
        ns = namespace(ctx)
        pod = exporter.pod
        kinds = {kind for kind, _ in hits}
        lines = [line for _, line in hits]
        product = _product(ctx, name)
        gpu = f" ({product})" if product else ""
        remote = hostengine_address(pod)
        reasons = []
        if dcgm_logs.MODULE_ERROR in kinds:
            holder = ""
            if dcgm is not None and remote is None:
                holder = (f": the operator's nvidia-dcgm pod {dcgm.pod.name} runs a host engine "
                          "on the node while the exporter embeds its own DCGM")
            reasons.append("DCGM's profiling module failed, which happens when another DCGM "
                           f"host engine or a profiler holds the GPU's profiling counters{holder}")
        if dcgm_logs.NOT_SUPPORTED in kinds:
            reasons.append(f"the GPU{gpu} does not support DCGM profiling (GeForce cards, GPUs "
                           "before Volta and some virtual GPUs have none)")
        effect = (f"the exporter exits on it and is {exporter.state}, so the node's GPU metrics "
                  "are gone" if not exporter.healthy else
                  "the exporter runs without the DCGM_FI_PROF_* metrics")
        summary = (f"On {name}, the DCGM exporter {pod.name} cannot collect profiling metrics: "
                   f"{'; '.join(reasons)}. Last line: {quote(lines[-1].excerpt, 160)}; "
                   f"{effect}.")
        severity = self.severity if not exporter.healthy else Severity.LOW
        evidence: list[Evidence] = [operand_evidence(exporter), *capped(lines, 3)]
        if dcgm is not None and dcgm_logs.MODULE_ERROR in kinds:
            evidence.append(operand_evidence(dcgm))
        logs = list(ctx.facts.pod_logs.of(pod))
        remediation = sh.lines(
            [logs_cmd(ns, log, 40) for log in logs[:2]],
            sh.cmd("kubectl", "get", "node", sh.node(name), "-o",
                   sh.raw("jsonpath='{.metadata.labels.nvidia\\.com/gpu\\.product}{\"\\n\"}'")),
            sh.cmd("kubectl", "get", "pods", "-A", "-o", "wide", "--field-selector",
                   sh.join("spec.nodeName=", sh.node(name)), tail=" | grep -i dcgm"),
            "# on the node: pgrep -a nv-hostengine   # more than one host engine holds the "
            "profiling counters",
            "# without profiling support: a metrics file without DCGM_FI_PROF_* "
            "(dcgmExporter.config); with the module error: one DCGM per node "
            "(DCGM_REMOTE_HOSTENGINE_INFO) and no profiler beside it",
        )
        objects = [node_ref(name), ObjectRef(kind="Pod", namespace=pod.namespace, name=pod.name)]
        return self.finding(name, summary, severity=severity, nodes=[name], objects=objects,
                            evidence=evidence, remediation=remediation,
                            causes=[refs.link("OP004", name)])
