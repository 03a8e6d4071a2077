"""SC001: the number gate, decided from per-node arithmetic."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts import Facts
from analyzers.facts.scheduling import Branch, NodeRow, ResourceVerdict
from analyzers.refs import Link
from analyzers.results.models import Evidence, Severity
from analyzers.rules.common import names
from analyzers.rules.sc._common import (
    ROW_CAP,
    device_fault_links,
)

_BRANCH_TITLES = {
    Branch.NOT_ADVERTISED: "GPU resource not advertised by any node",
    Branch.UNHEALTHY: "GPU pod pending: unhealthy devices (capacity > allocatable)",
    Branch.FULL: "GPU pod pending: every node that could hold it is full",
    Branch.EXCEEDS: "GPU pod pending: request exceeds every node's allocatable",
}


_BRANCH_SEVERITY = {
    Branch.NOT_ADVERTISED: Severity.HIGH,
    Branch.UNHEALTHY: Severity.HIGH,
    Branch.FULL: Severity.MEDIUM,
    Branch.EXCEEDS: Severity.MEDIUM,
}


def _table(rows: Iterable[NodeRow]) -> str:
    listed = list(rows)
    shown = []
    for row in listed[:ROW_CAP]:
        cells = "/".join("-" if v is None else str(v)
                         for v in (row.capacity, row.allocatable, row.assigned))
        free = max(row.free, 0) if row.advertised else 0
        extra = []
        if row.unhealthy:
            extra.append(f"{row.unhealthy} unhealthy")
        if row.blockers:
            extra.append("excluded")
        note = f" ({', '.join(extra)})" if extra else ""
        shown.append(f"{row.node} {cells}/{free}{note}")
    more = f" and {len(listed) - ROW_CAP} more" if len(listed) > ROW_CAP else ""
    return ", ".join(shown) + more


def _advertised_elsewhere(facts: Facts, resource: str) -> dict[str, list[str]]:
    """Other nvidia.com/* resources with capacity on some node → those nodes."""
    found: dict[str, list[str]] = defaultdict(list)
    for name, counts in sorted(facts.accounting.items()):
        for other, count in counts.resources.items():
            if other != resource and (count.capacity or 0) > 0:
                found[other].append(name)
    return dict(found)


def _advertises_nothing(facts: Facts, node_name: str) -> bool:
    counts = facts.accounting.get(node_name)
    return counts is None or not any((c.capacity or 0) > 0 for c in counts.resources.values())


@dataclass
class _Explained:
    text: str
    links: list[Link] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)  # implicated beyond the branch's culprits


def _explain_not_advertised(facts: Facts, result: ResourceVerdict) -> _Explained:
    resource = result.resource
    silent = [n for n in result.culprits if _advertises_nothing(facts, n)]
    out = _Explained("")
    for node_name in silent:
        out.links.append(refs.link("OP008", node_name))
        if facts.runtime(node_name).has_nvidia is False:
            out.links.append(refs.link("RT001", node_name))
    parts = [f"no node advertises {resource} (capacity absent or 0"
             + (f" on {names(result.culprits)})" if result.culprits else ")")]
    if silent:
        no_runtime = [n for n in silent if facts.runtime(n).has_nvidia is False]
        parts.append(f"{names(silent)} advertise no NVIDIA resource at all: the device plugin "
                     "is not registered with kubelet there (or was gone for more than the "
                     "5-minute grace period)")
        if no_runtime:
            parts.append(f"containerd on {names(no_runtime)} has no nvidia runtime, so the "
                         "device plugin pod itself cannot start (RT001)")
    elsewhere = _advertised_elsewhere(facts, resource)
    if elsewhere:
        offered = "; ".join(f"{name} on {names(nodes, 3)}"
                            for name, nodes in sorted(elsewhere.items()))
        parts.append(f"nodes advertise other NVIDIA resources instead ({offered}), so the "
                     f"pod names a resource nobody offers")
        shared = _sharing_hint(facts, resource, elsewhere)
        if shared:
            parts.append(shared)
    out.text = "; ".join(parts)
    return out


def _sharing_hint(facts: Facts, resource: str, elsewhere: dict[str, list[str]]) -> str:
    setup = facts.gpu_sharing
    if resource.endswith(".shared") and resource.removesuffix(".shared") in elsewhere:
        renaming = any(c.rename_by_default for c in setup.configs.values())
        return ("the '.shared' name only exists when the sharing config sets "
                "renameByDefault: true" + ("" if renaming else
                                           ", and no sharing config the ClusterPolicy "
                                           "names does"))
    if resource.startswith("nvidia.com/mig-") and "nvidia.com/gpu" in elsewhere:
        return ("per-profile MIG resources (nvidia.com/mig-<profile>) exist only with the "
                "'mixed' MIG strategy; with 'single' MIG devices are advertised as "
                "nvidia.com/gpu, and with MIG disabled there are none")
    return ""


def _explain_unhealthy(facts: Facts, result: ResourceVerdict) -> _Explained:
    out = _Explained("")
    parts = []
    rows = {row.node: row for row in result.rows}
    for node_name in result.culprits:
        row = rows[node_name]
        if row.allocatable == 0:
            parts.append(f"{node_name} keeps capacity {row.capacity} but allocatable is 0: "
                         "the device plugin disconnected (kubelet keeps capacity for a "
                         "5-minute grace period) or every device failed its health check")
            out.links.append(refs.link("OP008", node_name))
        else:
            parts.append(f"{node_name} has capacity {row.capacity} but allocatable "
                         f"{row.allocatable}: {row.unhealthy} device(s) marked unhealthy")
        links, evidence = device_fault_links(facts, node_name)
        out.links += links
        out.evidence += evidence
    best = max((rows[n] for n in result.culprits),
               key=lambda r: (r.capacity or 0) - r.assigned)
    parts.append(f"with its devices healthy {best.node} would have "
                 f"{(best.capacity or 0) - best.assigned} free for the request of "
                 f"{result.request}")
    out.text = "; ".join(parts)
    return out


def _explain_full(facts: Facts, result: ResourceVerdict) -> _Explained:
    out = _Explained("")
    rows = {row.node: row for row in result.rows}
    shown = []
    for node_name in result.culprits:
        row = rows[node_name]
        shown.append(f"{node_name} {row.assigned} of {row.allocatable} assigned")
        for idle in facts.idle_gpus.get(node_name, []):
            out.links.append(refs.link("DRV007", idle.node, idle.pci))
    holders = sorted({p for n in result.culprits
                      for p in (facts.accounting[n].pods if n in facts.accounting else ())})
    text = (f"every node that could hold {result.request} {result.resource} is really full "
            f"({'; '.join(shown[:ROW_CAP])}); held by {names(holders, 4)}")
    idle_count = len(out.links)
    if idle_count:
        text += (f"; {idle_count} of those GPUs show ~0 % utilisation while holding memory "
                 "(DRV007)")
    out.text = text
    return out


def _explain_exceeds(result: ResourceVerdict) -> _Explained:
    rows = [r for r in result.rows if r.advertised and r.eligible]
    biggest = max(rows, key=lambda r: r.capacity or 0)
    return _Explained(
        f"it asks for {result.request} {result.resource} but the largest eligible node, "
        f"{biggest.node}, has capacity {biggest.capacity} and allocatable "
        f"{biggest.allocatable}: the request exceeds every node's allocatable, so it can "
        "never fit, whatever is freed or repaired")


def _silent_gpu_nodes(facts: Facts, result: ResourceVerdict, out: _Explained) -> None:
    """GPU nodes the pod could use that advertise nothing: the plugin is gone there.

    When some nodes still advertise, the branch is decided on them; the silent ones
    are still part of the answer (their devices would be room) and get linked to
    what keeps their device plugin down.
    """
    silent = [row.node for row in result.rows
              if row.eligible and not row.advertised and row.node in facts.gpu_node_set
              and _advertises_nothing(facts, row.node)]
    if not silent:
        return
    no_runtime = [n for n in silent if facts.runtime(n).has_nvidia is False]
    out.nodes += silent
    for node_name in silent:
        out.links.append(refs.link("OP008", node_name))
    out.links += [refs.link("RT001", n) for n in no_runtime]
    text = (f"GPU node(s) {names(silent)} advertise no NVIDIA resource at all: their device "
            "plugin is not registered, so their GPUs are missing from the count")
    if no_runtime:
        text += (f"; containerd on {names(no_runtime)} has no nvidia runtime, so the plugin "
                 "pod cannot start there (RT001)")
    out.text += "; " + text


def _explain(facts: Facts, result: ResourceVerdict) -> _Explained:
    if result.branch is Branch.NOT_ADVERTISED:
        return _explain_not_advertised(facts, result)
    if result.branch is Branch.UNHEALTHY:
        out = _explain_unhealthy(facts, result)
    elif result.branch is Branch.FULL:
        out = _explain_full(facts, result)
    else:
        out = _explain_exceeds(result)
    _silent_gpu_nodes(facts, result, out)
    return out


def _remediation(branch: Branch, resource: str, namespace: str) -> str:
    escaped = sh.resource(resource).map(lambda name: name.replace(".", "\\."))
    look = sh.cmd("kubectl", "get", "nodes", "-o",
                  sh.join("custom-columns=N:.metadata.name,CAP:.status.capacity.", escaped,
                          ",ALLOC:.status.allocatable.", escaped)) + "\n"
    ns = sh.namespace(namespace)
    if branch is Branch.NOT_ADVERTISED:
        return sh.lines(look, (
            sh.cmd("kubectl", "-n", ns, "get", "pods", "-o", "wide",
                   "-l", "app=nvidia-device-plugin-daemonset") + "\n"
            + sh.cmd("kubectl", "-n", ns, "logs", "-l", "app=nvidia-device-plugin-daemonset",
                     "--tail=50") + "\n"
            "# fix the layer below the device plugin first (runtime, toolkit, driver); the\n"
            "# resource reappears when the plugin registers with kubelet again.\n"
            "# If another NVIDIA resource is advertised instead, request that name."))
    if branch is Branch.UNHEALTHY:
        return sh.lines(look, (
            sh.cmd("kubectl", "-n", ns, "logs", "-l", "app=nvidia-device-plugin-daemonset",
                   "--tail=200", tail=" | grep -iE 'xid|unhealthy'") + "\n"
            "dmesg --time-format iso | grep -iE 'NVRM|Xid' | tail -50     # on the node\n"
            "nvidia-smi -q | grep -iE 'Pending|Remapp|Recovery'            # on the node\n"
            "# Follow the Xid's recommended action (reset or reboot the GPU, one node at a\n"
            "# time: cordon and drain first); allocatable returns when the plugin sees the\n"
            "# device healthy again."))
    if branch is Branch.FULL:
        return sh.lines(look, (
            "kubectl get pods -A -o wide --field-selector=status.phase=Running | grep <node>\n"
            "kubectl describe node <node> | sed -n '/Allocated resources/,/Events/p'\n"
            "# Really full: wait, free GPUs held by idle pods, add nodes, or use\n"
            "# priority/preemption. Sharing (time-slicing) adds slots, not memory."))
    return sh.lines(look, (
        "kubectl get pod <pod> -n <ns> -o jsonpath='{.spec.containers[*].resources.limits}'\n"
        "# Lower the request to what one node has, or split the work across pods: a pod's\n"
        "# GPUs must all come from one node."))
