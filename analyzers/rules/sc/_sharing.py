"""SC006: shared-GPU (time-slicing, MPS) misuse."""

from __future__ import annotations

from analyzers.facts import Facts
from analyzers.facts.sharing import SharingConfig
from bundle.kube import Pod


def _pod_configs(facts: Facts, pod: Pod) -> list[SharingConfig]:
    setup = facts.gpu_sharing
    if pod.spec.node_name:
        config = setup.for_node(facts.nodes.get(pod.spec.node_name))
        return [config] if config is not None else []
    return list(setup.configs.values())
