"""Check a bundle against format v1: every spec path present, failed with a recorded
error, or missing — and every present file parseable.

Support engineers run this on a bundle they receive before they trust its analysis.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import orjson

from bundle import specs, tomlsafe
from bundle.jsonsafe import json_too_dense
from bundle.nvsmi import parse_nvidia_smi
from bundle.nvsmi_text import looks_like_text, parse_nvidia_smi_text
from bundle.reader import Bundle
from bundle.textfiles import parse_journal

CLUSTER_PATHS = (
    specs.VERSION, specs.NODES, specs.PODS,
    specs.EVENTS, specs.DAEMONSETS, specs.DEPLOYMENTS,
    specs.NAMESPACES, specs.RUNTIMECLASSES, specs.RESOURCEQUOTAS,
    specs.CLUSTERPOLICIES, specs.NVIDIADRIVERS, specs.CONFIGMAPS,
)
NODE_PATHS = (
    specs.CONTAINERD_DUMP, specs.CONTAINERD_VERSION, specs.CONTAINERD_JOURNAL,
    specs.KUBELET_JOURNAL, specs.DMESG, specs.NVIDIA_SMI, specs.SYSTEMD_CONTAINERD,
    specs.UNAME, specs.OS_RELEASE, specs.CMDLINE, specs.MODULES,
    specs.SECUREBOOT, specs.NVIDIA_CTK, specs.UNATTENDED_UPGRADES,
)
LISTS = {p for p in CLUSTER_PATHS if p != specs.VERSION}


@dataclass(frozen=True, slots=True)
class Check:
    path: str
    status: str  # ok | failed (the collector recorded an error) | missing | malformed
    detail: str = ""


def _parse_error(bundle: Bundle, path: str) -> str | None:
    data = bundle.read_bytes(path)
    if data is None:
        return "unreadable"
    try:
        if path.endswith(".json"):
            dense = json_too_dense(data)
            if dense is not None:
                return dense
            value = orjson.loads(data)
            if path in LISTS and not (isinstance(value, dict)
                                      and isinstance(value.get("items"), list)):
                return "not a List with items"
        elif path.endswith(".jsonl"):
            bad = [line for entry, line, _ in parse_journal(data.decode("utf-8", "replace"))
                   if entry is None]
            if bad:
                return f"{len(bad)} line(s) are not JSON objects (first: line {bad[0]})"
        elif path.endswith(".toml"):
            tomlsafe.parse(data.decode("utf-8", "replace"))
        elif path.endswith(".xml") and looks_like_text(data):
            parse_nvidia_smi_text(data)
            return "the text report of nvidia-smi -q, not the XML of -q -x (analyze reads it)"
        elif path.endswith(".xml"):
            parse_nvidia_smi(data)
    except Exception as exc:  # noqa: BLE001 - any parser failure is the answer here
        return " ".join(str(exc).split())[:200] or type(exc).__name__
    return None


def _check(bundle: Bundle, path: str) -> Check:
    item = bundle.manifest.item(path)
    if bundle.has(path):
        error = _parse_error(bundle, path)
        return Check(path, "malformed", error) if error else Check(path, "ok")
    if item is not None and item.error:
        return Check(path, "failed", item.error)
    if item is not None:
        return Check(path, "missing", "listed in the manifest but absent from the bundle")
    return Check(path, "missing", "neither in the bundle nor in the manifest")


def verify(bundle: Bundle) -> Iterator[Check]:
    """Every format-v1 spec path of this bundle, judged."""
    yield _check(bundle, specs.MANIFEST) if bundle.manifest.items else Check(
        specs.MANIFEST, "malformed", "no items: the collector recorded no steps")
    for path in CLUSTER_PATHS:
        yield _check(bundle, path)
    nodes = sorted({item.node for item in bundle.manifest.items if item.node}
                   | set(bundle.node_names))
    for node in nodes:
        for relative in NODE_PATHS:
            yield _check(bundle, specs.node_file(node, relative))
    for item in bundle.manifest.items:
        if item.bytes is not None and bundle.has(item.path) and item.error is None:
            size = bundle.size(item.path)
            if size is not None and size != item.bytes:
                yield Check(item.path, "malformed",
                            f"manifest says {item.bytes} bytes, the file has {size}")
