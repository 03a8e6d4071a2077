"""Small bundles for RT011-RT014 and the toolkit's hostPath volumes: nodes with a config
dump, pods with events and logs. Wordings come from public threads (named by the tests)."""

from __future__ import annotations

from typing import Any

from kit.objects import cluster_policy, event, lists, node, pod, runtime_class

GRPC = 'plugins."io.containerd.grpc.v1.cri"'


def dump(default: str = "runc", nvidia: str | None = 'runtime_type = "io.containerd.runc.v2"',
         binary: str = "/usr/local/nvidia/toolkit/nvidia-container-runtime",
         cdi: bool | None = None) -> str:
    """A containerd 1.7 (config version 2) dump: runc, and an nvidia runtime whose table
    holds ``nvidia`` (None: no nvidia runtime)."""
    text = f'version = 2\n\n[{GRPC}]\n'
    if cdi is not None:
        text += f"  enable_cdi = {'true' if cdi else 'false'}\n"
    text += f'\n[{GRPC}.containerd]\n  default_runtime_name = "{default}"\n'
    if nvidia is not None:
        text += (f"\n[{GRPC}.containerd.runtimes.nvidia]\n  {nvidia}\n"
                 f"\n[{GRPC}.containerd.runtimes.nvidia.options]\n"
                 f'  BinaryName = "{binary}"\n')
    text += (f'\n[{GRPC}.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
             f"\n[{GRPC}.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n")
    return text


def gpu_pod(name: str, node_name: str, namespace: str = "ml", *, phase: str = "Running",
            runtime: str | None = None) -> dict[str, Any]:
    return pod(name, node_name, namespace=namespace, phase=phase, gpus=1,
               runtime_class=runtime)


def files(nodes: dict[str, dict[str, str]], pods: list[dict[str, Any]],
          events: list[dict[str, Any]] | None = None,
          logs: dict[str, str] | None = None,
          policy: dict[str, Any] | None | bool = True) -> dict[str, Any]:
    """A bundle: ``nodes`` maps node name to its node files, ``logs`` maps
    ``ns/pod/container`` to a log text."""
    kinds: dict[str, list[dict[str, Any]]] = {
        "nodes": [node(n, gpus=1) for n in nodes], "pods": pods, "events": events or [],
        "runtimeclasses": [runtime_class("nvidia")]}
    if policy is True:
        kinds["clusterpolicies"] = [cluster_policy(True)]
    elif isinstance(policy, dict):
        kinds["clusterpolicies"] = [policy]
    found: dict[str, Any] = lists(**kinds)
    for name, node_files in nodes.items():
        for rel, text in node_files.items():
            found[f"nodes/{name}/{rel}"] = text
    for where, text in (logs or {}).items():
        found[f"logs/{where}.log"] = text
    return found


__all__ = ["dump", "event", "files", "gpu_pod", "pod"]
