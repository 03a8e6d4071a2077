"""RT005: containerd's CRI plugin is disabled or failed to load."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, node
from analyzers.rules.common import node_ref
from analyzers.rules.rt._service import _CRI_NAMES, _cri_remediation
from bundle import specs


class CriPluginDisabled(Rule):
    """containerd's CRI plugin is disabled or failed to load.

    ``disabled_plugins`` in the loaded configuration names ``cri`` (a default of
    some distribution packages that target Docker) or the CRI plugin failed to
    load according to the containerd journal.

    Why it matters:
    Without the CRI plugin kubelet cannot talk to containerd at all: the node is
    NotReady or no pod sandbox can be created, GPU or not.

    Remediation:
    On the node: ``containerd config dump | grep disabled_plugins``; remove ``cri``
    from ``disabled_plugins`` in ``/etc/containerd/config.toml`` (Docker's packaged
    config disables it), fix the error the journal names, and restart containerd.
    """

    id = "RT005"
    slug = "cri-plugin-disabled"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (node(specs.CONTAINERD_DUMP), node(specs.CONTAINERD_JOURNAL, optional=True))
    needs = (Need.CONTAINERD,)
    tags = ("runtime", "containerd")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for node_name in sorted(ctx.facts.node_dirs):
            if not ctx.facts.node_runtime(node_name).containerd:
                # Docker's own containerd ships with CRI disabled: normal where the kubelet
                # talks to Docker (or CRI-O), and no claim about the node's CRI
                continue
            artifacts = ctx.facts.node(node_name)
            evidence: list[Evidence] = []
            dump = artifacts.config_dump or {}
            disabled = [str(p) for p in dump.get("disabled_plugins", []) or []
                        if str(p) in _CRI_NAMES]
            if disabled:
                dump_path = artifacts.path(specs.CONTAINERD_DUMP)
                text = artifacts.config_dump_text or ""
                line = next((i for i, raw in enumerate(text.splitlines(), 1)
                             if raw.strip().startswith("disabled_plugins")), None)
                evidence.append(Evidence(path=dump_path, line=line,
                                         excerpt=f"disabled_plugins = {disabled}"))
            journal_path = artifacts.path(specs.CONTAINERD_JOURNAL)
            for entry, found in ctx.facts.node(node_name).journal(specs.CONTAINERD_UNIT).matches:
                if any("RT005" in m.signature.rules for m in found):
                    evidence.append(Evidence(path=journal_path, line=entry.line,
                                             excerpt=entry.message))
                    if len(evidence) >= 4:
                        break
            if not evidence:
                continue
            why = (f"disabled_plugins lists {', '.join(disabled)}" if disabled
                   else "the journal shows the CRI plugin failing to load")
            cri = ctx.facts.node_cri(node_name)
            if cri.cri is None:
                # the claim rests on containerd being the CRI, which nothing here says
                yield self.finding(
                    node_name, f"On {node_name}, containerd runs without its CRI plugin: "
                    f"{why}. Whether containerd is this node's CRI is not known ({cri.basis}): "
                    "if it is, kubelet cannot create pods through it; Docker's own containerd "
                    "runs like this normally.", severity=Severity.MEDIUM,
                    confidence=Confidence.LIKELY, nodes=[node_name],
                    objects=[node_ref(node_name)], evidence=evidence,
                    remediation=_cri_remediation(node_name))
                continue
            yield self.finding(node_name, f"On {node_name}, containerd runs without its CRI "
                               f"plugin: {why}. kubelet cannot create pods through it.",
                               nodes=[node_name], objects=[node_ref(node_name)],
                               evidence=evidence, remediation=_cri_remediation(node_name))
