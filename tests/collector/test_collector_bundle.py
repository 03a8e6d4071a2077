"""A whole collection (debug-pod mode) against the fake cluster: layout, manifest, read-only use."""

import json
import re

import pytest
from collector_support import FakeCluster, by_path, on_system_path, read_bundle

pytestmark = pytest.mark.skipif(
    not on_system_path("containerd"), reason="needs containerd for `config dump`"
)

CLUSTER_PATHS = [
    "cluster/version.json",
    "cluster/nodes.json",
    "cluster/pods.json",
    "cluster/events.json",
    "cluster/daemonsets.json",
    "cluster/deployments.json",
    "cluster/namespaces.json",
    "cluster/runtimeclasses.json",
    "cluster/resourcequotas.json",
    "cluster/clusterpolicies.json",
    "cluster/nvidiadrivers.json",
    "cluster/configmaps.json",
    "cluster/helm/gpu-operator.json",
]
NODE_PATHS = [
    "containerd/config-dump.toml",
    "containerd/version.txt",
    "containerd/files/etc/containerd/config.toml",
    "journal/containerd.jsonl",
    "journal/kubelet.jsonl",
    "dmesg.txt",
    "nvidia-smi.xml",
    "systemd/containerd.txt",
    "host/uname.txt",
    "host/os-release",
    "host/cmdline",
    "host/modules.txt",
    "host/secureboot.txt",
    "host/nvidia-ctk.txt",
    "host/unattended-upgrades.txt",
]
# (namespace, pod, container, previous) expected from the fixture pods.
EXPECTED_LOGS = {
    ("gpu-operator", "gpu-operator-6b8f9c7d5-x2x9q", "gpu-operator", False),
    ("gpu-operator", "nvidia-driver-daemonset-7xk2p", "k8s-driver-manager", False),
    ("gpu-operator", "nvidia-driver-daemonset-7xk2p", "nvidia-driver-ctr", False),
    ("gpu-operator", "nvidia-container-toolkit-daemonset-4m7qz", "driver-validation", False),
    (
        "gpu-operator",
        "nvidia-container-toolkit-daemonset-4m7qz",
        "nvidia-container-toolkit-ctr",
        False,
    ),
    ("gpu-operator", "nvidia-device-plugin-daemonset-9p8wd", "toolkit-validation", False),
    ("gpu-operator", "nvidia-device-plugin-daemonset-9p8wd", "nvidia-device-plugin", False),
    ("gpu-operator", "nvidia-device-plugin-daemonset-9p8wd", "nvidia-device-plugin", True),
    ("gpu-operator", "nvidia-dcgm-exporter-5kq2n", "nvidia-dcgm-exporter", False),
    ("gpu-operator", "nvidia-dcgm-exporter-5kq2n", "nvidia-dcgm-exporter", True),
    ("gpu-operator", "nvidia-operator-validator-h7x4c", "driver-validation", False),
    ("gpu-operator", "gpu-operator-node-feature-discovery-worker-d2lzx", "worker", False),
    ("default", "cuda-vectoradd-8kq9d", "cuda-vectoradd", False),
}


def log_path(ns, pod, container, previous):
    return "logs/{}/{}/{}{}.log".format(ns, pod, container, ".previous" if previous else "")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    monkeypatch = pytest.MonkeyPatch()
    cluster = FakeCluster(tmp_path_factory.mktemp("bundle"), monkeypatch)
    code, path = cluster.collect()
    names, files, manifest = read_bundle(path)
    yield cluster, code, path, names, files, manifest
    monkeypatch.undo()


def rel(names, files):
    top = names[0].split("/")[0]
    return {name[len(top) + 1 :]: data for name, data in files.items()}


def test_exit_code_and_bundle_name(run):
    _cluster, code, path, names, _files, _manifest = run
    assert code == 0
    assert re.match(r"^gpu-triage-prod-east-\d{8}T\d{6}Z\.tgz$", path.name)
    assert {name.split("/")[0] for name in names} == {path.name[:-4]}


def test_manifest_is_first_member_and_well_formed(run):
    _cluster, _code, _path, names, _files, manifest = run
    assert names[0].endswith("/manifest.json") and names[0].count("/") == 1
    assert manifest["format"] == "gpu-triage-bundle" and manifest["format_version"] == 1
    assert manifest["collector"] == {"name": "gpu-triage-collect", "version": "0.1.0"}
    assert manifest["cluster"] == {"context": "prod-east", "server_version": "v1.37.1"}
    assert manifest["operator_namespace"] == "gpu-operator"
    assert manifest["options"]["node_mode"] == "debug-pod"
    assert manifest["options"]["since"] == "168h" and manifest["options"]["log_tail_lines"] == 5000
    assert manifest["redaction"]["enabled"] is True
    keys = {
        "path",
        "command",
        "node",
        "exit_code",
        "started_at",
        "duration_ms",
        "bytes",
        "truncated",
        "error",
    }
    for item in manifest["items"]:
        assert set(item) == keys, item


def test_paths_are_relative_and_dns_safe(run):
    _cluster, _code, _path, names, _files, _manifest = run
    for name in names:
        parts = name.split("/")
        assert not name.startswith("/") and ".." not in parts and "" not in parts
        assert all(re.match(r"^[A-Za-z0-9._-]+$", p) for p in parts), name


def test_every_spec_path_is_present_or_has_a_failed_item(run):
    _cluster, _code, _path, names, files, manifest = run
    present, items = rel(names, files), by_path(manifest)
    expected = CLUSTER_PATHS + [f"nodes/{n}/{p}" for n in ("gpu-a", "gpu-b") for p in NODE_PATHS]
    expected += [log_path(*target) for target in EXPECTED_LOGS]
    for path in expected:
        assert path in present or (path in items and items[path]["error"]), path
        if path in present:
            assert items[path]["bytes"] == len(present[path]), path


def test_items_match_files(run):
    _cluster, _code, _path, names, files, manifest = run
    present = rel(names, files)
    with_files = [i for i in manifest["items"] if i["path"] in present]
    assert {i["path"] for i in with_files} == set(present) - {"manifest.json"}
    failed = [i for i in manifest["items"] if i["error"]]
    # gpu-b has no EFI and no nvidia-ctk (only where the machine itself lacks them)
    assert {i["path"] for i in failed} <= {
        "nodes/gpu-b/host/secureboot.txt",
        "nodes/gpu-b/host/nvidia-ctk.txt",
    }


def test_cluster_lists_are_kubectl_json(run):
    _cluster, _code, _path, names, files, manifest = run
    present, items = rel(names, files), by_path(manifest)
    pods = json.loads(present["cluster/pods.json"])
    assert pods["kind"] == "List" and len(pods["items"]) == 11
    assert items["cluster/pods.json"]["command"] == ["kubectl", "get", "pods", "-A", "-o", "json"]
    assert items["cluster/clusterpolicies.json"]["command"][:3] == [
        "kubectl",
        "get",
        "clusterpolicies.nvidia.com",
    ]
    configmaps = json.loads(present["cluster/configmaps.json"])
    assert {cm["metadata"]["namespace"] for cm in configmaps["items"]} == {"gpu-operator"}
    version = json.loads(present["cluster/version.json"])
    assert version["serverVersion"]["gitVersion"] == "v1.37.1"


def test_logs_of_operator_pods_and_failed_gpu_pods(run):
    _cluster, _code, _path, names, files, manifest = run
    present = rel(names, files)
    logs = {p for p in present if p.startswith("logs/")}
    assert logs == {log_path(*target) for target in EXPECTED_LOGS}
    previous = present[
        log_path(
            "gpu-operator", "nvidia-device-plugin-daemonset-9p8wd", "nvidia-device-plugin", True
        )
    ].decode()
    assert "previous instance" in previous
    items = by_path(manifest)
    item = items[
        log_path("gpu-operator", "nvidia-dcgm-exporter-5kq2n", "nvidia-dcgm-exporter", True)
    ]
    assert item["command"] == [
        "kubectl",
        "logs",
        "-n",
        "gpu-operator",
        "nvidia-dcgm-exporter-5kq2n",
        "-c",
        "nvidia-dcgm-exporter",
        "--timestamps",
        "--tail=5000",
        "--previous",
    ]
    assert item["truncated"] is False
    # the running, non-GPU web pod and the never-started validator containers are not asked for
    assert not any(
        "web-5d8f7b9c4" in p or "toolkit-validation" in p and "validator" in p for p in logs
    )


def test_helm_history_from_release_secrets(run):
    _cluster, _code, _path, names, files, manifest = run
    history = json.loads(rel(names, files)["cluster/helm/gpu-operator.json"])
    assert [(h["revision"], h["status"]) for h in history] == [(1, "superseded"), (2, "deployed")]
    assert set(history[0]) == {
        "revision",
        "status",
        "chart",
        "app_version",
        "updated",
        "description",
        "values",
    }
    assert history[1]["chart"] == "gpu-operator-v26.7.1" and history[1]["app_version"] == "v26.7.1"
    assert history[1]["values"]["driver"]["enabled"] is False
    assert history[1]["values"]["toolkit"]["enabled"] is True
    assert history[1]["values"]["driver"]["registry"]["password"] == "<redacted>"
    assert by_path(manifest)["cluster/helm/gpu-operator.json"]["command"] == [
        "kubectl",
        "get",
        "secrets",
        "-n",
        "gpu-operator",
        "-l",
        "owner=helm",
        "-o",
        "json",
    ]


def test_only_gpu_nodes_are_collected(run):
    cluster, _code, _path, names, files, manifest = run
    present = rel(names, files)
    assert {p.split("/")[1] for p in present if p.startswith("nodes/")} == {"gpu-a", "gpu-b"}
    assert manifest["options"]["nodes"] == ["gpu-a", "gpu-b"]
    debugs = [argv for argv in cluster.invocations("kubectl") if argv[0] == "debug"]
    assert sorted(argv[1] for argv in debugs) == ["node/gpu-a", "node/gpu-b"]
    argv = debugs[0]
    assert argv[argv.index("--") :][:4] == ["--", "chroot", "/host", "env"]
    assert argv[-2:] == ["sh", "-s"]
    assert "--image=busybox:1.36" in argv and "--profile=sysadmin" in argv and "--tty=false" in argv
    assert b"runtimes.nvidia" in present["nodes/gpu-a/containerd/config-dump.toml"]


def test_node_items_carry_the_node_and_its_command(run):
    _cluster, _code, _path, _names, _files, manifest = run
    item = by_path(manifest)["nodes/gpu-a/journal/kubelet.jsonl"]
    assert item["node"] == "gpu-a" and item["exit_code"] == 0 and item["error"] is None
    assert item["command"] == ["journalctl", "-u", "kubelet", "-o", "json", "--since", "-168h"]
    assert by_path(manifest)["cluster/pods.json"]["node"] is None


def test_only_read_verbs_and_own_debug_pods_deleted(run):
    cluster, _code, _path, _names, _files, _manifest = run
    calls = cluster.invocations("kubectl")
    assert {argv[0] for argv in calls} <= {"version", "get", "logs", "debug", "delete", "auth"}
    assert {argv[1] for argv in calls if argv[0] == "auth"} == {"can-i"}  # questions only
    created = {argv[1].split("/")[1] for argv in calls if argv[0] == "debug"}
    deleted = [argv for argv in calls if argv[0] == "delete"]
    assert all(argv[1] == "pod" and argv[2].startswith("node-debugger-") for argv in deleted)
    assert {argv[2].rsplit("-", 1)[0][len("node-debugger-") :] for argv in deleted} == created
    assert cluster.live_debug_pods() == {}
    secrets = [argv for argv in calls if argv[:2] == ["get", "secrets"]]
    assert secrets and all("owner=helm" in argv for argv in secrets)
    assert cluster.invocations("ssh") == [] and cluster.invocations("helm") == []
