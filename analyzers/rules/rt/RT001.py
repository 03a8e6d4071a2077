"""RT001: A GPU node's containerd has no nvidia runtime loaded."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers.facts.evidence import event_evidence, field
from analyzers.facts.preconditions import Need
from analyzers.facts.runtimes import NVIDIA_HANDLER, Cause
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import CannotJudge, Context, Rule, cluster, node
from analyzers.rules.common import (
    EVENT_CAP,
    LOGS,
    OPERATOR_SETTINGS,
    RUNTIME_FILES,
    events_matching,
    names,
    node_ref,
)
from analyzers.rules.rt._base import _CAUSE_TEXT, _cause_link, _remediation, _uses_nvidia
from bundle import specs
from bundle.evidence import first_line
from bundle.kube import Event, Pod, RuntimeClass


class NoNvidiaRuntime(Rule):
    """A GPU node's containerd has no nvidia runtime loaded.

    The loaded configuration (``containerd config dump``) lacks ``runtimes.nvidia``
    although a RuntimeClass with handler ``nvidia`` exists or pods on the node use it.
    Pod sandboxes then fail with ``no runtime for "nvidia" is configured``. The
    finding says which explanation holds on the node: the toolkit disabled (CFG004),
    the drop-in not imported (RT003), clobbered by a later drop-in (RT002), or the
    toolkit pod not running.

    Why it matters:
    Every pod with ``runtimeClassName: nvidia`` fails before its first container
    starts — including the operator's own device plugin, so the node stops
    advertising GPUs and GPU workloads cannot be scheduled.

    Remediation:
    Judge the loaded configuration, not the files: on the node run
    ``containerd config dump | grep -c runtimes.nvidia`` (0 confirms). Fix the cause
    named in the finding, one node at a time.
    """

    id = "RT001"
    slug = "no-nvidia-runtime"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (
        node(specs.CONTAINERD_DUMP),
        cluster(specs.RUNTIMECLASSES, optional=True),
        cluster(specs.PODS, optional=True),
        cluster(specs.EVENTS, optional=True),
        *OPERATOR_SETTINGS,
        *RUNTIME_FILES,
        LOGS,
    )
    needs = (Need.CONTAINERD,)
    tags = ("runtime", "containerd")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        classes = ctx.facts.runtimeclasses
        handlers = {rc.metadata.name: rc.handler for rc in classes}
        nvidia_classes = [rc for rc in classes if rc.handler == NVIDIA_HANDLER]
        namespace = facts.operator_namespace or "gpu-operator"
        judged = [n for n in facts.gpu_nodes if facts.node_runtime(n).containerd]
        wrong = {n: why for n in judged if (why := facts.runtime(n).wrong_dump) is not None}
        if wrong and all(n in wrong or facts.runtime(n).loaded is None for n in judged):
            first = sorted(wrong)[0]
            raise CannotJudge(f"no GPU node's dump is of the file its containerd runs with; "
                              f"on {first}, {wrong[first]}")
        for node_name in judged:
            state = facts.runtime(node_name)
            if state.has_nvidia is not False:
                continue
            users = [p for p in facts.pods_by_node.get(node_name, [])
                     if _uses_nvidia(p, handlers)]
            if not nvidia_classes and not users and facts.cluster_policy is None:
                continue
            cause = facts.runtime_cause(node_name)
            yield self._finding(ctx, node_name, cause, users, nvidia_classes, namespace)

    def _finding(self, ctx: Context, node_name: str, cause: Cause, users: list[Pod],
                 nvidia_classes: list[RuntimeClass], namespace: str) -> Finding:
        facts = ctx.facts
        state = facts.runtime(node_name)
        loaded = ", ".join(sorted(state.loaded or ())) or "none"
        evidence: list[Evidence] = [Evidence(
            path=state.dump_path, line=None,
            excerpt=f"(no runtimes.{NVIDIA_HANDLER} table; loaded runtimes: {loaded})")]
        dump_text = ctx.facts.node(node_name).config_dump_text or ""
        runtime_line = first_line(state.dump_path, dump_text, "runtimes.")
        if runtime_line is not None:
            evidence.append(Evidence(path=runtime_line.path, line=runtime_line.line,
                                     excerpt=runtime_line.excerpt))
        for rc in nvidia_classes[:1]:
            evidence.append(field(rc, f"RuntimeClass {rc.metadata.name} handler: {rc.handler}",
                                  "handler"))
        sandbox_events: list[Event] = []
        for pod in users:
            sandbox_events.extend(events_matching(facts.pod_events(pod), self.id))
        for event in sandbox_events[:EVENT_CAP]:
            evidence.append(event_evidence(event))
        for pod in users[:EVENT_CAP]:
            evidence.append(field(pod, f"{pod.namespace}/{pod.name} runtimeClassName: "
                                       f"{pod.spec.runtime_class_name}", "spec",
                                  "runtimeClassName"))
        user_names = names((p.name for p in users), 3)
        pods_text = (f"{len(users)} pod(s) there need it ({user_names})"
                     if users else "the operator's RuntimeClass points at it")
        failing = (f"; {len(sandbox_events)} sandbox creation failure event(s) confirm it"
                   if sandbox_events else "")
        where = facts.node_runtime(node_name)
        on = node_name if where.layout.stock else \
            f"{node_name} ({where.describe()}: containerd runs with {where.config})"
        summary = (f"On {on}, containerd's loaded configuration has no "
                   f"'{NVIDIA_HANDLER}' runtime (loaded: {loaded}), yet {pods_text}{failing}. "
                   f"Cause: {_CAUSE_TEXT[cause]}.")
        objects = [node_ref(node_name)] + [
            ObjectRef(kind="Pod", namespace=p.namespace, name=p.name) for p in users[:10]]
        return self.finding(
            node_name, summary, nodes=[node_name], objects=objects, evidence=evidence,
            remediation=_remediation(node_name, cause, namespace,
                                     facts.node_runtime(node_name)),
            caused_by=_cause_link(facts, node_name, cause),
        )
