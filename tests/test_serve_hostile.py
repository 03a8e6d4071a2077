"""``serve`` over a damaged, hostile bundle: objects whose every field has the wrong type,
lists that are not lists, JSON that does not parse. Every request is answered -- 200,
400 or 404 with a reason -- never a dropped connection or a 500, and the unreadable files
are named."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from serve_kit import Client

from bundle import open_bundle
from gpu_triage.serve.catalog import KINDS
from gpu_triage.serve.session import Session

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
WRONG: list[Any] = [None, 5, "x", [], [1, "x", None], {"a": []}, True]
FIELDS = ["metadata", "status", "spec", "involvedObject", "source", "data", "handler",
          "count", "lastTimestamp", "message"]


def _hostile_objects(kind: str) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for index, (field, value) in enumerate(itertools.product(FIELDS, WRONG)):
        obj: dict[str, Any] = {"kind": kind, "metadata": {"name": f"o-{index}",
                                                          "namespace": "ns"}}
        obj[field] = value
        objects.append(obj)
    nested = {"containerStatuses": WRONG, "initContainerStatuses": [
        {"state": v, "lastState": {"terminated": v}, "restartCount": v} for v in WRONG],
        "conditions": WRONG, "addresses": WRONG, "nodeInfo": WRONG, "hard": WRONG}
    objects.append({"kind": kind, "metadata": {"name": "nested", "namespace": "ns",
                                               "labels": {"a": ["b"]},
                                               "creationTimestamp": "not a time"},
                    "status": nested, "spec": {"containers": 5, "initContainers": "x",
                                               "template": {"spec": WRONG}, "selector": WRONG,
                                               "versions": WRONG}})
    bare = {k: v for k, v in nested.items() if k != "initContainerStatuses"}
    objects.append({"kind": kind, "metadata": {"name": "bare", "namespace": "ns"},
                    "status": bare})
    return objects


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    root = tmp_path_factory.mktemp("hostile-serve") / "bundle"
    (root / "cluster").mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps({"format_version": 1,
                                                    "created_at": "2026-11-30T09:15:00Z"}))
    for kind in KINDS:
        if kind.path:
            (root / kind.path).write_text(json.dumps(
                {"kind": "List", "items": [*_hostile_objects(kind.kind), 7, "x", None]}))
    pods = json.loads((root / "cluster" / "pods.json").read_text())
    pods["items"].append({"kind": "Pod", "metadata": {"name": "logged", "namespace": "ns"},
                          "spec": {"containers": [{"name": "c"}]}})
    (root / "cluster" / "pods.json").write_text(json.dumps(pods))
    (root / "cluster" / "events.json").write_text('{"items": [')
    (root / "cluster" / "nodes.json").write_text('[{"kind": "Node"}]')
    logs = root / "logs" / "ns" / "logged"
    logs.mkdir(parents=True)
    (logs / "c.log").write_bytes(b"\xff\xfe not utf-8 \x1b[2J\n")
    with open_bundle(root) as opened, Session(opened) as session:
        yield Client(session.url, session.ca_pem, session.token)


def _path(kind: Any, namespace: str | None = None) -> str:
    base = "/api/v1" if not kind.group else f"/apis/{kind.group}/{kind.version}"
    where = f"/namespaces/{namespace}" if namespace and kind.namespaced else ""
    return f"{base}{where}/{kind.resource}"


@pytest.mark.parametrize("kind", [k for k in KINDS if k.collected], ids=lambda k: k.resource)
def test_every_request_is_answered(client: Client, kind: Any) -> None:
    for accept in ("application/json", TABLE):
        for path in (_path(kind), _path(kind, "ns"), _path(kind) + "?labelSelector=a=b",
                     _path(kind) + "?fieldSelector=metadata.name=nested",
                     _path(kind, "ns") + "/nested", _path(kind, "ns") + "/o-3"):
            code, _, body = client.request("GET", path, accept)
            assert code in (200, 404), (path, body[:200])
            assert b"\x1b" not in body or accept == "application/json"


def test_unreadable_files_are_named(client: Client) -> None:
    code, found = client.json("/api/v1/events")
    assert code == 404 and found["message"].startswith(
        "the bundle's cluster/events.json could not be read: invalid JSON")
    code, found = client.json("/api/v1/nodes")
    assert (code, found["message"]) == (
        404, "the bundle's cluster/nodes.json could not be read: not a List of Node")


def test_logs_of_a_damaged_pod(client: Client) -> None:
    code, _, body = client.request("GET", "/api/v1/namespaces/ns/pods/nested/log")
    assert code == 400  # its containers are not a list: none can be named
    code, _, body = client.request("GET", "/api/v1/namespaces/ns/pods/o-3/log?container=c")
    assert code == 404  # its metadata is a list: it has no name
    code, _, body = client.request("GET", "/api/v1/namespaces/ns/pods/logged/log")
    assert (code, body.decode()) == (200, "\ufffd\ufffd not utf-8 \n")
