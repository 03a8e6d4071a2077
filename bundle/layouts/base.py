"""The machinery every foreign layout shares: a virtual Source and safe converters.

A :class:`VirtualSource` presents the files of another Source under format v1 paths.
Each virtual path is either a pass-through (an original file under a new name, read
straight from the inner Source) or derived (bytes computed from one or more original
files, once, on first read). A derived file whose inputs turn out to be unusable reads
as absent, never as an invented empty file: a rule that needs it is then ``skipped``.

The converters are total: YAML that does not parse, uses aliases (``kubectl -o yaml``
never writes them; a YAML bomb does), is not an object, or is larger than the YAML caps
(:data:`YAML_MAX_BYTES`, ``Limits.max_yaml_nodes``); JSON that does not parse; a gzip
member that is corrupt or expands past the caps -- each becomes a recorded problem under
the original file's name, and the derived file is absent.

A gzip file inside the bundle is held to the caps of the archive around it: its output
counts against the member cap and against what the archive left of the total-size cap,
and its expansion ratio is checked once :data:`INNER_RATIO_FLOOR` came out (the outer
archive's 64 MiB floor would let a few KiB expand to 64 MiB of text, whose parsing is
the bomb). What comes out is then read by the same parsers, under the same budgets, as
a file of a format v1 bundle.
"""

from __future__ import annotations

import base64
import io
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import orjson
import yaml

from bundle import specs
from bundle.container import Limits, Source
from bundle.gzstream import Decompressed
from bundle.jsonsafe import json_too_dense
from bundle.manifest import Manifest
from bundle.problems import ProblemLog

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CHUNK = 1 << 20
INNER_RATIO_FLOOR = 1 << 20
"""Bytes a gzip file inside the bundle may expand to before its ratio is checked.
``nvidia-bug-report.log.gz`` compresses about 10-20 times, far below the ratio cap."""
YAML_MAX_BYTES = 64 << 20
"""A YAML file of a foreign layout larger than this is not parsed. PyYAML builds about
450 bytes of node objects per node and parses about 2 MiB/s of ``kubectl -o yaml``; the
node cap (``Limits.max_yaml_nodes``) is the finer budget, this one bounds single huge
scalars, which are one node each."""
_YAML_MARKS = (b":", b"-", b",", b"[", b"{", b"?")

Maker = Callable[[], bytes | None]


@dataclass(slots=True)
class _Entry:
    origins: tuple[str, ...]
    passthrough: str | None = None
    maker: Maker | None = None


# The format v1 paths a gpu-triage collector always tries (docs/bundle-format.md); a
# trailing "/" stands for the files under it. Node paths are relative to nodes/<node>/.
# Files written only where something exists (fabric manager journal, CDI specs,
# unattended-upgrades) are left out: their absence says nothing.
V1_CLUSTER_PATHS = (
    specs.VERSION, specs.NODES, specs.PODS, specs.EVENTS,
    specs.DAEMONSETS, specs.DEPLOYMENTS, specs.NAMESPACES,
    specs.RUNTIMECLASSES, specs.RESOURCEQUOTAS,
    specs.CLUSTERPOLICIES, specs.NVIDIADRIVERS, specs.CONFIGMAPS,
    specs.HELM_DIR, specs.LOGS_DIR,
)
V1_NODE_PATHS = (
    specs.CONTAINERD_DUMP, specs.CONTAINERD_VERSION, specs.CONTAINERD_FILES_DIR,
    specs.CONTAINERD_JOURNAL, specs.KUBELET_JOURNAL, specs.DMESG, specs.NVIDIA_SMI,
    specs.SYSTEMD_CONTAINERD, specs.UNAME, specs.OS_RELEASE, specs.CMDLINE,
    specs.MODULES, specs.SECUREBOOT, specs.NVIDIA_CTK,
)


@dataclass(frozen=True, slots=True)
class LayoutReport:
    """What reading a foreign layout left out, none of it a problem to act on.

    ``missing``: format v1 paths this bundle had no equivalent for (node paths as
    ``nodes/*/<path>``, listed when no node has it; a trailing ``/`` stands for the
    files under it); the rules that need them are ``skipped``. ``notes``: files of the
    bundle not read on purpose, or read in another way than usual, each with why (a
    troubleshoot symbolic link that repeats a file read elsewhere; nodes taken from
    must-gather's labels file). ``partial``: format v1 paths this bundle provides only in
    part, each with what is left out (must-gather lists the pods of one namespace); the
    rules that read them are ``partial``, not ``passed``."""

    missing: tuple[str, ...] = ()
    notes: tuple[tuple[str, str], ...] = ()
    partial: tuple[tuple[str, str], ...] = ()


def missing_paths(paths: Iterable[str]) -> tuple[str, ...]:
    """The format v1 paths of :data:`V1_CLUSTER_PATHS` and :data:`V1_NODE_PATHS` that
    ``paths`` (a presented bundle's) do not provide."""
    present = set()
    node_files = set()
    for path in paths:
        parts = path.split("/", 2)
        if parts[0] == "nodes" and len(parts) == 3:
            node_files.add(parts[2])
        else:
            present.add(path)

    def provided(wanted: str, have: set[str]) -> bool:
        return any(p.startswith(wanted) for p in have) if wanted.endswith("/") \
            else wanted in have

    missing = [p for p in V1_CLUSTER_PATHS if not provided(p, present)]
    missing += [specs.any_node(p) for p in V1_NODE_PATHS if not provided(p, node_files)]
    return tuple(missing)


@dataclass(frozen=True, slots=True)
class Adapted:
    """A foreign bundle presented as format v1: the Source, the layout's name, the
    manifest the layout implies (its items are the failures the layout recorded), and
    what the layout could not provide (:class:`LayoutReport`)."""

    source: Source
    layout: str
    manifest: Manifest
    origins: dict[str, tuple[str, ...]] = field(default_factory=dict)
    report: LayoutReport = field(default_factory=LayoutReport)


class VirtualSource:
    """A Source whose paths are v1 names for the files of ``inner``."""

    def __init__(self, inner: Source, problems: ProblemLog, limits: Limits) -> None:
        self.display = inner.display
        self._inner = inner
        self.problems = problems
        self.limits = limits
        self._entries: dict[str, _Entry] = {}
        self._cache: dict[str, bytes | None] = {}
        self._read_total: int | None = None  # bytes of the inner Source's files
        self._expanded = 0  # bytes out of gzip files inside it

    # -- building ----------------------------------------------------------------------

    def passthrough(self, path: str, original: str) -> None:
        """Present ``original`` unchanged as ``path``."""
        self._entries.setdefault(path, _Entry((original,), passthrough=original))

    def derived(self, path: str, origins: Iterable[str], maker: Maker) -> None:
        """Present the bytes ``maker`` returns (None: the file is absent) as ``path``."""
        self._entries.setdefault(path, _Entry(tuple(origins), maker=maker))

    def original(self, name: str) -> bytes | None:
        """An original file's bytes (None when absent or refused by the inner Source)."""
        return self._inner.read(name)

    def original_paths(self) -> list[str]:
        return self._inner.paths()

    def origins(self) -> dict[str, tuple[str, ...]]:
        return {path: entry.origins for path, entry in sorted(self._entries.items())}

    # -- the Source protocol -----------------------------------------------------------

    def paths(self) -> list[str]:
        return sorted(path for path in self._entries if self._exists(path))

    def _exists(self, path: str) -> bool:
        entry = self._entries[path]
        if entry.passthrough is not None:
            return True
        return self.read(path) is not None

    def size(self, path: str) -> int | None:
        entry = self._entries.get(path)
        if entry is None:
            return None
        if entry.passthrough is not None:
            return self._inner.size(entry.passthrough)
        data = self.read(path)
        return None if data is None else len(data)

    def read(self, path: str) -> bytes | None:
        entry = self._entries.get(path)
        if entry is None:
            return None
        if entry.passthrough is not None:
            return self._inner.read(entry.passthrough)
        if path not in self._cache:
            assert entry.maker is not None
            data = self._make(path, entry)
            if data is not None and len(data) > self.limits.max_member_bytes:
                self.problems.add(entry.origins[0] if entry.origins else path,
                                  f"converted {path} is larger than the "
                                  f"{self.limits.max_member_bytes} byte cap; not read",
                                  kind="refused")
                data = None
            self._cache[path] = data
        return self._cache[path]

    def _make(self, path: str, entry: _Entry) -> bytes | None:
        """The maker's bytes; a maker that fails on what it read (a value of a type or
        depth nothing converts) leaves the file absent, with a problem of its origin."""
        assert entry.maker is not None
        try:
            return entry.maker()
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError,
                OverflowError) as exc:
            reason = " ".join(str(exc).split())[:160] or type(exc).__name__
            self.problems.add(entry.origins[0] if entry.origins else path,
                              f"not converted to {path}: {reason}")
            return None

    def close(self) -> None:
        self._cache.clear()
        self._inner.close()

    # -- converters ----------------------------------------------------------------------

    def text(self, name: str) -> str | None:
        data = self.original(name)
        return None if data is None else data.decode("utf-8", errors="replace")

    def yaml(self, name: str) -> Any:
        """The single YAML document in ``name``; None (recorded) when unusable, empty or
        over the YAML caps."""
        data = self.original(name)
        if data is None or not data.strip():
            return None
        refused = yaml_over_budget(data, self.limits.max_yaml_nodes)
        if refused is not None:
            self.problems.add(name, refused, kind="refused")
            return None
        value, problem, where = load_yaml(data)
        if problem is not None:
            self.problems.add(name, problem, where=where)
            return None
        return value

    def json(self, name: str) -> Any:
        data = self.original(name)
        if data is None or not data.strip():
            return None
        dense = json_too_dense(data)
        if dense is not None:
            self.problems.add(name, dense, kind="refused", lost=True)
            return None
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            self.problems.add(name, f"invalid JSON: {exc}", lost=True)
            return None

    def objects(self, name: str, value: Any, kind: str | None = None
                ) -> list[dict[str, Any]] | None:
        """:func:`list_items` of a value read from ``name``; the items that are not
        objects are dropped with one problem of ``name``, as the format v1 reader does."""
        found = list_items(value, kind)
        items = value if isinstance(value, list) else \
            value.get("items") if isinstance(value, dict) else None
        if found is not None and isinstance(items, list) and len(found) < len(items):
            first = next(i for i, item in enumerate(items) if not isinstance(item, dict))
            pointer = f"/{first}" if isinstance(value, list) else f"/items/{first}"
            self.problems.add(name, f"{len(items) - len(found):,} item(s) of the list are not "
                              "objects; ignored", where=pointer)
        return found

    def gunzip(self, name: str) -> bytes | None:
        """Decompress a (possibly multi-member) gzip file within the caps: the member cap,
        the ratio cap past :data:`INNER_RATIO_FLOOR`, and what the archive and earlier
        gzip files left of the total-size cap (which this one's output then uses up)."""
        data = self.original(name)
        if data is None:
            return None
        out, problem = gunzip(data, self.limits, left=self._total_left(),
                              outer=self._ratio_left())
        if problem is not None:
            self.problems.add(name, problem, kind="refused" if "cap" in problem else "parse")
            return None
        assert out is not None
        self._expanded += len(out)
        return out

    def _ratio_left(self) -> int | None:
        """What the ratio cap of the compressed archive around this one leaves for gzip
        files inside it to expand to (at least :data:`INNER_RATIO_FLOOR`); None when
        the archive was not compressed (a directory, a plain tar)."""
        packed: int | None = getattr(self._inner, "packed", None)
        if packed is None:
            return None
        used = self.limits.max_total_bytes - self._total_left()  # archive + gzip output
        return max(INNER_RATIO_FLOOR, self.limits.max_ratio * packed - used)

    def _total_left(self) -> int:
        if self._read_total is None:
            self._read_total = sum(self._inner.size(path) or 0 for path in self._inner.paths())
        return self.limits.max_total_bytes - self._read_total - self._expanded


def yaml_over_budget(data: bytes, max_nodes: int) -> str | None:
    """Why ``data`` is too large to load as YAML, or None.

    Every node but the first needs one of ``: - , [ { ?`` before it, and takes at most
    two nodes with it (a key and its value), so counting those bytes (C speed) bounds
    the nodes from above; only a file whose bound passes the cap has its nodes counted
    from the parser's events, up to the cap, without building any."""
    if len(data) > YAML_MAX_BYTES:
        return (f"{len(data):,} bytes of YAML, over the cap of {YAML_MAX_BYTES:,} bytes for "
                "one YAML file; not read")
    if 1 + 2 * sum(map(data.count, _YAML_MARKS)) <= max_nodes:
        return None
    nodes = 0
    counted = (yaml.ScalarEvent, yaml.CollectionStartEvent, yaml.AliasEvent)
    parser = _LOADER(data)
    try:
        while parser.check_event():
            if isinstance(parser.get_event(), counted):
                nodes += 1
                if nodes > max_nodes:
                    return (f"more than {max_nodes:,} YAML nodes, over the cap on the nodes "
                            "of one YAML file; not read")
    except (yaml.YAMLError, ValueError, MemoryError):
        return None  # not YAML: loading it says why
    finally:
        parser.dispose()
    return None


def load_yaml(data: bytes) -> tuple[Any, str | None, str | None]:
    """(value, problem, where): the one document of ``data`` with the safe loader."""
    try:
        documents = [doc for doc in yaml.load_all(data, Loader=_LOADER) if doc is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else None
        return None, f"invalid YAML: {exc.problem or exc.context or 'unreadable'}", where
    except (yaml.YAMLError, ValueError, RecursionError, MemoryError) as exc:
        return None, f"invalid YAML: {type(exc).__name__}", None
    if not documents:
        return None, None, None
    if len(documents) > 1:
        return None, f"{len(documents)} YAML documents where one was expected", None
    if _has_alias(documents[0]):
        return None, "YAML anchors and aliases are not written by kubectl; refused", None
    return documents[0], None, None


def _has_alias(value: Any) -> bool:
    """True when a mapping or list is reached twice (a YAML alias): converting it to
    JSON would copy it each time, which is how a YAML bomb multiplies."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list):
            if id(item) in seen:
                return True
            seen.add(id(item))
            stack.extend(item.values() if isinstance(item, dict) else item)
    return False


def _default(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, set | frozenset):
        return sorted(str(v) for v in value)
    if isinstance(value, date) and not isinstance(value, datetime):
        return value.isoformat()
    return str(value)


_JSON_OPTION = orjson.OPT_NON_STR_KEYS | orjson.OPT_UTC_Z | orjson.OPT_NAIVE_UTC
_JSON_DEPTH = 254  # orjson writes no deeper


def to_json(value: Any) -> bytes:
    """JSON bytes of a YAML-loaded value (timestamps as RFC 3339 UTC, keys as strings).

    An integer JSON cannot hold in 64 bits becomes a float, as ``orjson`` reads it from
    a JSON file. ValueError when the value is nested deeper than JSON is written."""
    try:
        return orjson.dumps(value, default=_default, option=_JSON_OPTION)
    except orjson.JSONEncodeError:
        return orjson.dumps(_plain(value, 0), default=_default, option=_JSON_OPTION)


def _plain(value: Any, depth: int) -> Any:
    if depth > _JSON_DEPTH:
        raise ValueError(f"nested more than {_JSON_DEPTH} levels deep")
    if isinstance(value, dict):
        return {_plain(key, depth + 1) if isinstance(key, int) else key: _plain(item, depth + 1)
                for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item, depth + 1) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) \
            and not -(1 << 63) <= value < (1 << 64):
        try:
            return float(value)
        except OverflowError:
            return str(value)
    return value


def kube_list(items: Iterable[Any]) -> bytes:
    """A ``kind: List`` of objects, as ``kubectl get -o json`` writes it."""
    return to_json({"apiVersion": "v1", "kind": "List", "items": list(items),
                    "metadata": {"resourceVersion": ""}})


def list_items(value: Any, kind: str | None = None) -> list[dict[str, Any]] | None:
    """The objects of a List (``items``; ``null`` is none), a bare JSON array, or one
    object of ``kind``."""
    if isinstance(value, list):
        items: list[Any] = value
    elif isinstance(value, dict) and isinstance(value.get("items"), list):
        items = value["items"]
    elif isinstance(value, dict) and "items" in value and value["items"] is None:
        items = []  # a List with no items, as Go marshals a nil slice (troubleshoot)
    elif isinstance(value, dict) and (kind is None or value.get("kind") == kind):
        items = [value]
    else:
        return None
    return [item for item in items if isinstance(item, dict)]


def gunzip(data: bytes, limits: Limits, *, left: int | None = None,
           outer: int | None = None) -> tuple[bytes | None, str | None]:
    """Decompress every member of a gzip stream within the member and ratio caps (the
    ratio checked past :data:`INNER_RATIO_FLOOR`), within ``left`` bytes of the
    total-size cap and ``outer`` bytes of the outer archive's ratio cap when given.
    Read piece by piece (``bundle.gzstream``) and stopped at the first piece over a
    cap, so a bomb costs at most one piece past it."""
    cap = limits.max_member_bytes
    total = left is not None and left < cap
    if total:
        cap = max(left or 0, 0)
    pieces: list[bytes] = []
    size = 0
    stream = Decompressed(io.BytesIO(data), gzipped=True, budget=1 << 62, ratio=1 << 62)
    try:
        while piece := stream.read():
            size += len(piece)
            pieces.append(piece)
            if size > cap:
                if total:
                    return None, (f"expands beyond the {cap} bytes left of the "
                                  f"{limits.max_total_bytes} byte cap on the total size; "
                                  "not read")
                return None, f"expands beyond the {cap} byte cap; not read"
            if size > INNER_RATIO_FLOOR and size > limits.max_ratio * max(len(data), 1):
                return None, (f"expands more than {limits.max_ratio} times its size (a "
                              "decompression bomb: over the ratio cap); not read")
            if outer is not None and size > outer:
                return None, (f"expands beyond the {outer} bytes that the ratio cap "
                              f"({limits.max_ratio} times the compressed archive's size) "
                              "leaves; not read")
    except (OSError, EOFError, zlib.error) as exc:
        return None, f"not a readable gzip file ({' '.join(str(exc).split())[:120]})"
    return b"".join(pieces), None
