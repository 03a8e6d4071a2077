"""Inline mini-bundles for rule cases: a bundle written inside a case's TOML.

A case may spell its bundle out instead of pointing at one on disk::

    [[case]]
    base = "healthy-operator"            # optional: a base bundle kept as data
    drop = ["nodes/gpu-b/host/uname.txt"]
    failed = [{ path = "nodes/gpu-a/host/lspci.txt", error = "lspci: not found" }]

    [case.files]                         # whole files, by bundle path
    "nodes/gpu-a/host/uname.txt" = "Linux gpu-a 6.8.0-88-generic ...\\n"
    "cluster/clusterpolicies.json" = []  # an array at a .json path: a Kubernetes List
    "cluster/version.json" = { gitVersion = "v1.31.0" }   # a table: that JSON object

    [case.json]                          # JSON documents written as given
    "cluster/helm/gpu-operator.json" = [{ revision = 1, status = "deployed" }]

    [[case.patch]]                       # change one item of a listed file
    file = "cluster/pods.json"
    name = "nvidia-driver-daemonset-gpu-a"
    merge = { status = { phase = "Pending" } }
    unset = [["status", "containerStatuses", "nvidia-driver-ctr", "state", "running"]]

    [[case.add]]                         # one more item in a listed file
    file = "cluster/events.json"
    item = { kind = "Event", reason = "FailedCreatePodSandBox" }

``merge`` merges tables key by key; a list whose entries are all tables with a ``name``
merges entry by entry on that name (as kubectl's strategic merge does for containers);
any other value replaces. ``unset`` removes keys after the merge; a step through such a
list names the entry. ``remove = true`` in a patch deletes the item.

Bases live in ``analyzers/data/case_bases/<name>/`` as plain bundle files without a
manifest; the manifest is always written here, one collected item per file plus the
``failed`` ones (those fields the case gives, the rest filled in).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

BASES = Path(__file__).resolve().parents[1] / "data" / "case_bases"
INLINE_KEYS = frozenset({"base", "files", "json", "drop", "patch", "add", "failed"})
_PATCH_KEYS = frozenset({"file", "name", "namespace", "merge", "unset", "remove"})
_ADD_KEYS = frozenset({"file", "item"})
_FAILED_KEYS = frozenset({"path", "error", "error_kind", "exit_code", "command", "node"})
_STAMP = "2026-01-01T00:00:00Z"


@dataclass(frozen=True, slots=True)
class Raw:
    """A JSON document from ``json``: written as given (a top-level array stays one)."""
    value: Any


class InlineError(ValueError):
    """An inline bundle that cannot be built; the message says where and why."""


@dataclass(frozen=True, slots=True)
class Patch:
    file: str
    name: str
    namespace: str | None
    merge: Mapping[str, Any] | None
    unset: tuple[tuple[str, ...], ...]
    remove: bool


@dataclass(frozen=True, slots=True)
class Inline:
    """What a case says about its bundle, checked but not yet written."""
    base: str | None
    files: tuple[tuple[str, Any], ...] = ()
    drop: tuple[str, ...] = ()
    patches: tuple[Patch, ...] = ()
    adds: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    failed: tuple[Mapping[str, Any], ...] = ()


def base_names(bases: Path = BASES) -> list[str]:
    return sorted(p.name for p in bases.iterdir() if p.is_dir()) if bases.is_dir() else []


def _bundle_path(value: object, where: str, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise InlineError(f"{where}: '{key}' must name a file by its bundle path")
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts or value.endswith("/") or value == "manifest.json":
        raise InlineError(f"{where}: '{key}' = {value!r} is not a path inside a bundle "
                          "(relative, no '..', not manifest.json)")
    return value


def _table(value: object, where: str, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InlineError(f"{where}: '{key}' must be a table")
    return value


def _list_of_tables(value: object, where: str, key: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InlineError(f"{where}: '{key}' must be an array of tables")
    return value


def _unknown(entry: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    extra = set(entry) - allowed
    if extra:
        raise InlineError(f"{where}: unknown key(s) {', '.join(sorted(extra))}; "
                          f"expected {', '.join(sorted(allowed))}")


def parse(entry: Mapping[str, Any], where: str, bases: Path = BASES) -> Inline:
    """The inline part of one case (``where`` names the file and case for errors)."""
    base = entry.get("base")
    if base is not None and base not in base_names(bases):
        raise InlineError(f"{where}: no base bundle named {base!r}; the bases are "
                          f"{', '.join(base_names(bases)) or 'none'}")
    files: list[tuple[str, Any]] = []
    for path, content in _table(entry.get("files", {}), where, "files").items():
        _bundle_path(path, where, "files")
        if isinstance(content, list) and not path.endswith(".json"):
            raise InlineError(f"{where}: files.{path!r} is an array, which only a .json "
                              "path takes (written as a Kubernetes List)")
        if isinstance(content, list) and not all(isinstance(i, dict) for i in content):
            raise InlineError(f"{where}: files.{path!r}: a List holds tables (objects) only")
        if not isinstance(content, str | dict | list):
            raise InlineError(f"{where}: files.{path!r} must be text, a table or an array")
        files.append((path, content))
    for path, content in _table(entry.get("json", {}), where, "json").items():
        _bundle_path(path, where, "json")
        if any(path == seen for seen, _ in files):
            raise InlineError(f"{where}: {path!r} is in both 'files' and 'json'")
        files.append((path, Raw(content)))
    drop = entry.get("drop", [])
    if not isinstance(drop, list):
        raise InlineError(f"{where}: 'drop' must be an array of bundle paths")
    dropped = tuple(_bundle_path(p, where, "drop") for p in drop)
    patches = []
    for number, raw in enumerate(_list_of_tables(entry.get("patch"), where, "patch"), 1):
        at = f"{where} patch #{number}"
        _unknown(raw, _PATCH_KEYS, at)
        name, namespace = raw.get("name"), raw.get("namespace")
        if not isinstance(name, str) or not (namespace is None or isinstance(namespace, str)):
            raise InlineError(f"{at}: 'name' (and 'namespace', if given) must be text")
        merge = raw.get("merge")
        if merge is not None:
            _table(merge, at, "merge")
        unset = raw.get("unset", [])
        if not isinstance(unset, list) or not all(
                isinstance(u, list) and u and all(isinstance(s, str) for s in u) for u in unset):
            raise InlineError(f"{at}: 'unset' must be an array of key paths "
                              '(each an array of keys, like ["status", "phase"])')
        remove = raw.get("remove", False)
        if remove is not False and remove is not True:
            raise InlineError(f"{at}: 'remove' must be true or false")
        if not (merge or unset or remove) or (remove and (merge or unset)):
            raise InlineError(f"{at}: give 'merge' and/or 'unset', or 'remove = true'")
        patches.append(Patch(_bundle_path(raw.get("file"), at, "file"), name, namespace,
                             merge, tuple(tuple(u) for u in unset), remove))
    adds = []
    for number, raw in enumerate(_list_of_tables(entry.get("add"), where, "add"), 1):
        at = f"{where} add #{number}"
        _unknown(raw, _ADD_KEYS, at)
        adds.append((_bundle_path(raw.get("file"), at, "file"), _table(raw.get("item"), at,
                                                                          "item")))
    failed = _list_of_tables(entry.get("failed"), where, "failed")
    for number, gap in enumerate(failed, 1):
        at = f"{where} failed #{number}"
        _unknown(gap, _FAILED_KEYS, at)
        _bundle_path(gap.get("path"), at, "path")
        if not isinstance(gap.get("error"), str) or not gap["error"]:
            raise InlineError(f"{at}: 'error' (what went wrong collecting it) is required")
    return Inline(base, tuple(files), dropped, tuple(patches), tuple(adds), tuple(failed))


def _merge(target: Any, change: Any) -> Any:
    if isinstance(target, dict) and isinstance(change, dict):
        merged = dict(target)
        for key, value in change.items():
            merged[key] = _merge(merged[key], value) if key in merged else value
        return merged
    if _named(target) and _named(change):
        merged_list = list(target)
        index = {entry["name"]: i for i, entry in enumerate(merged_list)}
        for entry in change:
            if entry["name"] in index:
                at = index[entry["name"]]
                merged_list[at] = _merge(merged_list[at], entry)
            else:
                merged_list.append(entry)
        return merged_list
    return change


def _named(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(v, dict) and isinstance(v.get("name"), str) for v in value)


def _unset(item: Any, keys: tuple[str, ...], where: str) -> None:
    current = item
    for step, key in enumerate(keys):
        if isinstance(current, list) and _named(current):
            found = [v for v in current if v["name"] == key]
            if not found:
                break
            if step == len(keys) - 1:
                current.remove(found[0])
                return
            current = found[0]
        elif isinstance(current, dict) and key in current:
            if step == len(keys) - 1:
                del current[key]
                return
            current = current[key]
        else:
            break
    raise InlineError(f"{where}: unset {list(keys)}: no such key in the item")


def _listed(files: dict[str, Any], path: str, where: str) -> list[Any]:
    if path not in files:
        raise InlineError(f"{where}: the bundle has no {path}")
    document = files[path]
    if isinstance(document, Raw):
        document = document.value
    if isinstance(document, list):
        document = {"apiVersion": "v1", "kind": "List", "items": document,
                    "metadata": {"resourceVersion": ""}}
    if isinstance(document, bytes | str):
        try:
            document = orjson.loads(document)
        except orjson.JSONDecodeError:
            raise InlineError(f"{where}: {path} is not JSON") from None
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        raise InlineError(f"{where}: {path} is not a Kubernetes List")
    files[path] = document
    items: list[Any] = document["items"]
    return items


def _matches(item: Any, patch: Patch) -> bool:
    meta = item.get("metadata", {}) if isinstance(item, dict) else {}
    return bool(meta.get("name") == patch.name and (
        patch.namespace is None or meta.get("namespace") == patch.namespace))


def _read_base(name: str, bases: Path) -> dict[str, Any]:
    root = bases / name
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _encoded(content: Any) -> bytes:
    if isinstance(content, Raw):
        return orjson.dumps(content.value, option=orjson.OPT_INDENT_2)
    if isinstance(content, bytes):
        return content
    if isinstance(content, str):
        return content.encode()
    if isinstance(content, list):
        content = {"apiVersion": "v1", "kind": "List", "items": content,
                   "metadata": {"resourceVersion": ""}}
    return orjson.dumps(content, option=orjson.OPT_INDENT_2)


def contents(inline: Inline, where: str, bases: Path = BASES) -> dict[str, bytes]:
    """Every file of the bundle (manifest aside), base first, then the case's changes."""
    files: dict[str, Any] = _read_base(inline.base, bases) if inline.base else {}
    files.update(inline.files)
    for path in inline.drop:
        if files.pop(path, None) is None:
            raise InlineError(f"{where}: drop {path!r}: the bundle has no such file")
    for number, patch in enumerate(inline.patches, 1):
        at = f"{where} patch #{number}"
        items = _listed(files, patch.file, at)
        hits = [i for i, item in enumerate(items) if _matches(item, patch)]
        if len(hits) != 1:
            raise InlineError(f"{at}: {len(hits)} items named {patch.name!r} in {patch.file}; "
                              "a patch changes exactly one (add 'namespace')")
        if patch.remove:
            del items[hits[0]]
            continue
        item = _merge(items[hits[0]], patch.merge or {})
        item = orjson.loads(orjson.dumps(item))
        for keys in patch.unset:
            _unset(item, keys, at)
        items[hits[0]] = item
    for number, (path, item) in enumerate(inline.adds, 1):
        files.setdefault(path, [])
        _listed(files, path, f"{where} add #{number}").append(dict(item))
    return {path: _encoded(content) for path, content in sorted(files.items())}


def _node_of(path: str) -> str | None:
    parts = path.split("/")
    return parts[1] if parts[0] == "nodes" and len(parts) > 2 else None


def manifest(files: Mapping[str, bytes], failed: tuple[Mapping[str, Any], ...]) -> bytes:
    items: list[dict[str, Any]] = [
        {"path": path, "command": ["case"], "node": _node_of(path), "exit_code": 0,
         "started_at": _STAMP, "duration_ms": 1, "bytes": len(data), "truncated": False,
         "error": None} for path, data in files.items()]
    items += [{"command": ["case"], "node": _node_of(gap["path"]), "exit_code": 1,
               "started_at": _STAMP, "duration_ms": 1, "bytes": 0, "truncated": False,
               **gap} for gap in failed]
    return orjson.dumps({
        "format": "gpu-triage-bundle", "format_version": 1,
        "collector": {"name": "gpu-triage-collect", "version": "0.1.0"},
        "created_at": _STAMP, "cluster": {"context": "case", "server_version": "v1.31.0"},
        "operator_namespace": "gpu-operator", "options": {},
        "redaction": {"enabled": True, "counts": {}}, "items": items,
    }, option=orjson.OPT_INDENT_2)


def write(inline: Inline, target: Path, where: str, bases: Path = BASES) -> Path:
    """Write the bundle as a directory at ``target`` (emptied first) and return it."""
    files = contents(inline, where, bases)
    if target.exists():
        shutil.rmtree(target)
    for path, data in {"manifest.json": manifest(files, inline.failed), **files}.items():
        out = target / path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    return target
