"""OP004, OP005, OP008: DCGM exporter, Fabric Manager and the device plugin."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analyzers import refs
from analyzers.facts import driver
from analyzers.facts.gpu import count as gpu_count
from analyzers.facts.gpu import is_gpu_resource
from analyzers.facts.podlogs import ContainerLog
from analyzers.facts.preconditions import stack_component
from analyzers.facts.refusals import CreateRefusal
from analyzers.facts.secureboot import refusal as secure_boot_refusal
from analyzers.refs import Link
from analyzers.results.models import Evidence
from analyzers.rule import Context
from bundle.evidence import Locator
from bundle.kube import Node

_UUID = re.compile(r"\bGPU-[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}\b")


_XID = re.compile(r"Xid=(\d{1,4})")


_NVML_MISSING = "dp-nvml-missing"


_NVML_INIT = "dp-nvml-init-failed"


_REGISTER = "dp-register-failed"


_NO_DEVICES = "dp-no-devices-found"


_CONFIG = "dp-config-invalid"


_UNHEALTHY = ("dp-xid-unhealthy", "dp-healthcheck-unhealthy")


_MARKER = "dp-retrieving-plugins"


_TEXT = {
    _NVML_MISSING: "it cannot load NVML (libnvidia-ml.so.1): the runtime did not inject the "
                   "driver libraries into the container",
    _NVML_INIT: "NVML failed to initialise",
    _REGISTER: "it could not start its gRPC server or register with kubelet",
    _NO_DEVICES: "it found no GPUs and waits indefinitely",
    _CONFIG: "its sharing configuration was rejected",
}


@dataclass
class PluginPicture:
    """What one node's device plugin pod and logs say."""

    reasons: list[str] = field(default_factory=list)
    # NVML missing because the driver cannot serve the GPU (not an injection problem),
    # and whether the cause named is only inferred (injection, with nothing linked).
    driver_down: bool = False
    inferred: bool = False
    evidence: list[Evidence] = field(default_factory=list)
    causes: list[Link] = field(default_factory=list)
    logs: list[ContainerLog] = field(default_factory=list)


def _advertised(obj: Node | None) -> tuple[bool, str]:
    if obj is None:
        return True, ""
    shown = []
    advertised = False
    for resource in sorted({*obj.status.capacity, *obj.status.allocatable}):
        if not is_gpu_resource(resource):
            continue
        cap = obj.status.capacity.get(resource)
        alloc = obj.status.allocatable.get(resource)
        advertised |= (gpu_count(alloc) or 0) > 0
        shown.append(f"{resource} capacity {cap or 0}, allocatable {alloc or 0}")
    return advertised, "; ".join(shown) or "no nvidia.com/* resource in capacity"


def _driver_down(ctx: Context, name: str) -> list[Link]:
    """The findings saying the node's driver cannot load or drive its GPU."""
    found = [refs.link("DRV004", name)] if secure_boot_refusal(ctx.facts, name) is not None else []
    if driver.unusable(ctx.facts, name) is not None:
        found.append(refs.link("DRV003", name))
    if driver.gpu_refusal(ctx.facts, name) is not None:
        found.append(refs.link("DRV008", name))
    install = ctx.facts.driver_kernel.get(name)
    if install is not None and install.broken:
        found.append(refs.link("OP010", name))
    return found


_HANDLER_REFUSED = "sandbox-runtimehandler-not-supported"


def _docker_refused(cri: str) -> str:
    return (f"its sandbox cannot be created: the node's CRI is Docker ({cri}), which runs "
            "no 'nvidia' RuntimeClass handler (see RT015)")


def _refused_plugin(ctx: Context) -> CreateRefusal | None:
    """A device-plugin DaemonSet (the operator's or a standalone one) whose pods are
    refused at creation."""
    for _, refusal in sorted(ctx.facts.refused_daemonsets.items()):
        ds = refusal.daemonset
        if ds.metadata.name == "nvidia-device-plugin-daemonset" or \
                stack_component(ds) == "device-plugin":
            return refusal
    return None


def _ev(locator: Locator) -> Evidence:
    return Evidence(path=locator.path, line=locator.line, excerpt=locator.excerpt)


def _dedupe(items: list[Evidence]) -> list[Evidence]:
    seen: set[tuple[str, int | None, str | None]] = set()
    result = []
    for item in items:
        key = (item.path, item.line, item.pointer)
        if key not in seen:
            seen.add(key)
            result.append(item)
    return result
