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

No YAML library is available, so :func:`parse_document` reads the small block-style
subset such files use (mappings, sequences, scalars, comments, one-line flow
collections) and JSON. It never raises; what it cannot read it leaves out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bundle.kube import ClusterPolicy, ConfigMap, Node, Pod

CONFIG_LABEL = "nvidia.com/device-plugin.config"
SHARED_SUFFIX = ".shared"
TIME_SLICING = "time-slicing"
MPS = "mps"

# ------------------------------------------------------------------ YAML subset


@dataclass(slots=True)
class _Line:
    indent: int
    text: str


def _strip_comment(line: str) -> str:
    quote: str | None = None
    for index, char in enumerate(line):
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index]
    return line


def _lines(text: str) -> list[_Line]:
    found: list[_Line] = []
    for raw in text.replace("\t", "  ").splitlines():
        body = _strip_comment(raw).rstrip()
        stripped = body.lstrip(" ")
        if not stripped or stripped in ("---", "..."):
            continue
        found.append(_Line(len(body) - len(stripped), stripped))
    return found


def _split_key(text: str) -> tuple[str, str] | None:
    """``key: value`` → (key, value); None when the text is not a mapping entry."""
    quote: str | None = None
    for index, char in enumerate(text):
        if quote is not None:
            if char == quote:
                quote = None
            continue
        if char in "'\"" and index == 0:
            quote = char
        elif char == ":" and (index + 1 == len(text) or text[index + 1] == " "):
            key = text[:index].strip()
            if key[:1] in "[{":
                return None
            return _unquote(key), text[index + 1:].strip()
    return None


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _split_flow(body: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    current = ""
    for char in body:
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def scalar(text: str) -> Any:
    """A YAML scalar: quoted string, bool, null, integer, flow collection or plain text."""
    text = text.strip()
    if not text:
        return None
    if text[0] in "'\"":
        return _unquote(text)
    if text.startswith("[") and text.endswith("]"):
        return [scalar(part) for part in _split_flow(text[1:-1])]
    if text.startswith("{") and text.endswith("}"):
        result: dict[str, Any] = {}
        for part in _split_flow(text[1:-1]):
            entry = _split_key(part)
            if entry is not None:
                result[entry[0]] = scalar(entry[1])
        return result
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered in ("null", "~"):
        return None
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text)
    return text


class _Reader:
    def __init__(self, lines: list[_Line]) -> None:
        self.lines = lines
        self.pos = 0

    def peek(self) -> _Line | None:
        return self.lines[self.pos] if self.pos < len(self.lines) else None

    def block(self, indent: int) -> Any:
        line = self.peek()
        if line is None or line.indent < indent:
            return None
        if line.text == "-" or line.text.startswith("- "):
            return self.sequence(line.indent)
        return self.mapping(line.indent)

    def value_after_key(self, rest: str, indent: int) -> Any:
        if rest in ("|", "|-", "|+", ">", ">-", ">+"):
            return self.literal(indent, folded=rest.startswith(">"))
        if rest:
            return scalar(rest)
        nxt = self.peek()
        if nxt is None:
            return None
        if nxt.indent > indent:
            return self.block(nxt.indent)
        if nxt.indent == indent and (nxt.text == "-" or nxt.text.startswith("- ")):
            return self.sequence(indent)
        return None

    def literal(self, indent: int, *, folded: bool) -> str:
        parts: list[str] = []
        while (line := self.peek()) is not None and line.indent > indent:
            parts.append(line.text)
            self.pos += 1
        return (" " if folded else "\n").join(parts)

    def mapping(self, indent: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while (line := self.peek()) is not None and line.indent == indent:
            if line.text == "-" or line.text.startswith("- "):
                break
            entry = _split_key(line.text)
            self.pos += 1
            if entry is None:
                continue
            key, rest = entry
            result[key] = self.value_after_key(rest, indent)
        return result

    def sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while (line := self.peek()) is not None and line.indent == indent:
            if not (line.text == "-" or line.text.startswith("- ")):
                break
            rest = line.text[1:].lstrip(" ")
            if not rest:
                self.pos += 1
                nxt = self.peek()
                items.append(self.block(nxt.indent) if nxt and nxt.indent > indent else None)
                continue
            entry = _split_key(rest) if rest[0] not in "[{'\"" else None
            if entry is None:
                self.pos += 1
                items.append(scalar(rest))
                continue
            # "- key: value" opens a mapping whose keys sit where "key" starts.
            inner = indent + (len(line.text) - len(rest))
            self.lines[self.pos] = _Line(inner, rest)
            items.append(self.mapping(inner))
        return items


def parse_document(text: str) -> Any:
    """JSON or the block-YAML subset above; None when nothing could be read."""
    stripped = text.strip()
    if stripped[:1] in "{[":
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    try:
        lines = _lines(text)
        if not lines:
            return None
        return _Reader(lines).block(lines[0].indent)
    except (IndexError, ValueError, RecursionError):
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
    fields = (meta.model_extra or {}).get("managedFields")
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
    return parse_time((pod.status.model_extra or {}).get("startTime"))
