"""A Replicated troubleshoot support bundle (``support-bundle``), read as format v1.

Layout (``replicatedhq/troubleshoot``, ``pkg/collect/cluster_resources.go``,
``logs.go``, ``helm.go``, ``host_run.go``, ``host_journald.go``)::

    cluster-info/cluster_version.json            {"info": {"gitVersion": ...}, "string": ...}
    cluster-resources/nodes.json                 a NodeList (older versions: a bare array)
    cluster-resources/namespaces.json
    cluster-resources/<kind>/<namespace>.json    pods, events, daemonsets, deployments,
                                                 configmaps, resource-quota (before
                                                 v0.55: resource-quotas)
    cluster-resources/<kind>-errors.json         what could not be listed, and why
    cluster-resources/custom-resources/<crd>.json|.yaml        cluster-scoped custom resources
    cluster-resources/pods/logs/<ns>/<pod>/<container>[-previous].log
    helm/<namespace>.json                        releases with their history
    host-collectors/[<node>/]run-host/<name>.txt + <name>-info.json (the command run)
    host-collectors/[<node>/]journald/<name>.txt + <name>-info.json

What maps where: each ``cluster-resources`` list to its ``cluster/*.json`` (namespaced
lists merged into one List), ``clusterpolicies.nvidia.com`` and
``nvidiadrivers.nvidia.com`` to ``cluster/clusterpolicies.json`` and
``cluster/nvidiadrivers.json``, pod logs to ``logs/``, Helm histories to
``cluster/helm/<release>.json``, the ``*-errors.json`` files to collection gaps of the
matching path, and host-collector output to ``nodes/<node>/...`` by the command that
produced it (``containerd config dump``, ``nvidia-smi -q -x``, ``dmesg``,
``journalctl -u <unit> -o json``, ...), however the shell command was quoted. Host
output is placed on a node only when a path segment names a node of ``nodes.json``
(remote collectors), or when the local host's ``hostos_info.json`` names one. A host
collector that failed (its ``exitCode`` is not ``"0"``) fills nothing: it is a failed
manifest item of the node path it would have filled, so the gap is reported, and its
output stays ``original/``. Every other file is kept as ``original/<path>``.

A List that troubleshoot wrote for an empty namespace (``"items": null``) is an empty
list. troubleshoot's own symbolic links (``<logs collector>/<pod>/<container>.log`` to
the pod log, ``custom-resources/<crd>.yaml`` to the ``.json``), which the readers
refuse, are taken back from the problems and listed as layout notes naming the file
they stand for.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Any

import orjson

from bundle import specs
from bundle.container import Limits, Source
from bundle.layouts.base import (
    Adapted,
    LayoutReport,
    Maker,
    VirtualSource,
    kube_list,
    list_items,
    missing_paths,
    to_json,
)
from bundle.manifest import ClusterInfo, Manifest, ManifestItem
from bundle.problems import ProblemLog

NAME = "replicated troubleshoot"
CR = "cluster-resources/"
_K8S_NAME = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
# directory under cluster-resources/ → (format v1 path, kind)
NAMESPACED = {
    "pods": (specs.PODS, "Pod"),
    "events": (specs.EVENTS, "Event"),
    "daemonsets": (specs.DAEMONSETS, "DaemonSet"),
    "deployments": (specs.DEPLOYMENTS, "Deployment"),
    "configmaps": (specs.CONFIGMAPS, "ConfigMap"),
    "resource-quota": (specs.RESOURCEQUOTAS, "ResourceQuota"),
    # the name before troubleshoot v0.55 (Jan 2023), https://github.com/replicatedhq/
    # troubleshoot/commit/2fcdc77cd312c8bb0c2449387a76d5ea78d36d8d; errors file unchanged
    "resource-quotas": (specs.RESOURCEQUOTAS, "ResourceQuota"),
}
CLUSTER_SCOPED = {
    "nodes.json": (specs.NODES, "Node"),
    "namespaces.json": (specs.NAMESPACES, "Namespace"),
}
CUSTOM = {
    "clusterpolicies.nvidia.com": (specs.CLUSTERPOLICIES, "ClusterPolicy"),
    "nvidiadrivers.nvidia.com": (specs.NVIDIADRIVERS, "NVIDIADriver"),
}
# A host command (program base name and arguments) → the node path it fills.
COMMANDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^containerd( (--config|-c) \S+)? config dump$"), specs.CONTAINERD_DUMP),
    (re.compile(r"^containerd (--version|-v)$"), specs.CONTAINERD_VERSION),
    (re.compile(r"^nvidia-smi (-q -x|-x -q|--query --xml-format|-qx)$"), specs.NVIDIA_SMI),
    (re.compile(r"^dmesg( .*)?$"), specs.DMESG),
    (re.compile(r"^uname -a$"), specs.UNAME),
    (re.compile(r"^cat /proc/cmdline$"), specs.CMDLINE),
    (re.compile(r"^cat /etc/os-release$"), specs.OS_RELEASE),
    (re.compile(r"^mokutil --sb-state$"), specs.SECUREBOOT),
    (re.compile(r"^systemctl show containerd( .*)?$"), specs.SYSTEMD_CONTAINERD),
    (re.compile(r"^cat /proc/modules$"), specs.MODULES),
    (re.compile(r"^lspci (-nnk|-knn|-nnvk) -d 10de:$"), specs.LSPCI),
    (re.compile(r"^cat /proc/driver/nvidia/version$"), specs.DRIVER_VERSION),
    (re.compile(r"^getenforce$"), specs.SELINUX),
    # `tail -n +1 FILE...` heads each file with `==> FILE <==`, the collector's own form
    (re.compile(r"^tail -n \+1( /etc/apt/apt\.conf\.d/\S+)+$"),
     specs.UNATTENDED_UPGRADES),
)
# pkg/collect/helm.go's VersionInfo: revision, date, status, isPending, values
HELM_PARTIAL = ("troubleshoot's Helm collector keeps each revision's status and values, not "
                "its description (Helm's own message, such as why an upgrade failed)")
_LOG = re.compile(r"^(?P<container>.+?)(?P<previous>-previous)?\.log$")
_SHELLS = frozenset({"sh", "bash", "dash", "ash"})
# How the archive and directory readers refuse a symbolic link (bundle/archive.py).
LINK_REFUSAL = "not a regular file (symbolic link"


def detect(paths: list[str]) -> bool:
    return any(p.startswith(CR) for p in paths) or "cluster-info/cluster_version.json" in paths


def root(names: list[str]) -> str | None:
    """The directory holding ``cluster-resources/``, at the top or one level down."""
    found = set()
    for name in names:
        parts = name.split("/")
        for depth in (0, 1):
            if len(parts) > depth + 1 and parts[depth] in ("cluster-resources", "cluster-info"):
                found.add("/".join(parts[:depth]))
    if not found:
        return None
    best = sorted(found, key=lambda r: (r.count("/") + bool(r), r))[0]
    return best + "/" if best else ""


def adapt(inner: Source, problems: ProblemLog, limits: Limits) -> Adapted:
    source = VirtualSource(inner, problems, limits)
    paths = sorted(inner.paths())
    used: set[str] = set()
    server = _version(source, paths, used)
    _resources(source, paths, used)
    pods = _pod_index(source, paths)
    namespace = _operator_namespace(pods)
    _pod_logs(source, paths, used, pods)
    _helm(source, paths, used, namespace)
    host_gaps = _hosts(source, paths, used)
    gaps = _gaps(source, paths, used) + host_gaps
    for name in paths:
        if name not in used:
            source.passthrough(f"original/{name}", name)
    manifest = Manifest(format="replicated-troubleshoot", collector={"name": "troubleshoot"},
                        cluster=ClusterInfo(server_version=server),
                        operator_namespace=namespace, items=gaps)
    presented = source.paths()
    helm = [p for p in presented if p.startswith(specs.HELM_DIR)]
    report = LayoutReport(missing=missing_paths(presented),
                          notes=tuple(_own_links(problems, paths)),
                          partial=tuple((p, HELM_PARTIAL) for p in sorted(helm)))
    return Adapted(source=source, layout=NAME, manifest=manifest, origins=source.origins(),
                   report=report)


def _version(source: VirtualSource, paths: list[str], used: set[str]) -> str | None:
    name = "cluster-info/cluster_version.json"
    if name not in paths:
        return None
    used.add(name)
    raw = source.json(name)
    info = raw.get("info") if isinstance(raw, dict) else None
    if not isinstance(info, dict):
        if raw is not None:
            source.problems.add(name, "no 'info' object; the server version was not read")
        return None
    source.derived(specs.VERSION, [name], lambda: to_json({"serverVersion": info}))
    version = info.get("gitVersion")
    return version if isinstance(version, str) else None


def _merged(source: VirtualSource, names: list[str], kind: str) -> Maker:
    def make() -> bytes | None:
        items: list[dict[str, Any]] = []
        readable = False
        for name in names:
            value = source.yaml(name) if name.endswith(".yaml") else source.json(name)
            found = source.objects(name, value, kind)
            if found is None:
                if value is not None:
                    source.problems.add(name, f"expected a list of {kind} objects")
                continue
            readable = True
            items.extend({"kind": kind, **item} if "kind" not in item else item
                         for item in found)
        return kube_list(items) if readable else None
    return make


def _resources(source: VirtualSource, paths: list[str], used: set[str]) -> None:
    grouped: dict[str, list[str]] = {}
    for directory, (target, _) in NAMESPACED.items():
        prefix = f"{CR}{directory}/"
        grouped.setdefault(target, []).extend(
            p for p in paths if p.startswith(prefix) and p.count("/") == 2
            and p.endswith(".json"))
    for target, kind in NAMESPACED.values():
        names = grouped.pop(target, [])
        if names:
            used.update(names)
            source.derived(target, names, _merged(source, names, kind))
    for file, (target, kind) in CLUSTER_SCOPED.items():
        if CR + file in paths:
            used.add(CR + file)
            source.derived(target, [CR + file], _merged(source, [CR + file], kind))
    for crd, (target, kind) in CUSTOM.items():
        base = f"{CR}custom-resources/{crd}"
        names = [n for n in (base + ".json", base + ".yaml") if n in paths][:1]
        names += [p for p in paths if p.startswith(base + "/") and p.endswith(".json")]
        if names:
            used.update(names)
            source.derived(target, names, _merged(source, names, kind))


def _pod_index(source: VirtualSource, paths: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Pod name → the pods of that name (one per namespace), from ``pods/<ns>.json``."""
    index: dict[str, list[dict[str, Any]]] = {}
    data = source.read(specs.PODS)
    if data is None:
        return index
    for pod in list_items(orjson.loads(data)) or []:
        meta = pod.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("name"), str):
            index.setdefault(meta["name"], []).append(pod)
    return index


def _operator_namespace(pods: dict[str, list[dict[str, Any]]]) -> str | None:
    for group in pods.values():
        for pod in group:
            meta = pod.get("metadata") or {}
            labels = meta.get("labels") if isinstance(meta, dict) else None
            if isinstance(labels, dict) and labels.get("app") == "gpu-operator":
                namespace = meta.get("namespace")
                return namespace if isinstance(namespace, str) else None
    return None


def _pod_logs(source: VirtualSource, paths: list[str], used: set[str],
              pods: dict[str, list[dict[str, Any]]]) -> None:
    prefix = f"{CR}pods/logs/"
    for name in paths:
        if not name.startswith(prefix):
            continue
        parts = name[len(prefix):].split("/")
        if len(parts) != 3:
            continue
        _log(source, used, name, parts[0], parts[1], parts[2])
    # The logs collector (older versions): <collector>/<pod>/<container>.log, no namespace.
    for name in paths:
        parts = name.split("/")
        if len(parts) != 3 or parts[0] in ("cluster-resources", "host-collectors") \
                or parts[1] not in pods or len(pods[parts[1]]) != 1:
            continue
        meta = pods[parts[1]][0].get("metadata") or {}
        namespace = meta.get("namespace") if isinstance(meta, dict) else None
        if isinstance(namespace, str):
            _log(source, used, name, namespace, parts[1], parts[2])


def _log(source: VirtualSource, used: set[str], name: str, namespace: str, pod: str,
         file: str) -> None:
    match = _LOG.match(file)
    if match is None or file.endswith("-logs-errors.log"):
        return
    container = match["container"]
    if not all(_K8S_NAME.match(s) for s in (namespace, pod, container)):
        return
    target = specs.log_file(namespace, pod, container, previous=bool(match["previous"]))
    used.add(name)
    source.passthrough(target, name)


def _helm(source: VirtualSource, paths: list[str], used: set[str],
          namespace: str | None) -> None:
    names = [p for p in paths if p.startswith("helm/") and p.endswith(".json")
             and p != "helm/errors.json"]
    names.sort(key=lambda p: (p.split("/")[1].removesuffix(".json") != namespace, p))
    taken: set[str] = set()
    for name in names:
        releases = source.json(name)
        if isinstance(releases, dict):
            releases = [releases]
        if not isinstance(releases, list):
            continue
        used.add(name)
        for release in releases:
            if not isinstance(release, dict):
                continue
            release_name = release.get("releaseName")
            if not (isinstance(release_name, str) and _K8S_NAME.match(release_name)) \
                    or release_name in taken:
                continue
            taken.add(release_name)
            source.derived(specs.helm_release(release_name), [name],
                           _history_maker(source, name, release))


def _history_maker(source: VirtualSource, name: str, release: dict[str, Any]) -> Maker:
    def make() -> bytes:
        revisions = _history(release)
        history = release.get("releaseHistory")
        count = len(history) if isinstance(history, list) else 1 if history is not None else 0
        if len(revisions) < count:
            source.problems.add(name, f"{count - len(revisions):,} revision(s) of release "
                                f"{release.get('releaseName')} not understood (not an object "
                                "with an integer revision); ignored")
        return to_json(revisions)
    return make


def _history(release: dict[str, Any]) -> list[dict[str, Any]]:
    chart = str(release.get("chart") or "")
    version = str(release.get("chartVersion") or "")
    if version and not chart.endswith(version):
        chart = f"{chart}-{version}"
    revisions = []
    history = release.get("releaseHistory")
    for entry in history if isinstance(history, list) else []:
        if not isinstance(entry, dict):
            continue
        try:
            number = int(str(entry.get("revision")))
        except ValueError:
            continue
        if not -(1 << 63) <= number < (1 << 63):
            continue
        revisions.append({"revision": number, "status": str(entry.get("status") or ""),
                          "chart": chart, "app_version": str(release.get("appVersion") or ""),
                          "updated": str(entry.get("date") or ""), "description": "",
                          "values": entry.get("values") or {}})
    return sorted(revisions, key=lambda r: int(r["revision"]))


def _node_names(source: VirtualSource) -> set[str]:
    data = source.read(specs.NODES)
    names = set()
    for node in (list_items(orjson.loads(data)) or []) if data is not None else []:
        meta = node.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("name"), str):
            names.add(meta["name"])
    return names


def _local_node(source: VirtualSource, paths: list[str], nodes: set[str]) -> str | None:
    name = "host-collectors/system/hostos_info.json"
    info = source.json(name) if name in paths else None
    host = info.get("name") if isinstance(info, dict) else None
    return host if isinstance(host, str) and host in nodes else None


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _command(info: Any) -> str | None:
    """The command of a ``*-info.json`` as ``<program base name> <args>``.

    troubleshoot records ``exec.Cmd.String()``, which joins the arguments with spaces
    and quotes nothing: ``sh -c`` with the script ``containerd config dump`` reads
    ``/bin/sh -c containerd config dump``. Every word after ``-c`` is therefore the
    script, which is split again, so a quoted script (``sh -c 'containerd config
    dump'``) and an argument list (``["sh", "-c", "containerd config dump"]``) read the
    same; ``2>&1`` and ``2>/dev/null`` in a script are dropped."""
    raw = info.get("command") if isinstance(info, dict) else None
    if isinstance(raw, list) and all(isinstance(arg, str) for arg in raw):
        argv = list(raw)
    elif isinstance(raw, str):
        argv = _split(raw)
    else:
        return None
    if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1] in ("-c", "-ec"):
        argv = _split(" ".join(argv[2:]))
    argv = [arg for arg in argv if arg not in ("2>&1", "2>/dev/null")]
    if not argv:
        return None
    return " ".join([argv[0].rsplit("/", 1)[-1], *argv[1:]])


def _exit_code(info: Any) -> tuple[bool, int | None]:
    """(succeeded, exit status) of a ``*-info.json``; troubleshoot writes ``exitCode``
    as a string, ``"0"`` on success, ``"-1"`` or ``"124"`` on a timeout, and the text
    of the Go error (``signal: killed``) when the command died of a signal."""
    raw = str(info.get("exitCode", "0")).strip() if isinstance(info, dict) else "0"
    try:
        code = int(raw)
    except ValueError:
        return False, None
    return code == 0, code


def _failure(info: Any, code: int | None, output: str | None = None) -> str:
    """Why a host collector failed, in one line: the last line of its stderr (where
    programs print their error) after the exit status; with an empty stderr, the first
    lines of its output (nvidia-smi prints its failure on stdout)."""
    status = f"exited with status {code}" if code is not None else \
        f"failed ({_one_line(info.get('exitCode'))[:80]})"
    error = info.get("error") if isinstance(info, dict) else None
    lines = [line.strip() for line in error.splitlines() if line.strip()] \
        if isinstance(error, str) else []
    if lines:
        return f"{status}: {lines[-1][:300]}"
    said = [line.strip() for line in (output or "").splitlines()[:20] if line.strip()][:2]
    return f"{status}: {' / '.join(said)[:300]}" if said else status


def _head(source: VirtualSource, name: str) -> str | None:
    """The first few KiB of a collector's output, for the words of a failed command."""
    data = source.original(name)
    return data[:4096].decode("utf-8", "replace") if data is not None else None


def _target(kind: str, command: str) -> str | None:
    if kind == "run-host":
        for pattern, target in COMMANDS:
            if pattern.match(command):
                return target
        return None
    argv = command.split()
    if argv[:1] != ["journalctl"]:
        return None
    units = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-u", "--unit")]
    output = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-o", "--output")]
    if len(units) == 1 and output == ["json"] and _K8S_NAME.match(units[0]):
        return specs.journal(units[0])
    if not units and ("--dmesg" in argv or "-k" in argv):
        return specs.DMESG
    return None


def _hosts(source: VirtualSource, paths: list[str], used: set[str]) -> list[ManifestItem]:
    """Host-collector output on its node; a collector that failed (non-zero exit, a
    timeout, a signal) becomes a failed item of the node path it would have filled,
    unless another collector filled it, and its output stays ``original/``."""
    nodes = _node_names(source)
    local = _local_node(source, paths, nodes)
    failed: dict[str, ManifestItem] = {}
    for name in paths:
        parts = name.split("/")
        if parts[0] != "host-collectors" or not name.endswith(".txt") \
                or name.endswith("-stderr.txt"):
            continue
        kinds = [k for k in ("run-host", "journald") if k in parts]
        named = [p for p in parts[1:-1] if p in nodes]
        node = named[0] if named else (local if len(parts) == 3 else None)
        if not kinds or node is None:
            continue
        info_name = name[: -len(".txt")] + "-info.json"
        info = source.json(info_name) if info_name in paths else None
        command = _command(info)
        target = _target(kinds[0], command) if command is not None else None
        if target is None:
            continue
        path = specs.node_file(node, target)
        succeeded, code = _exit_code(info)
        if not succeeded:
            failed.setdefault(path, ManifestItem(
                path=path, node=node, command=["troubleshoot", info_name], exit_code=code,
                error=_failure(info, code, _head(source, name))))
            continue
        used.update({name, info_name})
        source.passthrough(path, name)
    provided = set(source.origins())
    return [item for path, item in sorted(failed.items()) if path not in provided]


def _gaps(source: VirtualSource, paths: list[str], used: set[str]) -> list[ManifestItem]:
    """``*-errors.json`` → manifest items with the error, under the v1 path they affect."""
    targets = {f"{CR}{d}-errors.json": t for d, (t, _) in NAMESPACED.items()}
    targets |= {f"{CR}{f.removesuffix('.json')}-errors.json": t
                for f, (t, _) in CLUSTER_SCOPED.items()}
    targets["cluster-info/errors.json"] = specs.VERSION
    items: list[ManifestItem] = []
    for name in paths:
        if name in targets:
            errors = _messages(source.json(name))
            items.extend(ManifestItem(path=targets[name], error=e, command=["troubleshoot", name])
                         for e in errors)
            used.add(name)
        elif name == f"{CR}custom-resources/custom-resources-errors.json":
            raw = source.json(name)
            for crd, (target, _) in CUSTOM.items():
                errors = [f"{k}: {_one_line(v)}" for k, v in raw.items()
                          if str(k).startswith(crd)] \
                    if isinstance(raw, dict) else []
                items.extend(ManifestItem(path=target, error=e, command=["troubleshoot", name])
                             for e in errors)
            used.add(name)
    return items


def _messages(raw: Any) -> Iterable[str]:
    if isinstance(raw, list):
        return [text for e in raw if (text := _one_line(e))]
    if isinstance(raw, dict):
        return [f"{k}: {_one_line(v)}" for k, v in sorted(raw.items())]
    return []


def _one_line(value: Any) -> str:
    """An error of an ``*-errors.json`` as one line: a string, else its JSON (str() of a
    deeply nested list would recurse past Python's limit)."""
    if isinstance(value, list | dict):
        try:
            value = orjson.dumps(value).decode()
        except orjson.JSONEncodeError:
            value = f"(a JSON {type(value).__name__} nested too deeply to show)"
    return " ".join(str(value).split())


def _constant(data: bytes) -> Maker:
    return lambda: data


def _own_links(problems: ProblemLog, paths: list[str]) -> list[tuple[str, str]]:
    """troubleshoot's own symbolic links, taken back from the refused members.

    The readers refuse every symbolic link. troubleshoot writes two kinds beside the
    file they point to (``pkg/collect/result.go`` ``SymLinkResult``): a logs collector
    named ``<c>`` links ``<c>/<pod>/<container>[-previous].log`` (``<c>/<pod>.log`` for
    a run-pod collector; without a name the ``<c>/`` is missing) to
    ``cluster-resources/pods/logs/<ns>/<pod>/...``, and every
    custom resource ``custom-resources/<crd>.json`` gets a ``.yaml`` link to it. Such a
    link, when the file it stands for is in the bundle, is no problem: it is a layout
    note naming that file. The link is never followed."""
    logs: dict[tuple[str, str], str] = {}
    for name in paths:
        parts = name.split("/")
        if name.startswith(f"{CR}pods/logs/") and len(parts) == 6:
            logs.setdefault((parts[4], parts[5]), name)
            logs.setdefault((parts[4] + ".log", ""), name)  # run-pod: <c>/<pod>.log
    present = set(paths)
    expected: dict[str, str] = {}  # link → the file it repeats
    for problem in problems.held("refused"):
        if not problem.message.startswith(LINK_REFUSAL):
            continue
        parts = problem.path.split("/")
        read: str | None = None
        if problem.path.startswith(f"{CR}custom-resources/") and problem.path.endswith(".yaml"):
            twin = problem.path.removesuffix(".yaml") + ".json"
            read = twin if twin in present else None
        elif parts[0] not in ("cluster-resources", "cluster-info", "host-collectors"):
            if len(parts) == 3:  # <collector>/<pod>/<container>.log
                read = logs.get((parts[1], parts[2]))
            elif len(parts) == 2:  # <collector>/<pod>.log, or <pod>/<container>.log
                read = logs.get((parts[1], "")) or logs.get((parts[0], parts[1]))
            elif len(parts) == 1:  # <pod>.log of a run-pod collector without a name
                read = logs.get((parts[0], ""))
        if read is not None:
            expected[problem.path] = read
    taken = sorted({p.path for p in problems.withdraw(set(expected), "refused")})
    return [(link, f"a symbolic link troubleshoot adds to {expected[link]}, which the bundle "
                   "holds; the link itself is not read") for link in taken]
