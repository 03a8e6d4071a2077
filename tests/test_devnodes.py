"""bundle.devnodes: host/cgroup.txt and host/dev-nvidia.txt as the node script writes them
(collectors/node.sh, collect_cgroup and DEV_SCRIPT)."""

from __future__ import annotations

from bundle.devnodes import parse_cgroup, parse_dev_nvidia


def test_cgroup_kubelet_containerd_and_crio_lines() -> None:
    info = parse_cgroup(
        "fs-type: cgroup2fs\nversion: 2\nkubelet-cgroup-driver: cgroupfs (/etc/kubernetes/x)\n"
        'containerd: [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options] '
        "SystemdCgroup = false\n")
    assert info.version == "2" and info.kubelet_driver_name == "cgroupfs"
    assert info.systemd is None and [line.number for line in info.cgroupfs_runtime] == [4]
    crio = parse_cgroup('fs-type: cgroup2fs\nversion: 2\nkubelet-cgroup-driver: not set\n'
                        'crio: cgroup_manager = "systemd"\n')
    assert crio.kubelet_driver_name is None
    assert crio.systemd is not None and crio.systemd.number == 4
    kubelet = parse_cgroup("version: 1\nkubelet-cgroup-driver: systemd\n")
    assert kubelet.systemd is not None and kubelet.systemd.text == "kubelet-cgroup-driver: systemd"


def test_dev_nvidia_sections() -> None:
    text = ("==> /dev/nvidia* <==\ncrw-rw-rw- 1 root root 195, 0 Jul 14 16:20 nvidia0\n"
            "drwxr-xr-x 2 root root 80 Jul 14 16:20 nvidia-caps\n==> /dev/char <==\n"
            "lrwxrwxrwx 1 root root 10 Jul 14 16:21 195:0 -> ../nvidia0\n")
    found = parse_dev_nvidia(text)
    assert found.names == ("nvidia0", "nvidia-caps") and found.char_listed
    assert found.char_header == 4 and [line.number for line in found.char_links] == [5]
    bare = parse_dev_nvidia("==> /dev/nvidia* <==\n")
    assert not bare.char_listed and bare.char_links == () and bare.devices == ()
