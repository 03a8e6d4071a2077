"""Which host file and socket the Container Toolkit was told to edit, and whether that is
the file and socket the node's runtime really uses.

The toolkit reads ``CONTAINERD_CONFIG`` / ``RUNTIME_CONFIG`` and ``CONTAINERD_SOCKET`` /
``RUNTIME_SOCKET`` from its environment. The operator fills that environment from the
ClusterPolicy's ``spec.toolkit.env`` (Helm values ``toolkit.env`` end up there) and
rewrites the paths to container paths (``/runtime/config-dir/…``) before the pod starts,
so the *host* paths are read here from the ClusterPolicy and the Helm values, never from
the pod's own env. The pod still says which host directories it really got: each
container path of its env lies under a ``volumeMounts`` entry whose volume is a
``hostPath`` (``containerd-config`` at ``/runtime/config-dir/``, ``containerd-socket`` at
``/runtime/sock-dir/``), so the host path is the volume's path joined with the rest. Those
are read when neither the ClusterPolicy nor the Helm values set the variable (the
operator's own defaults for the runtime, or a bundle without the ClusterPolicy). Unset
everywhere, the toolkit edits ``/etc/containerd/config.toml`` and talks to
``/run/containerd/containerd.sock``: the stock layout.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from analyzers.facts.distro import STOCK, Layout
from analyzers.results.models import Evidence
from bundle.evidence import clip, join_pointer
from bundle.kube import ClusterPolicy, Container, HelmRevision, Pod

CONFIG_KEYS = ("CONTAINERD_CONFIG", "RUNTIME_CONFIG")
SOCKET_KEYS = ("CONTAINERD_SOCKET", "RUNTIME_SOCKET")


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    value: str
    origin: str          # "ClusterPolicy cluster-policy" / "Helm release gpu-operator rev 3"
    evidence: Evidence


@dataclass(frozen=True, slots=True)
class ToolkitTarget:
    """The host config file and socket the toolkit edits, and where each was set
    (None: the toolkit's default)."""

    config: str
    socket: str
    config_setting: Setting | None
    socket_setting: Setting | None


def _env_list(env: object, origin: str, path: str, pointer: str) -> dict[str, Setting]:
    found: dict[str, Setting] = {}
    if not isinstance(env, list):
        return found
    for index, entry in enumerate(env):
        if not isinstance(entry, dict):
            continue
        name, value = entry.get("name"), entry.get("value")
        if isinstance(name, str) and isinstance(value, str) and value:
            found[name] = Setting(name, value, origin, Evidence(
                path=path, pointer=join_pointer(pointer, index),
                excerpt=clip(f"{name}={value}")))
    return found


PATH_KEYS = CONFIG_KEYS + SOCKET_KEYS + ("RUNTIME_DROP_IN_CONFIG",)


def host_volumes(pod: Pod) -> dict[str, tuple[int, str]]:
    """The pod's hostPath volumes by name: (index in ``spec.volumes``, host path)."""
    return {v.name: (i, v.host_path.path) for i, v in enumerate(pod.spec.volumes)
            if v.host_path is not None and v.host_path.path.startswith("/")}


def host_path(pod: Pod, container: Container, value: str,
              volumes: dict[str, tuple[int, str]] | None = None) -> tuple[str, int] | None:
    """The host path behind container path ``value`` in ``container`` of ``pod``, and
    the index of the hostPath volume it comes through (None: not under a hostPath).
    ``volumes``: :func:`host_volumes` of the pod, when the caller asks more than once."""
    volumes = host_volumes(pod) if volumes is None else volumes
    best: tuple[str, int] | None = None
    depth = -1
    for mount in container.volume_mounts:
        where = volumes.get(mount.name)
        target = mount.mount_path.rstrip("/")
        if where is None or not target:
            continue
        if value != target and not value.startswith(target + "/"):
            continue
        if len(target) > depth:  # the deepest mount holds the path
            depth = len(target)
            rest = value[len(target):].lstrip("/")
            best = (posixpath.join(where[1], rest) if rest else where[1], where[0])
    return best


def pod_settings(pod: Pod) -> dict[str, Setting]:
    """The toolkit pod's path variables turned into host paths through its hostPath
    volumes (a value under no hostPath is left out: it is not a host path). Of a
    variable a container lists twice, the first entry is read: each entry costs a pass
    over the container's mounts, so a pod listing one name thousands of times would
    cost their product."""
    found: dict[str, Setting] = {}
    volumes = host_volumes(pod)
    containers = list(pod.spec.init_containers) + list(pod.spec.containers)
    for container in containers:
        tried: set[str] = set()
        for env in container.env:
            if env.name not in PATH_KEYS or not env.value or env.name in found \
                    or env.name in tried:
                continue
            tried.add(env.name)
            mapped = host_path(pod, container, env.value, volumes)
            if mapped is None:
                continue
            path, index = mapped
            volume = pod.spec.volumes[index]
            found[env.name] = Setting(
                env.name, path, f"toolkit pod {pod.namespace}/{pod.name} (hostPath volume "
                f"{volume.name})", Evidence(
                    path=pod.source_path,
                    pointer=join_pointer(pod.source_pointer, "spec", "volumes", index,
                                         "hostPath", "path"),
                    excerpt=clip(f"{env.name}={env.value} -> hostPath {volume.name}: "
                                 f"{volume.host_path.path if volume.host_path else ''}")))
    return found


def settings(policy: ClusterPolicy | None,
             helm: dict[str, list[HelmRevision]],
             toolkit_pod: Pod | None = None) -> dict[str, Setting]:
    """Toolkit env values by name: the ClusterPolicy's win over the Helm values (the
    operator reads the policy; Helm values only reach it through an upgrade). Path
    variables that neither sets come from the toolkit pod's hostPath volumes."""
    found: dict[str, Setting] = {}
    for release, revisions in sorted(helm.items()):
        if not revisions:
            continue
        latest = revisions[-1]
        env = latest.value("toolkit.env")
        if env is not None:
            found.update(_env_list(env, f"Helm release {release} revision {latest.revision}",
                                   latest.source_path,
                                   join_pointer(latest.source_pointer, "values", "toolkit",
                                                "env")))
    if policy is not None:
        toolkit: Any = policy.spec.get("toolkit")
        env = toolkit.get("env") if isinstance(toolkit, dict) else None
        found.update(_env_list(env, f"ClusterPolicy {policy.metadata.name}",
                               policy.source_path,
                               join_pointer(policy.source_pointer, "spec", "toolkit", "env")))
    if toolkit_pod is not None:
        for name, setting in pod_settings(toolkit_pod).items():
            group = next((g for g in (CONFIG_KEYS, SOCKET_KEYS) if name in g), (name,))
            if not any(k in found for k in group):
                found[name] = setting
    return found


def target(found: dict[str, Setting]) -> ToolkitTarget:
    config = next((found[k] for k in CONFIG_KEYS if k in found), None)
    socket = next((found[k] for k in SOCKET_KEYS if k in found), None)
    return ToolkitTarget(config.value if config else STOCK.config,
                         socket.value if socket else STOCK.socket, config, socket)


def config_used(path: str, layout: Layout, main: str) -> bool:
    """Whether an edit of ``path`` reaches the runtime of a node with ``layout``: the file
    it runs with, a template it is rebuilt from, or a file in its drop-in directory."""
    path = posixpath.normpath(path)
    if path in (main, layout.config, layout.toolkit_config, *layout.templates):
        return True
    directory = layout.dropin_dir
    return directory is not None and posixpath.dirname(path) == directory


def socket_used(path: str, layout: Layout, socket: str | None) -> bool:
    return _run(path) in {_run(layout.socket), _run(socket or layout.socket)}


def _run(path: str) -> str:
    """``/var/run`` is a link to ``/run`` on every systemd host."""
    path = posixpath.normpath(path)
    return "/run" + path[len("/var/run"):] if path.startswith("/var/run/") else path
