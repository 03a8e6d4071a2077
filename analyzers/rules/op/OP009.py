"""OP009: MIG configuration cannot be applied on a node."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.facts.evidence import field
from analyzers.facts.mig import DISABLED, MigConfigs, MigEntry, model_for
from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS, node_ref
from analyzers.rules.op._common import capped, logs_cmd, logs_evidence, namespace
from analyzers.rules.op._mig import (
    CAPABLE_LABEL,
    CONFIG_LABEL,
    PRODUCT_LABEL,
    STATE_LABEL,
    _entry_text,
    _gpus,
    _indices,
)
from bundle import specs
from bundle.kube import Node


class MigMisconfigured(Rule):
    """MIG configuration cannot be applied on a node.

    Reports nodes where the MIG manager failed (``nvidia.com/mig.config.state=failed``),
    where the selected mig-parted config (label ``nvidia.com/mig.config``, ConfigMap
    ``default-mig-parted-config`` or the one the ClusterPolicy names) is missing or asks
    for a layout the GPU cannot hold (an unknown profile, more instances than the
    model allows — e.g. 8 × ``1g.5gb`` on an A100 40GB, which holds 7 — or more memory
    or compute slices than it has; profile table in ``analyzers/data/mig_profiles.toml``),
    and nodes where MIG is requested on GPUs without MIG (GeForce and other consumer
    cards; nvidia-smi ``mig_mode/current_mig`` ``N/A``; ``nvidia.com/mig.capable=false``).

    Why it matters:
    The MIG manager leaves the GPUs as they were and, with the ``single`` strategy,
    the device plugin may advertise nothing, so pods asking for MIG resources stay
    Pending with no explanation on the pod itself.

    Remediation:
    ``kubectl get node <node> -L nvidia.com/mig.config,nvidia.com/mig.config.state``,
    read the MIG manager log, and compare the selected config in the ConfigMap with
    the GPU's profile list (``nvidia-smi mig -lgip`` on the node). Select a config the
    GPU supports, one node at a time.
    """

    id = "OP009"
    slug = "mig-misconfigured"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.NODES), cluster(specs.CONFIGMAPS, optional=True),
              node(specs.NVIDIA_SMI, optional=True), LOGS, cluster(specs.PODS, optional=True),
              cluster(specs.CLUSTERPOLICIES, optional=True))
    needs = (Need.OPERATOR,)
    tags = ("operator", "mig")

    def check(self, ctx: Context) -> Iterable[Finding]:
        configs = ctx.facts.mig_configs
        for name in ctx.facts.gpu_nodes:
            obj = ctx.facts.nodes.get(name)
            if obj is None:
                continue
            problems, evidence = self._problems(ctx, obj, configs)
            if problems:
                yield self._finding(ctx, obj, problems, evidence, configs)

    def _problems(self, ctx: Context, obj: Node, configs: MigConfigs | None
                  ) -> tuple[list[str], list[Evidence]]:
        selected = obj.labels.get(CONFIG_LABEL)
        state = obj.labels.get(STATE_LABEL)
        problems: list[str] = []
        evidence: list[Evidence] = []
        if state == "failed":
            problems.append(f"the MIG manager failed to apply {selected or 'the selected config'}"
                            f" ({STATE_LABEL}=failed)")
            evidence.append(field(obj, f"{STATE_LABEL}=failed", "metadata", "labels",
                                  STATE_LABEL))
        if not selected or selected == DISABLED:
            return problems, evidence
        evidence.append(field(obj, f"{CONFIG_LABEL}={selected}", "metadata", "labels",
                              CONFIG_LABEL))
        gpus = _gpus(ctx, obj)
        entries: tuple[MigEntry, ...] | None = None
        if configs is not None and configs.error is None:
            entries = configs.configs.get(selected)
            if entries is None:
                problems.append(f"the selected config {selected} is not defined in ConfigMap "
                                f"{configs.configmap.metadata.name}")
                evidence.append(field(configs.configmap, f"{configs.key}: no mig-configs."
                                                         f"{selected}", "data", configs.key))
        found: dict[str, list[int]] = {}
        used: dict[int, MigEntry] = {}
        for gpu in gpus:
            entry = None
            if entries is not None:
                entry = next((e for e in entries if e.applies(gpu.index, gpu.device_id)), None)
                if entry is not None:
                    used[entry.index] = entry
            wants_mig = entry.enabled if entry is not None else entries is None
            if wants_mig and gpu.mig_supported is False:
                text = (f"MIG is requested on {gpu.product or 'a GPU'}, which does not "
                        "support MIG")
                found.setdefault(text, []).append(gpu.index)
                if gpu.where is not None and gpu.where not in evidence:
                    evidence.append(gpu.where)
                continue
            if entry is None or not entry.enabled or not entry.counts:
                continue
            model = model_for(gpu.product, gpu.device_id)
            if model is None:
                continue
            for text in model.problems(entry.counts):
                found.setdefault(text, []).append(gpu.index)
        problems += [f"{text} ({_indices(indices)})" for text, indices in found.items()]
        if found and configs is not None:
            for entry in list(used.values())[:2]:
                evidence.append(field(configs.configmap, f"mig-configs.{selected}[{entry.index}]"
                                                         f": {_entry_text(entry)}",
                                      "data", configs.key))
        return problems, evidence

    def _finding(self, ctx: Context, obj: Node, problems: list[str], evidence: list[Evidence],
                 configs: MigConfigs | None) -> Finding:
        name = obj.name
        ns = namespace(ctx)
        manager = ctx.facts.operands.get(name, {}).get("mig-manager")
        logs = list(ctx.facts.pod_logs.of(manager.pod)) if manager is not None else []
        evidence = evidence + logs_evidence(logs, self.id, cap=3, tail=False)
        summary = f"On {name}, MIG cannot be applied: {'; '.join(problems)}."
        configmap = configs.configmap.metadata.name if configs is not None else \
            "default-mig-parted-config"
        label = obj.labels.get(CONFIG_LABEL)
        selected = sh.label_value(label) if label is not None else "<config>"
        lines = [
            sh.cmd("kubectl", "get", "node", sh.node(name), "-L",
                   f"{CONFIG_LABEL},{STATE_LABEL},{PRODUCT_LABEL},{CAPABLE_LABEL}"),
            sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "cm",
                   sh.name(configmap, "ConfigMap name"), "-o",
                   sh.raw("jsonpath='{.data.config\\.yaml}'"), sh.raw("|"),
                   "grep", "-A10", sh.join("  ", selected, ":")),
            *[logs_cmd(ns, log, 80) for log in logs[:1]],
            "# on the node: nvidia-smi -q | grep -iA2 'MIG Mode'; nvidia-smi mig -lgip",
            "# select a config the GPU supports (or all-disabled), on this node first:",
            sh.cmd("kubectl", "label", "node", sh.node(name), sh.raw(f"{CONFIG_LABEL}=<config>"),
                   "--overwrite"),
        ]
        objects = [node_ref(name)]
        if configs is not None:
            objects.append(ObjectRef(kind="ConfigMap", namespace=configs.configmap.metadata
                                     .namespace, name=configmap))
        return self.finding(name, summary, nodes=[name], objects=objects,
                            evidence=capped(evidence, 8), remediation=sh.lines(lines))
