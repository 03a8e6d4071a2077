"""Test support for the collector: a fake cluster (kubectl/ssh/helm on PATH), fake node roots.

The fake kubectl, ssh and helm (tests/collector/fakes/) serve the recorded objects in
tests/collector/fixtures/cluster and log every argv. Node roots are directories standing in for a
node's /: real config files, fake journalctl/dmesg/systemctl/mokutil/nvidia-smi (reading
<root>/fake/), and the real containerd binary for `config dump`.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
COLLECTORS = REPO / "collectors"
NODE_SH = COLLECTORS / "node.sh"
COLLECT_PY = COLLECTORS / "collect.py"
FIXTURES = HERE / "fixtures"
FAKES = HERE / "fakes"
NODEBIN = FAKES / "nodebin"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from collectors.collect import main as collect_main  # noqa: E402
from collectors.collect import parse_steps_tsv  # noqa: E402

# node.sh appends these to PATH; a real tool there would shadow a missing fake one.
SYSTEM_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


def on_system_path(tool: str) -> bool:
    return any(os.access(os.path.join(d, tool), os.X_OK) for d in SYSTEM_DIRS)


NODE_IPS = {"cp-1": "10.0.1.10", "gpu-a": "10.0.1.11", "gpu-b": "10.0.1.12"}

# Every secret planted in the fixtures; none may appear anywhere in a redacted bundle.
B64_WRAPPED = base64.b64encode(b"# extra toolkit config\npassword: PLANTED-helm-b64\n").decode()
PLANTED = (
    "hf_PLANTEDtoken0001",
    "PLANTED-init-pass",
    "PLANTED-ngc-key",
    "PLANTED-arg-token",
    "PLANTED-web-secret",
    "PLANTED-cm-pass",
    "PLANTED-cm-embedded",
    "PLANTED-cp-env",
    "PLANTED-helm-top",
    "PLANTED-helm-nested",
    "PLANTED-helm-env",
    "PLANTED-helm-b64",
    B64_WRAPPED,
    "PLANTED-chart-default",
    "PLANTED-helm-manifest",
    "PLANTED-opaque",
    "PLANTED-ctd-registry-pass",
)


# ---------------------------------------------------------------------------------------------
# Helm release records, encoded the way Helm 3 stores them
# ---------------------------------------------------------------------------------------------

HELM_CONFIGS = {
    1: {"driver": {"enabled": False}, "toolkit": {"enabled": False}},
    2: {
        "driver": {
            "enabled": False,
            "registry": {"password": "PLANTED-helm-nested"},
            "env": [{"name": "NGC_API_KEY", "value": "PLANTED-helm-env"}],
        },
        "toolkit": {
            "enabled": True,
            "env": [
                {"name": "CONTAINERD_CONFIG", "value": "/etc/containerd/conf.d/99-nvidia.toml"},
                {"name": "EXTRA_CONFIG_B64", "value": B64_WRAPPED},
            ],
        },
        "ngcApiKey": "PLANTED-helm-top",
        "devicePlugin": {"config": {"name": "time-slicing-config", "default": "any"}},
        "cdi": {"enabled": True},
    },
}
HELM_META = {
    1: ("superseded", "Install complete", "2026-11-27T10:00:00.123456789Z"),
    2: ("deployed", "Upgrade complete", "2026-11-28T10:00:00.123456789Z"),
}


def helm_release_record(revision: int) -> dict:
    status, description, when = HELM_META[revision]
    return {
        "name": "gpu-operator",
        "namespace": "gpu-operator",
        "version": revision,
        "info": {
            "first_deployed": HELM_META[1][2],
            "last_deployed": when,
            "deleted": "",
            "description": description,
            "status": status,
            "notes": "GPU Operator installed.",
        },
        "chart": {
            "metadata": {
                "name": "gpu-operator",
                "version": "v26.7.1",
                "appVersion": "v26.7.1",
                "apiVersion": "v2",
            },
            "values": {"driver": {"enabled": True}, "defaultPassword": "PLANTED-chart-default"},
            "templates": [{"name": "templates/operator.yaml", "data": "YXBpVmVyc2lvbjogdjE="}],
        },
        "config": HELM_CONFIGS[revision],
        "manifest": "---\n# Source: gpu-operator/templates/secret.yaml\napiVersion: v1\n"
        "kind: Secret\nstringData:\n  password: PLANTED-helm-manifest\n",
    }


def helm_secret(revision: int, config: dict | None = None) -> dict:
    """A Secret of type helm.sh/release.v1: .data.release = base64(base64(gzip(JSON)));
    `config` replaces the fixture's user-supplied values."""
    record = helm_release_record(revision)
    if config is not None:
        record["config"] = config
    helm_layer = base64.b64encode(gzip.compress(json.dumps(record).encode()))
    status = HELM_META[revision][0]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "helm.sh/release.v1",
        "metadata": {
            "name": f"sh.helm.release.v1.gpu-operator.v{revision}",
            "namespace": "gpu-operator",
            "labels": {
                "name": "gpu-operator",
                "owner": "helm",
                "status": status,
                "version": str(revision),
            },
        },
        "data": {"release": base64.b64encode(helm_layer).decode()},
    }


def secrets_list() -> dict:
    opaque = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": "ngc-api", "namespace": "gpu-operator"},
        "data": {"password": base64.b64encode(b"PLANTED-opaque").decode()},
        "stringData": {"password": "PLANTED-opaque"},
    }
    return {"apiVersion": "v1", "kind": "List", "items": [helm_secret(1), helm_secret(2), opaque]}


def write_helm_cli_fixtures(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    history = []
    for revision in (1, 2):
        status, description, when = HELM_META[revision]
        history.append(
            {
                "revision": revision,
                "updated": when,
                "status": status,
                "chart": "gpu-operator-v26.7.1",
                "app_version": "v26.7.1",
                "description": description,
            }
        )
        (directory / f"values-gpu-operator-{revision}.json").write_text(
            json.dumps(HELM_CONFIGS[revision])
        )
    (directory / "history-gpu-operator.json").write_text(json.dumps(history))
    (directory / "list.json").write_text(
        json.dumps(
            [
                {
                    "name": "gpu-operator",
                    "namespace": "gpu-operator",
                    "revision": "2",
                    "status": "deployed",
                    "updated": "2026-11-28 10:00:00.123456789 +0000 UTC",
                    "chart": "gpu-operator-v26.7.1",
                    "app_version": "v26.7.1",
                }
            ]
        )
    )


# ---------------------------------------------------------------------------------------------
# Node roots
# ---------------------------------------------------------------------------------------------


def _script(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


# The kubelet's command line on a kubeadm node (as /proc/<pid>/cmdline holds it, NUL-separated).
KUBEADM_KUBELET_ARGS = (
    "/usr/bin/kubelet",
    "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
    "--kubeconfig=/etc/kubernetes/kubelet.conf",
    "--config=/var/lib/kubelet/config.yaml",
    "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
)


def make_node_root(base: Path, node: str, host_driver: bool = True) -> Path:
    """A directory standing in for `node`'s /.

    host_driver=True (like gpu-a): nvidia-smi and nvidia-ctk on the host, Fabric Manager unit,
    dmesg with --time-format, only the nvidia drop-in. False (like gpu-b): driver container
    (nvidia-smi under /run/nvidia/driver), old dmesg, and a registry drop-in sorting after
    99-nvidia.toml, which drops the nvidia runtime from the merged config on containerd 1.x."""
    src = FIXTURES / "node"
    root = base / node
    fake = root / "fake"
    ip = NODE_IPS.get(node, "10.0.1.99")

    def put(rel: str, text: str) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    put(
        "etc/containerd/config.toml",
        (src / "config.toml.in").read_text().replace("@ROOT@", str(root)),
    )
    put("etc/containerd/conf.d/99-nvidia.toml", (src / "99-nvidia.toml").read_text())
    put("etc/os-release", (src / "os-release").read_text())
    put("proc/cmdline", (src / "cmdline").read_text())
    put("proc/modules", (src / "modules").read_text())
    put("etc/apt/apt.conf.d/20auto-upgrades", (src / "20auto-upgrades").read_text())
    put("etc/cdi/nvidia.yaml", (src / "cdi-nvidia.yaml").read_text())
    for unit in ("containerd", "kubelet"):
        text = (src / (f"journal-{unit}.jsonl")).read_text()
        put(f"fake/journal/{unit}.jsonl", text.replace("gpu-a", node).replace("10.0.1.11", ip))
    put("fake/systemd-containerd.txt", (src / "systemd-containerd.txt").read_text())
    put("fake/nvidia-smi.xml", (src / "nvidia-smi.xml").read_text())
    put("fake/calls.log", "")
    # Bundle format 1.1 inputs: a running kubelet (kubeadm), the driver's /proc file, the
    # device nodes (regular files here), cgroup v2, and one GPU for the fake lspci.
    put("proc/4242/comm", "kubelet\n")
    put("proc/4242/cmdline", "\0".join(KUBEADM_KUBELET_ARGS) + "\0")
    put("var/lib/kubelet/config.yaml", (src / "kubelet-config.yaml").read_text())
    put(
        "var/lib/kubelet/kubeadm-flags.env",
        'KUBELET_KUBEADM_ARGS="--pod-infra-container-image=registry.k8s.io/pause:3.9"\n',
    )
    put("proc/driver/nvidia/version", (src / "nvidia-driver-version").read_text())
    put("dev/nvidia0", "")
    put("dev/nvidiactl", "")
    (root / "dev" / "char").mkdir(parents=True, exist_ok=True)
    (root / "dev" / "char" / "195:0").symlink_to("../nvidia0")
    put("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n")
    put("fake/lspci.txt", (src / "lspci.txt").read_text())
    smi = 'cat "$GPU_TRIAGE_HOST_ROOT/fake/nvidia-smi.xml"\n'
    if host_driver:
        put("etc/apt/apt.conf.d/50unattended-upgrades", (src / "50unattended-upgrades").read_text())
        put(
            "var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json",
            (src / "cdi-device-plugin.json").read_text(),
        )
        put(
            "fake/journal/nvidia-fabricmanager.jsonl",
            (src / "journal-nvidia-fabricmanager.jsonl").read_text(),
        )
        put("fake/units", "nvidia-fabricmanager\nnvidia-cdi-refresh\n")
        put(
            "fake/journal/nvidia-cdi-refresh.jsonl",
            (src / "journal-nvidia-cdi-refresh.jsonl").read_text(),
        )
        # Host toolkit packages, the kubelet's device and CPU manager state, and a Docker
        # daemon beside containerd (the kubelet still talks to containerd).
        put(
            "etc/nvidia-container-runtime/config.toml",
            (src / "nvidia-container-runtime-config.toml").read_text(),
        )
        put(
            "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint",
            (src / "kubelet_internal_checkpoint").read_text(),
        )
        put("var/lib/kubelet/cpu_manager_state", (src / "cpu_manager_state").read_text())
        put("proc/4343/comm", "dockerd\n")
        put("proc/4343/cmdline", "/usr/bin/dockerd\0-H\0fd://\0")
        put("fake/docker-info.json", (src / "docker-info.json").read_text())
        put("fake/dmesg.txt", (src / "dmesg-iso.txt").read_text())
        put("fake/mokutil.txt", "SecureBoot disabled\n")
        _script(fake / "bin" / "nvidia-smi", smi)
        _script(
            fake / "bin" / "nvidia-ctk",
            'echo "NVIDIA Container Toolkit CLI version 1.17.8"\n'
            'echo "commit: f202b80a9b9d0db00d9b1d73c0128c8962c55f4d"\n',
        )
    else:
        put("etc/containerd/conf.d/zz-registry.toml", (src / "zz-registry.toml").read_text())
        put(
            "usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml",
            (src / "toolkit-operator-config.toml").read_text(),
        )
        put("fake/dmesg.txt", (src / "dmesg-plain.txt").read_text())
        put("fake/dmesg-no-iso", "")
        _script(root / "run" / "nvidia" / "driver" / "usr" / "bin" / "nvidia-smi", smi)
    return root


def node_env(root: Path, **extra: str) -> dict:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(root / "fake" / "bin"), str(NODEBIN), env.get("PATH", "")])
    env["GPU_TRIAGE_HOST_ROOT"] = str(root)
    env.update(extra)
    return env


def run_node_script(
    root: Path, stdin_mode: bool = False, **extra: str
) -> subprocess.CompletedProcess:
    """Run node.sh for real against `root`; stdout is the tar stream."""
    if stdin_mode:
        return subprocess.run(
            ["sh", "-s"],
            input=NODE_SH.read_bytes(),
            env=node_env(root, **extra),
            capture_output=True,
            timeout=60,
        )
    return subprocess.run(
        ["sh", str(NODE_SH)], env=node_env(root, **extra), capture_output=True, timeout=60
    )


def tar_members(data: bytes) -> dict:
    """name (without ./) -> bytes of every regular file in a tar stream."""
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
        for member in archive:
            if member.isfile():
                name = member.name[2:] if member.name.startswith("./") else member.name
                out[name] = archive.extractfile(member).read()
    return out


def parse_steps(text: str) -> dict:
    return {row["path"]: row for row in parse_steps_tsv(text)}


# ---------------------------------------------------------------------------------------------
# The fake cluster
# ---------------------------------------------------------------------------------------------


class FakeCluster:
    """Fake kubectl/ssh/helm on PATH serving the fixture cluster; one per test (tmp_path)."""

    def __init__(self, tmp: Path, monkeypatch, helm: bool = False) -> None:
        self.tmp = tmp
        self.bin = tmp / "bin"
        self.data = tmp / "fake-data"
        self.state = tmp / "state"
        self.log = tmp / "invocations.jsonl"
        self.scenario_path = tmp / "scenario.json"
        self.out = tmp / "out"
        for directory in (self.bin, self.state, self.out):
            directory.mkdir(parents=True, exist_ok=True)
        shutil.copytree(FIXTURES / "cluster", self.data / "cluster")
        (self.data / "cluster" / "secrets.json").write_text(json.dumps(secrets_list()))
        write_helm_cli_fixtures(self.data / "helm")
        tools = {"kubectl": "fake_kubectl.py", "ssh": "fake_ssh.py"}
        if helm:
            tools["helm"] = "fake_helm.py"
        for tool, script in tools.items():
            _script(self.bin / tool, f'exec "{sys.executable}" "{FAKES / script}" "$@"\n')
        self.log.write_text("")
        self.roots = {
            "gpu-a": make_node_root(tmp / "roots", "gpu-a", host_driver=True),
            "gpu-b": make_node_root(tmp / "roots", "gpu-b", host_driver=False),
        }
        self.scenario({})
        # The fakes come first; a real helm elsewhere on PATH is kept out of the way.
        path = [str(self.bin)] + [
            d
            for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and (d in ("/bin", "/usr/bin") or not os.path.exists(os.path.join(d, "helm")))
        ]
        self.env = {
            "PATH": os.pathsep.join(path),
            "FAKE_DIR": str(self.data),
            "FAKE_LOG": str(self.log),
            "FAKE_STATE": str(self.state),
            "FAKE_SCENARIO": str(self.scenario_path),
            "FAKE_NODEBIN": str(NODEBIN),
            "KUBECONFIG": str(tmp / "kubeconfig"),
        }
        (tmp / "kubeconfig").write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: prod-east\n"
        )
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("GPU_TRIAGE_HOST_ROOT", raising=False)

    def scenario(self, settings: dict) -> None:
        merged = {
            "node_roots": {n: str(r) for n, r in self.roots.items()},
            "ssh_roots": {NODE_IPS[n]: str(r) for n, r in self.roots.items()},
        }
        merged.update(settings)
        self.scenario_path.write_text(json.dumps(merged))

    def collect(self, *args: str) -> tuple:
        """Run collect.main in-process; returns (exit code, bundle path or None)."""
        before = set(self.out.iterdir())
        code = collect_main(["-o", str(self.out)] + list(args))
        created = [p for p in set(self.out.iterdir()) - before if p.name.endswith(".tgz")]
        return code, (created[0] if created else None)

    def invocations(self, tool: str = None) -> list:
        calls = [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]
        return [c["argv"] for c in calls if tool is None or c["tool"] == tool]

    def live_debug_pods(self) -> dict:
        path = self.state / "debug-pods.json"
        return json.loads(path.read_text()) if path.exists() else {}


def fake_ssh_env(tmp: Path, scenario: dict) -> dict:
    """The fake ssh in tmp/bin (run_collector puts that first on PATH), the scenario it reads
    (ssh_roots, ssh_slow, ...), and the environment that tells it where things are."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    _script(bin_dir / "ssh", f'exec "{sys.executable}" "{FAKES / "fake_ssh.py"}" "$@"\n')
    (tmp / "scenario.json").write_text(json.dumps(scenario))
    (tmp / "fake.log").write_text("")
    return {"FAKE_SCENARIO": str(tmp / "scenario.json"), "FAKE_LOG": str(tmp / "fake.log"),
            "FAKE_NODEBIN": str(NODEBIN)}


def read_bundle(path: Path) -> tuple:
    """(member names in order, {name: bytes}, manifest dict) of a .tgz bundle."""
    names, files = [], {}
    with tarfile.open(path, "r:gz") as archive:
        for member in archive:
            names.append(member.name)
            assert member.isfile() or member.isdir(), member.name
            if member.isfile():
                files[member.name] = archive.extractfile(member).read()
    manifest = json.loads(files[names[0]])
    return names, files, manifest


def by_path(manifest: dict) -> dict:
    return {item["path"]: item for item in manifest["items"]}
