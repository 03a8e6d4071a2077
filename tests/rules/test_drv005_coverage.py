"""DRV005 when the bundle lacks host files: a node without its unattended-upgrades file is
not judged "healthy" (the rule says ``partial``/``failed`` and names it), and without
``/etc/os-release`` the kernel pool is keyed by the OS that NFD copied into labels, so
one cluster read through another layout keeps its finding ids."""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of
from kit import verdict as status
from kit.driver import bundle_files as drv_files
from kit.driver import gpu_node
from test_drv005_drv006 import AUTO, _hosts, _policy

NFD = "feature.node.kubernetes.io/system-os_release."


def test_a_node_without_its_apt_settings_makes_the_rule_partial(tmp_path: Path) -> None:
    kernels = {"gpu-a": "6.8.0-88-generic", "gpu-b": "6.8.0-88-generic"}
    files = _hosts(kernels, {"gpu-a": ""})
    del files["nodes/gpu-b/host/unattended-upgrades.txt"]
    report = analyse(drv_files([gpu_node(n) for n in kernels], files, policies=[_policy(True)]),
                     tmp=tmp_path)
    assert not of(report, "DRV005")
    assert status(report, "DRV005") == (
        "partial", "judged in part: the unattended-upgrades settings "
                   "(host/unattended-upgrades.txt) are not in the bundle for gpu-b")


def test_what_was_found_stands_and_the_gap_is_named(tmp_path: Path) -> None:
    kernels = {"gpu-a": "6.8.0-88-generic", "gpu-b": "6.8.0-88-generic"}
    files = _hosts(kernels, {"gpu-a": AUTO})
    del files["nodes/gpu-b/host/unattended-upgrades.txt"]
    report = analyse(drv_files([gpu_node(n) for n in kernels], files, policies=[_policy(True)]),
                     tmp=tmp_path)
    assert sorted(of(report, "DRV005")) == ["DRV005:gpu-a"]
    state, reason = status(report, "DRV005")
    assert state == "failed"
    assert reason is not None and reason.endswith("are not in the bundle for gpu-b")


def test_host_driver_nodes_need_no_apt_settings(tmp_path: Path) -> None:
    kernels = {"gpu-a": "6.8.0-88-generic"}
    files = _hosts(kernels, {})
    del files["nodes/gpu-a/host/unattended-upgrades.txt"]
    report = analyse(drv_files([gpu_node("gpu-a")], files, policies=[_policy(False)]), tmp=tmp_path)
    assert status(report, "DRV005") == ("passed", None)


def test_without_os_release_the_pool_is_keyed_by_nfd_labels(tmp_path: Path) -> None:
    kernels = {"gpu-a": "6.8.0-88-generic", "gpu-b": "6.8.0-90-generic"}
    files = _hosts(kernels, {})
    nodes = []
    for name in kernels:
        del files[f"nodes/{name}/host/os-release"]
        node = gpu_node(name, kernel=kernels[name])
        node["metadata"]["labels"] |= {NFD + "ID": "ubuntu", NFD + "VERSION_ID": "22.04"}
        nodes.append(node)
    report = analyse(drv_files(nodes, files, policies=[_policy(True)]), tmp=tmp_path)
    assert sorted(of(report, "DRV005")) == ["DRV005:kernels/ubuntu22.04"]


def test_without_os_release_or_labels_the_os_image_names_the_pool(tmp_path: Path) -> None:
    kernels = {"gpu-a": "6.8.0-88-generic", "gpu-b": "6.8.0-90-generic"}
    files = _hosts(kernels, {})
    for name in kernels:
        del files[f"nodes/{name}/host/os-release"]
    report = analyse(drv_files([gpu_node(n, kernel=k) for n, k in kernels.items()], files,
                    policies=[_policy(True)]), tmp=tmp_path)
    assert sorted(of(report, "DRV005")) == ["DRV005:kernels/ubuntu-22.04.5-lts"]
