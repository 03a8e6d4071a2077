"""GPU sharing (time-slicing / MPS) as the device plugin reads it from its ConfigMap.

The ClusterPolicy names the ConfigMap (``spec.devicePlugin.config.name``) and its default
key (``spec.devicePlugin.config.default``); a node picks another key with the label
``nvidia.com/device-plugin.config``. Each key holds a plugin config file, normally YAML:

    version: v1
    sharing:
      timeSlicing:                      # or mps:
        renameByDefault: false          # true: advertised as <name>.shared
        failRequestsGreaterThanOne: true
        resources:
        - name: nvidia.com/gpu
          replicas: 4

:func:`parse_document` reads it with the safe YAML loader and never raises; a config
it cannot read is left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bundle.kube import ClusterPolicy, ConfigMap, Node, Pod
from bundle.yamldoc import load_yaml

CONFIG_LABEL = "nvidia.com/device-plugin.config"
SHARED_SUFFIX = ".shared"
TIME_SLICING = "time-slicing"
MPS = "mps"

def parse_document(text: str) -> Any:
    """The plugin config as YAML (JSON is YAML too); None when it cannot be read."""
    try:
        return load_yaml(text)
    except ValueError:
        return None


# ------------------------------------------------------------ sharing config


@dataclass(frozen=True, slots=True)
class SharedResource:
    """One shared resource: ``name`` as configured, ``advertised`` as the plugin names it.

    ``rename`` is kept for display: current plugins parse it and ignore it with a warning.
    """

    name: str
    replicas: int
    advertised: str
    rename: str | None = None

    def names(self) -> set[str]:
        return {self.name, self.advertised} | ({self.rename} if self.rename else set())


@dataclass(frozen=True, slots=True)
class SharingConfig:
    """One key of the device-plugin ConfigMap, as far as sharing goes."""

    key: str
    strategy: str | None                 # "time-slicing", "mps" or None (no sharing)
    fail_requests_greater_than_one: bool  # effective (MPS forces it when unset)
    fail_flag: bool | None               # as written
    rename_by_default: bool
    resources: tuple[SharedResource, ...]
    readable: bool = True

    def shared(self, resource: str) -> SharedResource | None:
        """The shared resource a pod's request for ``resource`` refers to."""
        for item in self.resources:
            if resource in (item.advertised, item.rename):
                return item
        for item in self.resources:
            if resource == item.name and not self.rename_by_default:
                return item
        return None


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def sharing_config(key: str, text: str) -> SharingConfig:
    """Read one ConfigMap value; an unreadable value gives a config marked unreadable."""
    document = parse_document(text)
    if not isinstance(document, dict):
        return SharingConfig(key, None, False, None, False, (), readable=False)
    sharing = document.get("sharing")
    sharing = sharing if isinstance(sharing, dict) else {}
    chosen: tuple[str, dict[str, Any]] | None = None
    for section, strategy in (("mps", MPS), ("timeSlicing", TIME_SLICING)):
        body = sharing.get(section)
        if isinstance(body, dict) and isinstance(body.get("resources"), list) \
                and body["resources"]:
            chosen = (strategy, body)
            break
    if chosen is None:
        return SharingConfig(key, None, False, None, False, ())
    strategy, body = chosen
    rename_default = _bool(body.get("renameByDefault")) or False
    flag = _bool(body.get("failRequestsGreaterThanOne"))
    resources: list[SharedResource] = []
    for item in body["resources"]:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        replicas = _int(item.get("replicas"))
        if replicas is None:
            continue
        name = item["name"]
        rename = item.get("rename") if isinstance(item.get("rename"), str) else None
        advertised = name + SHARED_SUFFIX if rename_default else name
        resources.append(SharedResource(name, replicas, advertised, rename))
    effective = flag if flag is not None else strategy == MPS
    return SharingConfig(key, strategy, effective, flag, rename_default, tuple(resources))


@dataclass(frozen=True, slots=True)
class SharingSetup:
    """The device-plugin config the ClusterPolicy points at, read key by key."""

    configmap_name: str | None
    default_key: str | None
    configmap: ConfigMap | None
    configs: Mapping[str, SharingConfig] = field(default_factory=dict)

    def key_for(self, node: Node | None) -> str | None:
        label = node.labels.get(CONFIG_LABEL) if node is not None else None
        if label and label in self.configs:
            return label
        if self.default_key and self.default_key in self.configs:
            return self.default_key
        if len(self.configs) == 1:
            return next(iter(self.configs))
        return None

    def for_node(self, node: Node | None) -> SharingConfig | None:
        key = self.key_for(node)
        return self.configs.get(key) if key is not None else None


def _policy_config(policy: ClusterPolicy | None) -> tuple[str | None, str | None]:
    if policy is None:
        return None, None
    plugin = policy.spec.get("devicePlugin")
    config = plugin.get("config") if isinstance(plugin, dict) else None
    if not isinstance(config, dict):
        return None, None
    name = config.get("name")
    default = config.get("default")
    return (name if isinstance(name, str) and name else None,
            default if isinstance(default, str) and default else None)


def setup(policy: ClusterPolicy | None, configmaps: Iterable[ConfigMap],
          namespace: str | None) -> SharingSetup:
    name, default = _policy_config(policy)
    if name is None:
        return SharingSetup(None, default, None)
    candidates = [cm for cm in configmaps if cm.metadata.name == name]
    candidates.sort(key=lambda cm: cm.metadata.namespace != namespace)
    configmap = candidates[0] if candidates else None
    configs: dict[str, SharingConfig] = {}
    if configmap is not None:
        for key, text in sorted(configmap.data.items()):
            if isinstance(text, str):
                configs[key] = sharing_config(key, text)
    return SharingSetup(name, default, configmap, configs)


# --------------------------------------------------------------- change times


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def configmap_changed(configmap: ConfigMap) -> tuple[datetime, str] | None:
    """When the ConfigMap's content last changed, and where that was read.

    The newest ``metadata.managedFields[].time`` (every write records one), else an
    annotation whose name says it holds an update time, else ``creationTimestamp``.
    """
    meta = configmap.metadata
    newest: tuple[datetime, str] | None = None
    fields = meta.managed_fields
    for index, entry in enumerate(fields if isinstance(fields, list) else []):
        when = parse_time(entry.get("time")) if isinstance(entry, dict) else None
        if when is not None and (newest is None or when > newest[0]):
            newest = (when, f"managedFields/{index}/time")
    if newest is not None:
        return newest
    for key, value in sorted(meta.annotations.items()):
        lowered = key.lower()
        if any(word in lowered for word in ("updated", "last-modified", "timestamp",
                                            "changed")):
            when = parse_time(value)
            if when is not None and (newest is None or when > newest[0]):
                newest = (when, f"annotations/{key}")
    if newest is not None:
        return newest
    created = parse_time(meta.creation_timestamp)
    return (created, "creationTimestamp") if created is not None else None


def pod_started(pod: Pod, prefer: str | None = None) -> datetime | None:
    """When the pod's current main containers started (the plugin read its config then).

    With ``prefer``, containers whose name contains it are used when there are any (the
    plugin container, not its config-manager sidecar).
    """
    statuses = pod.status.container_statuses
    if prefer is not None and any(prefer in s.name for s in statuses):
        statuses = [s for s in statuses if prefer in s.name]
    starts: list[datetime] = []
    for status in statuses:
        running = status.state.running
        if isinstance(running, dict):
            when = parse_time(running.get("startedAt"))
            if when is not None:
                starts.append(when)
    if starts:
        return max(starts)
    return parse_time(pod.status.start_time)
