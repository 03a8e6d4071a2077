"""Answers to API requests: a pure function of method, path, query and Accept header.

Read-only by construction: only GET is answered; every other method, ``watch``, and the
``exec``, ``attach``, ``portforward`` and ``proxy`` subresources are refused with 405
and a ``Status`` saying why. Whatever the bundle lacks answers 404 with a ``Status``
that names what was not collected. Text that came from the bundle and that a client
prints to a terminal (table cells, logs, node files, messages) is made inert first
(:mod:`reports.terminal`), as every gpu-triage output is.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import Any

import orjson

from bundle import specs
from gpu_triage.serve import access, discovery
from gpu_triage.serve.catalog import BY_PATH, KINDS, Kind
from gpu_triage.serve.logs import LogOptionError, select
from gpu_triage.serve.selectors import SelectorError, field_selector, label_selector
from gpu_triage.serve.store import Absent, Obj, Store
from gpu_triage.serve.tables import table, table_version
from reports.terminal import inert, line

RAW_PREFIX = "gpu-triage"  # /gpu-triage/v1/nodes/<node>/<file>: the node files
_REFUSED_SUBRESOURCES = {"exec", "attach", "portforward", "proxy", "eviction", "binding",
                         "ephemeralcontainers"}
_MAX_QUERY_FIELDS = 32


@dataclass(frozen=True)
class Response:
    code: int
    content_type: str
    body: bytes
    warning: str = ""  # sent as a Warning header (kubectl prints it as "Warning: ...")


def status(code: int, reason: str, message: str, details: Obj | None = None) -> Response:
    body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "message": line(message), "reason": reason, "code": code}
    if details:
        body["details"] = details
    return Response(code, "application/json", orjson.dumps(body))


def _json(obj: Any, content_type: str = "application/json") -> Response:
    return Response(200, content_type, orjson.dumps(obj))


def _text(data: bytes) -> Response:
    shown = inert(data.decode("utf-8", errors="replace")).encode()
    return Response(200, "text/plain; charset=utf-8", shown)


class Api:
    def __init__(self, store: Store) -> None:
        self.store = store

    def answer(self, method: str, target: str, accept: str, body: bytes = b"") -> Response:
        url = urllib.parse.urlsplit(target)
        segments = self._segments(url.path)
        if segments is None:
            return status(400, "BadRequest", "the request path is not a clean path "
                          "(empty, '.' or '..' segments, or encoded slashes)")
        try:
            pairs = urllib.parse.parse_qsl(url.query, max_num_fields=_MAX_QUERY_FIELDS)
        except ValueError:
            return status(400, "BadRequest", "too many query parameters")
        query = dict(pairs)
        if method == "POST" and segments == access.PATH:
            code, found = access.review(body)
            if code != 201:
                return status(code, "BadRequest", str(found["message"]))
            return Response(code, "application/json", orjson.dumps(found))
        if method != "GET":
            return self._refuse_write(method, segments)
        if query.get("watch") in ("true", "1"):
            return status(405, "MethodNotAllowed", "watch is not served by gpu-triage serve: "
                          "a bundle is one moment of the cluster and does not change")
        return self._get(segments, query, accept)

    @staticmethod
    def _segments(path: str) -> list[str] | None:
        raw = path.strip("/").split("/") if path.strip("/") else []
        try:
            segments = [urllib.parse.unquote(s, errors="strict") for s in raw]
        except UnicodeDecodeError:
            return None
        if any(s in ("", ".", "..") or "/" in s or "\\" in s or "\x00" in s
               for s in segments):
            return None
        return segments

    def _refuse_write(self, method: str, segments: list[str]) -> Response:
        sub = _subresource(segments)
        if sub in _REFUSED_SUBRESOURCES:
            return _refuse_sub(sub)
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}.get(method, method.lower())
        return status(405, "MethodNotAllowed",
                      f"gpu-triage serve is read-only: {verb} ({method}) is not allowed; it "
                      f"serves what the bundle {self.store.display} collected")

    def _get(self, segments: list[str], query: dict[str, str], accept: str) -> Response:
        if segments in (["version"],):
            return _json(self.store.version() or {"major": "", "minor": "",
                                                   "gitVersion": "v0.0.0-not-collected"})
        if segments in (["healthz"], ["livez"], ["readyz"]):
            return Response(200, "text/plain; charset=utf-8", b"ok")
        if segments[:1] == [RAW_PREFIX]:
            return self._raw(segments[1:])
        if segments[:1] == ["api"]:
            return self._core(segments[1:], query, accept)
        if segments[:1] == ["apis"]:
            return self._groups(segments[1:], query, accept)
        return _not_found()

    # -- discovery ----------------------------------------------------------------------

    def _short_names(self) -> dict[str, list[str]]:
        names: dict[str, list[str]] = {}
        crds = self.store.objects(BY_PATH[("apiextensions.k8s.io", "v1",
                                           "customresourcedefinitions")])
        for crd in crds if isinstance(crds, list) else []:
            crd_names = _dict(_dict(crd.get("spec")).get("names"))
            short = crd_names.get("shortNames")
            if isinstance(short, list) and all(isinstance(s, str) for s in short):
                names[str(crd_names.get("plural"))] = list(short)
        return names

    def _core(self, rest: list[str], query: dict[str, str], accept: str) -> Response:
        if not rest:
            version = discovery.aggregated_version(accept)
            if version:
                return _json(discovery.aggregated(True, version, self._short_names()),
                             discovery.content_type(version))
            return _json(discovery.api_versions())
        if rest[0] != "v1":
            return _not_found()
        if len(rest) == 1:
            return self._resource_list("", "v1")
        return self._objects("", "v1", rest[1:], query, accept)

    def _groups(self, rest: list[str], query: dict[str, str], accept: str) -> Response:
        if not rest:
            version = discovery.aggregated_version(accept)
            if version:
                return _json(discovery.aggregated(False, version, self._short_names()),
                             discovery.content_type(version))
            return _json(discovery.group_list())
        if len(rest) == 1:
            group = next((g for g in discovery.group_list()["groups"] if g["name"] == rest[0]),
                         None)
            return _json({"kind": "APIGroup", "apiVersion": "v1", **group}) if group else \
                _not_found()
        if len(rest) == 2:
            return self._resource_list(rest[0], rest[1])
        return self._objects(rest[0], rest[1], rest[2:], query, accept)

    def _resource_list(self, group: str, version: str) -> Response:
        found = discovery.resource_list(group, version, self._short_names())
        return _json(found) if found else _not_found()

    # -- objects ------------------------------------------------------------------------

    def _objects(self, group: str, version: str, rest: list[str], query: dict[str, str],
                 accept: str) -> Response:
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        kind = BY_PATH.get((group, version, rest[0]))
        name, sub = (rest[1] if len(rest) > 1 else None), (rest[2] if len(rest) > 2 else None)
        if sub in _REFUSED_SUBRESOURCES:  # proxy/<anything> included
            return _refuse_sub(sub)
        if kind is None or (namespace is not None and not kind.namespaced) or len(rest) > 3:
            return _not_found()
        if sub not in (None, "status", "log") or (sub == "log" and kind.resource != "pods"):
            return _not_found()
        if not kind.collected:
            return self._uncollected(kind, name)
        listed = self.store.objects(kind)
        if isinstance(listed, Absent):
            return status(404, "NotFound", listed.message, {"kind": kind.resource,
                                                            "group": kind.group})
        if namespace is not None:
            listed = [o for o in listed if _meta(o, "namespace") == namespace]
        if name is None:
            return self._list(kind, listed, query, accept)
        found = next((o for o in listed if _meta(o, "name") == name), None)
        if found is None:
            where = f' in namespace "{namespace}"' if namespace else ""
            return status(404, "NotFound", f'{kind.qualified} "{name}" not found: the bundle '
                          f"did not collect it{where}", {"name": name, "group": kind.group,
                                                         "kind": kind.resource})
        if sub == "log":
            return self._log(found, query)
        return self._one(kind, found, query, accept)

    def _uncollected(self, kind: Kind, name: str | None) -> Response:
        message = f"gpu-triage bundles do not collect {kind.qualified}"
        if name is not None:
            return status(404, "NotFound", f'{kind.qualified} "{name}" not found: {message}',
                          {"name": name, "group": kind.group, "kind": kind.resource})
        empty = _json({"kind": f"{kind.kind}List", "apiVersion": kind.group_version,
                       "metadata": {"resourceVersion": "1"}, "items": []})
        return Response(200, empty.content_type, empty.body, f"{message}: this list is empty")

    def _list(self, kind: Kind, listed: list[Obj], query: dict[str, str],
              accept: str) -> Response:
        try:
            if query.get("labelSelector"):
                test = label_selector(query["labelSelector"])
                listed = [o for o in listed if test(o)]
            if query.get("fieldSelector"):
                test = field_selector(query["fieldSelector"], kind.kind)
                listed = [o for o in listed if test(o)]
        except SelectorError as exc:
            return status(400, "BadRequest", str(exc))
        version = table_version(accept)
        if version:
            return _json(self._table(kind, listed, version, query))
        return _json({"kind": f"{kind.kind}List", "apiVersion": kind.group_version,
                      "metadata": {"resourceVersion": "1"}, "items": listed})

    def _one(self, kind: Kind, obj: Obj, query: dict[str, str], accept: str) -> Response:
        version = table_version(accept)
        return _json(self._table(kind, [obj], version, query) if version else obj)

    def _table(self, kind: Kind, listed: list[Obj], version: str, query: dict[str, str]) -> Obj:
        crds = self.store.objects(BY_PATH[("apiextensions.k8s.io", "v1",
                                           "customresourcedefinitions")])
        found = table(kind, listed, crds if isinstance(crds, list) else [],
                      self.store.collected_at(), version, query.get("includeObject", ""))
        for row in found["rows"]:  # text for a terminal; numbers stay numbers
            row["cells"] = [c if isinstance(c, int) and not isinstance(c, bool) else line(str(c))
                            for c in row["cells"]]
        return found

    def _log(self, pod: Obj, query: dict[str, str]) -> Response:
        namespace, name = _meta(pod, "namespace"), _meta(pod, "name")
        spec = _dict(pod.get("spec"))
        containers = [str(c.get("name")) for key in ("initContainers", "containers")
                      for c in _items(spec.get(key)) if isinstance(c, dict)]
        container = query.get("container") or ""
        if not container:
            main = [str(c.get("name")) for c in _items(spec.get("containers"))
                    if isinstance(c, dict)]
            if len(main) != 1:
                return status(400, "BadRequest", f"a container name must be specified for pod "
                              f"{name}, choose one of: [{' '.join(main)}]")
            container = main[0]
        if container not in containers:
            return status(400, "BadRequest", f"container {container} is not valid for pod {name}")
        previous = query.get("previous") == "true"
        path = self.store.log_path(namespace, name, container, previous)
        data = self.store.read(path) if path else None
        if data is None:
            which = "previous log" if previous else "log"
            return status(404, "NotFound", f'the bundle did not collect the {which} of container '
                          f'"{container}" in pod "{name}" (namespace "{namespace}")',
                          {"name": name, "kind": "pods"})
        try:
            return _text(select(data, query, self.store.collected_at()))
        except LogOptionError as exc:
            return status(400, "BadRequest", str(exc))

    # -- node files ---------------------------------------------------------------------

    def _raw(self, rest: list[str]) -> Response:
        if rest[:2] != ["v1", "nodes"]:
            return _not_found()
        if len(rest) == 2:
            return _json({"nodes": self.store.node_names()})
        files = self.store.node_files(rest[2])
        if files is None:
            return status(404, "NotFound", f'the bundle did not collect files of node "{rest[2]}"')
        relative = "/".join(rest[3:])
        if not relative:
            return _json({"node": rest[2], "files": files})
        data = self.store.read(specs.node_file(rest[2], relative)) if relative in files else None
        if data is None:
            return status(404, "NotFound", f'the bundle did not collect {relative} of node '
                          f'"{rest[2]}"')
        return _text(data)


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _meta(obj: Obj, key: str) -> str:
    meta = obj.get("metadata")
    value = meta.get(key) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else ""


def _subresource(segments: list[str]) -> str | None:
    for index, segment in enumerate(segments):
        if segment in _REFUSED_SUBRESOURCES and index >= 3:
            return segment
    return None


def _refuse_sub(sub: str) -> Response:
    return status(405, "MethodNotAllowed", f"{sub} is not served by gpu-triage serve: a bundle "
                  "is a record of the cluster, with no running containers or nodes to reach")


def _not_found() -> Response:
    return status(404, "NotFound", "the server could not find the requested resource "
                  "(gpu-triage serve answers for: " + ", ".join(k.qualified for k in KINDS) + ")")
