"""Inline cluster objects for the number-gate tests (SC, CFG001-003, DRV007)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analyzers.facts import Facts
from analyzers.results.models import Finding
from analyzers.rule import Context, Rule
from bundle import open_bundle
from kit.bundles import kube_node, smi_log, write_dir
from kit.objects import lists

GPU = "nvidia.com/gpu"


def gpu_node(name: str, capacity: int | None = None, allocatable: int | None = None, *,
             resource: str = GPU, extra: dict[str, tuple[int, int]] | None = None,
             labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
             gpu_label: bool = True, unschedulable: bool = False) -> dict[str, Any]:
    """A node; ``capacity``/``allocatable`` of ``resource`` (None: not on the Node)."""
    return kube_node(name, capacity, allocatable, resource=resource, extra=extra,
                     other={"cpu": "32", "memory": "256Gi", "pods": "110"}, labels=labels,
                     gpu_label=gpu_label, taints=taints or None, unschedulable=unschedulable)


def container(name: str = "main", image: str = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
              limits: dict[str, int] | None = None, env: dict[str, str] | None = None,
              privileged: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "image": image}
    if limits:
        body["resources"] = {"limits": {k: str(v) for k, v in limits.items()}}
    if env:
        body["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if privileged:
        body["securityContext"] = {"privileged": True}
    return body


def workload(name: str, node: str | None = None, *, namespace: str = "ml",
             gpus: int = 0, resource: str = GPU, containers: list[dict[str, Any]] | None = None,
             init: list[dict[str, Any]] | None = None, phase: str | None = None,
             reason: str | None = None, message: str | None = None,
             tolerations: list[dict[str, str]] | None = None,
             node_selector: dict[str, str] | None = None,
             affinity: dict[str, Any] | None = None, owner: str | None = None,
             scheduling_message: str | None = None) -> dict[str, Any]:
    """A user pod. Without ``phase``: Running when bound, Pending when not."""
    if containers is None:
        containers = [container(limits={resource: gpus} if gpus else None)]
    spec: dict[str, Any] = {"containers": containers}
    if init:
        spec["initContainers"] = init
    if node:
        spec["nodeName"] = node
    if tolerations:
        spec["tolerations"] = tolerations
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    status: dict[str, Any] = {"phase": phase or ("Running" if node else "Pending")}
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    if scheduling_message:
        status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                 "reason": "Unschedulable", "message": scheduling_message}]
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                    "name": owner, "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def pod_event(pod: str, reason: str, message: str, *, namespace: str = "ml", count: int = 1,
              kind: str = "Pod", host: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{pod}.{abs(hash(message)) % 10**8}", "namespace": namespace},
        "involvedObject": {"kind": kind, "namespace": namespace, "name": pod},
        "reason": reason, "message": message, "type": "Warning", "count": count,
        "lastTimestamp": "2026-11-29T13:59:00Z"}
    if host:
        body["source"] = {"component": "kubelet", "host": host}
    return body


def insufficient(total: int, short: int, resource: str = GPU) -> str:
    rest = total - short
    other = f", {rest} node(s) didn't match Pod's node affinity/selector" if rest else ""
    return (f"0/{total} nodes are available: {short} Insufficient {resource}{other}. "
            f"preemption: 0/{total} nodes are available: {short} No preemption victims found "
            "for incoming pod.")


def bundle_files(*, nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                 events: list[dict[str, Any]] | None = None, files: dict[str, Any] | None = None,
                 **kinds: list[dict[str, Any]]) -> dict[str, Any]:
    """A bundle of these lists (``kinds``: other cluster/<kind>.json lists) and raw
    ``files`` (node artifacts, logs)."""
    content = lists(nodes=nodes, pods=pods, events=events or [], **kinds)
    content.update(files or {})
    return content


def raw_findings(tmp_path: Path, rule: type[Rule], *, nodes: list[dict[str, Any]],
                 pods: list[dict[str, Any]], events: list[dict[str, Any]] | None = None,
                 files: dict[str, Any] | None = None,
                 **kinds: list[dict[str, Any]]) -> list[Finding]:
    """One rule's findings before the engine drops links to absent findings."""
    content = lists(nodes=nodes, pods=pods, events=events or [], **kinds)
    content.update(files or {})
    path = write_dir(tmp_path / "raw", content)
    with open_bundle(path) as bundle:
        return list(rule().check(Context(bundle, Facts(bundle), [rule])))


def smi_gpu(bus_id: str = "00000000:3B:00.0", product: str = "NVIDIA A100-SXM4-40GB",
            brand: str = "NVIDIA", util: str = "0 %", used_mib: int = 14029,
            total_mib: int = 40960, power: str = "21.37 W",
            processes: list[tuple[int, str, int]] | None = None) -> str:
    procs = "".join(
        f"<process_info><gpu_instance_id>N/A</gpu_instance_id><compute_instance_id>N/A"
        f"</compute_instance_id><pid>{pid}</pid><type>C</type><process_name>{name}"
        f"</process_name><used_memory>{mem} MiB</used_memory></process_info>"
        for pid, name, mem in processes or [])
    return (f'<gpu id="{bus_id}">\n<product_name>{product}</product_name>\n'
            f"<product_brand>{brand}</product_brand>\n<uuid>GPU-{bus_id[9:11]}000000-0000-0000-"
            f"0000-000000000000</uuid>\n<pci><pci_bus_id>{bus_id}</pci_bus_id></pci>\n"
            f"<fb_memory_usage><total>{total_mib} MiB</total><reserved>512 MiB</reserved>"
            f"<used>{used_mib} MiB</used><free>{total_mib - used_mib} MiB</free>"
            f"</fb_memory_usage>\n<utilization><gpu_util>{util}</gpu_util>"
            f"<memory_util>0 %</memory_util></utilization>\n"
            f"<gpu_power_readings><power_draw>{power}</power_draw></gpu_power_readings>\n"
            f"<processes>{procs}</processes>\n</gpu>\n")


def smi_xml(*gpus: str) -> str:
    return smi_log(gpus, timestamp="Sun Nov 29 13:58:00 2026", cuda="12.8", indent="")
