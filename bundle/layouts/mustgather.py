"""The output directory of the GPU Operator's ``hack/must-gather.sh``, read as format v1.

The script writes flat files into one directory (``/tmp/nvidia-gpu-operator_<date>`` or
``$ARTIFACT_DIR``; ``/must-gather`` in the OpenShift image). What maps where:

==========================================  ============================================
must-gather file                            format v1 path
==========================================  ============================================
``cluster_policy.yaml``                     ``cluster/clusterpolicies.json`` (a List)
``cluster_policy.missing``                  ``cluster/clusterpolicies.json``, empty: the
                                            script found no ClusterPolicy
``nvidiadrivers.yaml``                      ``cluster/nvidiadrivers.json``
``gpu_nodes.descr`` (+ ``.labels``)         ``cluster/nodes.json``: the GPU nodes only;
                                            from ``gpu_nodes.labels`` (names, labels)
                                            when ``describe`` showed no node
``gpu_operand_pods.yaml``,                  ``cluster/pods.json``: the operator namespace
``gpu_operator_pod.yaml``                   only
``gpu_operand_ds.yaml``                     ``cluster/daemonsets.json``
``gpu_operator_pod[.previous].log``         ``logs/<ns>/<operator pod>/<container>.log``
``gpu_operand_pod_<pod>[.previous].log``    ``logs/<ns>/<pod>/<container>[.previous].log``,
                                            split by kubectl's ``[pod/<p>/<c>]`` prefix
``nvidia-bug-report_<node>.log.gz``         ``nodes/<node>/dmesg.txt``, ``host/cmdline``,
                                            ``host/modules.txt``, ``host/uname.txt``
every other file                            ``original/<name>`` (kept, not interpreted)
==========================================  ============================================

The script collects no events, deployments, ConfigMaps, RuntimeClasses, Helm history,
node journals, containerd configuration, ``nvidia-smi -q -x`` or CDI specs; nothing is
invented for them, so the rules that need them report ``skipped``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from bundle import specs
from bundle.container import Limits, Source
from bundle.layouts import bugreport, describe
from bundle.layouts.base import (
    Adapted,
    LayoutReport,
    Maker,
    VirtualSource,
    kube_list,
    missing_paths,
)
from bundle.manifest import Manifest
from bundle.problems import ProblemLog

NAME = "nvidia must-gather"
# Files only must-gather.sh writes; any one of them marks the directory.
MARKERS = ("gpu_operand_pods.yaml", "gpu_operand_pods.status", "gpu_operator_pod.yaml",
           "gpu_nodes.descr", "cluster_policy.yaml", "cluster_policy.missing",
           "gpu_operand_ds.yaml")
_K8S_NAME = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
_OPERAND_LOG = re.compile(r"^gpu_operand_pod_(?P<pod>.+?)(?P<previous>\.previous)?\.log$")
_BUG_REPORT = re.compile(r"^nvidia-bug-report_(?P<node>.+)\.log\.gz$")
_PREFIX = re.compile(r"^\[pod/(?P<pod>[^/\]]+)/(?P<container>[^\]]+)\] ?")
_MAPPED = frozenset({
    "cluster_policy.yaml", "cluster_policy.missing", "nvidiadrivers.yaml", "gpu_nodes.descr",
    "gpu_nodes.labels",
    "gpu_operand_pods.yaml", "gpu_operator_pod.yaml", "gpu_operand_ds.yaml",
    "gpu_operator_pod.log", "gpu_operator_pod.previous.log",
})


def detect(paths: list[str]) -> bool:
    return any(name in MARKERS for name in paths)


def root(names: list[str]) -> str | None:
    """The directory holding a marker file: at the top, or up to two levels down (the
    OpenShift must-gather tool nests the output under its image's directory)."""
    found = sorted((name.count("/"), name.rpartition("/")[0]) for name in names
                   if name.rpartition("/")[2] in MARKERS and name.count("/") <= 2)
    if not found:
        return None
    return found[0][1] + "/" if found[0][1] else ""


def adapt(inner: Source, problems: ProblemLog, limits: Limits) -> Adapted:
    source = VirtualSource(inner, problems, limits)
    paths = set(inner.paths())
    pods = _pods(source, paths)
    namespace = _operator_namespace(source, pods)
    notes: list[tuple[str, str]] = []
    _cluster(source, paths, pods, notes)
    used = set(_MAPPED)
    used |= _operator_logs(source, paths, namespace)
    used |= _operand_logs(source, paths, pods, namespace)
    used |= _bug_reports(source, paths)
    for name in sorted(paths - used):
        source.passthrough(f"original/{name}", name)
    manifest = Manifest(format="nvidia-must-gather", collector={"name": "hack/must-gather.sh"},
                        operator_namespace=namespace)
    return Adapted(source=source, layout=NAME, manifest=manifest, origins=source.origins(),
                   report=LayoutReport(missing=missing_paths(source.paths()),
                                       notes=tuple(notes), partial=_partial(source, namespace)))


def _partial(source: VirtualSource, namespace: str | None) -> tuple[tuple[str, str], ...]:
    """must-gather.sh lists the pods of the operator's namespace only: workload pods,
    pending or running elsewhere, are not in the bundle."""
    if specs.PODS not in source.paths():
        return ()
    where = f"namespace {namespace}" if namespace else "the GPU Operator's namespace"
    return ((specs.PODS, f"must-gather lists only the pods of {where}; "
             "workload pods in other namespaces are not in the bundle"),)


def _pods(source: VirtualSource, paths: set[str]) -> list[dict[str, Any]]:
    """Pods of the operator namespace, the operator pod included once."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for name in ("gpu_operand_pods.yaml", "gpu_operator_pod.yaml"):
        if name not in paths:
            continue
        items = source.objects(name, source.yaml(name), "Pod")
        for pod in items or []:
            meta = pod.get("metadata")
            if isinstance(meta, dict):
                key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
                found.setdefault(key, pod)
    return list(found.values())


def _operator_namespace(source: VirtualSource, pods: list[dict[str, Any]]) -> str | None:
    operator = source.yaml("gpu_operator_pod.yaml")
    for candidate in [operator, *pods]:
        if isinstance(candidate, dict) and isinstance(candidate.get("metadata"), dict):
            namespace = candidate["metadata"].get("namespace")
            if isinstance(namespace, str) and namespace:
                return namespace
    return None


def _cluster(source: VirtualSource, paths: set[str], pods: list[dict[str, Any]],
             notes: list[tuple[str, str]]) -> None:
    def yaml_list(name: str, kind: str) -> bytes | None:
        items = source.objects(name, source.yaml(name), kind)
        return None if items is None else kube_list(items)

    if "cluster_policy.yaml" in paths:
        source.derived(specs.CLUSTERPOLICIES, ["cluster_policy.yaml"],
                       lambda: yaml_list("cluster_policy.yaml", "ClusterPolicy"))
    elif "cluster_policy.missing" in paths:
        source.derived(specs.CLUSTERPOLICIES, ["cluster_policy.missing"],
                       lambda: kube_list([]))
    if "nvidiadrivers.yaml" in paths:
        source.derived(specs.NVIDIADRIVERS, ["nvidiadrivers.yaml"],
                       lambda: yaml_list("nvidiadrivers.yaml", "NVIDIADriver"))
    if "gpu_operand_ds.yaml" in paths:
        source.derived(specs.DAEMONSETS, ["gpu_operand_ds.yaml"],
                       lambda: yaml_list("gpu_operand_ds.yaml", "DaemonSet"))
    pod_files = [n for n in ("gpu_operand_pods.yaml", "gpu_operator_pod.yaml") if n in paths]
    if pod_files:
        source.derived(specs.PODS, pod_files,
                       lambda: kube_list(pods) if pods else None)
    if "gpu_nodes.descr" in paths or "gpu_nodes.labels" in paths:
        source.derived(specs.NODES, ["gpu_nodes.descr", "gpu_nodes.labels"],
                       lambda: _nodes(source, notes))


def _nodes(source: VirtualSource, notes: list[tuple[str, str]]) -> bytes | None:
    """The GPU nodes from ``kubectl describe``; when that gave none (the script's
    ``describe nodes -l nvidia.com/gpu.present=true`` finds nothing on nodes that have
    only NFD's PCI labels, and the file is empty), from ``gpu_nodes.labels``, which
    lists the nodes found by their PCI labels: names and labels only."""
    text = source.text("gpu_nodes.descr")
    nodes = describe.parse_nodes(text) if text else []
    if not nodes and text is not None and text.strip():
        source.problems.add("gpu_nodes.descr", "no 'Name:' record of kubectl describe found")
    labels = _labels_file(source.text("gpu_nodes.labels") or "")
    if not nodes and labels:
        notes.append(("gpu_nodes.descr", "describes no node; cluster/nodes.json lists the "
                      f"{len(labels)} node(s) of gpu_nodes.labels, with their names and "
                      "labels only"))
        return kube_list({"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": name, "labels": node_labels}}
                         for name, node_labels in labels.items())
    if not nodes and (text is None or text.strip()):
        return None  # absent or unreadable, and no labels file to fall back on
    items = []
    for node, _line in nodes:
        meta = node["metadata"]
        if not meta.get("labels") and meta["name"] in labels:
            meta["labels"] = labels[meta["name"]]
        items.append(node)
    return kube_list(items)


def _labels_file(text: str) -> dict[str, dict[str, str]]:
    """``gpu_nodes.labels``: a node name, then ``- key=value`` lines (lossy: the script's
    sed turns every ``:`` into ``=``); a node found by two PCI labels is listed twice.
    A line that is no node name (``Timeout getting labels for node/<n>``) ends the
    node before it. See ``hack/must-gather.sh`` in NVIDIA/gpu-operator."""
    found: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("- ") and current is not None:
            key, _, value = line[2:].partition("=")
            if key.strip():
                current[key.strip()] = value.strip()
        elif line.strip() and not line.startswith(" "):
            name = line.strip()
            current = found.setdefault(name, {}) if _K8S_NAME.match(name) else None
    return found


def _listed(pod: Any, key: str) -> list[Any]:
    """``spec.<key>`` of a pod when it is a list (a hostile file may put anything there)."""
    spec = pod.get("spec") if isinstance(pod, dict) else None
    found = spec.get(key) if isinstance(spec, dict) else None
    return found if isinstance(found, list) else []


def _containers(pod: dict[str, Any] | None) -> list[str]:
    return [container["name"] for key in ("initContainers", "containers")
            for container in _listed(pod, key)
            if isinstance(container, dict) and isinstance(container.get("name"), str)]


def _operator_logs(source: VirtualSource, paths: set[str], namespace: str | None) -> set[str]:
    """``kubectl logs <operator pod>``: one container, no prefix."""
    operator = source.yaml("gpu_operator_pod.yaml")
    meta = operator.get("metadata") if isinstance(operator, dict) else None
    pod = meta.get("name") if isinstance(meta, dict) else None
    containers = _containers(operator if isinstance(operator, dict) else None)
    spec = operator.get("spec") if isinstance(operator, dict) else None
    if isinstance(spec, dict) and not containers:
        source.problems.add("gpu_operator_pod.yaml", "the pod names no container (spec."
                            "containers is not a list of named objects); its log was not mapped")
    if not (isinstance(pod, str) and namespace and containers):
        return set()
    container = [c for c in containers if c not in _init_names(operator)][:1] or containers[:1]
    if not all(_K8S_NAME.match(s) for s in (namespace, pod, container[0])):
        return set()
    used = set()
    for name, previous in (("gpu_operator_pod.log", False),
                           ("gpu_operator_pod.previous.log", True)):
        if name in paths and (not previous or (source.original(name) or b"").strip()):
            source.passthrough(specs.log_file(namespace, pod, container[0], previous=previous),
                               name)
            used.add(name)
    return used


def _init_names(pod: Any) -> set[str]:
    return {str(c.get("name")) for c in _listed(pod, "initContainers") if isinstance(c, dict)}


def _operand_logs(source: VirtualSource, paths: set[str], pods: list[dict[str, Any]],
                  namespace: str | None) -> set[str]:
    """``kubectl logs --all-containers --prefix``: split by the ``[pod/p/c]`` prefix."""
    namespaces = {}
    for item in pods:
        meta = item.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("name"), str):
            own = meta.get("namespace")
            namespaces[meta["name"]] = own if isinstance(own, str) and own else namespace
    used = set()
    for name in sorted(paths):
        match = _OPERAND_LOG.match(name)
        if match is None:
            continue
        pod = match["pod"]
        pod_ns = namespaces.get(pod, namespace)
        if not (pod_ns and _K8S_NAME.match(pod) and _K8S_NAME.match(pod_ns)):
            continue
        used.add(name)
        previous = bool(match["previous"])
        split = _split_prefixed(source.text(name) or "", pod)
        for container, text in sorted(split.items()):
            if not _K8S_NAME.match(container):
                source.problems.add(name, f"container name {container!r} is not a Kubernetes "
                                    "name; its lines were not mapped")
                continue
            source.derived(specs.log_file(pod_ns, pod, container, previous=previous), [name],
                           _constant(text.encode()))
    return used


def _split_prefixed(text: str, pod: str) -> dict[str, str]:
    """Container → its lines, without the prefix; unprefixed lines stay with the last."""
    lines: dict[str, list[str]] = defaultdict(list)
    current: str | None = None
    for line in text.splitlines():
        match = _PREFIX.match(line)
        if match is not None and match["pod"] == pod:
            current = match["container"]
            lines[current].append(line[match.end():])
        elif current is not None:
            lines[current].append(line)
    return {container: "".join(f"{line}\n" for line in body)
            for container, body in lines.items()}


def _bug_reports(source: VirtualSource, paths: set[str]) -> set[str]:
    used = set()
    for name in sorted(paths):
        match = _BUG_REPORT.match(name)
        if match is None or not _K8S_NAME.match(match["node"]):
            continue
        used.add(name)
        bugreport.BugReport(source, name).present(match["node"])
    return used


def _constant(data: bytes) -> Maker:
    return lambda: data
