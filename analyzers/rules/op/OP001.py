"""OP001: Operands of a GPU node are stuck: the first failing stage."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.facts import operands as operand_facts
from analyzers.facts.podlogs import ContainerLog
from analyzers.facts.preconditions import Need
from analyzers.facts.stages import NodeStages, Stage
from analyzers.refs import Link
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, RUNTIME_FILES, names, node_ref
from analyzers.rules.op._causes import stage_causes, unexplained
from analyzers.rules.op._common import (
    POD_CAP,
    blocked_evidence,
    capped,
    events_evidence,
    log_lines,
    logs_cmd,
    namespace,
    on_node,
    warnings,
)
from analyzers.rules.op._stack import _STAGE_HINT, _STAGE_LOOK, _describe, _stage_logs
from bundle import specs
from bundle.evidence import Locator


class OperandsStuck(Rule):
    """Operands of a GPU node are stuck: the first failing stage.

    Builds the operand matrix (node × component → kubectl-style state: driver,
    toolkit, validator, CUDA validator, device plugin, GFD, DCGM, DCGM exporter, MIG
    manager) and, for each GPU node with a failing operand (``Init:*``,
    ``CrashLoopBackOff``, ``ImagePullBackOff``, ``RunContainerError``,
    ``CreateContainerConfigError``, Pending ...), names the first failing stage in
    the validator's order — driver → toolkit → cuda → plugin, then the other operands
    — and quotes that stage's log lines (init containers ``driver-validation``,
    ``toolkit-validation``, ``cuda-validation``, ``plugin-validation`` included) and
    the pods' events. Without events (expired, or a must-gather bundle) the stage comes
    from the pods' own state: a pod that never got a sandbox (no container ever
    started) is never blamed on the driver stage — it is placed at the toolkit stage
    when it asks for the ``nvidia`` RuntimeClass, else at a pod-sandbox stage before
    every GPU stage. Each finding links the findings that explain its stage — OP017
    (an operand the stack waits for has no pod: its DaemonSet's pods are refused at
    creation), RT001 (no ``nvidia`` runtime handler), RT015 (Docker's shim refuses the
    RuntimeClass handler), OP010, DRV003, DRV004 (driver), OP005 (``system not yet
    initialized``), OP008 (device plugin), OP004, OP013 (DCGM exporter). Where none
    does, it quotes the first error of the stage's logs (file, line, failing step) or
    names the read-only command to ask for next and why (``facts.next_step``).

    Why it matters:
    The operator enforces the order with init containers, so one broken layer leaves
    every layer above it in ``Init:0/N`` and the node advertises no GPUs. The pods
    that are not Running are mostly waiting; only the first failing stage needs
    fixing.

    Remediation:
    Look at the node's operand pods (``kubectl -n gpu-operator get pods -o wide``),
    then read the logs of the first failing stage's containers
    (``kubectl -n gpu-operator logs <pod> -c <init container>``). Fix that stage on
    one node; the operands above it recover by themselves.
    """

    id = "OP001"
    slug = "operands-stuck"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.PODS), cluster(specs.EVENTS, optional=True), LOGS,
              node(specs.NVIDIA_SMI, optional=True), node(specs.UNAME, optional=True),
              cluster(specs.CLUSTERPOLICIES, optional=True), *RUNTIME_FILES,
              node(specs.FABRIC_MANAGER_JOURNAL, optional=True),
              cluster(specs.DAEMONSETS, optional=True),
              # the GPU stack's workloads, whose pods' own record may be the cause (CMP)
              cluster(specs.DEPLOYMENTS, optional=True),
              node(specs.DMESG, optional=True))  # an OOM kill's record (facts.next_step)
    needs = (Need.OPERATOR,)
    tags = ("operator", "operands")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name, stages in sorted(ctx.facts.operand_stages.items()):
            if stages.blocked:
                yield self._finding(ctx, name, stages)

    def _finding(self, ctx: Context, node_name: str, stages: NodeStages) -> Finding:
        first = stages.first
        assert first is not None
        ns = namespace(ctx)
        at_first = stages.at_first
        logs = _stage_logs(ctx, stages)
        causes, cause_text = self._causes(ctx, node_name, stages)
        matrix = operand_facts.summary(stages.row)
        described = [_describe(b) for b in at_first if not b.sandboxless]
        sandboxed = [b.pod.name for b in at_first if b.sandbox]
        never = [b.pod.name for b in at_first if b.no_sandbox and not b.sandbox]
        if never:
            described.insert(0, f"{len(never)} pod(s) never got a pod sandbox: none of their "
                                f"containers ever started ({names(never)})")
        if sandboxed:
            described.insert(0, f"{len(sandboxed)} pod(s) cannot create their sandbox "
                                f"({names(sandboxed)})")
        summary = (f"On {node_name}, the operand stack stops at the {first.label} stage: "
                   f"{'; '.join(described)}. That means {_STAGE_HINT[first]}")
        if first is not Stage.OPERANDS and len(stages.blocked) > len(at_first):
            summary += ("; the other failing operands wait for it "
                        f"({names(b.pod.name for b in stages.blocked if b not in at_first)})")
        summary += f".{cause_text} Operands: {matrix}."
        evidence: list[Evidence] = capped([blocked_evidence(b) for b in stages.blocked],
                                          POD_CAP)
        lines: list[Locator] = []
        for log in logs:
            lines.extend(log_lines(log))
        evidence += capped(lines, 6)
        events = [e for b in at_first for e in b.sandbox]
        events += [e for b in at_first for e in warnings(ctx.facts.pod_events(b.pod))]
        evidence += events_evidence(events)
        objects = [node_ref(node_name)] + [
            ObjectRef(kind="Pod", namespace=b.pod.namespace, name=b.pod.name)
            for b in stages.blocked[:10]]
        severity = Severity.MEDIUM if first is Stage.OPERANDS else self.severity
        return self.finding(
            node_name, summary, severity=severity, nodes=[node_name], objects=objects,
            evidence=evidence, remediation=self._remediation(node_name, ns, stages, logs),
            caused_by=causes,
        )

    @staticmethod
    def _causes(ctx: Context, node_name: str, stages: NodeStages) -> tuple[list[Link], str]:
        """The findings that explain the stage (see _causes), and the summary's sentence:
        what explains it, or plainly that nothing does and what to read next."""
        first = stages.first
        assert first is not None
        found = stage_causes(ctx, node_name, stages)
        if not found:
            return [], unexplained(ctx, stages)
        if all(c.generic for c in found):
            # only the pods' own Kubernetes record (CMP): the first error or the next
            # question still decide the sentence, the CMP findings are linked beside it
            return [c.finding for c in found], unexplained(ctx, stages) + "".join(
                f" {c.text}" for c in found)
        return [c.finding for c in found], "".join(f" {c.text}" for c in found)

    @staticmethod
    def _remediation(node_name: str, ns: str, stages: NodeStages,
                     logs: list[ContainerLog]) -> str:
        first = stages.first
        assert first is not None
        lines = ["# look first, one node at a time", on_node(ns, node_name)]
        lead = stages.at_first[0].pod
        lines.append(sh.cmd("kubectl", "-n", sh.namespace(ns), "describe", "pod",
                            sh.pod(lead.name), tail=" | tail -20"))
        shown: set[tuple[str, str, bool]] = set()
        for log in logs:
            key = (log.pod.name, log.container, log.previous)
            if key not in shown and len(shown) < 4:
                shown.add(key)
                lines.append(logs_cmd(ns, log))
        if not shown:
            for blocked in stages.at_first[:2]:
                if blocked.container and not blocked.sandboxless:
                    lines.append(sh.cmd("kubectl", "-n", sh.namespace(ns), "logs",
                                        sh.pod(blocked.pod.name), "-c",
                                        sh.container(blocked.container), "--tail=50"))
        lines += _STAGE_LOOK[first]
        if first is Stage.PLUGIN:
            lines.append(sh.cmd("kubectl", "get", "node", sh.node(node_name), "-o",
                                sh.raw("jsonpath='{.status.capacity}{\"\\n\"}'")))
        lines.append(sh.note("# Fix the {stage} stage on {node} first; the operands above it "
                             "leave Init by themselves once it passes.",
                             stage=sh.raw(first.label), node=sh.node(node_name)))
        return sh.lines(lines)
