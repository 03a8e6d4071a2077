"""A loopback Kubernetes API server for the collector tests: real kubectl binaries talk to it.

It serves, over HTTPS on 127.0.0.1 and a random port, what `kubectl version`, `kubectl get`
and `kubectl logs` ask for (HTTPS because kubectl sends no bearer token over plain HTTP; the
self-signed certificate comes from the openssl command and is the kubeconfig's CA): /version,
legacy discovery (/api, /apis, /apis/<group>/<version>), lists of the recorded fixture objects
(tests/collector/fixtures/cluster), single pods, and pod logs. Knobs on ApiServer reproduce
what customers' clusters do to the collector:

* token: requests without `Authorization: Bearer <token>` get 401 Unauthorized;
* metrics_down: the aggregated API metrics.k8s.io/v1beta1 answers 503 during discovery, which
  makes kubectl print klog lines (memcache.go ... couldn't get resource list) before its error;
* forbidden: resources whose every list is refused with a 403 Status (RBAC);
* only_namespace: the identity may read that namespace only (a RoleBinding there), so every
  cluster-wide list and every other namespace is refused with a 403 Status;
* previous_lost: containers ("ns/pod/container") whose previous log the kubelet no longer has;
* log_text: the log of "ns/pod/container" (or "ns/pod/container.previous") as served, instead
  of three generic lines; tailLines and limitBytes are applied as the kubelet does.

* denied: permissions ("create pods", "create pods/attach", "list events", ...) that a
  SelfSubjectAccessReview (`kubectl auth can-i`) answers "no"; `forbidden` and
  `only_namespace` are answered "no" there too, as an API server's RBAC would;
* refuse_create: a pod create (what `kubectl debug node/...` sends) is refused with Pod Security
  admission's 403, whatever the review said (admission is not RBAC: can-i says yes).

Every request is recorded in `requests` (method, path, query), so tests can check that the
collector only read. Aggregated discovery (the apidiscovery.k8s.io Accept types) is not offered:
kubectl falls back to the legacy endpoints, which every version 1.27-1.33 supports.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import tempfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "cluster"

# resource -> (group, version, kind, namespaced, fixture file)
RESOURCES: dict[str, tuple[str, str, str, bool, str]] = {
    "nodes": ("", "v1", "Node", False, "nodes.json"),
    "namespaces": ("", "v1", "Namespace", False, "namespaces.json"),
    "pods": ("", "v1", "Pod", True, "pods.json"),
    "events": ("", "v1", "Event", True, "events.json"),
    "configmaps": ("", "v1", "ConfigMap", True, "configmaps.json"),
    "secrets": ("", "v1", "Secret", True, ""),
    "resourcequotas": ("", "v1", "ResourceQuota", True, "resourcequotas.json"),
    "daemonsets": ("apps", "v1", "DaemonSet", True, "daemonsets.json"),
    "deployments": ("apps", "v1", "Deployment", True, "deployments.json"),
    "runtimeclasses": ("node.k8s.io", "v1", "RuntimeClass", False, "runtimeclasses.json"),
    "clusterpolicies": ("nvidia.com", "v1", "ClusterPolicy", False,
                        "clusterpolicies.nvidia.com.json"),
    "nvidiadrivers": ("nvidia.com", "v1alpha1", "NVIDIADriver", False,
                      "nvidiadrivers.nvidia.com.json"),
    "customresourcedefinitions": ("apiextensions.k8s.io", "v1", "CustomResourceDefinition", False,
                                  "customresourcedefinitions.json"),
}
METRICS = ("metrics.k8s.io", "v1beta1")
SERVER_VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.4", "gitCommit": "0" * 40,
                  "gitTreeState": "clean", "buildDate": "2026-11-01T00:00:00Z",
                  "goVersion": "go1.22.9", "compiler": "gc", "platform": "linux/amd64"}
IDENTITY = "system:serviceaccount:gpu-operator:gpu-triage"
SSAR_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


_CERT: list[Path] = []


def have_openssl() -> bool:
    return shutil.which("openssl") is not None


def _certificate() -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (made once per test session by openssl)."""
    if not _CERT:
        directory = Path(tempfile.mkdtemp(prefix="loopback-apiserver-"))
        cert, key = directory / "cert.pem", directory / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(cert)],
                       check=True, capture_output=True, timeout=60)
        _CERT.extend([cert, key])
    return _CERT[0], _CERT[1]


def _status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict:
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": message, "reason": reason, "code": code}
    if details:
        status["details"] = details
    return status


class ApiServer:
    """Start with `with ApiServer(...) as api:`; api.url, api.kubeconfig(path) for kubectl."""

    def __init__(self, token: str = "good-token", objects: dict[str, list[dict]] | None = None,
                 secrets: list[dict] | None = None) -> None:
        self.token = token
        self.metrics_down = False
        self.forbidden: set[str] = set()
        self.only_namespace: str | None = None
        self.previous_lost: set[str] = set()
        self.log_text: dict[str, str] = {}
        self.denied: set[str] = set()
        self.reviews: list[dict[str, str]] = []
        self.refuse_create = False
        self.requests: list[tuple[str, str, dict[str, list[str]]]] = []
        self.objects: dict[str, list[dict]] = {}
        for resource, (*_, fixture) in RESOURCES.items():
            items = json.loads((FIXTURES / fixture).read_text())["items"] if fixture else []
            self.objects[resource] = items
        self.objects["secrets"] = list(secrets or [])
        self.objects.update(objects or {})
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        cert, key = _certificate()
        self._ca = cert.read_bytes()
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert, key)
        self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"https://{host}:{port}"

    def __enter__(self) -> ApiServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def kubeconfig(self, path: Path, token: str | None = None, context: str = "loopback") -> Path:
        """A kubeconfig, in YAML as kubectl writes it, for this server with a token user."""
        ca = base64.b64encode(self._ca).decode()
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"current-context: {context}\n"
            f"clusters:\n- name: loopback\n  cluster:\n    server: {self.url}\n"
            f"    certificate-authority-data: {ca}\n"
            f"users:\n- name: triage\n  user:\n    token: {token or self.token}\n"
            f"contexts:\n- name: {context}\n  context:\n    cluster: loopback\n"
            "    user: triage\n"
        )
        return path

    def paths_requested(self) -> list[str]:
        with self._lock:
            return [path for _method, path, _query in self.requests]

    # ---- answering ------------------------------------------------------------------------

    def answer(self, method: str, path: str, query: dict[str, list[str]],
               auth: str | None, body: bytes = b"") -> tuple[int, str, bytes]:
        with self._lock:
            self.requests.append((method, path, query))
        if auth != f"Bearer {self.token}":
            return self._json(401, _status(401, "Unauthorized", "Unauthorized"))
        if method == "POST" and path == SSAR_PATH:
            return self._review(review_spec(body))
        if method == "POST" and path.endswith("/pods") and self.refuse_create:
            return self._pod_security(pod_name(body))
        if method != "GET":
            return self._json(405, _status(405, "MethodNotAllowed", "the loopback server reads"))
        if path == "/version":
            return self._json(200, SERVER_VERSION)
        found = self._discovery(path)
        if found is not None:
            return found
        return self._resource(path, query)

    def allows(self, verb: str, resource: str, subresource: str, namespace: str | None) -> bool:
        full = f"{resource}/{subresource}" if subresource else resource
        if f"{verb} {full}" in self.denied:
            return False
        if self.only_namespace is not None and namespace != self.only_namespace:
            return False
        return not (resource in self.forbidden and verb in ("get", "list", "watch"))

    def _review(self, review: dict) -> tuple[int, str, bytes]:
        """A SelfSubjectAccessReview: the spec back with status.allowed, as the API does."""
        attrs = (review.get("spec") or {}).get("resourceAttributes") or {}
        with self._lock:
            self.reviews.append(dict(attrs))
        allowed = self.allows(attrs.get("verb", ""), attrs.get("resource", ""),
                              attrs.get("subresource", ""), attrs.get("namespace") or None)
        status: dict[str, Any] = {"allowed": allowed}
        if allowed:
            status["reason"] = 'RBAC: allowed by ClusterRoleBinding "gpu-triage"'
        return self._json(201, dict(review, status=status))

    @staticmethod
    def _pod_security(name: str) -> tuple[int, str, bytes]:
        """Pod Security admission refusing kubectl debug's privileged node pod. Wording as the
        API server writes it: https://github.com/cilium/pwru/issues/583 (baseline:latest, host
        namespaces, hostPath volumes, privileged); the pod's volume is kubectl's host-root."""
        message = (f'pods "{name}" is forbidden: violates PodSecurity "baseline:latest": host '
                   'namespaces (hostNetwork=true, hostPID=true, hostIPC=true), hostPath volumes '
                   '(volume "host-root"), privileged (container "debugger" must not set '
                   'securityContext.privileged=true)')
        return 403, "application/json", json.dumps(_status(403, "Forbidden", message, {
            "name": name, "kind": "pods"})).encode()

    @staticmethod
    def _json(code: int, obj: Any) -> tuple[int, str, bytes]:
        return code, "application/json", json.dumps(obj).encode()

    def _discovery(self, path: str) -> tuple[int, str, bytes] | None:
        groups: dict[str, list[str]] = {}
        for group, version, *_ in RESOURCES.values():
            if group and version not in groups.setdefault(group, []):
                groups[group].append(version)
        groups.setdefault(METRICS[0], []).append(METRICS[1])
        if path == "/api":
            return self._json(200, {"kind": "APIVersions", "versions": ["v1"],
                                    "serverAddressByClientCIDRs": []})
        if path == "/apis":
            listed = [{"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}
                                               for v in vs],
                       "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
                      for g, vs in sorted(groups.items())]
            return self._json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": listed})
        if path == f"/apis/{METRICS[0]}/{METRICS[1]}":
            if self.metrics_down:
                return 503, "text/plain", b"service unavailable\n"
            return self._json(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                    "groupVersion": "/".join(METRICS), "resources": []})
        parts = path.strip("/").split("/")
        if parts == ["api", "v1"]:
            group_version = ("", "v1")
        elif len(parts) == 3 and parts[0] == "apis":
            group_version = (parts[1], parts[2])
        else:
            return None
        resources = []
        for name, (group, version, kind, namespaced, _f) in RESOURCES.items():
            if (group, version) == group_version:
                resources.append({"name": name, "singularName": kind.lower(), "kind": kind,
                                  "namespaced": namespaced, "verbs": ["get", "list", "watch"]})
                if name == "pods":
                    resources.append({"name": "pods/log", "singularName": "", "kind": "Pod",
                                      "namespaced": True, "verbs": ["get"]})
        if not resources:
            return None
        gv = "/".join(p for p in group_version if p)
        return self._json(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                "groupVersion": gv, "resources": resources})

    def _forbid(self, resource: str, namespace: str | None, verb: str,
                sub: str = "") -> tuple[int, str, bytes]:
        group = RESOURCES.get(resource, ("",))[0]
        full = f"{resource}/{sub}" if sub else resource
        where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        message = (f'{full} is forbidden: User "{IDENTITY}" cannot {verb} resource "{full}" '
                   f'in API group "{group}" {where}')
        return self._json(403, _status(403, "Forbidden", message,
                                       {"kind": resource, "group": group}))

    def _resource(self, path: str, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        parts = path.strip("/").split("/")
        base = 2 if parts[:1] == ["api"] else 3
        group_version = ("", "v1") if base == 2 else tuple(parts[1:3])
        rest = parts[base:]
        namespace = None
        if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
            namespace, rest = rest[1], rest[2:]
        if not rest or rest[0] not in RESOURCES:
            return self._json(404, _status(404, "NotFound", "the server could not find the "
                                           "requested resource"))
        resource = rest[0]
        group, version, kind, namespaced, _f = RESOURCES[resource]
        if (group, version) != group_version:
            return self._json(404, _status(404, "NotFound", "the server could not find the "
                                           "requested resource"))
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        verb = "get" if name else "list"
        scoped_out = self.only_namespace is not None and namespace != self.only_namespace
        if resource in self.forbidden or scoped_out:
            return self._forbid(resource, namespace, verb, sub)
        items = [o for o in self.objects[resource]
                 if namespace is None or (o.get("metadata") or {}).get("namespace") == namespace]
        items = self._selected(items, query)
        if name is None:
            api_version = f"{group}/{version}" if group else version
            listed = [dict(o, apiVersion=api_version, kind=kind) for o in items]
            return self._json(200, {"kind": f"{kind}List", "apiVersion": api_version,
                                    "metadata": {"resourceVersion": "1000"}, "items": listed})
        match = [o for o in items if (o.get("metadata") or {}).get("name") == name]
        if not match:
            return self._json(404, _status(404, "NotFound", f'{resource} "{name}" not found',
                                           {"name": name, "kind": resource}))
        if sub == "log":
            return self._log(match[0], query)
        return self._json(200, dict(match[0], apiVersion=f"{group}/{version}" if group else version,
                                    kind=kind))

    @staticmethod
    def _selected(items: list[dict], query: dict[str, list[str]]) -> list[dict]:
        for selector in query.get("labelSelector", []):
            for term in selector.split(","):
                key, _, value = term.partition("=")
                items = [o for o in items
                         if ((o.get("metadata") or {}).get("labels") or {}).get(key) == value]
        return items

    def _log(self, pod: dict, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        meta = pod.get("metadata") or {}
        container = (query.get("container") or [""])[0]
        previous = (query.get("previous") or ["false"])[0] == "true"
        key = f"{meta.get('namespace')}/{meta.get('name')}/{container}"
        if previous and key in self.previous_lost:
            message = (f'previous terminated container "{container}" in pod '
                       f'"{meta.get("name")}" not found')
            return self._json(400, _status(400, "BadRequest", message))
        which = "previous " if previous else ""
        text = self.log_text.get(f"{key}{'.previous' if previous else ''}")
        lines = [f"2026-12-01T10:00:{n:02d}.000000000Z {which}log line {n} of {key}\n"
                 for n in range(3)] if text is None else text.splitlines(keepends=True)
        tail = (query.get("tailLines") or [""])[0]
        lines = lines[-int(tail):] if tail.isdigit() and int(tail) > 0 else lines
        body = "".join(lines).encode()
        limit = (query.get("limitBytes") or [""])[0]
        return 200, "text/plain", body[:int(limit)] if limit.isdigit() else body


def _fields(data: bytes) -> dict[int, list[bytes | int]]:
    """The fields of one protobuf message: number -> values (varints, length-delimited bytes)."""
    found: dict[int, list[bytes | int]] = {}
    at = 0

    def varint() -> int:
        nonlocal at
        value = shift = 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while at < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            found.setdefault(number, []).append(varint())
        elif wire == 2:
            size = varint()
            found.setdefault(number, []).append(data[at:at + size])
            at += size
        else:
            raise ValueError(f"unexpected protobuf wire type {wire}")
    return found


ATTRIBUTES = ("namespace", "verb", "group", "version", "resource", "subresource", "name")


def review_spec(body: bytes) -> dict:
    """A SelfSubjectAccessReview as JSON (kubectl up to 1.32) or protobuf (1.33 sends its
    built-in types so: the 'k8s\\0' envelope runtime.Unknown{typeMeta=1, raw=2}, whose raw is
    the review {metadata=1, spec=2 {resourceAttributes=1 {namespace=1, verb=2, group=3,
    version=4, resource=5, subresource=6, name=7}}}, the fields of k8s.io/api's generated.proto)."""
    if not body.startswith(b"k8s\x00"):
        return json.loads(body or b"{}")
    raw = _fields(body[4:])[2][0]
    spec = _fields(bytes(raw))[2][0]  # type: ignore[arg-type]
    attrs = _fields(bytes(spec)).get(1, [b""])[0]  # type: ignore[arg-type]
    values = _fields(bytes(attrs))  # type: ignore[arg-type]
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {
                name: bytes(values[n][0]).decode() for n, name in enumerate(ATTRIBUTES, 1)
                if n in values}}}  # type: ignore[arg-type]


def pod_name(body: bytes) -> str:
    """metadata.name of a created Pod, sent as JSON or as protobuf (Pod {metadata=1 {name=1}})."""
    if not body.startswith(b"k8s\x00"):
        return str((json.loads(body or b"{}").get("metadata") or {}).get("name", ""))
    pod = _fields(bytes(_fields(body[4:])[2][0]))  # type: ignore[arg-type]
    meta = _fields(bytes(pod[1][0]))  # type: ignore[arg-type]
    return bytes(meta.get(1, [b""])[0]).decode()  # type: ignore[arg-type]


def _handler(server: ApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            length = int(self.headers.get("Content-Length") or 0)
            sent = self.rfile.read(length) if length else b""
            code, ctype, body = server.answer(self.command, url.path, query,
                                              self.headers.get("Authorization"), sent)
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    return Handler
