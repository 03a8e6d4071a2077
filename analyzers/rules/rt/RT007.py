"""RT007: A runtimeClassName or RuntimeClass handler points at nothing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from analyzers import refs
from analyzers.facts.evidence import event_evidence, field
from analyzers.facts.runtimes import NVIDIA_HANDLER
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import (
    LOGS,
    OPERATOR_SETTINGS,
    RUNTIME_FILES,
    events_matching,
    names,
    node_ref,
)
from analyzers.rules.rt._refs import (
    _RUNTIME_CLASSES,
    _cause_link,
    _loaded_handlers,
    _not_gpu_node,
    _runtime_word,
)
from bundle import specs
from bundle.kube import RuntimeClass


class BrokenRuntimeReference(Rule):
    """A runtimeClassName or RuntimeClass handler points at nothing.

    Pods name a ``runtimeClassName`` that no RuntimeClass defines (the API server
    refuses them, or they stay unscheduled), or a RuntimeClass's handler is defined
    by no GPU node's loaded containerd configuration.

    Why it matters:
    The object looks valid in Kubernetes (``kubectl get runtimeclass`` lists it)
    while the node cannot honour it: every pod using it fails at sandbox creation.

    Remediation:
    Compare ``kubectl get runtimeclass -o custom-columns=N:.metadata.name,H:.handler``
    with ``containerd config dump | grep 'runtimes\\.'`` on a GPU node; create the
    missing RuntimeClass or fix the node's containerd configuration.
    """

    id = "RT007"
    slug = "broken-runtime-reference"
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.RUNTIMECLASSES), cluster(specs.PODS),
              node(specs.CONTAINERD_DUMP, optional=True), *RUNTIME_FILES,
              *OPERATOR_SETTINGS, node(specs.NVIDIA_SMI, optional=True), LOGS,
              cluster(specs.EVENTS, optional=True))
    tags = ("runtime",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        classes = {rc.metadata.name: rc for rc in ctx.facts.runtimeclasses}
        yield from self._missing_classes(ctx, classes)
        yield from self._missing_handlers(ctx, classes)

    def _missing_classes(self, ctx: Context, classes: dict[str, RuntimeClass]) -> Iterable[Finding]:
        users = defaultdict(list)
        for pod in ctx.facts.pods:
            name = pod.spec.runtime_class_name
            if name and name not in classes and not pod.terminated:
                users[name].append(pod)
        for name, pods in sorted(users.items()):
            evidence = [field(p, f"{p.namespace}/{p.name} runtimeClassName: {name}", "spec",
                              "runtimeClassName") for p in pods[:3]]
            evidence += [event_evidence(e) for p in pods[:3]
                         for e in events_matching(ctx.facts.pod_events(p), self.id)][:3]
            yield self.finding(
                f"class/{name}",
                f"{len(pods)} pod(s) name runtimeClassName '{name}', which no RuntimeClass "
                f"defines ({names(f'{p.namespace}/{p.name}' for p in pods)}).",
                objects=[ObjectRef(kind="Pod", namespace=p.namespace, name=p.name)
                         for p in pods[:10]],
                evidence=evidence, remediation=_RUNTIME_CLASSES)

    def _missing_handlers(self, ctx: Context,
                          classes: dict[str, RuntimeClass]) -> Iterable[Finding]:
        loaded = {n: found for n in ctx.facts.gpu_nodes
                  if (found := _loaded_handlers(ctx, n)) is not None}
        judged = list(loaded)
        if not judged:
            return
        for name, rc in sorted(classes.items()):
            handler = rc.handler
            if handler == NVIDIA_HANDLER:
                continue  # RT001 (containerd) and RT010 (CRI-O) judge it node by node
            lacking = [n for n in judged if handler not in loaded[n][0]]
            if len(lacking) < len(judged):
                continue
            links = sorted({link for n in lacking for link in _cause_link(ctx, n)}
                           | {refs.link("OP003", n) for n in lacking if _not_gpu_node(ctx, n)})
            yield self.finding(
                f"handler/{handler}",
                f"RuntimeClass {name} uses handler '{handler}', but no GPU node's loaded "
                f"{_runtime_word(ctx, lacking)} configuration defines it ({names(lacking)}); "
                "pods using it cannot start anywhere.",
                nodes=lacking, objects=[ObjectRef(kind="RuntimeClass", name=name)]
                + [node_ref(n) for n in lacking[:10]],
                evidence=[field(rc, f"RuntimeClass {name} handler: {handler}", "handler")]
                + [Evidence(path=loaded[n][1], excerpt=f"(no runtimes.{handler} table)")
                   for n in lacking[:2]],
                caused_by=links, remediation=_RUNTIME_CLASSES)
