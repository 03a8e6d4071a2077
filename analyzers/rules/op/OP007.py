"""OP007: Driver upgrade stuck on a node."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.driverkernel import DRIVER_CONTAINER
from analyzers.facts.evidence import field
from analyzers.facts.preconditions import Need
from analyzers.refs import Link
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.op._common import (
    capped,
    events_evidence,
    logs_evidence,
    namespace,
    on_node,
    operand_evidence,
)
from analyzers.rules.op._lifecycle import (
    DONE,
    FAILED,
    INITIAL_UNSCHEDULABLE,
    MIDDLE,
    STUCK_AFTER_S,
    UPGRADE_STATE,
    _age,
)
from bundle import specs
from bundle.kube import Node


class DriverUpgradeStuck(Rule):
    """Driver upgrade stuck on a node.

    The operator's upgrade state machine labels each node
    ``nvidia.com/gpu-driver-upgrade-state``. The rule reports nodes at
    ``upgrade-failed``, nodes in a middle state (``drain-required``,
    ``validation-required`` ...; "stuck" once the step's start annotation is more than
    an hour old at collection), and nodes left cordoned (``spec.unschedulable``) after
    the upgrade finished or failed, unless they were cordoned before it. Driver
    manager lines such as ``driver is in use`` are quoted.

    Why it matters:
    A failed or stalled upgrade leaves the node without a working driver, often
    cordoned, so it takes no GPU work; the operator does not retry a failed node by
    itself.

    Remediation:
    ``kubectl get nodes -L nvidia.com/gpu-driver-upgrade-state``; read the driver pod's
    ``k8s-driver-manager`` and ``nvidia-driver-ctr`` logs; after fixing the cause,
    retry on one node with
    ``kubectl label node <node> nvidia.com/gpu-driver-upgrade-state=upgrade-required
    --overwrite`` and uncordon nodes a finished upgrade left cordoned.
    """

    id = "OP007"
    slug = "driver-upgrade-stuck"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.NODES), cluster(specs.PODS, optional=True),
              cluster(specs.EVENTS, optional=True), LOGS,
              cluster(specs.CLUSTERPOLICIES, optional=True), node(specs.UNAME, optional=True))
    needs = (Need.OPERATOR,)
    tags = ("operator", "driver", "upgrade")

    def check(self, ctx: Context) -> Iterable[Finding]:
        created = ctx.facts.manifest.created_at
        for obj in ctx.facts.node_objects:
            state = obj.labels.get(UPGRADE_STATE)
            if state is None:
                continue
            left_cordoned = obj.spec.unschedulable and state in (DONE, FAILED) and \
                obj.metadata.annotations.get(INITIAL_UNSCHEDULABLE) != "true"
            if state == FAILED or state in MIDDLE or left_cordoned:
                yield self._finding(ctx, obj, state, left_cordoned, _age(obj, created))

    def _finding(self, ctx: Context, obj: Node, state: str, left_cordoned: bool,
                 age: float | None) -> Finding:
        name = obj.name
        ns = namespace(ctx)
        driver = ctx.facts.operands.get(name, {}).get("driver")
        evidence: list[Evidence] = [field(obj, f"{UPGRADE_STATE}={state}", "metadata",
                                          "labels", UPGRADE_STATE)]
        severity = self.severity
        if state == FAILED:
            summary = f"The driver upgrade on {name} failed ({UPGRADE_STATE}=upgrade-failed)"
        elif state in MIDDLE:
            if age is not None and age > STUCK_AFTER_S:
                summary = (f"The driver upgrade on {name} is stuck at {state} for "
                           f"{age / 3600:.1f} h")
            else:
                took = f" (step started {age / 60:.0f} min before collection)" \
                    if age is not None else ""
                summary = f"The driver upgrade on {name} was at {state} when collected{took}"
                severity = Severity.MEDIUM
        else:
            summary = f"The driver upgrade on {name} is {state}"
        if obj.spec.unschedulable:
            evidence.append(field(obj, "spec.unschedulable: true", "spec", "unschedulable"))
            if left_cordoned:
                summary += "; the node is still cordoned and was not cordoned before it"
            else:
                summary += "; the node is cordoned"
        causes: list[Link] = []
        if driver is not None:
            summary += f". Driver pod {driver.pod.name}: {driver.state}"
            evidence.append(operand_evidence(driver))
            logs = list(ctx.facts.pod_logs.of(driver.pod))
            evidence += logs_evidence(logs, "OP007", cap=3, tail=False)
            evidence += logs_evidence([log for log in logs if log.container == DRIVER_CONTAINER
                                       and not log.previous], None, cap=2)
            kernel = ctx.facts.driver_kernel.get(name)
            if kernel is not None and kernel.broken:
                summary += " — the new driver cannot install on the node (see OP010)"
                causes.append(refs.link("OP010", name))
        events = [e for key in (("Node", "", name), ("Node", "default", name))
                  for e in ctx.facts.events_by_object.get(key, [])
                  if e.reason == "GPUDriverUpgrade"]
        evidence += events_evidence(events[-2:], 2)
        summary += "."
        lines = [f"kubectl get nodes -L {UPGRADE_STATE}", on_node(ns, name)]
        if driver is not None:
            lines += [sh.cmd("kubectl", "-n", sh.namespace(ns), "logs", sh.pod(driver.pod.name),
                             "-c", "k8s-driver-manager", "--tail=50"),
                      sh.cmd("kubectl", "-n", sh.namespace(ns), "logs", sh.pod(driver.pod.name),
                             "-c", DRIVER_CONTAINER, "--tail=100")]
        lines += ["# on the node: lsof /dev/nvidia* | awk 'NR>1{print $1,$2}' | sort -u   "
                  "# what holds the GPU"]
        if state == FAILED:
            lines += ["# after fixing the cause, retry this node only:",
                      sh.cmd("kubectl", "label", "node", sh.node(name),
                             f"{UPGRADE_STATE}=upgrade-required", "--overwrite")]
        if left_cordoned:
            lines.append(sh.cmd("kubectl", "uncordon", sh.node(name),
                                tail="   # only once its GPU pods validate again"))
        objects = [node_ref(name)]
        if driver is not None:
            objects.append(ObjectRef(kind="Pod", namespace=driver.pod.namespace,
                                     name=driver.pod.name))
        return self.finding(name, summary, severity=severity, nodes=[name], objects=objects,
                            evidence=capped(evidence, 8), remediation=sh.lines(lines),
                            caused_by=causes)
