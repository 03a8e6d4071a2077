"""Which nodes to visit first on a big cluster, from the node, pod and event lists.

GPU nodes with problems come first (not Ready; GPUs not advertised or fewer allocatable than
installed; failing GPU-stack pods on the node; Warning events about the node or those pods),
then the first healthy node of each distinct shape (GPU model, driver, OS image, kernel,
container runtime: a reference to compare the broken ones with), then the rest, each group
in name order. --max-nodes keeps the first N; the rest are recorded with the reason they
were left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

GPU_RESOURCE = "nvidia.com/gpu"
GOOD_PHASES = ("Running", "Succeeded")


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def not_ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = [c for c in conditions if c.get("type") == "Ready"]
    return not ready or ready[0].get("status") != "True"


def gpu_shortfall(node: dict[str, Any]) -> str | None:
    """'GPUs not advertised' or 'k of n GPUs allocatable', or None."""
    status = node.get("status") or {}
    labels = _meta(node).get("labels") or {}
    capacity = str((status.get("capacity") or {}).get(GPU_RESOURCE, "") or "")
    allocatable = str((status.get("allocatable") or {}).get(GPU_RESOURCE, "") or "")
    expected = labels.get("nvidia.com/gpu.count") or capacity
    if allocatable in ("", "0"):
        return "GPUs not advertised (no allocatable nvidia.com/gpu)"
    if expected.isdigit() and allocatable.isdigit() and int(allocatable) < int(expected):
        return f"{allocatable} of {expected} GPUs allocatable"
    return None


def pod_failing(pod: dict[str, Any]) -> str | None:
    """Why a pod is failing (its phase, or a container waiting / restarting), or None."""
    status = pod.get("status") or {}
    for st in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (st.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") and waiting.get("reason") not in ("PodInitializing",):
            return str(waiting["reason"])
        terminated = (st.get("state") or {}).get("terminated") or {}
        if terminated.get("exitCode") not in (None, 0):
            return f"exit code {terminated['exitCode']}"
    if status.get("phase") not in GOOD_PHASES:
        return str(status.get("phase") or "no phase")
    return None


def shape(node: dict[str, Any]) -> tuple[str, ...]:
    labels = _meta(node).get("labels") or {}
    info = (node.get("status") or {}).get("nodeInfo") or {}
    driver = ".".join(labels.get(f"nvidia.com/cuda.driver.{k}", "") for k in ("major", "minor",
                                                                               "rev"))
    return (labels.get("nvidia.com/gpu.product", ""), driver.strip("."),
            str(info.get("osImage", "")), str(info.get("kernelVersion", "")),
            str(info.get("containerRuntimeVersion", "")))


def problems(names: list[str], nodes: dict[str, Any] | None, pods: dict[str, Any] | None,
             events: dict[str, Any] | None,
             gpu_stack: Callable[[dict[str, Any]], bool]) -> dict[str, list[str]]:
    """node -> what is wrong there (empty where nothing is)."""
    wanted = set(names)
    found: dict[str, list[str]] = {name: [] for name in names}
    for node in (nodes or {}).get("items") or []:
        name = _meta(node).get("name")
        if name not in wanted:
            continue
        if not_ready(node):
            found[name].append("not Ready")
        short = gpu_shortfall(node)
        if short:
            found[name].append(short)
    pod_node: dict[tuple[str, str], str] = {}
    for pod in (pods or {}).get("items") or []:
        node_name = (pod.get("spec") or {}).get("nodeName")
        meta = _meta(pod)
        if node_name not in wanted or not gpu_stack(pod):
            continue
        pod_node[(str(meta.get("namespace")), str(meta.get("name")))] = node_name
        why = pod_failing(pod)
        if why:
            found[node_name].append(f"pod {meta.get('namespace')}/{meta.get('name')} {why}")
    for event in (events or {}).get("items") or []:
        if event.get("type") != "Warning":
            continue
        about = event.get("involvedObject") or {}
        node_name = about.get("name") if about.get("kind") == "Node" else pod_node.get(
            (str(about.get("namespace")), str(about.get("name"))))
        if node_name in wanted:
            note = f"Warning event {event.get('reason') or ''}".strip()
            if note not in found[node_name]:
                found[node_name].append(note)
    return found


def order(names: list[str], nodes: dict[str, Any] | None, pods: dict[str, Any] | None,
          events: dict[str, Any] | None,
          gpu_stack: Callable[[dict[str, Any]], bool]) -> list[tuple[str, str]]:
    """(node, why it has its place), problems first, then one per shape, then the rest."""
    wrong = problems(names, nodes, pods, events, gpu_stack)
    objects = {_meta(n).get("name"): n for n in (nodes or {}).get("items") or []}
    first = [(n, "problem: " + ", ".join(wrong[n])) for n in sorted(names) if wrong[n]]
    seen: set[tuple[str, ...]] = set()  # a healthy node of each kind, to compare with
    shapes, rest = [], []
    for name in sorted(names):
        if wrong[name]:
            continue
        key = shape(objects[name]) if name in objects else None
        if key is not None and key not in seen:
            seen.add(key)
            words = ", ".join(part for part in key if part) or "unlabelled"
            shapes.append((name, f"first of its kind ({words})"))
        else:
            rest.append((name, "healthy, same kind as a node already chosen"))
    return first + shapes + rest
