"""CFG003: Time-slicing explained with the node's own numbers."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.evidence import field
from analyzers.refs import Link
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.cfg._base import _label_int
from analyzers.rules.common import node_ref
from bundle import specs
from bundle.kube import Node


class TimeSlicingExplained(Rule):
    """Time-slicing explained with the node's own numbers.

    For each GPU node where the device plugin shares GPUs (the sharing config the
    ClusterPolicy names, else the GFD labels ``nvidia.com/gpu.sharing-strategy`` and
    ``nvidia.com/gpu.replicas``), shows the advertised slots against the physical GPUs
    (nvidia-smi, else ``nvidia.com/gpu.count``), the memory each slot "has" by division,
    and what the slots do not give.

    Why it matters:
    ``replicas: N`` registers the same device N times. The slots share one GPU's
    memory and faults: one pod can take all the memory or crash the others, so the
    per-slot memory guarantee is 0, and DCGM can no longer attribute usage to pods.
    Users who read "4 GPUs" plan as if they had four.

    Remediation:
    For isolation use MIG (on GPUs that have it) or whole GPUs; keep time-slicing for
    light, trusted workloads and size them by the whole GPU's memory.
    """

    id = "CFG003"
    slug = "time-slicing-explained"
    severity = Severity.INFO
    confidence = Confidence.CONFIRMED
    inputs = (
        cluster(specs.NODES),
        cluster(specs.CONFIGMAPS, optional=True),
        cluster(specs.CLUSTERPOLICIES, optional=True),
        node(specs.NVIDIA_SMI, optional=True),
        cluster(specs.PODS, optional=True),
    )
    tags = ("sharing",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        setup = facts.gpu_sharing
        for node_name in facts.gpu_nodes:
            node_obj = facts.nodes.get(node_name)
            if node_obj is None:
                continue
            config = setup.for_node(node_obj)
            items: list[tuple[str, int, str, str]] = []  # resource, replicas, strategy, from
            evidence: list[Evidence] = []
            if config is not None and config.strategy is not None and setup.configmap:
                cm = setup.configmap
                source = f"config key '{config.key}' of ConfigMap {cm.metadata.name}"
                for item in config.resources:
                    items.append((item.advertised, item.replicas, config.strategy, source))
                evidence.append(field(cm, f"ConfigMap {cm.metadata.name} key {config.key}: "
                                          f"{config.strategy}, "
                                          + ", ".join(f"{r.name} replicas {r.replicas}"
                                                      for r in config.resources),
                                      "data", config.key))
            else:
                strategy = node_obj.labels.get("nvidia.com/gpu.sharing-strategy", "")
                replicas = _label_int(node_obj.labels, "nvidia.com/gpu.replicas") or 1
                if strategy in ("time-slicing", "mps") and replicas > 1:
                    shared = "nvidia.com/gpu.shared"
                    resource = shared if shared in node_obj.status.capacity else "nvidia.com/gpu"
                    items.append((resource, replicas, strategy, "the node's GFD labels"))
                    evidence.append(field(node_obj, f"{node_name}: nvidia.com/gpu.sharing-"
                                                    f"strategy={strategy}, nvidia.com/gpu."
                                                    f"replicas={replicas}",
                                          "metadata", "labels", "nvidia.com/gpu.replicas"))
            lines = [text for item in items
                     if (text := self._explain(ctx, node_obj, item, evidence)) is not None]
            if not lines:
                continue
            links: list[Link] = []
            if setup.configmap is not None and any("another config" in ln for ln in lines):
                cm = setup.configmap
                links.append(refs.link(
                    "SC006", cm.metadata.namespace or facts.operator_namespace or "gpu-operator",
                    cm.metadata.name))
            summary = (" ".join(lines) + " Slots share one GPU: no memory or fault isolation "
                       "(one pod can take all the memory or crash the others), and DCGM "
                       "cannot attribute GPU usage to pods or containers under sharing.")
            remediation = sh.lines(
                sh.cmd("kubectl", "get", "node", sh.node(node_name), "-o",
                       sh.raw("jsonpath='{.status.capacity}{\"\\n\"}{.metadata.labels}'")),
                "# for isolation use MIG or whole GPUs; size shared workloads by the "
                "whole GPU's memory")
            yield self.finding(node_name, summary, nodes=[node_name],
                               objects=[node_ref(node_name)], evidence=evidence,
                               remediation=remediation, caused_by=links)

    def _explain(self, ctx: Context, node_obj: Node, item: tuple[str, int, str, str],
                 evidence: list[Evidence]) -> str | None:
        resource, replicas, strategy, source = item
        counts = ctx.facts.accounting.get(node_obj.name)
        advertised = counts.count(resource).capacity if counts is not None else None
        if not advertised:
            return None
        labels = node_obj.labels
        smi = ctx.facts.node(node_obj.name).nvidia_smi
        memory: int | None = None
        if resource.startswith("nvidia.com/mig-"):
            profile = resource.removeprefix("nvidia.com/").removesuffix(".shared")
            physical = _label_int(labels, f"nvidia.com/{profile}.count")
            memory = _label_int(labels, f"nvidia.com/{profile}.memory")
            unit = f"{profile} MIG device"
            physical_from = "GFD labels"
        else:
            unit = "physical GPU"
            if smi is not None and smi.gpus:
                physical = len(smi.gpus)
                memory = smi.gpus[0].fb_total_mib
                physical_from = "nvidia-smi"
            else:
                physical = _label_int(labels, "nvidia.com/gpu.count")
                memory = _label_int(labels, "nvidia.com/gpu.memory")
                physical_from = "label nvidia.com/gpu.count"
        if memory is None:
            memory = _label_int(labels, "nvidia.com/gpu.memory")
        evidence.append(Evidence(
            path=node_obj.source_path,
            pointer=f"{node_obj.source_pointer}/status/capacity/{resource.replace('/', '~1')}",
            excerpt=f"{node_obj.name} capacity {resource}: {advertised}"))
        per_gpu = f"{physical} {unit}(s)" if physical is not None else f"? {unit}(s)"
        text = (f"{node_obj.name} advertises {advertised} {resource} slots on {per_gpu} "
                f"({physical_from}; {strategy}, replicas {replicas}, from {source}).")
        if physical is not None and physical * replicas != advertised:
            text += (f" {physical} × {replicas} would be {physical * replicas}: the plugin "
                     "there runs another config (changed without a restart, or another key).")
        if memory:
            share = memory // replicas
            text += (f" {memory} MiB ÷ {replicas} = {share} MiB per slot is arithmetic; the "
                     "guarantee per slot is 0.")
        if strategy == "mps":
            text += " (MPS caps each client's memory share, but faults are still shared.)"
        return text
