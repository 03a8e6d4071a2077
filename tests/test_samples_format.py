"""The committed sample bundles follow bundle-format.md and show their scenarios.

Format checks run on every sample (every bundle under samples/, whoever added it);
the lab checks pin the facts of the two lab samples (see samples/README.md); what the
analyzer must find in each sample is in test_sample_expectations.py. Regeneration is
checked only where containerd 1.6.20 is installed, since the config dumps come from it.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
BUNDLES = sorted(p.parent for p in SAMPLES.glob("*/manifest.json"))
INCIDENT = SAMPLES / "incident-toolkit-disabled"
HEALTHY = SAMPLES / "healthy-toolkit-enabled"
LAB = [HEALTHY, INCIDENT]
GPU_NODES = ["gpu-a", "gpu-b", "gpu-c", "gpu-d"]
SEGMENT = re.compile(r"^[A-Za-z0-9._-]+$")
CRI = "io.containerd.grpc.v1.cri"
NO_RUNTIME = (
    "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox "
    'runtime: no runtime for "nvidia" is configured'
)


def manifest(bundle: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    return data


def items(bundle: Path, path: str) -> list[dict[str, Any]]:
    data: dict[str, Any] = json.loads((bundle / path).read_text(encoding="utf-8"))
    result: list[dict[str, Any]] = data["items"]
    return result


def detected(node_dir: Path) -> dict[str, Any] | None:
    """``runtime.json`` of a node directory (written by the 1.1 collector), or None."""
    path = node_dir / "runtime.json"
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def runtimes(dump: Path) -> set[str]:
    config = tomllib.loads(dump.read_text(encoding="utf-8"))
    return set(config["plugins"][CRI]["containerd"]["runtimes"])


def scenario_names() -> list[str]:
    """The scenarios build_samples.py knows, read from its SCENARIOS table without
    importing it (importing would need the generator's own import path)."""
    tree = ast.parse((SAMPLES / "build_samples.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "SCENARIOS":
            assert isinstance(node.value, ast.Dict)
            return [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
    raise AssertionError("no SCENARIOS table in build_samples.py")


def test_lab_samples_exist() -> None:
    assert {b.name for b in BUNDLES} >= {"healthy-toolkit-enabled", "incident-toolkit-disabled"}


def test_every_scenario_has_its_sample_and_no_other() -> None:
    assert sorted(b.name for b in BUNDLES) == sorted(scenario_names())


# ---------------------------------------------------------------------------- format


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda b: b.name)
def test_manifest_header(bundle: Path) -> None:
    m = manifest(bundle)
    assert m["format"] == "gpu-triage-bundle"
    assert m["format_version"] == 1
    assert m["collector"] == {"name": "gpu-triage-collect", "version": "0.1.0"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", m["created_at"])
    assert set(m["cluster"]) == {"context", "server_version"}
    assert SEGMENT.match(m["cluster"]["context"])
    assert re.fullmatch(r"v\d+\.\d+\.\d+", m["cluster"]["server_version"])
    if bundle in LAB:
        assert m["cluster"] == {"context": "lab-k8s", "server_version": "v1.37.1"}
    assert m["operator_namespace"] == "gpu-operator"
    assert set(m["options"]) == {"since", "log_tail_lines", "node_mode", "redact"}
    assert m["redaction"]["enabled"] is True
    assert all(isinstance(v, int) for v in m["redaction"]["counts"].values())


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda b: b.name)
def test_every_item_matches_its_file(bundle: Path) -> None:
    keys = [
        "path",
        "command",
        "node",
        "exit_code",
        "started_at",
        "duration_ms",
        "bytes",
        "truncated",
        "error",
    ]
    seen = set()
    for item in manifest(bundle)["items"]:
        assert list(item) == keys
        path = item["path"]
        assert path not in seen
        seen.add(path)
        assert not path.startswith("/") and ".." not in path.split("/")
        assert all(SEGMENT.match(seg) for seg in path.split("/")), path
        target = bundle / path
        if item["error"] is None:
            assert item["exit_code"] == 0
            assert target.is_file(), path
            assert target.stat().st_size == item["bytes"], path
        else:
            assert item["exit_code"] != 0 and item["bytes"] == 0
            assert not target.exists(), path


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda b: b.name)
def test_every_file_has_an_item(bundle: Path) -> None:
    listed = {i["path"] for i in manifest(bundle)["items"] if i["error"] is None}
    written = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()}
    assert written - {"manifest.json"} == listed


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda b: b.name)
def test_json_and_jsonl_parse(bundle: Path) -> None:
    for path in bundle.rglob("*.json"):
        json.loads(path.read_text(encoding="utf-8"))
    for path in bundle.rglob("*.jsonl"):
        lines = path.read_text(encoding="utf-8").splitlines()
        if not lines:
            # `journalctl -u UNIT -o json` prints nothing when the window holds no entry of
            # the unit; the 1.1 collector asks for containerd and kubelet on every node,
            # whether the unit exists there or not (k3s, k0s, MicroK8s)
            assert detected(path.parent.parent) is not None, path
            continue
        for line in lines:
            entry = json.loads(line)
            assert isinstance(entry, dict)
            for key in (
                "__REALTIME_TIMESTAMP",
                "_SYSTEMD_UNIT",
                "MESSAGE",
                "PRIORITY",
                "_PID",
                "_HOSTNAME",
                "SYSLOG_IDENTIFIER",
            ):
                assert isinstance(entry[key], str), (path, key)
            assert entry["__REALTIME_TIMESTAMP"].isdigit()


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda b: b.name)
def test_cluster_files_are_lists(bundle: Path) -> None:
    names = [
        "nodes",
        "pods",
        "events",
        "daemonsets",
        "deployments",
        "namespaces",
        "runtimeclasses",
        "resourcequotas",
        "clusterpolicies",
        "nvidiadrivers",
        "configmaps",
    ]
    for name in names:
        data = json.loads((bundle / f"cluster/{name}.json").read_text(encoding="utf-8"))
        assert data["apiVersion"] == "v1" and data["kind"] == "List", name
        assert data["metadata"] == {"resourceVersion": ""}
        for obj in data["items"]:
            assert {"apiVersion", "kind", "metadata"} <= set(obj), name
            assert {"name", "uid", "creationTimestamp"} <= set(obj["metadata"]), name
    version = json.loads((bundle / "cluster/version.json").read_text(encoding="utf-8"))
    assert version["serverVersion"]["gitVersion"] == manifest(bundle)["cluster"]["server_version"]


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda b: b.name)
def test_toml_and_xml_parse(bundle: Path) -> None:
    for path in bundle.rglob("*.toml"):
        tomllib.loads(path.read_text(encoding="utf-8"))
    for path in bundle.rglob("*.xml"):
        ET.parse(path)


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda b: b.name)
def test_node_directories(bundle: Path) -> None:
    """Node directories belong to nodes of the cluster, and each holds the paths every
    reachable node has: the loaded containerd configuration and the files behind it."""
    names = {n["metadata"]["name"] for n in items(bundle, "cluster/nodes.json")}
    collected = [p for p in (bundle / "nodes").iterdir()] if (bundle / "nodes").exists() else []
    assert {p.name for p in collected} <= names
    for base in collected:
        # a node of the 1.1 collector says which runtime it runs and with which file;
        # one of the first collector is containerd with /etc/containerd/config.toml
        found = detected(base) or {"runtime": "containerd",
                                   "config_path": "/etc/containerd/config.toml"}
        if found["runtime"] == "cri-o":
            dump = tomllib.loads((base / "crio/config-dump.toml").read_text(encoding="utf-8"))
            assert isinstance(dump.get("crio"), dict), base.name
            assert (base / "crio/version.txt").read_text().startswith("Version:")
            assert not (base / "containerd").exists(), base.name
        else:
            assert found["runtime"] == "containerd", base.name
            assert (base / "containerd/version.txt").read_text().startswith("containerd ")
            dump = tomllib.loads((base / "containerd/config-dump.toml").read_text("utf-8"))
            assert isinstance(dump.get("plugins"), dict), base.name
            top = base / ("containerd/files" + found["config_path"])
            assert top.is_file(), base.name
        smi = base / "nvidia-smi.xml"
        if smi.exists():
            root = ET.parse(smi).getroot()
            assert root.tag == "nvidia_smi_log"
            assert all(gpu.get("id") for gpu in root.findall("gpu"))
        show = base / "systemd/containerd.txt"
        if show.exists():
            fields = dict(line.split("=", 1) for line in show.read_text().splitlines())
            assert {"Restart", "NRestarts", "ActiveState", "ExecMainPID"} <= set(fields)


@pytest.mark.parametrize("bundle", LAB, ids=lambda b: b.name)
def test_node_artifacts(bundle: Path) -> None:
    assert sorted(p.name for p in (bundle / "nodes").iterdir()) == GPU_NODES  # no cp-1
    for node in GPU_NODES:
        base = bundle / "nodes" / node
        tomllib.loads((base / "containerd/config-dump.toml").read_text(encoding="utf-8"))
        tomllib.loads((base / "containerd/files/etc/containerd/config.toml").read_text("utf-8"))
        root = ET.parse(base / "nvidia-smi.xml").getroot()
        assert root.tag == "nvidia_smi_log"
        assert root.findtext("driver_version") == "570.195.03"
        assert root.find("gpu") is not None and root.find("gpu").get("id") == "00000000:01:00.0"
        assert "containerd://" not in (base / "containerd/version.txt").read_text()
        assert (base / "containerd/version.txt").read_text().startswith("containerd ")
        assert "NVRM: loading NVIDIA UNIX" in (base / "dmesg.txt").read_text()
        text = (base / "systemd/containerd.txt").read_text()
        show = dict(line.split("=", 1) for line in text.splitlines())
        assert show["Restart"] == "always" and show["RestartUSec"] == "5s"
        assert (base / "host/nvidia-ctk.txt").read_text().startswith("/usr/bin/nvidia-ctk\n")
        modules = [line.split()[0] for line in (base / "host/modules.txt").read_text().splitlines()]
        assert set(modules) == {"nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"}


# ---------------------------------------------------------------------- scenarios


def test_incident_has_no_nvidia_runtime() -> None:
    for node in GPU_NODES:
        base = INCIDENT / "nodes" / node / "containerd"
        assert "nvidia" not in runtimes(base / "config-dump.toml")
        assert "runtimes.nvidia" not in (base / "config-dump.toml").read_text()
        assert not (base / "files/etc/containerd/conf.d").exists()
    errors = {i["path"]: i["error"] for i in manifest(INCIDENT)["items"] if i["error"]}
    assert (
        "No such file or directory" in errors["nodes/gpu-a/containerd/files/etc/containerd/conf.d"]
    )
    assert "No such file or directory" in errors["nodes/gpu-a/cdi"]


def test_incident_operands_stuck_on_sandbox() -> None:
    pods = {p["metadata"]["name"]: p for p in items(INCIDENT, "cluster/pods.json")}
    stuck = [p for p in pods.values() if p["spec"].get("runtimeClassName") == "nvidia"]
    assert len(stuck) == 16
    for pod in stuck:
        assert pod["status"]["phase"] == "Pending"
        assert pod["spec"]["nodeName"] in GPU_NODES
        waiting = [s["state"]["waiting"]["reason"] for s in pod["status"]["initContainerStatuses"]]
        assert set(waiting) == {"PodInitializing"}
    events = items(INCIDENT, "cluster/events.json")
    sandbox = [e for e in events if e["reason"] == "FailedCreatePodSandBox"]
    assert {e["involvedObject"]["name"] for e in sandbox} == {p["metadata"]["name"] for p in stuck}
    for e in sandbox:
        assert e["message"] == NO_RUNTIME and e["type"] == "Warning" and e["count"] > 1
        assert e["source"]["component"] == "kubelet"
    running = [
        p["metadata"]["name"]
        for p in pods.values()
        if p["status"]["phase"] == "Running" and p["metadata"]["namespace"] == "gpu-operator"
    ]
    assert len(running) == 8  # NFD worker x5, master, gc, operator


def test_incident_gpu_not_advertised_and_test_pod_unschedulable() -> None:
    for node in items(INCIDENT, "cluster/nodes.json"):
        assert "nvidia.com/gpu" not in node["status"]["capacity"]
        assert "nvidia.com/gpu.product" not in node["metadata"]["labels"]
    pods = {p["metadata"]["name"]: p for p in items(INCIDENT, "cluster/pods.json")}
    assert pods["cuda-test"]["status"]["phase"] == "Pending"
    failed = [
        e for e in items(INCIDENT, "cluster/events.json") if e["reason"] == "FailedScheduling"
    ]
    assert len(failed) == 1 and "4 Insufficient nvidia.com/gpu" in failed[0]["message"]
    policy = items(INCIDENT, "cluster/clusterpolicies.json")[0]
    assert policy["status"]["state"] == "notReady"
    assert policy["spec"]["toolkit"]["enabled"] is False
    history = json.loads((INCIDENT / "cluster/helm/gpu-operator.json").read_text())
    assert [(r["revision"], r["status"]) for r in history] == [(1, "deployed")]


def test_healthy_has_nvidia_runtime_from_drop_in() -> None:
    for node in GPU_NODES:
        base = HEALTHY / "nodes" / node / "containerd"
        assert {"nvidia", "nvidia-cdi", "nvidia-legacy", "runc"} <= runtimes(
            base / "config-dump.toml"
        )
        assert "runtimes.nvidia" in (base / "config-dump.toml").read_text()
        top = (base / "files/etc/containerd/config.toml").read_text()
        assert "nvidia" not in top and 'imports = ["/etc/containerd/conf.d/*.toml"]' in top
        assert "nvidia" in runtimes(base / "files/etc/containerd/conf.d/99-nvidia.toml")
        journal = (HEALTHY / "nodes" / node / "journal/containerd.jsonl").read_text()
        assert "Sent signal SIGHUP to main process" in journal
        assert "Scheduled restart job, restart counter is at 1." in journal
        show = (HEALTHY / "nodes" / node / "systemd/containerd.txt").read_text()
        assert "NRestarts=1" in show


def test_healthy_operands_and_gpus() -> None:
    pods = [
        p
        for p in items(HEALTHY, "cluster/pods.json")
        if p["metadata"]["namespace"] == "gpu-operator"
    ]
    assert len(pods) == 32
    phases = {p["metadata"]["name"]: p["status"]["phase"] for p in pods}
    succeeded = sorted(n for n, ph in phases.items() if ph == "Succeeded")
    assert len(succeeded) == 4 and all(n.startswith("nvidia-cuda-validator-") for n in succeeded)
    assert all(ph == "Running" for n, ph in phases.items() if n not in succeeded)
    for node in items(HEALTHY, "cluster/nodes.json"):
        name = node["metadata"]["name"]
        gpus = "1" if name in GPU_NODES else None
        assert node["status"]["capacity"].get("nvidia.com/gpu") == gpus
        assert node["status"]["allocatable"].get("nvidia.com/gpu") == gpus
    products = {
        n["metadata"]["name"]: n["metadata"]["labels"].get("nvidia.com/gpu.product")
        for n in items(HEALTHY, "cluster/nodes.json")
    }
    assert products == {
        "cp-1": None,
        "gpu-a": "NVIDIA-GeForce-RTX-3090",
        "gpu-b": "NVIDIA-GeForce-RTX-5090",
        "gpu-c": "NVIDIA-GeForce-RTX-4070-Laptop-GPU",
        "gpu-d": "NVIDIA-GeForce-RTX-4070-Laptop-GPU",
    }
    policy = items(HEALTHY, "cluster/clusterpolicies.json")[0]
    assert policy["status"]["state"] == "ready" and policy["spec"]["toolkit"]["enabled"] is True
    history = json.loads((HEALTHY / "cluster/helm/gpu-operator.json").read_text())
    assert [(r["revision"], r["status"]) for r in history] == [(1, "superseded"), (2, "deployed")]
    assert all(r["values"]["driver"]["enabled"] is False for r in history)
    log = (HEALTHY / "logs/default/cuda-test/cuda.log").read_text()
    assert "Driver Version: 570.195.03" in log


def _containerd_matches_samples() -> bool:
    """The dumps and version.txt were produced by one containerd build; only the
    same build can reproduce them byte for byte."""
    if shutil.which("containerd") is None:
        return False
    done = subprocess.run(["containerd", "--version"], capture_output=True, text=True)
    committed = (INCIDENT / "nodes/gpu-a/containerd/version.txt").read_text(encoding="utf-8")
    return done.returncode == 0 and done.stdout == committed


@pytest.mark.skipif(
    not _containerd_matches_samples(),
    reason="needs the containerd build the samples were made with",
)
def test_generator_reproduces_the_samples() -> None:
    done = subprocess.run(
        [sys.executable, str(SAMPLES / "build_samples.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
