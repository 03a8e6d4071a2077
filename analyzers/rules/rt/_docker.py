"""RT015: the runtime gate on nodes whose kubelet talks to Docker (dockershim or
cri-dockerd), where containerd's configuration is not what starts containers.

Public sources of the facts and wordings:

- dockershim refuses every RuntimeClass handler but its own: ``RuntimeHandler "nvidia"
  not supported`` (https://github.com/NVIDIA/gpu-operator/issues/236,
  https://github.com/NVIDIA/gpu-operator/issues/250); cri-dockerd passed handlers to
  Docker only from https://github.com/Mirantis/cri-dockerd/pull/350 on.
- with such Docker the ``nvidia`` runtime must be Docker's default runtime
  (https://github.com/NVIDIA/k8s-device-plugin/pull/1125); ``nvidia-ctk runtime
  configure --runtime=docker [--set-as-default]`` writes ``runtimes.nvidia`` (and
  ``default-runtime``) into ``/etc/docker/daemon.json``.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzers import commands as sh
from analyzers.rule import Context
from bundle import specs
from bundle.kube import Pod

DAEMON_JSON = specs.DOCKER_DAEMON_JSON


HANDLER_REFUSED = "sandbox-runtimehandler-not-supported"


NVIDIA = "nvidia"


@dataclass(frozen=True, slots=True)
class DockerConfig:
    """What ``/etc/docker/daemon.json`` says about the nvidia runtime."""

    path: str
    runtimes: frozenset[str]
    default: str | None
    runtimes_line: int | None
    default_line: int | None


def _line_of(text: str, key: str) -> int | None:
    return next((number for number, line in enumerate(text.splitlines(), 1)
                 if f'"{key}"' in line), None)


def read_daemon_json(ctx: Context, node_name: str) -> DockerConfig | str:
    """The node's daemon.json, or why it cannot be judged."""
    daemon = ctx.facts.node(node_name).docker_daemon
    if daemon is None:
        return f"{node_name}: {ctx.facts.node(node_name).path(DAEMON_JSON)} was not collected"
    path, text, data = daemon.path, daemon.text, daemon.settings
    if data is None:
        return f"{node_name}: {path} {daemon.unreadable}"
    runtimes = data.get("runtimes")
    default = data.get("default-runtime")
    return DockerConfig(path, frozenset(runtimes) if isinstance(runtimes, dict) else frozenset(),
                        default if isinstance(default, str) else None,
                        _line_of(text, "runtimes"), _line_of(text, "default-runtime"))


def _gpu_pods(ctx: Context, node_name: str) -> list[Pod]:
    """Live pods on the node that need the driver injected: GPU requests, or the GPU
    stack's own pods (operands, a standalone plugin)."""
    found = []
    for pod in ctx.facts.pods_by_node.get(node_name, []):
        if pod.terminated:
            continue
        asks = any(key.startswith("nvidia.com/") for c in pod.spec.containers
                   for key in c.resources.limits)
        if asks or pod.namespace == ctx.facts.operator_namespace or \
                ctx.facts.components.get("device-plugin") is not None and \
                pod in ctx.facts.components["device-plugin"].pods:
            found.append(pod)
    return found


def _remediation(node_name: str) -> str:
    return sh.lines(
        sh.node_shell(sh.node(node_name)),
        "# read first: which runtimes Docker knows and which is its default",
        "docker info --format '{{json .Runtimes}} {{.DefaultRuntime}}'",
        "cat /etc/docker/daemon.json",
        "nvidia-ctk --version",
        "# then register nvidia as Docker's default runtime and restart Docker (this node only):",
        "# nvidia-ctk runtime configure --runtime=docker --set-as-default",
        "# systemctl restart docker",
        "# on dockershim, remove runtimeClassName from GPU pods (or move the node to containerd)",
    )
