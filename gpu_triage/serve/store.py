"""What ``serve`` reads of the bundle: object lists, container logs and node files.

Everything goes through the opened :class:`bundle.Bundle` (its caps, refusals, link
and name checks, and the layout adapters of must-gather and troubleshoot bundles), one
request at a time (a lock: the archive reader's spool file is shared). Object lists
are parsed once and kept as the bundle holds them -- the JSON kubectl wrote, not the
analyzer's views -- so what a client gets back equals what was collected.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bundle import Bundle, specs
from bundle.reader import MAX_LIST_ITEMS, is_k8s_name
from gpu_triage.serve.catalog import Kind

Obj = dict[str, Any]


@dataclass(frozen=True)
class Absent:
    """Why the bundle cannot answer: said in the ``Status`` of a 404."""

    message: str


class Store:
    def __init__(self, bundle: Bundle) -> None:
        self._bundle = bundle
        self._lock = threading.Lock()
        self._lists: dict[str, list[Obj] | Absent] = {}
        self._logs: dict[tuple[str, str, str, bool], str] = {}
        for path in bundle.paths_under(specs.LOGS_DIR):
            parts = path.split("/")
            if len(parts) != 4 or not parts[3].endswith(".log"):
                continue
            previous = parts[3].endswith(specs.PREVIOUS_LOG_SUFFIX)
            container = parts[3][:-len(specs.PREVIOUS_LOG_SUFFIX if previous else ".log")]
            if all(is_k8s_name(s) for s in (parts[1], parts[2], container)):
                self._logs[(parts[1], parts[2], container, previous)] = path

    @property
    def display(self) -> str:
        return self._bundle.display

    @property
    def layout(self) -> str:
        return self._bundle.layout

    def collected_at(self) -> datetime:
        """When the bundle was made (ages in tables count up to it); now if unknown."""
        stamp = self._bundle.manifest.created_at
        when = parse_time(stamp) if isinstance(stamp, str) else None
        return when or datetime.now(UTC)

    def objects(self, kind: Kind) -> list[Obj] | Absent:
        """The items of ``kind``'s list file, each with its ``kind`` and ``apiVersion``."""
        with self._lock:
            found = self._lists.get(kind.resource)
            if found is None:
                found = self._lists[kind.resource] = self._read(kind)
            return found

    def _read(self, kind: Kind) -> list[Obj] | Absent:
        bundle = self._bundle
        if not bundle.has(kind.path):
            item = bundle.manifest.item(kind.path)
            why = f": {item.error}" if item is not None and item.error else ""
            return Absent(f"the bundle did not collect {kind.qualified} ({kind.path} is not in "
                          f"{bundle.layout} bundle {bundle.display}{why})")
        raw = bundle.read_json(kind.path)
        items = raw.get("items") if isinstance(raw, dict) else None
        if not isinstance(items, list):
            problem = bundle.damaged().get(kind.path)
            why = problem.message if problem is not None else f"not a List of {kind.kind}"
            return Absent(f"the bundle's {kind.path} could not be read: {why}")
        listed: list[Obj] = []
        for item in items[:MAX_LIST_ITEMS]:
            if isinstance(item, dict) and item.get("kind", kind.kind) == kind.kind:
                listed.append({"apiVersion": kind.group_version, "kind": kind.kind, **item})
        return listed

    def version(self) -> Obj | None:
        with self._lock:
            raw = self._bundle.read_json(specs.VERSION)
        server = raw.get("serverVersion") if isinstance(raw, dict) else None
        return server if isinstance(server, dict) else None

    def log_path(self, namespace: str, pod: str, container: str, previous: bool) -> str | None:
        return self._logs.get((namespace, pod, container, previous))

    def read(self, path: str) -> bytes | None:
        """A file of the bundle by its format v1 path (None: not in the bundle)."""
        with self._lock:
            return self._bundle.read_bytes(path)

    def node_names(self) -> list[str]:
        return self._bundle.node_names

    def node_files(self, node: str) -> list[str] | None:
        """The paths under ``nodes/<node>/``, relative to it; None for an unknown node."""
        if node not in self._bundle.node_names:
            return None
        prefix = specs.node_dir(node)
        return [path[len(prefix):] for path in self._bundle.paths_under(prefix)]


def parse_time(stamp: str) -> datetime | None:
    """An RFC 3339 time as Kubernetes writes it (``2026-11-20T09:29:05Z``); None if not."""
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
