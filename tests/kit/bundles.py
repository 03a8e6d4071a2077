"""Build tiny format-v1 bundles inside tests: a directory, a .tgz or a .tar."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

Content = str | bytes | dict[str, Any] | list[Any]

GPU = "nvidia.com/gpu"
CPU_PODS = {"cpu": "32", "pods": "110"}


def kube_list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items),
            "metadata": {"resourceVersion": ""}}


def kube_node(name: str, capacity: int | None = None, allocatable: int | None = None, *,
              resource: str = GPU, extra: Mapping[str, tuple[int, int]] | None = None,
              other: Mapping[str, str] = CPU_PODS, labels: Mapping[str, str] | None = None,
              hostname: bool = True, gpu_label: bool = True,
              annotations: Mapping[str, str] | None = None, created: str | None = None,
              taints: list[dict[str, str]] | None = None, unschedulable: bool = False,
              conditions: list[dict[str, str]] | None = None,
              node_info: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A Node as ``kubectl get nodes -o json`` lists it: every test kit builds its nodes here.

    ``capacity``/``allocatable`` of ``resource`` (None: not on the Node; allocatable
    defaults to capacity); ``extra``: more resources as (capacity, allocatable);
    ``other``: the non-GPU capacity, allocatable alike. Labels: the hostname label
    (``hostname``), ``nvidia.com/gpu.present=true`` (``gpu_label``), then ``labels``.
    ``taints`` None leaves ``spec.taints`` out; ``conditions`` and ``node_info``
    (``status.nodeInfo``) likewise.
    """
    all_labels = {"kubernetes.io/hostname": name} if hostname else {}
    if gpu_label:
        all_labels["nvidia.com/gpu.present"] = "true"
    all_labels.update(labels or {})
    cap, alloc = dict(other), dict(other)
    if capacity is not None:
        cap[resource] = str(capacity)
        alloc[resource] = str(capacity if allocatable is None else allocatable)
    for more, (total, free) in (extra or {}).items():
        cap[more] = str(total)
        alloc[more] = str(free)
    metadata: dict[str, Any] = {"name": name, "labels": all_labels}
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    if created is not None:
        metadata["creationTimestamp"] = created
    spec: dict[str, Any] = {}
    if taints is not None:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"capacity": cap, "allocatable": alloc}
    if conditions is not None:
        status["conditions"] = conditions
    if node_info is not None:
        status["nodeInfo"] = dict(node_info)
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": spec,
            "status": status}


SMI_HEAD = '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'


def smi_log(gpus: Sequence[str], *, driver: str = "570.195.03", timestamp: str | None = None,
            cuda: str | None = None, attached: int | None = None, indent: str = "\t",
            newline: str = "\n", doctype: bool = True) -> str:
    """``nvidia-smi -q -x`` around ``gpus`` (whole ``<gpu>`` elements, each kit writes its
    own): the document every test kit writes. The header fields (those given) come one
    per line, ``indent``-ed; ``newline=""`` puts the document on one line."""
    fields = (("timestamp", timestamp), ("driver_version", driver), ("cuda_version", cuda),
              ("attached_gpus", str(len(gpus) if attached is None else attached)))
    head = SMI_HEAD if doctype else '<?xml version="1.0" ?>\n'
    body = "".join(f"{indent}<{tag}>{value}</{tag}>{newline}"
                   for tag, value in fields if value is not None)
    return f"{head}<nvidia_smi_log>{newline}{body}{''.join(gpus)}</nvidia_smi_log>\n"


def _bytes(content: Content) -> bytes:
    if isinstance(content, bytes):
        return content
    if isinstance(content, str):
        return content.encode()
    return orjson.dumps(content, option=orjson.OPT_INDENT_2)


def manifest(files: Mapping[str, bytes], failed: list[dict[str, Any]] | None = None,
             **extra: Any) -> dict[str, Any]:
    items = [{"path": path, "command": ["test"], "node": _node_of(path), "exit_code": 0,
              "started_at": "2026-11-29T14:00:00Z", "duration_ms": 1, "bytes": len(data),
              "truncated": False, "error": None} for path, data in sorted(files.items())]
    for gap in failed or []:
        items.append({"command": ["test"], "exit_code": 1, "bytes": 0, "truncated": False,
                      "node": _node_of(gap["path"]), **gap})
    data = {
        "format": "gpu-triage-bundle", "format_version": 1,
        "collector": {"name": "gpu-triage-collect", "version": "0.1.0"},
        "created_at": "2026-11-29T14:00:00Z",
        "cluster": {"context": "test", "server_version": "v1.37.1"},
        "operator_namespace": "gpu-operator",
        "options": {}, "redaction": {"enabled": True, "counts": {}},
        "items": items,
    }
    data.update(extra)
    return data


def _node_of(path: str) -> str | None:
    parts = path.split("/")
    return parts[1] if parts[0] == "nodes" and len(parts) > 2 else None


def encode(files: Mapping[str, Content], failed: list[dict[str, Any]] | None = None,
           **extra: Any) -> dict[str, bytes]:
    raw = {path: _bytes(content) for path, content in files.items()}
    if "manifest.json" not in raw:
        raw = {"manifest.json": _bytes(manifest(raw, failed, **extra)), **raw}
    return raw


def write_dir(root: Path, files: Mapping[str, Content], failed: list[dict[str, Any]] | None = None,
              **extra: Any) -> Path:
    for path, data in encode(files, failed, **extra).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root


def write_tar(target: Path, files: Mapping[str, Content], *, top: str = "gpu-triage-test",
              gzip: bool = True, failed: list[dict[str, Any]] | None = None) -> Path:
    mode = "w:gz" if gzip else "w"
    with tarfile.open(target, mode) as archive:
        for path, data in encode(files, failed).items():
            info = tarfile.TarInfo(f"{top}/{path}" if top else path)
            info.size = len(data)
            info.mtime = 1_700_000_000
            archive.addfile(info, io.BytesIO(data))
    return target


def pack_dir(source: Path, target: Path) -> Path:
    """A .tgz of an existing bundle directory under one top-level directory."""
    with tarfile.open(target, "w:gz") as archive:
        manifest_path = source / "manifest.json"
        archive.add(manifest_path, arcname=f"{source.name}/manifest.json")
        for path in sorted(source.rglob("*")):
            if path.is_file() and path != manifest_path:
                archive.add(path, arcname=f"{source.name}/{path.relative_to(source)}")
    return target
