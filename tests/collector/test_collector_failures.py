"""Partial failure: every failed step is an item with its error, and a bundle is still written."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from collector_support import COLLECT_PY, by_path, on_system_path, read_bundle
from test_collector_bundle import CLUSTER_PATHS, NODE_PATHS

needs_containerd = pytest.mark.skipif(not on_system_path("containerd"), reason="needs containerd")
OPERATOR_LOG = "logs/gpu-operator/gpu-operator-6b8f9c7d5-x2x9q/gpu-operator.log"


def files_by_rel(names, files):
    top = names[0].split("/")[0]
    return {name[len(top) + 1 :]: data for name, data in files.items()}


@needs_containerd
def test_forbidden_missing_crd_unreachable_node_and_timeouts(cluster):
    cluster.scenario(
        {
            "forbidden": ["events"],
            "missing": ["nvidiadrivers.nvidia.com"],
            "debug_fail": {"gpu-b": "error: timed out waiting for the condition"},
            "log_sleep": {"gpu-operator/gpu-operator-6b8f9c7d5-x2x9q/gpu-operator": 30},
        }
    )
    (cluster.roots["gpu-a"] / "fake" / "journal" / "kubelet.sleep").write_text("30")
    code, path = cluster.collect("--step-timeout", "2")
    assert code == 0 and path is not None
    names, files, manifest = read_bundle(path)
    present, items = files_by_rel(names, files), by_path(manifest)

    events = items["cluster/events.json"]
    assert "Forbidden" in events["error"] and events["exit_code"] == 1 and events["bytes"] == 0
    assert "cluster/events.json" not in present
    crd = items["cluster/nvidiadrivers.json"]
    assert (
        "doesn't have a resource type" in crd["error"]
        and "cluster/nvidiadrivers.json" not in present
    )

    log = items[OPERATOR_LOG]
    assert log["error"] == "timed out after 2s" and OPERATOR_LOG not in present
    journal = items["nodes/gpu-a/journal/kubelet.jsonl"]
    assert journal["error"] == "timed out after 2s" and journal["exit_code"] == 124

    assert not any(p.startswith("nodes/gpu-b/") for p in present)
    for rel in NODE_PATHS:
        item = items["nodes/gpu-b/" + rel]
        assert item["node"] == "gpu-b" and item["command"][:2] == ["kubectl", "debug"]
        assert "timed out waiting for the condition" in item["error"]
    assert "nodes/gpu-a/containerd/config-dump.toml" in present

    expected = CLUSTER_PATHS + [f"nodes/{n}/{p}" for n in ("gpu-a", "gpu-b") for p in NODE_PATHS]
    for rel in expected:
        assert rel in present or items[rel]["error"], rel
    # the debug pod of the failed node was deleted too
    assert cluster.live_debug_pods() == {}
    deleted = [argv[2] for argv in cluster.invocations("kubectl") if argv[0] == "delete"]
    assert any(name.startswith("node-debugger-gpu-b-") for name in deleted)


@needs_containerd
def test_ssh_mode_with_an_unreachable_node_and_a_refused_name(cluster):
    cluster.scenario({"ssh_unreachable": ["10.0.1.12"]})
    code, path = cluster.collect(
        "--node-mode", "ssh", "--ssh-user", "ops", "--nodes", "gpu-a,gpu-b,Bad_Node"
    )
    assert code == 0
    names, files, manifest = read_bundle(path)
    present, items = files_by_rel(names, files), by_path(manifest)
    ssh_calls = cluster.invocations("ssh")
    assert sorted(argv[7] for argv in ssh_calls) == ["10.0.1.11", "10.0.1.12"]
    for argv in ssh_calls:
        assert argv[:7] == ["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=15", "-l", "ops"]
        assert argv[8] == "env" and argv[-2:] == ["sh", "-s"]
        assert all(word.startswith("GPU_TRIAGE_") for word in argv[9:-2])
    assert "nodes/gpu-a/nvidia-smi.xml" in present
    item = items["nodes/gpu-b/containerd/config-dump.toml"]
    assert "Connection refused" in item["error"] and item["exit_code"] == 255
    assert item["command"][0] == "ssh"
    refused = [i for i in manifest["items"] if i["node"] == "Bad_Node"]
    assert len(refused) == 1 and refused[0]["path"] == "nodes" and "DNS-1123" in refused[0]["error"]
    assert not any("Bad_Node" in name for name in names)
    assert not any(argv[0] == "debug" for argv in cluster.invocations("kubectl"))


def test_no_api_access_is_one_line_and_exit_2(cluster, capsys):
    cluster.scenario({"no_server": True})
    code, path = cluster.collect()
    assert code == 2 and path is None
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and "cannot reach the Kubernetes API server" in err[0] and "refused" in err[0]
    )
    assert [argv[0] for argv in cluster.invocations("kubectl")] == ["version"]


def test_missing_kubectl_is_one_line_and_exit_2(cluster, monkeypatch, capsys, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, path = cluster.collect()
    assert code == 2 and path is None
    assert capsys.readouterr().err.strip() == "gpu-triage collect: kubectl not found on PATH"


@needs_containerd
def test_deadline_stops_the_run_but_writes_the_bundle(cluster):
    cluster.scenario({"debug_sleep": {"gpu-a": 30, "gpu-b": 30}})
    started = time.monotonic()
    code, path = cluster.collect("--deadline", "3", "--parallel", "2")
    assert time.monotonic() - started < 20
    assert code == 0
    _names, _files, manifest = read_bundle(path)
    items = by_path(manifest)
    assert "timed out" in items["nodes/gpu-a/dmesg.txt"]["error"]
    assert any(i["error"] == "not run: the --deadline was reached" for i in manifest["items"])
    assert cluster.live_debug_pods() == {}


@needs_containerd
def test_ctrl_c_writes_a_partial_bundle_and_removes_debug_pods(cluster, tmp_path):
    cluster.scenario({"debug_sleep": {"gpu-a": 60, "gpu-b": 60}})
    out = tmp_path / "ctrl-c"
    out.mkdir()
    proc = subprocess.Popen(
        [sys.executable, str(COLLECT_PY), "-o", str(out)],
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while len(cluster.live_debug_pods()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(cluster.live_debug_pods()) == 2
    proc.send_signal(signal.SIGINT)
    _stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr.decode()
    assert cluster.live_debug_pods() == {}
    bundles = list(out.glob("*.tgz"))
    assert len(bundles) == 1 and not list(out.glob("*.part"))
    _names, _files, manifest = read_bundle(bundles[0])
    assert manifest["interrupted"] is True
    items = by_path(manifest)
    assert items["cluster/pods.json"]["error"] is None
    assert "interrupted" in items["nodes/gpu-a/nvidia-smi.xml"]["error"]
    assert "partial bundle" in stderr.decode()


@needs_containerd
def test_nodes_without_a_host_shell_are_not_visited_and_said_once(cluster, capsys):
    """Talos and Bottlerocket have no shell for node.sh: one item each, one line for all."""
    nodes_path = cluster.data / "cluster" / "nodes.json"
    nodes = json.loads(nodes_path.read_text())
    images = {"gpu-a": "Talos (v1.7.4)", "gpu-b": "Bottlerocket OS 1.19.4 (aws-k8s-1.27)"}
    for node in nodes["items"]:
        name = node["metadata"]["name"]
        if name in images:
            node["status"]["nodeInfo"]["osImage"] = images[name]
    nodes_path.write_text(json.dumps(nodes))
    code, path = cluster.collect()
    assert code == 0
    names, _files, manifest = read_bundle(path)
    node_items = [i for i in manifest["items"] if i["node"] in images]
    assert sorted(i["path"] for i in node_items) == ["nodes/gpu-a", "nodes/gpu-b"]
    by_node = {i["node"]: i for i in node_items}
    assert by_node["gpu-a"]["error_kind"] == by_node["gpu-b"]["error_kind"] == "no-shell"
    assert by_node["gpu-a"]["error"].startswith("node not collected: Talos Linux has no shell")
    assert by_node["gpu-b"]["error"].startswith("node not collected: Bottlerocket has no shell")
    assert not any("/nodes/" in name for name in names)
    assert not any(argv[0] == "debug" for argv in cluster.invocations("kubectl"))
    assert any(p.startswith("logs/gpu-operator/") for p in by_path(manifest))
    err = capsys.readouterr().err
    assert err.count("without a host shell") == 1
    assert "no node files from gpu-a, gpu-b" in err


@needs_containerd
def test_a_shell_node_beside_a_talos_node_is_still_collected(cluster):
    nodes_path = cluster.data / "cluster" / "nodes.json"
    nodes = json.loads(nodes_path.read_text())
    for node in nodes["items"]:
        if node["metadata"]["name"] == "gpu-b":
            node["status"]["nodeInfo"]["osImage"] = "Talos (v1.12.6)"
    nodes_path.write_text(json.dumps(nodes))
    code, path = cluster.collect()
    assert code == 0
    _names, _files, manifest = read_bundle(path)
    items = by_path(manifest)
    assert items["nodes/gpu-b"]["error_kind"] == "no-shell"
    assert not items["nodes/gpu-a/nvidia-smi.xml"]["error"]
    assert not any(i["path"].startswith("nodes/gpu-b/") for i in manifest["items"])
