"""Per-node artifacts other than containerd's configuration.

Formats follow the tools named in bundle-format.md: ``dmesg --time-format iso``
lines, ``systemctl show`` properties, /proc/modules lines, host files, and CDI
specs as the toolkit and the device plugin write them. ``write_node`` writes
every node path; journals and nvidia-smi XML come from ``journal`` and ``smi``.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from . import containerd
from .core import (
    Bundle,
    hexid,
    plus,
    systemd_time,
)
from .journal import Journal
from .model import Gpu, Host
from .smi import DRIVER, nvidia_smi_xml

LIBDIR = "/usr/lib/x86_64-linux-gnu"


# ----------------------------------------------------------------------------- dmesg


def dmesg_lines(host: Host) -> str:
    """NVIDIA lines of ``dmesg --time-format iso`` after the collector's filter
    (open kernel modules, as Blackwell needs and the 570 packages default to)."""
    gpu = host.gpu
    assert gpu is not None
    bus = gpu.bus_id[4:].lower()  # 0000:01:00.0
    build = "Release Build  (dvs-builder@U22-I3-AE18-23-3)  Thu Sep  4 01:54:27 UTC 2025"
    if gpu.pci_class == "0300":
        vga = (
            f"nvidia {bus}: vgaarb: VGA decodes changed: olddecodes=io+mem,decodes=none:owns=io+mem"
        )
    else:
        vga = f"nvidia {bus}: enabling device (0000 -> 0003)"
    lines = [
        (0.0, "nvidia: loading out-of-tree module taints kernel."),
        (0.041, "nvidia-nvlink: Nvlink Core is being initialized, major device number 509"),
        (0.043, vga),
        (0.096, f"NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER}  {build}"),
        (
            0.140,
            "nvidia-modeset: Loading NVIDIA UNIX Open Kernel Mode Setting Driver for x86_64  "
            f"{DRIVER}  {build}",
        ),
        (0.151, "[drm] [nvidia-drm] [GPU ID 0x00000100] Loading driver"),
        (1.372, f"[drm] Initialized nvidia-drm 0.0.0 for {bus} on minor 1"),
    ]
    t0 = plus(host.boot_at, 4.31)
    out = []
    for offset, text in lines:
        t = plus(t0, offset)
        out.append(f"{t:%Y-%m-%dT%H:%M:%S},{t.microsecond:06d}+00:00 {text}\n")
    return "".join(out)


def proc_modules() -> str:
    """/proc/modules lines for nvidia* (read as root, so with addresses); the
    Ubuntu-signed open modules taint the kernel as out-of-tree only (O)."""
    return (
        "nvidia_uvm 2093056 0 - Live 0xffffffffc3a1e000 (O)\n"
        "nvidia_drm 139264 2 - Live 0xffffffffc39f1000 (O)\n"
        "nvidia_modeset 1724416 1 nvidia_drm, Live 0xffffffffc36c2000 (O)\n"
        "nvidia 11980800 5 nvidia_uvm,nvidia_modeset, Live 0xffffffffc2400000 (O)\n"
    )


# ---------------------------------------------------------------------- host files


def uname(host: Host) -> str:
    return f"Linux {host.name} {host.kernel} {host.kernel_build} x86_64 x86_64 x86_64 GNU/Linux\n"


def os_release(host: Host) -> str:
    version = host.os_pretty.removeprefix("Ubuntu ")
    return (
        f'PRETTY_NAME="{host.os_pretty}"\n'
        'NAME="Ubuntu"\n'
        'VERSION_ID="24.04"\n'
        f'VERSION="{version} (Noble Numbat)"\n'
        "VERSION_CODENAME=noble\n"
        "ID=ubuntu\n"
        "ID_LIKE=debian\n"
        'HOME_URL="https://www.ubuntu.com/"\n'
        'SUPPORT_URL="https://help.ubuntu.com/"\n'
        'BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"\n'
        'PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"\n'
        "UBUNTU_CODENAME=noble\n"
        "LOGO=ubuntu-logo\n"
    )


def cmdline(host: Host) -> str:
    return (
        f"BOOT_IMAGE=/vmlinuz-{host.kernel} root=/dev/mapper/ubuntu--vg-ubuntu--lv ro "
        "quiet splash vt.handoff=7\n"
    )


def nvidia_ctk() -> str:
    """A leftover host install of the toolkit CLI: present, configuring nothing."""
    return (
        "/usr/bin/nvidia-ctk\n"
        "NVIDIA Container Toolkit CLI version 1.17.4\n"
        f"commit: {hexid(40, 'nvidia-ctk', '1.17.4')}\n"
    )


def unattended_upgrades() -> str:
    """``tail -n +1`` of Ubuntu's two apt periodic files (comments left out)."""
    return (
        "==> /etc/apt/apt.conf.d/20auto-upgrades <==\n"
        'APT::Periodic::Update-Package-Lists "1";\n'
        'APT::Periodic::Unattended-Upgrade "1";\n'
        "\n"
        "==> /etc/apt/apt.conf.d/50unattended-upgrades <==\n"
        "Unattended-Upgrade::Allowed-Origins {\n"
        '\t"${distro_id}:${distro_codename}";\n'
        '\t"${distro_id}:${distro_codename}-security";\n'
        '\t"${distro_id}ESMApps:${distro_codename}-apps-security";\n'
        '\t"${distro_id}ESM:${distro_codename}-infra-security";\n'
        "};\n"
        "Unattended-Upgrade::Package-Blacklist {\n"
        "};\n"
        'Unattended-Upgrade::DevRelease "auto";\n'
    )


def systemctl_show(pid: int, started: dt.datetime, restarts: int) -> str:
    return (
        "Restart=always\n"
        "RestartUSec=5s\n"
        f"ExecMainStartTimestamp={systemd_time(started)}\n"
        f"ExecMainPID={pid}\n"
        f"NRestarts={restarts}\n"
        "ActiveState=active\n"
        "SubState=running\n"
    )


# ------------------------------------------------------------------------------- CDI

_CDI_LIBS = [
    "libcuda.so",
    "libcudadebugger.so",
    "libnvidia-allocator.so",
    "libnvidia-cfg.so",
    "libnvidia-gpucomp.so",
    "libnvidia-ml.so",
    "libnvidia-nvvm.so",
    "libnvidia-opencl.so",
    "libnvidia-ptxjitcompiler.so",
]
_CDI_BINS = [
    "nvidia-cuda-mps-control",
    "nvidia-cuda-mps-server",
    "nvidia-debugdump",
    "nvidia-persistenced",
    "nvidia-smi",
]
_MOUNT_OPTS = ["ro", "nosuid", "nodev", "rbind", "rprivate"]
_HOOK = "/usr/local/nvidia/toolkit/nvidia-cdi-hook"


def _cdi_edits() -> dict[str, object]:
    mounts = [f"{LIBDIR}/{lib}.{DRIVER}" for lib in _CDI_LIBS]
    mounts += [f"/lib/firmware/nvidia/{DRIVER}/gsp_ga10x.bin"]
    mounts += [f"/usr/bin/{b}" for b in _CDI_BINS]
    return {
        "env": ["NVIDIA_CTK_LIBCUDA_DIR=" + LIBDIR, "NVIDIA_VISIBLE_DEVICES=void"],
        "deviceNodes": [
            {"path": p, "hostPath": p}
            for p in (
                "/dev/nvidia-modeset",
                "/dev/nvidia-uvm",
                "/dev/nvidia-uvm-tools",
                "/dev/nvidiactl",
            )
        ],
        "hooks": [
            {
                "hookName": "createContainer",
                "path": _HOOK,
                "args": [
                    "nvidia-cdi-hook",
                    "create-symlinks",
                    "--link",
                    f"libcuda.so.1::{LIBDIR}/libcuda.so",
                ],
                "env": ["NVIDIA_CTK_DEBUG=false"],
            },
            {
                "hookName": "createContainer",
                "path": _HOOK,
                "args": ["nvidia-cdi-hook", "update-ldcache", "--folder", LIBDIR],
                "env": ["NVIDIA_CTK_DEBUG=false"],
            },
        ],
        "mounts": [
            {"hostPath": m, "containerPath": m, "options": list(_MOUNT_OPTS)} for m in mounts
        ],
    }


def _yaml(value: object, key_col: int, child: int) -> list[str]:
    """The small YAML subset the CDI writer (yaml.v3, indent 4) produces: keys of
    a mapping at ``key_col``; anything nested under a key starts at ``child``."""
    lines: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict):
                lines.append(f"{' ' * key_col}{k}:")
                lines += _yaml(v, child, child + 4)
            elif isinstance(v, list):
                lines.append(f"{' ' * key_col}{k}:")
                for item in v:
                    if isinstance(item, dict):
                        sub = _yaml(item, child + 2, child + 4)
                        lines.append(f"{' ' * child}- {sub[0].lstrip()}")
                        lines += sub[1:]
                    else:
                        lines.append(f"{' ' * child}- {item}")
            else:
                lines.append(f"{' ' * key_col}{k}: {v}")
    return lines


def cdi_management_yaml() -> str:
    """/var/run/cdi/management.nvidia.com-gpu.yaml, written by the toolkit container."""
    spec = {
        "cdiVersion": "0.5.0",
        "kind": "management.nvidia.com/gpu",
        "devices": [
            {
                "name": "all",
                "containerEdits": {
                    "deviceNodes": [
                        {"path": "/dev/nvidia0", "hostPath": "/dev/nvidia0"},
                        {"path": "/dev/nvidiactl", "hostPath": "/dev/nvidiactl"},
                    ]
                },
            }
        ],
        "containerEdits": _cdi_edits(),
    }
    return "---\n" + "\n".join(_yaml(spec, 0, 4)) + "\n"


def cdi_device_plugin_json(gpu: Gpu) -> str:
    """/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json, written by the device plugin."""
    spec = {
        "cdiVersion": "0.5.0",
        "kind": "k8s.device-plugin.nvidia.com/gpu",
        "devices": [
            {
                "name": gpu.uuid,
                "containerEdits": {
                    "deviceNodes": [{"path": "/dev/nvidia0", "hostPath": "/dev/nvidia0"}]
                },
            }
        ],
        "containerEdits": _cdi_edits(),
    }
    return json.dumps(spec, separators=(",", ":"))


# ------------------------------------------------------------------- node collection


@dataclass
class NodeState:
    """What the collector finds on one GPU node."""

    host: Host
    config_files: dict[str, str]  # absolute path -> content; config.toml first
    containerd_journal: Journal
    kubelet_journal: Journal
    containerd_pid: int
    containerd_started: dt.datetime
    restarts: int
    cdi_files: dict[str, str]  # file name under /var/run/cdi -> content
    smi_at: dt.datetime


def write_node(bundle: Bundle, node: NodeState) -> None:
    """Every node path of bundle-format.md, in the collector's order."""
    host = node.host
    assert host.gpu is not None
    base = f"nodes/{host.name}"

    def add(path: str, content: str, command: list[str]) -> None:
        bundle.add(f"{base}/{path}", content, command, node=host.name)

    add(
        "containerd/config-dump.toml",
        containerd.config_dump(node.config_files),
        ["containerd", "config", "dump"],
    )
    add("containerd/version.txt", containerd.version_text(), ["containerd", "--version"])
    drop_ins = sorted(p for p in node.config_files if p.startswith("/etc/containerd/conf.d/"))
    add(
        "containerd/files/etc/containerd/config.toml",
        node.config_files["/etc/containerd/config.toml"],
        ["cat", "/etc/containerd/config.toml"],
    )
    if drop_ins:
        for path in drop_ins:
            add(f"containerd/files{path}", node.config_files[path], ["cat", path])
    else:
        bundle.fail(
            f"{base}/containerd/files/etc/containerd/conf.d",
            ["ls", "-A", "/etc/containerd/conf.d"],
            "ls: cannot access '/etc/containerd/conf.d': No such file or directory",
            exit_code=2,
            node=host.name,
        )
    add(
        "journal/containerd.jsonl",
        node.containerd_journal.render(),
        ["journalctl", "-u", "containerd", "-o", "json", "--since", "-168h"],
    )
    add(
        "journal/kubelet.jsonl",
        node.kubelet_journal.render(),
        ["journalctl", "-u", "kubelet", "-o", "json", "--since", "-168h"],
    )
    add("dmesg.txt", dmesg_lines(host), ["dmesg", "--time-format", "iso"])
    add("nvidia-smi.xml", nvidia_smi_xml(host.gpu, node.smi_at), ["nvidia-smi", "-q", "-x"])
    add(
        "systemd/containerd.txt",
        systemctl_show(node.containerd_pid, node.containerd_started, node.restarts),
        [
            "systemctl",
            "show",
            "containerd",
            "-p",
            "Restart,RestartUSec,NRestarts,ActiveState,SubState,ExecMainPID,ExecMainStartTimestamp",
        ],
    )
    add("host/uname.txt", uname(host), ["uname", "-a"])
    add("host/os-release", os_release(host), ["cat", "/etc/os-release"])
    add("host/cmdline", cmdline(host), ["cat", "/proc/cmdline"])
    add(
        "host/modules.txt",
        proc_modules(),
        ["grep", "-E", "^(nvidia|nouveau)", "/proc/modules"],
    )
    add("host/secureboot.txt", "SecureBoot disabled\n", ["mokutil", "--sb-state"])
    add(
        "host/nvidia-ctk.txt",
        nvidia_ctk(),
        ["sh", "-c", "command -v nvidia-ctk; nvidia-ctk --version"],
    )
    add(
        "host/unattended-upgrades.txt",
        unattended_upgrades(),
        [
            "tail",
            "-n",
            "+1",
            "/etc/apt/apt.conf.d/20auto-upgrades",
            "/etc/apt/apt.conf.d/50unattended-upgrades",
        ],
    )
    if node.cdi_files:
        for name, content in sorted(node.cdi_files.items()):
            add(f"cdi/{name}", content, ["cat", f"/var/run/cdi/{name}"])
    else:
        bundle.fail(
            f"{base}/cdi",
            ["sh", "-c", "ls /etc/cdi/* /var/run/cdi/*"],
            "ls: cannot access '/etc/cdi/*': No such file or directory\n"
            "ls: cannot access '/var/run/cdi/*': No such file or directory",
            exit_code=2,
            node=host.name,
        )
