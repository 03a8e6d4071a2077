"""OP017: a GPU-stack DaemonSet cannot create its pods (see ``facts.refusals``)."""

from __future__ import annotations

from analyzers import refs
from analyzers.facts.preconditions import operator_made, stack_component
from analyzers.facts.refusals import CreateRefusal
from analyzers.refs import Link
from analyzers.rule import Context
from analyzers.rules.op._common import quote
from bundle.kube import DaemonSet

_NFD_WORKER = ("node-feature-discovery-worker", "nfd-worker")


def gpu_stack(ds: DaemonSet, operator_namespace: str | None) -> bool:
    """The operator's DaemonSets, a standalone plugin's, exporter's, GFD's or NFD's."""
    return operator_made(ds, operator_namespace) or stack_component(ds) is not None or \
        any(part in ds.metadata.name for part in _NFD_WORKER)


def is_nfd_worker(ds: DaemonSet) -> bool:
    labels = ds.metadata.labels
    return any(part in ds.metadata.name for part in _NFD_WORKER) or (
        labels.get("app.kubernetes.io/name") == "node-feature-discovery"
        and labels.get("role", labels.get("app.kubernetes.io/component")) == "worker")


def plugin_links(ctx: Context, refusal: CreateRefusal) -> list[Link]:
    """OP008 on the GPU nodes without a device plugin, when the refused DaemonSet is a
    device plugin's: its missing pods are why those nodes advertise no GPU."""
    ds = refusal.daemonset
    workload = ctx.facts.inventory.get(ds.metadata.namespace or "", ds.metadata.name)
    if workload is None or workload.component != "device-plugin":
        return []
    return [refs.link("OP008", n) for n in ctx.facts.gpu_nodes if n not in ctx.facts.device_plugins]


def describe(refusal: CreateRefusal) -> str:
    """One clause for another rule's summary: which DaemonSet, its counts, the refusal."""
    return (f"the DaemonSet {refusal.key} cannot create its pods ({refusal.counts()}): "
            f"{refusal.by} refuses them ({quote(refusal.latest.message or '', 320)})")
