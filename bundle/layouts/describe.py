"""``kubectl describe nodes`` text read back into Node objects (the JSON shape).

Only what the text states is kept: name, labels, annotations, creation time, taints,
unschedulable, conditions, addresses, capacity, allocatable, system info and pod CIDRs.
The pod list, allocated totals and events of the text are not objects of their own and
are left out. Times (``Thu, 20 Nov 2026 09:29:58 +0000``) become RFC 3339 UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

_KEY = re.compile(r"^([A-Z][A-Za-z -]*):(?:\s+(.*))?$")
_ITEM = re.compile(r"^\s+([^:\s][^:]*?):\s*(.*)$")
_NONE = ("<none>", "<unset>", "")
_SYSTEM_INFO = {
    "Machine ID": "machineID",
    "System UUID": "systemUUID",
    "Boot ID": "bootID",
    "Kernel Version": "kernelVersion",
    "OS Image": "osImage",
    "Operating System": "operatingSystem",
    "Architecture": "architecture",
    "Container Runtime Version": "containerRuntimeVersion",
    "Kubelet Version": "kubeletVersion",
    "Kube-Proxy Version": "kubeProxyVersion",
}
_CONDITION_COLUMNS = {
    "Type": "type",
    "Status": "status",
    "LastHeartbeatTime": "lastHeartbeatTime",
    "LastTransitionTime": "lastTransitionTime",
    "Reason": "reason",
    "Message": "message",
}
_TIMES = ("lastHeartbeatTime", "lastTransitionTime")


def rfc3339(text: str) -> str | None:
    """``Thu, 20 Nov 2026 09:29:58 +0000`` → ``2026-11-20T09:29:58Z`` (None if not a time)."""
    try:
        when = datetime.strptime(text.strip(), "%a, %d %b %Y %H:%M:%S %z")
    except ValueError:
        return None
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_nodes(text: str) -> list[tuple[dict[str, Any], int]]:
    """Each described node as a Node object, with the 1-based line its record starts on."""
    records: list[tuple[list[str], int]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("Name:"):
            records.append(([], number))
        if records:
            records[-1][0].append(line)
    nodes = []
    for lines, start in records:
        node = _node(lines)
        if node is not None:
            nodes.append((node, start))
    return nodes


def _blocks(lines: list[str]) -> list[tuple[str, str, list[str]]]:
    """(key, value on the key's line, the indented lines that follow)."""
    blocks: list[tuple[str, str, list[str]]] = []
    for line in lines:
        match = _KEY.match(line)
        if match and not line[0].isspace():
            blocks.append((match[1], (match[2] or "").strip(), []))
        elif blocks and line.strip():
            blocks[-1][2].append(line)
    return blocks


def _node(lines: list[str]) -> dict[str, Any] | None:
    metadata: dict[str, Any] = {}
    spec: dict[str, Any] = {}
    status: dict[str, Any] = {}
    for key, value, rest in _blocks(lines):
        if key == "Name":
            metadata["name"] = value
        elif key == "Labels":
            metadata["labels"] = _pairs([value, *[r.strip() for r in rest]], "=")
        elif key == "Annotations":
            metadata["annotations"] = _pairs([value, *[r.strip() for r in rest]], ": ")
        elif key == "CreationTimestamp" and (when := rfc3339(value)):
            metadata["creationTimestamp"] = when
        elif key == "Taints":
            taints = [_taint(t) for t in [value, *[r.strip() for r in rest]] if t not in _NONE]
            if taints:
                spec["taints"] = taints
        elif key == "Unschedulable" and value in ("true", "false"):
            spec["unschedulable"] = value == "true"
        elif key == "PodCIDR" and value not in _NONE:
            spec["podCIDR"] = value
        elif key == "PodCIDRs" and value not in _NONE:
            spec["podCIDRs"] = [v for v in value.split(",") if v]
        elif key == "ProviderID" and value not in _NONE:
            spec["providerID"] = value
        elif key == "Conditions":
            status["conditions"] = _conditions(rest)
        elif key == "Addresses":
            status["addresses"] = [{"type": k, "address": v} for k, v in _items(rest)]
        elif key in ("Capacity", "Allocatable"):
            status[key.lower()] = dict(_items(rest))
        elif key == "System Info":
            status["nodeInfo"] = {_SYSTEM_INFO[k]: v for k, v in _items(rest)
                                  if k in _SYSTEM_INFO}
    if not metadata.get("name"):
        return None
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": metadata}
    if spec:
        node["spec"] = spec
    if status:
        node["status"] = status
    return node


def _pairs(entries: list[str], separator: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for entry in entries:
        if entry in _NONE:
            continue
        key, sep, value = entry.partition(separator)
        if sep:
            found[key.strip()] = value.strip()
        elif separator == "=" and key:
            found[key.strip()] = ""
    return found


def _taint(text: str) -> dict[str, str]:
    head, _, effect = text.rpartition(":")
    key, sep, value = head.partition("=")
    taint = {"key": key, "effect": effect}
    if sep:
        taint["value"] = value
    return taint


def _items(lines: list[str]) -> list[tuple[str, str]]:
    found = []
    for line in lines:
        match = _ITEM.match(line)
        if match and match[2] not in ("",):
            found.append((match[1].strip(), match[2].strip()))
    return found


def _conditions(lines: list[str]) -> list[dict[str, str]]:
    """Rows of the conditions table, cut at the header's column starts."""
    if len(lines) < 2:
        return []
    header = lines[0]
    starts = [(m.start(), _CONDITION_COLUMNS[m[0]]) for m in re.finditer(r"\S+", header)
              if m[0] in _CONDITION_COLUMNS]
    if not starts or starts[0][1] != "type":
        return []
    rows = []
    for line in lines[1:]:
        if set(line.strip()) <= {"-", " "}:
            continue
        row: dict[str, str] = {}
        for index, (start, name) in enumerate(starts):
            end = starts[index + 1][0] if index + 1 < len(starts) else len(line)
            cell = line[start:end].strip()
            if name in _TIMES:
                cell = rfc3339(cell) or ""
            if cell:
                row[name] = cell
        if row.get("type"):
            rows.append(row)
    return rows
