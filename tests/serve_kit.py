"""A bundle for the ``serve`` tests, and an HTTPS client for the server they start.

The bundle is ``samples/dcgm-profiling-crashloop`` (a CrashLoopBackOff DCGM exporter
with its previous log, two GPU nodes) plus what that sample lacks: the GPU Operator's
ClusterPolicy CRD with its printer columns, a kubelet event on a node, a ResourceQuota,
a log line carrying terminal escape sequences, and a symbolic link among a node's files
(which the bundle reader refuses, so serve must never answer it).
"""

from __future__ import annotations

import http.client
import json
import shutil
import ssl
from pathlib import Path
from typing import Any

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "dcgm-profiling-crashloop"
NODE = "gpu-2"
POD_NS, POD = "gpu-operator", "nvidia-dcgm-exporter-9pm9d"
CONTAINER, INIT = "nvidia-dcgm-exporter", "toolkit-validation"
# The printer columns of the GPU Operator's CRD, as NVIDIA ships it:
# https://github.com/NVIDIA/gpu-operator/blob/main/deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml
CLUSTERPOLICY_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "clusterpolicies.nvidia.com",
                 "creationTimestamp": "2026-11-02T08:00:00Z"},
    "spec": {"group": "nvidia.com", "scope": "Cluster",
             "names": {"kind": "ClusterPolicy", "listKind": "ClusterPolicyList",
                       "plural": "clusterpolicies", "singular": "clusterpolicy"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "additionalPrinterColumns": [
                               {"jsonPath": ".status.state", "name": "Status", "type": "string"},
                               {"jsonPath": ".metadata.creationTimestamp", "name": "Age",
                                "type": "string"}]}]}}
# What the kubelet records when it starts: involvedObject.uid is the node's name, not its
# uid (kubectl describe node asks for both), and the object has no namespace.
NODE_EVENT = {
    "apiVersion": "v1", "kind": "Event", "count": 1, "type": "Normal", "reason": "Starting",
    "message": "Starting kubelet.", "firstTimestamp": "2026-11-30T01:00:00Z",
    "lastTimestamp": "2026-11-30T01:00:00Z",
    "involvedObject": {"kind": "Node", "name": NODE, "uid": NODE},
    "metadata": {"name": f"{NODE}.18ecb0000000aaaa", "namespace": "default",
                 "creationTimestamp": "2026-11-30T01:00:00Z"},
    "source": {"component": "kubelet", "host": NODE}}
QUOTA = {"apiVersion": "v1", "kind": "ResourceQuota",
         "metadata": {"name": "gpu-quota", "namespace": "default",
                      "creationTimestamp": "2026-11-29T08:00:00Z"},
         "spec": {"hard": {"requests.nvidia.com/gpu": "4"}},
         "status": {"hard": {"requests.nvidia.com/gpu": "4"},
                    "used": {"requests.nvidia.com/gpu": "1"}}}
HOSTILE_LINE = ("2026-11-30T09:14:00.000000001Z clipboard \x1b]52;c;cm0gLXJmIH4=\x07 "
                "colour \x1b[31mred\x1b[0m end\n")


def _add_items(path: Path, *items: dict[str, Any]) -> None:
    document = json.loads(path.read_text())
    document["items"].extend(items)
    path.write_text(json.dumps(document))


def build(root: Path) -> Path:
    """The served bundle, an unpacked directory under ``root``."""
    bundle = root / "served-bundle"
    shutil.copytree(SAMPLE, bundle)
    (bundle / "cluster" / "crds.json").write_text(json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": [CLUSTERPOLICY_CRD]}))
    _add_items(bundle / "cluster" / "events.json", NODE_EVENT)
    _add_items(bundle / "cluster" / "resourcequotas.json", QUOTA)
    log = bundle / "logs" / POD_NS / POD / f"{INIT}.log"
    log.write_text(HOSTILE_LINE)
    (bundle / "nodes" / NODE / "host" / "passwd").symlink_to("/etc/passwd")
    return bundle


def objects(bundle: Path, name: str) -> list[dict[str, Any]]:
    """The items of ``cluster/<name>.json`` as the bundle holds them."""
    items: list[dict[str, Any]] = json.loads((bundle / "cluster" / name).read_text())["items"]
    return items


class Client:
    """HTTPS to a serve session, trusting its certificate only."""

    def __init__(self, url: str, ca_pem: bytes, token: str | None) -> None:
        self.host, port = url.removeprefix("https://").split(":")
        self.port = int(port)
        self.context = ssl.create_default_context(cadata=ca_pem.decode())
        self.token = token

    def connect(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.context,
                                           timeout=10)

    def request(self, method: str, path: str, accept: str = "application/json",
                connection: http.client.HTTPSConnection | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
        own = connection or self.connect()
        sent = {"Accept": accept, **(headers or {})}
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        own.request(method, path.replace(" ", "%20"), headers=sent)
        response = own.getresponse()
        body = response.read()
        if connection is None:
            own.close()
        return response.status, response.getheader("Content-Type") or "", body

    def json(self, path: str, accept: str = "application/json") -> Any:
        code, _, body = self.request("GET", path, accept)
        return code, json.loads(body)
