"""node.sh never follows a symbolic link: it records it in links.txt (host path -> target) and
reads the target only where that target is itself a file it reads anyway.

The shapes are the two a security review found shipped: a containerd drop-in directory with a
link to the root user's Docker credentials (`/root/.docker/config.json`, written by
`docker login`: https://docs.docker.com/reference/cli/docker/login/) and a CDI directory with a
link to a kubeconfig. os-release(5) places the real file at /usr/lib/os-release and
/etc/os-release is usually a relative link to it.
"""

from __future__ import annotations

import json
from pathlib import Path

from collector_support import make_node_root, parse_steps, run_node_script, tar_members

DOCKER_AUTH = "cGxhbnRlZDpQTEFOVEVELWRvY2tlci1hdXRo"  # base64 of planted:PLANTED-docker-auth
KUBECONFIG_TOKEN = "PLANTED-kubeconfig-token-0001"


def _linked_root(tmp_path: Path) -> Path:
    root = make_node_root(tmp_path, "gpu-a")
    docker = root / "root" / ".docker" / "config.json"
    docker.parent.mkdir(parents=True)
    docker.write_text(json.dumps({"auths": {"nvcr.io": {"auth": DOCKER_AUTH}}}) + "\n")
    kubeconfig = root / "root" / ".kube" / "config"
    kubeconfig.parent.mkdir(parents=True)
    kubeconfig.write_text(f"users:\n- name: admin\n  user:\n    token: {KUBECONFIG_TOKEN}\n")
    (root / "etc/containerd/conf.d/50-registry.toml").symlink_to("/root/.docker/config.json")
    (root / "etc/cdi/admin.yaml").symlink_to("../../root/.kube/config")
    # a drop-in that links to the main config: read anyway, so it is copied, as itself
    (root / "etc/containerd/conf.d/00-main.toml").symlink_to("../config.toml")
    # os-release as distributions ship it
    real = root / "usr" / "lib" / "os-release"
    real.parent.mkdir(parents=True)
    (root / "etc" / "os-release").rename(real)
    (root / "etc" / "os-release").symlink_to("../usr/lib/os-release")
    return root


def test_links_are_recorded_not_followed(tmp_path: Path) -> None:
    root = _linked_root(tmp_path)
    proc = run_node_script(root)
    assert proc.returncode == 0, proc.stderr.decode()
    files = tar_members(proc.stdout)
    for name, data in files.items():
        assert DOCKER_AUTH.encode() not in data, name
        assert KUBECONFIG_TOKEN.encode() not in data, name
    links = files["links.txt"].decode().splitlines()
    assert "/etc/containerd/conf.d/50-registry.toml -> /root/.docker/config.json" in links
    assert "/etc/cdi/admin.yaml -> ../../root/.kube/config" in links
    assert "/etc/containerd/conf.d/00-main.toml -> ../config.toml" in links
    assert "/etc/os-release -> ../usr/lib/os-release" in links
    assert "containerd/files/etc/containerd/conf.d/50-registry.toml" not in files
    assert "cdi/admin.yaml" not in files
    assert "containerd/files/etc/containerd/conf.d/00-main.toml" not in files
    # targets read anyway: the main config is copied under its own path, os-release is read
    assert files["containerd/files/etc/containerd/config.toml"] == (
        root / "etc/containerd/config.toml").read_bytes()
    assert files["host/os-release"] == (root / "usr/lib/os-release").read_bytes()
    steps = parse_steps(files["steps.tsv"].decode())
    assert steps["links.txt"]["error"] is None and steps["links.txt"]["command"][0] == "readlink"
    # the link itself is never read through: no step names its path with cat
    assert not any((row["command"] or [])[:1] == ["cat"] and any(
        arg.endswith(("50-registry.toml", "admin.yaml")) for arg in row["command"])
        for row in steps.values())


def test_no_links_no_links_txt(tmp_path: Path) -> None:
    files = tar_members(run_node_script(make_node_root(tmp_path, "gpu-a")).stdout)
    assert "links.txt" not in files
