"""Discovery: which groups, versions and resources the server offers.

Both forms kubectl reads: the aggregated one (``/api`` and ``/apis`` answered as an
``apidiscovery.k8s.io`` ``APIGroupDiscoveryList``, ``v2beta1`` for kubectl 1.26-1.29,
``v2`` from 1.30 on, chosen by the ``Accept`` header and named in the response's
``Content-Type``, which is how client-go tells them apart), and the legacy one
(``APIVersions``, ``APIGroupList``, an ``APIResourceList`` per group version) for
clients that do not ask for the aggregated form. Every resource offers ``get`` and
``list`` only: kubectl then knows before it asks that nothing can be changed.
"""

from __future__ import annotations

from typing import Any

from gpu_triage.serve.catalog import KINDS, Kind, group_versions

Obj = dict[str, Any]
VERBS = ["get", "list"]
_AGGREGATED = ("v2", "v2beta1")


def aggregated_version(accept: str) -> str | None:
    """The first apidiscovery version the Accept header asks for that we serve."""
    for entry in accept.split(","):
        params = dict(p.strip().partition("=")[::2] for p in entry.split(";")[1:])
        if (params.get("g") == "apidiscovery.k8s.io" and params.get("as") ==
                "APIGroupDiscoveryList" and params.get("v") in _AGGREGATED):
            return params["v"]
    return None


def content_type(version: str) -> str:
    return f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"


def _resource(kind: Kind, short_names: dict[str, list[str]]) -> Obj:
    found: Obj = {"resource": kind.resource,
                  "responseKind": {"group": kind.group, "version": kind.version,
                                   "kind": kind.kind},
                  "scope": "Namespaced" if kind.namespaced else "Cluster",
                  "singularResource": kind.singular, "verbs": VERBS}
    names = short_names.get(kind.resource) or list(kind.short_names)
    if names:
        found["shortNames"] = names
    if kind.categories:
        found["categories"] = list(kind.categories)
    if kind.resource == "pods":
        found["subresources"] = [{"subresource": "log", "responseKind": {
            "group": "", "version": "v1", "kind": "Pod"}, "verbs": ["get"]}]
    return found


def aggregated(legacy: bool, version: str, short_names: dict[str, list[str]]) -> Obj:
    """The APIGroupDiscoveryList of ``/api`` (``legacy``) or of ``/apis``."""
    items = []
    for group, versions in group_versions().items():
        if (group == "") != legacy:
            continue
        items.append({"metadata": {"name": group} if group else {}, "versions": [
            {"version": v, "freshness": "Current",
             "resources": [_resource(k, short_names) for k in KINDS
                           if k.group == group and k.version == v]} for v in versions]})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}",
            "metadata": {}, "items": items}


def api_versions() -> Obj:
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}


def group_list() -> Obj:
    groups = []
    for group, versions in group_versions().items():
        if not group:
            continue
        listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        groups.append({"name": group, "versions": listed, "preferredVersion": listed[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def resource_list(group: str, version: str, short_names: dict[str, list[str]]) -> Obj | None:
    """The APIResourceList of one group version; None when we serve none of it."""
    resources = []
    for kind in KINDS:
        if (kind.group, kind.version) != (group, version):
            continue
        entry: Obj = {"name": kind.resource, "singularName": kind.singular,
                      "namespaced": kind.namespaced, "kind": kind.kind, "verbs": VERBS}
        names = short_names.get(kind.resource) or list(kind.short_names)
        if names:
            entry["shortNames"] = names
        if kind.categories:
            entry["categories"] = list(kind.categories)
        resources.append(entry)
        if kind.resource == "pods":
            resources.append({"name": "pods/log", "singularName": "", "namespaced": True,
                              "kind": "Pod", "verbs": ["get"]})
    if not resources:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": resources}
