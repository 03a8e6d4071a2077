"""A scene: everything one sample bundle shows, gathered before it is written.

Builders append objects, container logs and per-node artifacts to a ``Scene``;
``write_scene`` then emits every path of bundle-format.md in collection order
and the manifest that lists them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .core import Bundle, iso_nano, list_json, plus
from .k8s import Obj, by_namespace_name
from .model import Host

EVENT_TTL_S = 3600  # kube-apiserver --event-ttl default


@dataclass
class LogLine:
    at: dt.datetime
    text: str


@dataclass
class ContainerLog:
    namespace: str
    pod: str
    container: str
    lines: list[LogLine] | None  # None: kubectl logs failed
    error: str | None = None
    previous: bool = False  # kubectl logs --previous (the container's last instance)


@dataclass
class SandboxAttempt:
    """One RunPodSandbox call kubelet made on a node (for the node's journals)."""

    at: dt.datetime
    pod: str
    namespace: str
    pod_uid: str
    handler: str
    ok: bool
    containers: list[tuple[str, dt.datetime]] = field(default_factory=list)  # name, started


@dataclass
class Scene:
    hosts: list[Host]
    created_at: dt.datetime
    operator_namespace: str = "gpu-operator"
    version: Obj = field(default_factory=dict)
    namespaces: list[Obj] = field(default_factory=list)
    nodes: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    events: list[Obj] = field(default_factory=list)
    daemonsets: list[Obj] = field(default_factory=list)
    deployments: list[Obj] = field(default_factory=list)
    runtimeclasses: list[Obj] = field(default_factory=list)
    clusterpolicies: list[Obj] = field(default_factory=list)
    configmaps: list[Obj] = field(default_factory=list)
    resourcequotas: list[Obj] = field(default_factory=list)
    helm: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    logs: list[ContainerLog] = field(default_factory=list)
    # node name -> writer of that node's artifacts (called in host order)
    node_writers: dict[str, Callable[[Bundle], None]] = field(default_factory=dict)
    sandbox_attempts: dict[str, list[SandboxAttempt]] = field(default_factory=dict)
    node_images: dict[str, set[str]] = field(default_factory=dict)
    _next_ip: dict[str, int] = field(default_factory=dict)

    def host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)

    def gpu_hosts(self) -> list[Host]:
        return [h for h in self.hosts if h.gpu is not None]

    def pod_ip(self, host: Host) -> str:
        n = self._next_ip.get(host.name, 2)
        self._next_ip[host.name] = n + 1
        return host.pod_ip(n)

    def log(self, namespace: str, pod: str, container: str, lines: list[LogLine]) -> None:
        self.logs.append(ContainerLog(namespace, pod, container, lines))

    def log_error(self, namespace: str, pod: str, container: str, error: str) -> None:
        self.logs.append(ContainerLog(namespace, pod, container, None, error))


def _event_last_seen(ev: Obj) -> str:
    if ev.get("series"):
        return str(ev["series"]["lastObservedTime"])
    return str(ev.get("lastTimestamp") or ev.get("eventTime"))


def live_events(scene: Scene) -> list[Obj]:
    """Events the API server still holds at collection time (TTL one hour)."""
    cutoff = plus(scene.created_at, -EVENT_TTL_S)
    keep = []
    for ev in scene.events:
        seen = dt.datetime.fromisoformat(_event_last_seen(ev).replace("Z", "+00:00"))
        first = ev.get("firstTimestamp") or ev.get("eventTime")
        started = dt.datetime.fromisoformat(str(first).replace("Z", "+00:00"))
        if cutoff <= seen and started <= scene.created_at:
            keep.append(ev)
    return by_namespace_name(keep)


def render_log(lines: list[LogLine]) -> str:
    return "".join(f"{iso_nano(line.at)} {line.text}\n" for line in lines)


def _kubectl(*args: str) -> list[str]:
    return ["kubectl", *args]


def write_scene(scene: Scene, bundle: Bundle) -> None:
    ns = scene.operator_namespace
    bundle.add(
        "cluster/version.json",
        json.dumps(scene.version, indent=2) + "\n",
        _kubectl("version", "-o", "json"),
    )
    cluster_files: list[tuple[str, list[Obj], list[str]]] = [
        (
            "nodes",
            sorted(scene.nodes, key=lambda o: o["metadata"]["name"]),
            _kubectl("get", "nodes", "-o", "json"),
        ),
        ("pods", by_namespace_name(scene.pods), _kubectl("get", "pods", "-A", "-o", "json")),
        ("events", live_events(scene), _kubectl("get", "events", "-A", "-o", "json")),
        (
            "daemonsets",
            by_namespace_name(scene.daemonsets),
            _kubectl("get", "daemonsets", "-A", "-o", "json"),
        ),
        (
            "deployments",
            by_namespace_name(scene.deployments),
            _kubectl("get", "deployments", "-A", "-o", "json"),
        ),
        (
            "namespaces",
            by_namespace_name(scene.namespaces),
            _kubectl("get", "namespaces", "-o", "json"),
        ),
        (
            "runtimeclasses",
            by_namespace_name(scene.runtimeclasses),
            _kubectl("get", "runtimeclasses", "-o", "json"),
        ),
        (
            "resourcequotas",
            by_namespace_name(scene.resourcequotas),
            _kubectl("get", "resourcequotas", "-A", "-o", "json"),
        ),
        (
            "clusterpolicies",
            scene.clusterpolicies,
            _kubectl("get", "clusterpolicies.nvidia.com", "-o", "json"),
        ),
        ("nvidiadrivers", [], _kubectl("get", "nvidiadrivers.nvidia.com", "-o", "json")),
        (
            "configmaps",
            by_namespace_name(scene.configmaps),
            _kubectl("get", "configmaps", "-n", ns, "-o", "json"),
        ),
    ]
    for name, items, command in cluster_files:
        bundle.add(f"cluster/{name}.json", list_json(items), command)
    for release, revisions in sorted(scene.helm.items()):
        bundle.add(
            f"cluster/helm/{release}.json",
            json.dumps(revisions, indent=2) + "\n",
            _kubectl("get", "secrets", "-n", ns, "-l", f"owner=helm,name={release}", "-o", "json"),
        )
    for log in sorted(scene.logs, key=lambda x: (x.namespace, x.pod, x.container, x.previous)):
        suffix = ".previous.log" if log.previous else ".log"
        path = f"logs/{log.namespace}/{log.pod}/{log.container}{suffix}"
        command = _kubectl(
            "logs",
            "-n",
            log.namespace,
            log.pod,
            "-c",
            log.container,
            "--timestamps",
            "--tail=5000",
            "--since=168h",
        )
        if log.previous:
            command.append("--previous")
        if log.lines is None:
            bundle.fail(path, command, log.error or "", exit_code=1)
        else:
            bundle.add(path, render_log(log.lines), command)
    for host in scene.hosts:
        writer = scene.node_writers.get(host.name)
        if writer:
            writer(bundle)
