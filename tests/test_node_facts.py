"""``Facts.node(name)``, ``bundle.specs`` and ``bundle.versions``: one object per node whose
files are parsed once, one name per bundle path, one reader per version shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kit.bundles import kube_list, kube_node, write_dir

from analyzers.facts import Facts
from analyzers.facts import node as node_module
from bundle import open_bundle, specs, versions
from bundle.devnodes import MAX_LINES

LSPCI = ("0000:3b:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 PCIe 40GB] "
         "[10de:20f1] (rev a1)\n"
         "\tKernel driver in use: nouveau\n"
         "\tKernel modules: nvidiafb, nouveau, nvidia\n")


def _facts(tmp_path: Path, files: dict[str, object]) -> Facts:
    bundle = open_bundle(write_dir(tmp_path / "b", {
        specs.NODES: kube_list(kube_node("gpu-a"), kube_node("gpu-b")), **files}))
    return Facts(bundle)


def test_one_node_object_per_name(tmp_path: Path) -> None:
    facts = _facts(tmp_path, {specs.node_file("gpu-a", specs.UNAME): "Linux gpu-a 6.8.0 x\n"})
    assert facts.node("gpu-a") is facts.node("gpu-a")
    assert facts.node("gpu-a") is not facts.node("gpu-b")
    assert facts.node("gpu-a").collected and not facts.node("gpu-b").collected
    assert facts.node("gpu-b").object is not None and facts.node("gpu-b").object.name == "gpu-b"
    assert facts.node("gpu-c").object is None


def test_kernel_release_from_uname_else_the_node_object(tmp_path: Path) -> None:
    facts = _facts(tmp_path, {specs.node_file("gpu-a", specs.UNAME):
                              "Linux gpu-a 6.8.0-45-generic #45 SMP x86_64 GNU/Linux\n"})
    release, where = facts.node("gpu-a").kernel_release
    assert release == "6.8.0-45-generic"
    assert where is not None and where.path == specs.node_file("gpu-a", specs.UNAME)
    assert where.line == 1
    assert facts.node("gpu-b").kernel_release == (None, None)


def test_a_node_file_is_read_and_parsed_once(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    facts = _facts(tmp_path, {specs.node_file("gpu-a", specs.LSPCI): LSPCI})
    reads: list[str] = []
    read_bytes = type(facts.bundle).read_bytes

    def counting(self: object, path: str) -> bytes | None:
        reads.append(path)
        return read_bytes(self, path)  # type: ignore[arg-type]

    monkeypatch.setattr(type(facts.bundle), "read_bytes", counting)
    node = facts.node("gpu-a")
    devices = node.lspci
    assert devices is not None and [d.address for d in devices] == ["0000:3b:00.0"]
    assert node.lspci is devices
    assert [d.address for d in facts.foreign_gpus("gpu-a")] == ["0000:3b:00.0"]
    assert reads == [specs.node_file("gpu-a", specs.LSPCI)]
    assert facts.node("gpu-b").lspci is None and facts.foreign_gpus("gpu-b") == []


def test_systemd_units_and_daemon_json(tmp_path: Path) -> None:
    facts = _facts(tmp_path, {
        specs.node_file("gpu-a", specs.systemd("k3s")): "Restart=always\nLoadState=loaded\n",
        specs.node_file("gpu-a", specs.DOCKER_DAEMON_JSON): json.dumps(
            {"runtimes": {"nvidia": {}}, "default-runtime": "nvidia"}),
        specs.node_file("gpu-b", specs.DOCKER_DAEMON_JSON): "[1, 2]",
    })
    assert facts.node("gpu-a").systemd_unit("k3s") == {"Restart": "always",
                                                        "LoadState": "loaded"}
    assert facts.node("gpu-a").systemd_unit("rke2-agent") is None
    daemon = facts.node("gpu-a").docker_daemon
    assert daemon is not None and daemon.settings is not None
    assert daemon.settings["default-runtime"] == "nvidia" and daemon.unreadable is None
    broken = facts.node("gpu-b").docker_daemon
    assert broken is not None and broken.settings is None
    assert broken.unreadable == "is not a JSON object"
    path = specs.node_file("gpu-b", specs.DOCKER_DAEMON_JSON)
    assert [p.message for p in facts.bundle.problems if p.path == path] == \
        ["daemon.json is not a JSON object"]
    assert facts.node("gpu-b").docker_daemon is broken  # recorded once, not per reader


def test_device_access_refuses_an_oversized_file(tmp_path: Path) -> None:
    facts = _facts(tmp_path, {
        specs.node_file("gpu-a", specs.CGROUP): "x\n" * (MAX_LINES + 1),
        specs.node_file("gpu-a", specs.DEV_NVIDIA): "/dev/char:\n",
        specs.node_file("gpu-b", specs.CGROUP): "cgroup2fs\n",
    })
    access = facts.node("gpu-a").device_access
    assert access.refused == (specs.CGROUP,)
    assert access.cgroup is None and access.devices is None
    assert [p.path for p in facts.bundle.problems if p.kind == "refused"] == \
        [specs.node_file("gpu-a", specs.CGROUP)]
    missing = facts.node("gpu-b").device_access
    assert missing.devices_text is None and missing.refused == () and missing.cgroup is None


DUMP = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
        'default_runtime_name = "runc"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
        'runtime_type = "io.containerd.runc.v2"\n')


def test_cri_runtimes_read_once_and_only_of_a_containerd_node(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docker = {"containerRuntimeVersion": "docker://24.0.7"}
    bundle = open_bundle(write_dir(tmp_path / "b", {
        specs.NODES: kube_list(kube_node("gpu-a"), kube_node("gpu-b", node_info=docker),
                               kube_node("gpu-c")),
        specs.node_file("gpu-a", specs.CONTAINERD_DUMP): DUMP,
        specs.node_file("gpu-b", specs.CONTAINERD_DUMP): DUMP,
        specs.node_file("gpu-b", specs.UNAME): "Linux gpu-b 6.8.0 x\n"}))
    facts = Facts(bundle)
    calls: list[object] = []
    parse = node_module.cri_runtimes

    def counting(config: object) -> object:
        calls.append(config)
        return parse(config)  # type: ignore[arg-type]

    monkeypatch.setattr(node_module, "cri_runtimes", counting)
    found = facts.node("gpu-a").cri_runtimes
    assert found is not None and sorted(found.runtimes) == ["nvidia"]
    assert found.default == "runc" and not found.nvidia_default
    assert facts.node("gpu-a").cri_runtimes is found and len(calls) == 1
    assert facts.node("gpu-b").cri_runtimes is None  # docker runs its containers
    assert facts.node("gpu-c").cri_runtimes is None  # no folder for the node
    assert len(calls) == 1


def test_cluster_door(tmp_path: Path) -> None:
    quota = {"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": "gpus", "namespace": "ml"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "4", "pods": "10"}},
             "status": {"hard": {"requests.nvidia.com/gpu": "4", "pods": "10"},
                        "used": {"requests.nvidia.com/gpu": "4"}}}
    facts = _facts(tmp_path, {specs.RESOURCEQUOTAS: kube_list(quota)})
    [found] = facts.gpu_quotas
    assert (found.namespace, found.key, found.hard, found.used, found.section) == \
        ("ml", "requests.nvidia.com/gpu", 4, 4, "status")
    assert found.exhausted
    assert facts.has(specs.RESOURCEQUOTAS) and not facts.has(specs.EVENTS)
    assert facts.container_log("ml", "p", "c") is None


# -- bundle.specs ----------------------------------------------------------------------

def test_specs_paths() -> None:
    assert specs.node_file("gpu-a", specs.LSPCI) == "nodes/gpu-a/host/lspci.txt"
    assert specs.node_dir("gpu-a") == "nodes/gpu-a/"
    assert specs.any_node(specs.DMESG) == "nodes/*/dmesg.txt"
    assert specs.journal("kubelet") == specs.KUBELET_JOURNAL == "journal/kubelet.jsonl"
    assert specs.containerd_file("/etc/containerd/config.toml") == \
        "containerd/files/etc/containerd/config.toml"
    assert specs.log_file("ns", "pod", "c") == "logs/ns/pod/c.log"
    assert specs.log_file("ns", "pod", "c", previous=True) == "logs/ns/pod/c.previous.log"
    assert specs.helm_release("gpu-operator") == "cluster/helm/gpu-operator.json"


# -- bundle.versions -------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("nvcr.io/nvidia/gpu-operator:v26.3.1", (26, 3, 1)),
    ("gpu-operator-v25.10.0", (25, 10, 0)),
    ("v1.7.0", None),               # a one-digit major is not a calendar release
    ("26.3", None),
    (None, None),
])
def test_operator_release(text: str | None, expected: versions.Version | None) -> None:
    assert versions.operator_release(text) == expected


def test_release_takes_one_digit_majors_after_the_tag_colon() -> None:
    assert versions.release("v1.7.0") == (1, 7, 0)
    assert versions.release("registry:5000/gpu-operator:v23.9.2") == (23, 9, 2)
    assert versions.release("latest") is None


def test_containerd_versions() -> None:
    assert versions.containerd("containerd github.com/containerd/containerd v1.7.27 abc\n") == \
        (1, 7, 27)
    assert versions.containerd("containerd containerd.io 1.6.20~ds1 1.6.20~ds1-1") == (1, 6, 20)
    assert versions.containerd("") is None and versions.containerd(None) is None
    assert versions.containerd_major("containerd://2.0.5-k3s1.32") == 2
    assert versions.containerd_major("docker://24.0.7") == 0


def test_images_kernels_and_series() -> None:
    assert versions.image("nvcr.io/nvidia/k8s/container-toolkit:v1.17.8-ubuntu20.04") == \
        ("container-toolkit", "1.17.8")
    assert versions.image("nvcr.io/nvidia/driver@sha256:abc") == ("driver", None)
    assert versions.fits("0.19", "0.19.2") and not versions.fits("0.19", "0.20.0")
    assert versions.series("26.3.1") == "26.3"
    assert versions.uname_release("Linux gpu-a 6.8.0-45-generic #45 SMP x86_64") == \
        "6.8.0-45-generic"
    assert versions.uname_release("6.8.0-45-generic") is None
    assert versions.dotted((26, 3, 1), prefix="v") == "v26.3.1"


def test_driver_library_and_compiler_versions() -> None:
    assert versions.nvrm_driver("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  "
                                "Sat Aug 19 01:15:15 UTC 2023") == "535.104.05"
    assert versions.nvrm_driver("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                                "570.86.15  Release Build") == "570.86.15"
    assert versions.nvrm_driver("GCC version:  gcc version 12.3.0") is None
    assert versions.refused_driver("NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:1db6) "
                                   "is not supported by the 550.54 NVIDIA driver") == "550.54"
    assert versions.refused_driver("NVRM: ... release of the NVIDIA 535.104.05 driver release "
                                   "notes") == "535.104.05"
    assert versions.refused_driver("NVRM: the NVIDIA 470.xx Legacy drivers") is None
    assert versions.library_versions("- /usr/lib/libnvidia-ml.so.550.54.15\n"
                                     "- /usr/lib/libcuda.so.550.54.15\n- /usr/lib/libcuda.so\n"
                                     "- /usr/lib/libnvidia-ml.so.535.104.05") == \
        {"550.54.15", "535.104.05"}
    assert versions.library_versions("- /usr/bin/nvidia-smi") == set()
    assert versions.compiler("x86_64-linux-gnu-gcc-12 (Ubuntu 12.3.0-1ubuntu1~22.04) 12.3.0") \
        == "12.3.0"
    assert versions.compiler("cc") is None
    assert versions.containerd_text("containerd github.com/containerd/containerd v1.7.27 abc") \
        == "1.7.27"
    assert versions.containerd_text("containerd 1.6.20~ds1 1.6.20~ds1-1") == "1.6.20~ds1"
    assert versions.containerd_text("") is None and versions.containerd_text(None) is None
