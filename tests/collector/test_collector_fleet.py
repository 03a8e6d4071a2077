"""Big fleets: a 400-node fake cluster served to a real kubectl by the loopback API server, nodes
reached over ssh (fakes/fake_ssh.py runs the real node.sh against a fake root). The three
unhealthy nodes must be visited first, then one node of each kind, then the rest, at most
--max-nodes of them; every node left out is named, with its reason, in the manifest and on
stderr. A node slower than --node-timeout is not collected, and says so."""

from __future__ import annotations

import json
import time
from pathlib import Path

from apiserver import ApiServer
from collector_support import fake_ssh_env, make_node_root
from test_collector_real_kubectl import NEEDS, NEWEST, bundle_files, run_collector

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from bundle import open_bundle
from collectors.fleet import order

UNHEALTHY = {"gpu-137": "not Ready", "gpu-250": "GPUs not advertised",
             "gpu-311": "pod gpu-operator/nvidia-device-plugin-daemonset-x311 CrashLoopBackOff"}


def _node(n: int) -> dict:
    name = f"gpu-{n:03d}"
    product = "NVIDIA-A100-SXM4-80GB" if n < 200 else "NVIDIA-H100-80GB-HBM3"
    kernel = "5.15.0-126-generic" if n != 42 else "6.8.0-49-generic"  # one odd kernel
    allocatable = "0" if name == "gpu-250" else "8"
    ready = "False" if name == "gpu-137" else "True"
    return {"metadata": {"name": name, "labels": {
                "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product,
                "nvidia.com/gpu.count": "8", "nvidia.com/cuda.driver.major": "570",
                "nvidia.com/cuda.driver.minor": "124", "nvidia.com/cuda.driver.rev": "06"}},
            "status": {"capacity": {"nvidia.com/gpu": "8"},
                       "allocatable": {"nvidia.com/gpu": allocatable},
                       "conditions": [{"type": "Ready", "status": ready}],
                       "nodeInfo": {"osImage": "Ubuntu 22.04.5 LTS", "kernelVersion": kernel,
                                    "containerRuntimeVersion": "containerd://1.7.27"}}}


def fleet() -> dict[str, list[dict]]:
    crash = {"name": "nvidia-device-plugin", "restartCount": 9,
             "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    plugins = [{"metadata": {"namespace": "gpu-operator", "name":
                             f"nvidia-device-plugin-daemonset-x{n:03d}",
                             "labels": {"app": "nvidia-device-plugin-daemonset"}},
                "spec": {"nodeName": f"gpu-{n:03d}", "containers": [
                    {"name": "nvidia-device-plugin",
                     "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}]},
                "status": {"phase": "Running", "containerStatuses": [
                    crash if n == 311 else {"name": "nvidia-device-plugin", "restartCount": 0,
                                            "state": {"running": {}}}]}}
               for n in (0, 137, 250, 311, 399)]
    operator = {"metadata": {"namespace": "gpu-operator", "name": "gpu-operator-6b8f9c7d5-x2x9q",
                             "labels": {"app": "gpu-operator"}},
                "spec": {"nodeName": "cp-1", "containers": [
                    {"name": "gpu-operator", "image": "nvcr.io/nvidia/gpu-operator:v25.3.0"}]},
                "status": {"phase": "Running", "containerStatuses": [
                    {"name": "gpu-operator", "restartCount": 0, "state": {"running": {}}}]}}
    return {"nodes": [_node(n) for n in range(400)], "pods": [operator, *plugins],
            "events": [], "configmaps": []}


def test_the_order_without_a_cluster() -> None:
    """fleet.order alone: problems (by name), then one of each kind, then the rest."""
    objects = fleet()
    names = [n["metadata"]["name"] for n in objects["nodes"]]
    ranked = order(names, {"items": objects["nodes"]}, {"items": objects["pods"]}, None,
                   lambda pod: pod["metadata"]["namespace"] == "gpu-operator")
    assert [n for n, _why in ranked[:6]] == ["gpu-137", "gpu-250", "gpu-311", "gpu-000",
                                              "gpu-042", "gpu-200"]
    whys = dict(ranked)
    for node, problem in UNHEALTHY.items():
        assert whys[node].startswith("problem: ") and problem in whys[node], whys[node]
    assert whys["gpu-042"] == ("first of its kind (NVIDIA-A100-SXM4-80GB, 570.124.06, "
                               "Ubuntu 22.04.5 LTS, 6.8.0-49-generic, containerd://1.7.27)")
    assert whys["gpu-001"] == "healthy, same kind as a node already chosen"
    assert [n for n, _why in ranked[6:9]] == ["gpu-001", "gpu-002", "gpu-003"]
    assert len(ranked) == 400 and len(set(n for n, _w in ranked)) == 400


def _collect(tmp: Path, api: ApiServer, root: Path, nodes: list[str], *args: str,
             slow: dict[str, float] | None = None) -> tuple[str, Path, float]:
    env = fake_ssh_env(tmp, {"ssh_roots": {n: str(root) for n in nodes},
                             "ssh_slow": slow or {}})
    started = time.monotonic()
    code, stderr, path = run_collector(NEWEST, tmp, api, "--node-mode", "ssh", *args,
                                       env_extra=env)
    assert code == 0 and path is not None, stderr
    return stderr, path, time.monotonic() - started


def _ssh_hosts(tmp: Path) -> list[str]:
    calls = [json.loads(line) for line in (tmp / "fake.log").read_text().splitlines()]
    hosts = []
    for call in calls:
        argv = [a for a in call["argv"]]
        i = 0
        while argv[i].startswith("-"):
            i += 2 if argv[i] in ("-o", "-l") else 1
        hosts.append(argv[i])
    return hosts


@NEEDS
def test_400_nodes_the_unhealthy_first_and_the_rest_named(tmp_path: Path) -> None:
    assert NEWEST is not None
    root = make_node_root(tmp_path / "roots", "gpu-x")
    with ApiServer(objects=fleet()) as api:
        stderr, path, _seconds = _collect(
            tmp_path, api, root, [f"gpu-{n:03d}" for n in range(400)],
            "--max-nodes", "6", "--parallel", "2")
    visited = _ssh_hosts(tmp_path)
    assert sorted(visited[:3]) == ["gpu-137", "gpu-250", "gpu-311"]  # problems first
    assert sorted(visited) == sorted(["gpu-137", "gpu-250", "gpu-311", "gpu-000", "gpu-042",
                                      "gpu-200"])
    files, manifest, items = bundle_files(path)
    collected = {name.split("/")[1] for name in files if name.startswith("nodes/")}
    assert collected == set(visited)
    assert manifest["options"]["nodes"][:3] == ["gpu-137", "gpu-250", "gpu-311"]
    left = {i["node"]: i for i in manifest["items"] if i.get("error_kind") == "skipped"}
    assert len(left) == 394 and not set(left) & set(visited)
    assert left["gpu-399"]["path"] == "nodes/gpu-399"
    assert left["gpu-399"]["error"] == ("node not visited: left out by --max-nodes 6 (healthy, "
                                        "same kind as a node already chosen)")
    assert items["nodes/gpu-001"]["error_kind"] == "skipped"
    assert ("gpu-triage collect: nodes with problems, visited first: gpu-137 (not Ready); "
            "gpu-250 (GPUs not advertised (no allocatable nvidia.com/gpu)); gpu-311 (pod "
            "gpu-operator/nvidia-device-plugin-daemonset-x311 CrashLoopBackOff)") in stderr
    assert ("gpu-triage collect: nodes not reached (394, left out by --max-nodes 6): gpu-001, "
            "gpu-002, gpu-003") in stderr
    assert "and 374 more" in stderr
    assert ("collected 9 cluster object files" in stderr or "cluster object files" in stderr)
    assert "the node files of 6 of 400 nodes" in stderr

    # the analyzer says which nodes it has no node files for, and why
    with open_bundle(path) as bundle:
        report = analyze(bundle, discover().rules)
    skipped = next(f for f in report.findings if f.id == "BND001:skipped")
    assert skipped.summary.startswith(
        "394 collection step(s) node not visited: left out by the collector's --max-nodes, so "
        "it has no node files: nodes/gpu-001, nodes/gpu-002, nodes/gpu-003, nodes/gpu-004 and "
        "390 more.")
    assert len(skipped.nodes) == 394 and "gpu-137" not in skipped.nodes


@NEEDS
def test_a_node_slower_than_the_node_timeout_says_why(tmp_path: Path) -> None:
    assert NEWEST is not None
    root = make_node_root(tmp_path / "roots", "gpu-x")
    objects = fleet()
    objects["nodes"] = objects["nodes"][:3]
    with ApiServer(objects=objects) as api:
        stderr, path, _seconds = _collect(tmp_path, api, root, ["gpu-000", "gpu-001", "gpu-002"],
                                          "--node-timeout", "10", slow={"gpu-001": 40})
    _files, _manifest, items = bundle_files(path)
    assert items["nodes/gpu-001/dmesg.txt"]["error"] == (
        "node not collected (--node-mode ssh): timed out after 10s")
    assert items["nodes/gpu-000/dmesg.txt"]["error"] is None
    assert "gpu-001 NOT collected: timed out after 10s" in stderr
    assert "gpu-triage collect: nodes not reached (1, timed out after 10s): gpu-001" in stderr
    assert "the node files of 2 of 3 nodes" in stderr
