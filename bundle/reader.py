"""The Bundle: one opened support bundle; its files are parsed when first asked for.

Cluster objects and node artifacts are parsed once and kept; journals, whose size has no
bound, are parsed on each :meth:`NodeArtifacts.journal` call (the analyzers read them
once, through ``analyzers.facts.journals``)."""

from __future__ import annotations

import bisect
import dataclasses
import re
import tomllib
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from bundle import kube, specs
from bundle.archive import Reading, Watcher
from bundle.container import MANIFEST, Limits, Source
from bundle.crds import CRDS, Crd, parse_crds
from bundle.damage import DamageIndex
from bundle.evidence import pointer as json_pointer
from bundle.jsonsafe import json_too_dense
from bundle.manifest import SUPPORTED_FORMAT_VERSIONS, Manifest
from bundle.nvsmi import NvidiaSmi, XMLProblem, parse_nvidia_smi
from bundle.nvsmi_text import looks_like_text, parse_nvidia_smi_text
from bundle.problems import BundleError, Problem, ProblemLog, ProblemMark
from bundle.sources import open_source
from bundle.textfiles import JournalEntry, parse_journal, parse_key_values
from bundle.tomlsafe import TomlRefused
from bundle.tomlsafe import loads as toml_loads
from bundle.views import Issues

NODES_JSON = specs.NODES

if TYPE_CHECKING:
    from bundle.kernel import KernelLine
    from bundle.layouts.base import LayoutReport

T = TypeVar("T", bound=BaseModel)
K = TypeVar("K", bound=kube.KubeObject)
_LAST_CHAR = "\U0010ffff"  # the largest code point: no string raises it

# Kubernetes names used as path segments (DNS-1123); anything else is refused.
_SEGMENT = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
# Passes of dropping wrong-typed fields before an object is given up on.
_REPAIR_PASSES = 3
# Items of one cluster list file that are analysed; the rest are ignored, recorded. The
# largest Kubernetes clusters hold some 150,000 pods; an empty item ("{}") still costs
# a view of about 1 KiB and the rules' time.
MAX_LIST_ITEMS = 300_000


def is_k8s_name(segment: str) -> bool:
    return bool(_SEGMENT.match(segment))


class Bundle:
    """An opened bundle. Use :func:`bundle.open_bundle`; close it when done."""

    def __init__(self, source: Source, problems: ProblemLog, display: str, *,
                 layout: str = "gpu-triage v1", manifest: Manifest | None = None,
                 layout_report: LayoutReport | None = None) -> None:
        self._source = source
        self._problems = problems
        self.display = display
        self.layout = layout  # which layout was read (bundle.layouts); v1 unless adapted
        # what a foreign layout could not provide (bundle.layouts.base); None for v1
        self.layout_report = layout_report
        self._paths = source.paths()
        self._path_set = frozenset(self._paths)
        self._damage_index: DamageIndex | None = None
        self.manifest = manifest if manifest is not None else self._load_manifest()
        self.cluster = ClusterObjects(self)

    # -- raw access -------------------------------------------------------------------

    @property
    def paths(self) -> list[str]:
        return self._paths

    def has(self, path: str) -> bool:
        return path in self._path_set

    def paths_under(self, prefix: str) -> list[str]:
        """The paths that start with ``prefix``, in order (a range of the sorted list)."""
        start = bisect.bisect_left(self._paths, prefix)
        if prefix and prefix[-1] < _LAST_CHAR:
            # Every path that starts with ``prefix`` sorts before the prefix with its
            # last character raised by one, and every other path after ``prefix`` does
            # not: both ends by bisection, so asking costs no walk over the range.
            above = prefix[:-1] + chr(ord(prefix[-1]) + 1)
            return self._paths[start:bisect.bisect_left(self._paths, above, lo=start)]
        end = start
        while end < len(self._paths) and self._paths[end].startswith(prefix):
            end += 1
        return self._paths[start:end]

    def size(self, path: str) -> int | None:
        return self._source.size(path)

    def read_bytes(self, path: str) -> bytes | None:
        return self._source.read(path) if path in self._path_set else None

    def read_text(self, path: str) -> str | None:
        data = self.read_bytes(path)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            self.problem(path, f"not valid UTF-8 (first at byte {exc.start}); undecodable "
                         "bytes were replaced", where=f"line {line}")
            return data.decode("utf-8", errors="replace")

    def read_json(self, path: str) -> Any:
        data = self.read_bytes(path)
        if data is None:
            return None
        dense = json_too_dense(data)
        if dense is not None:
            self.problem(path, dense, kind="refused", lost=True)
            return None
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            self.problem(path, f"invalid JSON: {exc}", where=_json_where(exc), lost=True)
            return None

    def problem(self, path: str, message: str, *, kind: str = "parse",
                where: str | None = None, lost: bool = False) -> None:
        """Record a problem with ``path``; ``lost``: nothing of the file could be used."""
        self._problems.add(path, message, kind=kind, where=where, lost=lost)

    def damaged(self) -> dict[str, Problem]:
        """Each file with a recorded problem → the problem that speaks for it. A file
        that is not in the bundle at all (a refused member) was lost whole."""
        return dict(self._damage().by_path)

    def damaged_matching(self, pattern: str) -> list[tuple[str, Problem]]:
        """The damaged files a rule input's ``pattern`` names, by path (an index built
        once per change of the problem log: :mod:`bundle.damage`)."""
        return self._damage().matching(pattern)

    def _damage(self) -> DamageIndex:
        version = self._problems.version
        if self._damage_index is None or self._damage_index.version != version:
            self._damage_index = DamageIndex(version, {
                path: problem if problem.lost or self.has(path)
                else dataclasses.replace(problem, lost=True)
                for path, problem in self._problems.damaged().items()})
        return self._damage_index

    def problems_mark(self) -> ProblemMark:
        """Where the problem log stands now (see :meth:`problems_since`)."""
        return self._problems.mark()

    def problems_since(self, mark: ProblemMark) -> ProblemLog:
        """The problems recorded since ``mark``, by the bundle or its archive reader (a
        worker process hands these back)."""
        return self._problems.since(mark)

    def absorb_problems(self, log: ProblemLog) -> None:
        """Add the problems of another log (a worker's) to this bundle's."""
        self._problems.absorb(log)

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self._problems.items

    def close(self) -> None:
        self._source.close()

    def __enter__(self) -> Bundle:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- structure --------------------------------------------------------------------

    def _load_manifest(self) -> Manifest:
        raw = self.read_json(MANIFEST)
        if not isinstance(raw, dict):
            if raw is not None:
                self.problem(MANIFEST, "not a JSON object; read as format version 1")
            return Manifest()
        version = raw.get("format_version")
        if version not in SUPPORTED_FORMAT_VERSIONS:
            supported = ", ".join(str(v) for v in SUPPORTED_FORMAT_VERSIONS)
            raise BundleError(self.display, f"unknown bundle format_version {version!r} "
                              f"(this gpu-triage reads version {supported}); upgrade gpu-triage")
        items = raw.get("items")
        if isinstance(items, list):
            # each item costs a pydantic model and, when it failed, a line in every report
            _cap_list(self, MANIFEST, items, "items", "/items/")
        return validate(self, Manifest, raw, MANIFEST, "", "manifest") or Manifest()

    @cached_property
    def node_names(self) -> list[str]:
        """Nodes that have a ``nodes/<name>/`` directory in the bundle."""
        names: set[str] = set()
        for path in self._paths:
            if path.startswith(specs.NODES_DIR) and path.count("/") >= 2:
                segment = path.split("/", 2)[1]
                if is_k8s_name(segment):
                    names.add(segment)
                else:
                    self.problem(path, "node directory name is not a Kubernetes name; ignored",
                                 kind="refused")
        return sorted(names)

    def node(self, name: str) -> NodeArtifacts:
        found = self._node_cache.get(name)
        if found is None:
            found = self._node_cache[name] = NodeArtifacts(self, name)
        return found

    @cached_property
    def _node_cache(self) -> dict[str, NodeArtifacts]:
        return {}

    @cached_property
    def logs(self) -> dict[tuple[str, str, str], str]:
        """(namespace, pod, container) → path of the current container log."""
        found: dict[tuple[str, str, str], str] = {}
        for path in self._paths:
            parts = path.split("/")
            if len(parts) != 4 or parts[0] != "logs" or not parts[3].endswith(".log"):
                continue
            if parts[3].endswith(specs.PREVIOUS_LOG_SUFFIX):
                continue
            namespace, pod, container = parts[1], parts[2], parts[3][: -len(".log")]
            if all(is_k8s_name(s) for s in (namespace, pod, container)):
                found[(namespace, pod, container)] = path
            else:
                self.problem(path, "log path segments are not Kubernetes names; ignored",
                             kind="refused")
        return found


class ClusterObjects:
    """Typed views of ``cluster/*.json``; each list is parsed on first use."""

    def __init__(self, bundle: Bundle) -> None:
        self._bundle = bundle

    def _list(self, path: str, view: type[K], kind: str) -> list[K]:
        raw = self._bundle.read_json(path)
        if raw is None:
            return []
        if not isinstance(raw, dict) or not isinstance(raw.get("items"), list):
            got = raw.get("kind") if isinstance(raw, dict) else type(raw).__name__
            self._bundle.problem(path, f"expected a List of {kind} objects, got {got!r}",
                                 lost=True)
            return []
        items: list[Any] = raw["items"]
        del raw
        _cap_list(self._bundle, path, items, "items", "/items/")
        objects: list[K] = []
        project = view.project
        issues: Issues = []
        for index, item in enumerate(items):
            # What the view does not keep is freed as the list is read, not at its end:
            # the parsed list and the views are then never both whole in memory.
            items[index] = None
            if type(item) is not dict:
                self._bundle.problem(path, f"item is a JSON {type(item).__name__}, expected an "
                                     f"object", where=f"/items/{index}")
                continue
            other = item.get("kind")
            if other is not None and other != kind:
                # (a kind that is not a string is named by its type: its repr may not exist)
                named = repr(other) if type(other) is str else type(other).__name__
                self._bundle.problem(path, f"item of kind {named} in a {kind} list; ignored",
                                     where=f"/items/{index}")
                continue
            obj = project(item, (), issues)
            pointer = f"/items/{index}"
            if issues:
                _record_issues(self._bundle, path, pointer, kind, issues)
                issues.clear()
            obj.locate(path, pointer)
            objects.append(obj)
        return objects

    @cached_property
    def version(self) -> dict[str, Any]:
        raw = self._bundle.read_json(specs.VERSION)
        return raw if isinstance(raw, dict) else {}

    @cached_property
    def nodes(self) -> list[kube.Node]:
        return self._list(NODES_JSON, kube.Node, "Node")

    @cached_property
    def pods(self) -> list[kube.Pod]:
        return self._list(specs.PODS, kube.Pod, "Pod")

    @cached_property
    def events(self) -> list[kube.Event]:
        return self._list(specs.EVENTS, kube.Event, "Event")

    @cached_property
    def daemonsets(self) -> list[kube.DaemonSet]:
        return self._list(specs.DAEMONSETS, kube.DaemonSet, "DaemonSet")

    @cached_property
    def deployments(self) -> list[kube.Deployment]:
        return self._list(specs.DEPLOYMENTS, kube.Deployment, "Deployment")

    @cached_property
    def runtimeclasses(self) -> list[kube.RuntimeClass]:
        return self._list(specs.RUNTIMECLASSES, kube.RuntimeClass, "RuntimeClass")

    @cached_property
    def resourcequotas(self) -> list[kube.ResourceQuota]:
        return self._list(specs.RESOURCEQUOTAS, kube.ResourceQuota, "ResourceQuota")

    @cached_property
    def configmaps(self) -> list[kube.ConfigMap]:
        return self._list(specs.CONFIGMAPS, kube.ConfigMap, "ConfigMap")

    @cached_property
    def clusterpolicies(self) -> list[kube.ClusterPolicy]:
        return self._list(specs.CLUSTERPOLICIES, kube.ClusterPolicy, "ClusterPolicy")

    @cached_property
    def nvidiadrivers(self) -> list[kube.NVIDIADriver]:
        return self._list(specs.NVIDIADRIVERS, kube.NVIDIADriver, "NVIDIADriver")

    @cached_property
    def crds(self) -> list[Crd] | None:
        """The GPU stack's CRDs from ``cluster/crds.json`` (bundle/crds.py); None when the
        file is absent or holds no readable list of CRDs."""
        return parse_crds(self._bundle.read_json(CRDS)) if self._bundle.has(CRDS) else None

    @cached_property
    def helm(self) -> dict[str, list[kube.HelmRevision]]:
        """Release name → revisions sorted by number, from ``cluster/helm/<release>.json``."""
        releases: dict[str, list[kube.HelmRevision]] = {}
        for path in self._bundle.paths_under(specs.HELM_DIR):
            if not path.endswith(".json"):
                continue
            name = path[len(specs.HELM_DIR):-len(".json")]
            raw = self._bundle.read_json(path)
            if raw is None:
                continue
            if not isinstance(raw, list):
                self._bundle.problem(path, "expected a list of release revisions", lost=True)
                continue
            revisions = []
            _cap_list(self._bundle, path, raw, "revisions", "/")
            for index, item in enumerate(raw):
                if not isinstance(item, dict):
                    self._bundle.problem(path, f"revision not understood: a JSON "
                                         f"{type(item).__name__}, expected an object",
                                         where=f"/{index}")
                    continue
                revision, issues = kube.HelmRevision.parse(item)
                if issues:
                    _record_issues(self._bundle, path, f"/{index}", "revision", issues)
                revision.locate(path, f"/{index}")
                revisions.append(revision)
            releases[name] = sorted(revisions, key=lambda r: r.revision)
        return releases


class NodeArtifacts:
    """The files collected on one node, read lazily; all but journals are kept."""

    def __init__(self, bundle: Bundle, name: str) -> None:
        self._bundle = bundle
        self.name = name
        self.prefix = specs.node_dir(name)

    @property
    def bundle(self) -> Bundle:
        return self._bundle

    def path(self, relative: str) -> str:
        return self.prefix + relative

    def has(self, relative: str) -> bool:
        return self._bundle.has(self.path(relative))

    def text(self, relative: str) -> str | None:
        return self._bundle.read_text(self.path(relative))

    @cached_property
    def config_dump_text(self) -> str | None:
        return self.text(specs.CONTAINERD_DUMP)

    @cached_property
    def config_dump(self) -> dict[str, Any] | None:
        """``containerd config dump`` as a mapping; None when absent or unparsable."""
        text = self.config_dump_text
        if text is None:
            return None
        return _toml(self._bundle, self.path(specs.CONTAINERD_DUMP), text)

    @cached_property
    def containerd_version(self) -> str | None:
        text = self.text(specs.CONTAINERD_VERSION)
        return text.strip() if text else None

    @cached_property
    def containerd_files(self) -> dict[str, str]:
        """Host path (``/etc/containerd/...``) → text of the copied file."""
        base = self.path(specs.CONTAINERD_FILES_DIR)
        found: dict[str, str] = {}
        for path in self._bundle.paths_under(base):
            text = self._bundle.read_text(path)
            if text is not None:
                found["/" + path[len(base):]] = text
        return found

    @cached_property
    def containerd_refused(self) -> dict[str, str]:
        """Host path → why that copied file is over the TOML budget (:mod:`bundle.tomlsafe`);
        each is a recorded problem. The texts stay in :attr:`containerd_files`: whoever
        parses them is refused the same way."""
        refused: dict[str, str] = {}
        for host_path, text in self.containerd_files.items():
            try:
                toml_loads(text)
            except TomlRefused as exc:
                toml_refused(self._bundle, self.path(specs.containerd_file(host_path)), exc)
                refused[host_path] = str(exc)
            except tomllib.TOMLDecodeError:
                pass  # not TOML: the merge emulation says what containerd makes of it
        return refused

    def journal(self, unit: str) -> list[JournalEntry]:
        """Every entry of ``journal/<unit>.jsonl``, parsed on each call and not kept:
        journals are the node files whose size has no bound. The analyzers read them
        once, through :func:`analyzers.facts.journals.journal_scan`."""
        return _read_journal(self._bundle, self.path(specs.journal(unit)))

    def preload(self, *, dmesg: list[KernelLine], nvidia_smi: NvidiaSmi | None) -> None:
        """Take files parsed elsewhere (a worker process) as this node's parsed files."""
        self.__dict__["dmesg"] = dmesg
        self.__dict__["nvidia_smi"] = nvidia_smi

    @cached_property
    def dmesg(self) -> list[KernelLine]:
        from bundle.kernel import parse_dmesg

        path = self.path(specs.DMESG)
        text = self._bundle.read_text(path)
        return parse_dmesg(text, path, note=lambda message, where: self._bundle.problem(
            path, message, kind="refused", where=where)) if text else []

    @cached_property
    def systemd_containerd(self) -> dict[str, str] | None:
        text = self.text(specs.SYSTEMD_CONTAINERD)
        return parse_key_values(text) if text is not None else None

    def host(self, name: str) -> str | None:
        return self.text(specs.host(name))

    @cached_property
    def nvidia_smi(self) -> NvidiaSmi | None:
        path = self.path(specs.NVIDIA_SMI)
        data = self._bundle.read_bytes(path)
        if data is None:
            return None
        try:
            # `nvidia-smi -q` text saved where the XML belongs is read into the same GPUs
            # (evidence from it has no quoted line: locate() searches XML only)
            if looks_like_text(data):
                return parse_nvidia_smi_text(data)
            return parse_nvidia_smi(data)
        except Exception as exc:  # noqa: BLE001 - any parser failure is a recorded problem
            where = exc.where if isinstance(exc, XMLProblem) else None
            self._bundle.problem(path, f"nvidia-smi XML not understood: {exc}", where=where,
                                 lost=True)
            return None

    @cached_property
    def cdi_files(self) -> dict[str, str]:
        base = self.path(specs.CDI_DIR)
        return {p[len(base):]: t for p in self._bundle.paths_under(base)
                if (t := self._bundle.read_text(p)) is not None}

    def paths(self) -> Iterator[str]:
        return iter(self._bundle.paths_under(self.prefix))


def _read_journal(bundle: Bundle, path: str) -> list[JournalEntry]:
    text = bundle.read_text(path)
    if text is None:
        return []
    entries: list[JournalEntry] = []
    for entry, line, error in parse_journal(text):
        if entry is None:
            bundle.problem(path, error, where=f"line {line}")
        else:
            entries.append(entry)
    return entries


def _toml(bundle: Bundle, path: str, text: str) -> dict[str, Any] | None:
    try:
        return toml_loads(text)  # memoized by content: most nodes share a few configs
    except TomlRefused as exc:
        toml_refused(bundle, path, exc)
        return None
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        bundle.problem(path, f"invalid TOML: {exc}",
                       where=f"line {where[1]}, column {where[2]}" if where else None, lost=True)
        return None


def toml_refused(bundle: Bundle, path: str, exc: TomlRefused) -> None:
    """Record a TOML file that was over the parsing budget (:mod:`bundle.tomlsafe`)."""
    bundle.problem(path, str(exc), kind="refused", lost=True,
                   where=f"line {exc.line}" if exc.line is not None else None)


def _record_issues(bundle: Bundle, path: str, pointer: str, what: str,
                   issues: Issues) -> None:
    """One problem for the fields of an object that were ignored for their type."""
    ordered = sorted(issues, key=lambda issue: _loc_key(issue[0]))
    loc, message = ordered[0]
    more = f" (+{len(ordered) - 1} more)" if len(ordered) > 1 else ""
    where = min(pointer + json_pointer(*loc) for loc, _ in ordered)
    bundle.problem(path, f"{what}: a field of the wrong type was ignored: "
                   f"{'/'.join(str(p) for p in loc)}: {message}{more}", where=where)


def validate(bundle: Bundle, model: type[T], raw: object, path: str, pointer: str,
             what: str) -> T | None:
    """Validate one object leniently: a field of the wrong type is dropped (its default
    applies) and recorded with its JSON pointer, so one bad field does not lose the
    object. None, recorded, when the object itself is not usable."""
    dropped: list[str] = []
    first = ""
    failure: ValidationError | None = None
    for _ in range(_REPAIR_PASSES):
        try:
            obj = model.model_validate(raw)
        except ValidationError as exc:
            failure = exc
            errors = sorted(exc.errors(), key=lambda e: _loc_key(e["loc"]), reverse=True)
            removed = [(loc, e["msg"]) for e in errors if (loc := _drop(raw, e["loc"]))]
            if not removed:
                break
            dropped.extend(pointer + json_pointer(*loc) for loc, _ in removed)
            first = first or f"{'/'.join(str(p) for p in removed[-1][0])}: {removed[-1][1]}"
            continue
        if dropped:
            more = f" (+{len(dropped) - 1} more)" if len(dropped) > 1 else ""
            bundle.problem(path, f"{what}: a field of the wrong type was ignored: {first}{more}",
                           where=min(dropped))
        return obj
    reason = _first_error(failure) if failure is not None else "too many wrong fields"
    bundle.problem(path, f"{what} not understood: {reason}", where=pointer or None)
    return None


def _loc_key(loc: tuple[int | str, ...]) -> tuple[tuple[int, int | str], ...]:
    return tuple((0, p) if isinstance(p, int) else (1, p) for p in loc)


def _has(node: object, step: int | str) -> bool:
    if isinstance(node, dict):
        return isinstance(step, str) and step in node
    return isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node)


def _drop(raw: object, loc: tuple[int | str, ...]) -> tuple[int | str, ...] | None:
    """Delete the deepest value of ``raw`` that ``loc`` reaches; return its location.

    A location can name more than the data holds (pydantic adds union member tags)."""
    parent: Any = None
    node: Any = raw
    reached: list[int | str] = []
    for step in loc:
        if not _has(node, step):
            break
        parent, node = node, node[step]
        reached.append(step)
    if parent is None:
        return None
    del parent[reached[-1]]
    return tuple(reached)


def _cap_list(bundle: Bundle, path: str, items: list[Any], what: str, pointer: str) -> None:
    """Keep the first :data:`MAX_LIST_ITEMS` of ``items`` (in place), recording the cut."""
    if len(items) > MAX_LIST_ITEMS:
        bundle.problem(path, f"{len(items):,} {what}, over the limit of {MAX_LIST_ITEMS:,} per "
                       f"list: the {what} after the first {MAX_LIST_ITEMS:,} were ignored",
                       kind="refused", where=f"{pointer}{MAX_LIST_ITEMS}")
        del items[MAX_LIST_ITEMS:]


def _json_where(exc: orjson.JSONDecodeError) -> str | None:
    lineno = getattr(exc, "lineno", None)
    colno = getattr(exc, "colno", None)
    return f"line {lineno}, column {colno}" if lineno is not None else None


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)
    first = errors[0]
    where = "/".join(str(p) for p in first.get("loc", ()))
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', '')}{more}"


def open_bundle(path: str | Path, limits: Limits | None = None, *,
                watcher: Watcher | None = None, reading: Reading | None = None) -> Bundle:
    """Open a bundle directory, .tar or .tgz -- format v1, or a layout of
    :mod:`bundle.layouts` (must-gather, troubleshoot). BundleError if it cannot be read.
    ``watcher`` hears an archive's members while it is read (:class:`~bundle.archive.Watcher`);
    ``reading`` hears how many bytes of the archive file were read, of how many."""
    from bundle import layouts

    location = Path(path)
    problems = ProblemLog()
    limits = limits or Limits()
    source = open_source(location, limits, problems, layouts.find_root, watcher, reading)
    try:
        adapted = layouts.adapt(source, problems, limits)
        if adapted is not None:
            return Bundle(adapted.source, problems, str(location), layout=adapted.layout,
                          manifest=adapted.manifest, layout_report=adapted.report)
        return Bundle(source, problems, str(location))
    except BundleError:
        source.close()
        raise
