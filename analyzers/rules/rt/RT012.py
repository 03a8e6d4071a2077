"""RT012: Pods without a RuntimeClass get no driver: nvidia is not containerd's default runtime."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts import Facts
from analyzers.facts.evidence import event_evidence
from analyzers.facts.handlers import NVIDIA_PREFIX, CriRuntimes
from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, RUNTIME_FILES, names, node_ref
from analyzers.rules.rt._handler import (
    _DP_NVML,
    _NO_LIBRARY,
    _SMI_EXEC,
    _SMI_LOG,
    _dump_line,
    _events_with,
    _is_device_plugin,
    _log_evidence,
    _logs_with,
    _look,
    _sc001_links,
    _Starved,
    _wants_gpu,
)
from bundle import specs
from bundle.kube import Pod


class NvidiaNotDefault(Rule):
    """Pods without a RuntimeClass get no driver: nvidia is not containerd's default runtime.

    A standalone device plugin (Helm chart ``nvidia-device-plugin`` without the GPU
    Operator) and GPU workloads that name no ``runtimeClassName`` run with containerd's
    default runtime. Unless that default is ``nvidia`` (or the devices come through
    CDI), nothing injects the driver: the plugin logs ``could not load NVML library``
    and registers no GPUs, and workloads print ``nvidia-smi: not found`` or fail with
    ``"nvidia-smi": executable file not found``. Fires on a node whose loaded
    configuration's ``default_runtime_name`` is not an NVIDIA runtime when such a pod
    there shows one of those lines.

    Why it matters:
    The node has a healthy driver and even an ``nvidia`` runtime, yet the device plugin
    advertises nothing (pending GPU pods) or GPU pods start without the driver.

    Remediation:
    Look at ``default_runtime_name`` in the loaded configuration first. Then either give
    the pods ``runtimeClassName: nvidia`` (the device plugin chart's ``runtimeClassName``
    value), or make ``nvidia`` the default: ``CONTAINERD_SET_AS_DEFAULT=true`` in the
    operator's toolkit.env, ``default_runtime_name = "nvidia"`` in the file containerd
    runs with (its template on k3s/RKE2/MicroK8s; ``--default-runtime nvidia`` on
    k3s/RKE2), one node at a time.
    """

    id = "RT012"
    slug = "nvidia-not-default"
    severity = Severity.HIGH
    confidence = Confidence.LIKELY
    inputs = (node(specs.CONTAINERD_DUMP), cluster(specs.PODS),
              cluster(specs.EVENTS, optional=True), LOGS,
              cluster(specs.RUNTIMECLASSES, optional=True), *RUNTIME_FILES)
    needs = (Need.CONTAINERD,)
    tags = ("runtime", "containerd")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        handlers = {rc.metadata.name: rc.handler for rc in ctx.facts.runtimeclasses}
        for node_name in facts.gpu_nodes:
            cri = facts.node(node_name).cri_runtimes
            if cri is None or cri.nvidia_default:
                continue
            pods = [p for p in facts.pods_by_node.get(node_name, [])
                    if not p.terminated and not handlers.get(
                        p.spec.runtime_class_name or "", p.spec.runtime_class_name or ""
                    ).startswith(NVIDIA_PREFIX)]
            starved = self._starved(facts, pods)
            if starved.plugins or starved.workloads:
                yield self._finding(ctx, node_name, cri, starved)

    @staticmethod
    def _starved(facts: Facts, pods: list[Pod]) -> _Starved:
        found = _Starved()
        for pod in pods:
            if _is_device_plugin(pod):
                hits = [(log, hit) for log, hit in _logs_with(facts, [pod], _DP_NVML)
                        if any(w in hit.text.lower() for w in _NO_LIBRARY)]
                if hits:
                    found.plugins.append(pod)
                    found.evidence += [_log_evidence(log, hit) for log, hit in hits[:1]]
            elif _wants_gpu(pod):
                hits = _logs_with(facts, [pod], (_SMI_LOG,))
                hits = [(log, hit) for log, hit in hits if "not found" in hit.text.lower()]
                events = _events_with(facts, [pod], _SMI_EXEC)
                if hits or events:
                    found.workloads.append(pod)
                    found.evidence += [_log_evidence(log, hit) for log, hit in hits[:1]]
                    found.evidence += [event_evidence(e) for e in events[:1]]
        return found

    def _finding(self, ctx: Context, node_name: str, cri: CriRuntimes,
                 starved: _Starved) -> Finding:
        facts = ctx.facts
        where = facts.node_runtime(node_name)
        dump = ctx.facts.node(node_name).path(specs.CONTAINERD_DUMP)
        line = _dump_line(ctx, node_name, "default_runtime_name")
        evidence = [line if line is not None else Evidence(
            path=dump, excerpt=f"(no default_runtime_name: containerd's default {cri.default})")]
        has_nvidia = "nvidia" in cri.runtimes
        parts = []
        if starved.plugins:
            parts.append(f"the device plugin pod(s) {names(p.name for p in starved.plugins)} "
                         "cannot load NVML, so the node advertises no GPUs")
        if starved.workloads:
            parts.append(f"GPU pod(s) {names(p.name for p in starved.workloads)} start "
                         "without the driver (nvidia-smi not found)")
        runtime = ("It has an nvidia runtime, but these pods name no runtimeClassName"
                   if has_nvidia else "It has no nvidia runtime at all")
        cdi = "CDI injection is on" if cri.enable_cdi else "CDI injection is off"
        on = node_name if where.layout.stock else f"{node_name} ({where.describe()})"
        summary = (f"On {on}, containerd's default runtime is {cri.default}, not nvidia: "
                   f"{'; '.join(parts)}. {runtime}; {cdi}.")
        layout = where.layout
        fixes = [
            "# either give these pods runtimeClassName: nvidia (device plugin chart: "
            "--set runtimeClassName=nvidia),",
            "# or make nvidia the default runtime:",
        ]
        if facts.operator_expected:
            fixes.append("#   operator: toolkit.env CONTAINERD_SET_AS_DEFAULT=true "
                         "(helm upgrade --reuse-values)")
        elif layout.distribution in ("k3s", "rke2"):
            fixes.append(sh.note("#   {distribution}: default-runtime: nvidia in its "
                                 "config.yaml (or --default-runtime nvidia), then restart it",
                                 distribution=sh.word(layout.distribution, "distribution")))
        else:
            target = layout.templates[0] if layout.templates else where.config
            fixes.append(sh.note('#   default_runtime_name = "nvidia" in {file}, then '
                                 "restart containerd", file=sh.path(target)))
        objects = [node_ref(node_name)] + [
            ObjectRef(kind="Pod", namespace=p.namespace, name=p.name)
            for p in (starved.plugins + starved.workloads)[:10]]
        severity = Severity.CRITICAL if starved.plugins else self.severity
        return self.finding(
            node_name, summary, severity=severity, nodes=[node_name], objects=objects,
            evidence=evidence + starved.evidence,
            remediation=sh.lines(_look(ctx, node_name,
                                       " | grep -nE 'default_runtime_name|enable_cdi'"),
                                 fixes),
            causes=[refs.link("OP008", node_name),
                    *(_sc001_links(facts, node_name) if starved.plugins else [])])
