"""GPU nodes of other Kubernetes distributions, collected as the 1.1 node collector does.

The samples of issues 4 to 15 are kubeadm nodes written in the layout of the first
collector (``fleet.write_rig``). k3s, RKE2, k0s and MicroK8s run their own containerd
with their own file, socket, binary and units, and OpenShift nodes run CRI-O; the
collector of format 1.1 (``collectors/node.sh``) finds out which (``runtime.json``)
and reads what that runtime really runs with. A ``Flavor`` holds one distribution's
facts (the table in the README's "Distributions and runtimes": file, templates, socket,
binary, units, log file, Node fields); ``write_node`` writes every path node.sh writes on
such a node, in node.sh's order, with the commands and failures it records:

- ``host/kubelet.txt``, then ``runtime.json`` with the signals node.sh reports;
- containerd nodes: ``<binary> --version``, ``<binary> --config <file> config dump``
  (a real dump: Debian's containerd run on the node's files), ``cat`` of
  ``/etc/containerd/config.toml`` (a failed step where it does not exist), the file
  containerd runs with, its templates, the files its ``imports`` name,
  ``/etc/containerd/conf.d/*`` and the tail of the distribution's containerd log;
- CRI-O nodes: ``crio --version``, ``crio status config``, ``/etc/crio`` files and
  OCI hooks;
- journals of ``containerd`` and ``kubelet`` always (empty where the unit does not
  exist, as ``journalctl -u`` prints nothing then) and of the listed units that exist;
  ``systemctl show`` with ``LoadState`` of ``containerd``, ``kubelet`` and the
  runtime's units that exist;
- dmesg, nvidia-smi and the 1.1 host files.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from . import containerd, dcgpu, host
from .core import Bundle, hexid, number, plus, systemd_time
from .fleet import Rig, _cdi_plugin_json, config_dump, debug_pod
from .journal import Journal
from .model import Host
from .scene import Scene
from .smi import DRIVER

SINCE = "168h"
SYSTEMD_PROPS = ("LoadState,ActiveState,SubState,Restart,RestartUSec,NRestarts,ExecMainPID,"
                 "ExecMainStartTimestamp")
# node.sh's JOURNAL_UNITS and RUNTIME_UNITS, in its order
JOURNAL_UNITS = ("k3s", "k3s-agent", "rke2-server", "rke2-agent", "k0sworker", "k0scontroller",
                 "snap.microk8s.daemon-containerd", "snap.microk8s.daemon-kubelite", "crio",
                 "docker", "nvidia-fabricmanager", "nvidia-persistenced")
RUNTIME_UNITS = ("crio", "docker", "k3s", "k3s-agent", "rke2-server", "rke2-agent", "k0sworker",
                 "k0scontroller", "snap.microk8s.daemon-containerd",
                 "snap.microk8s.daemon-kubelite")
LOG_TAIL_LINES = "20000"


@dataclass(frozen=True)
class Flavor:
    """What one distribution's GPU node looks like to the collector and in its Node."""

    distribution: str                 # runtime.json: k3s, rke2, k0s, microk8s, openshift
    runtime: str                      # runtime.json: containerd or cri-o
    kubelet_version: str              # Node status.nodeInfo
    runtime_version: str
    config: str                       # the file the runtime runs with
    socket: str
    binary: str
    processes: tuple[tuple[str, str], ...]  # (comm, command line) of kubelet-running processes
    signals: tuple[str, ...]          # what node.sh reports it looked at ("{pid}" filled in)
    units: tuple[str, ...]            # systemd units that exist on the node (node.sh's lists)
    kubelet_files: tuple[tuple[str, str], ...] = ()  # (path, content) node.sh prints
    templates: tuple[str, ...] = ()   # files the config is rebuilt from
    log_file: str | None = None       # containerd's own log file
    kubelet_unit: str | None = None   # the unit whose journal holds the kubelet's lines
    containerd_unit: str | None = None  # the unit whose journal holds containerd's lines
    cgroup_driver: str = "systemd (/var/lib/kubelet/config.yaml)"
    selinux: str | None = None        # getenforce (None: no SELinux on the host)
    labels: dict[str, str] = field(default_factory=dict)
    os_image: str = "Ubuntu 24.04.3 LTS"
    cmdline: str | None = None        # /proc/cmdline (None: the Ubuntu hosts' own)


@dataclass
class DistroState:
    """What the collector finds on one GPU node of a distribution."""

    rig: Rig
    flavor: Flavor
    config_files: dict[str, str]      # host path -> content (containerd nodes)
    runtime_log: Journal              # containerd's lines (journal or log file)
    kubelet_log: Journal              # the kubelet's lines
    unit_started: dict[str, dt.datetime]  # unit -> ExecMainStartTimestamp
    unit_restarts: dict[str, int] = field(default_factory=dict)
    crio_dump: str | None = None      # `crio status config` (CRI-O nodes)
    crio_files: dict[str, str] = field(default_factory=dict)
    cdi: bool = True                  # the device plugin wrote its CDI spec
    cdi_management: bool = True       # the toolkit wrote its management CDI spec


def pid_of(rig: Rig, comm: str) -> int:
    return number(900, 4000, "distro-pid", rig.name, comm)


# ----------------------------------------------------------------------- host files


def kubelet_text(state: DistroState) -> tuple[str, list[str]]:
    """host/kubelet.txt and the `cat` arguments node.sh records."""
    out: list[str] = []
    args = ["cat"]
    for comm, cmdline in state.flavor.processes:
        pid = pid_of(state.rig, comm)
        out.append(f"==> process {pid} {comm}: /proc/{pid}/cmdline <==\n{cmdline}\n")
        args.append(f"/proc/{pid}/cmdline")
    for path, content in state.flavor.kubelet_files:
        out.append(f"==> {path} <==\n{content}")
        args.append(path)
    return "".join(out), args


def runtime_json(state: DistroState) -> str:
    f = state.flavor
    signals = [s.format(**{c: pid_of(state.rig, c) for c, _ in f.processes},
                        containerd=pid_of(state.rig, "containerd")) for s in f.signals]
    data = {"runtime": f.runtime, "distribution": f.distribution, "config_path": f.config,
            "socket": f.socket, "binary": f.binary, "signals": signals}
    return json.dumps(data) + "\n"


def show_unit(loaded: bool, pid: int = 0, started: dt.datetime | None = None,
              restarts: int = 0, restart: str = "always", restart_usec: str = "5s") -> str:
    """``systemctl show UNIT -p <node.sh's list>``: service properties, then the unit's.
    A unit that does not exist still prints its defaults, with LoadState=not-found."""
    if not loaded:
        return ("Restart=no\nRestartUSec=100ms\nExecMainStartTimestamp=\nExecMainPID=0\n"
                "NRestarts=0\nLoadState=not-found\nActiveState=inactive\nSubState=dead\n")
    assert started is not None
    return (f"Restart={restart}\nRestartUSec={restart_usec}\n"
            f"ExecMainStartTimestamp={systemd_time(started)}\nExecMainPID={pid}\n"
            f"NRestarts={restarts}\nLoadState=loaded\nActiveState=active\nSubState=running\n")


def lspci(rig: Rig) -> str:
    """``lspci -nnk -d 10de:`` for the node's cards (L40S boards)."""
    out = []
    for s in rig.slots:
        gpu = s.card.gpu
        device = gpu.pci_device_id.lower()
        sub = gpu.pci_subsystem_id.lower()
        out.append(
            f"{s.pci[5:]} 3D controller [{gpu.pci_class}]: NVIDIA Corporation AD102GL "
            f"[{gpu.product.removeprefix('NVIDIA ')}] [10de:{device}] (rev a1)\n"
            f"\tSubsystem: NVIDIA Corporation AD102GL [{gpu.product.removeprefix('NVIDIA ')}] "
            f"[{sub[4:]}:{sub[:4]}]\n"
            "\tKernel driver in use: nvidia\n"
            "\tKernel modules: nvidiafb, nouveau, nvidia_drm, nvidia\n")
    return "".join(out)


def proc_modules() -> str:
    """All of /proc/modules, shortened to the modules a Kubernetes GPU node shows."""
    return host.proc_modules() + (
        "vxlan 155648 0 - Live 0xffffffffc1f2e000\n"
        "ip6_udp_tunnel 16384 1 vxlan, Live 0xffffffffc1f29000\n"
        "udp_tunnel 32768 1 vxlan, Live 0xffffffffc1f1d000\n"
        "xt_conntrack 12288 4 - Live 0xffffffffc1f17000\n"
        "nf_conntrack 196608 3 xt_conntrack,nf_nat,xt_MASQUERADE, Live 0xffffffffc1ee0000\n"
        "br_netfilter 32768 0 - Live 0xffffffffc1ed2000\n"
        "bridge 421888 1 br_netfilter, Live 0xffffffffc1e6a000\n"
        "overlay 212992 38 - Live 0xffffffffc1e30000\n"
    )


def driver_version(f: Flavor) -> str:
    build = "Release Build  (dvs-builder@U22-I3-AE18-23-3)  Thu Sep  4 01:54:27 UTC 2025"
    gcc = ("gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)" if f.os_image.startswith("Ubuntu")
           else "gcc version 11.5.0 20240719 (Red Hat 11.5.0-5) (GCC)")
    return (f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER}  {build}\n"
            f"GCC version:  {gcc} \n")


def cgroup_text(state: DistroState, dump: str | None) -> str:
    lines = ["fs-type: cgroup2fs", "version: 2",
             f"kubelet-cgroup-driver: {state.flavor.cgroup_driver}"]
    if dump is not None:
        table = ""
        for raw in dump.splitlines():
            text = raw.strip()
            if text.startswith("["):
                table = text
            elif text.startswith("SystemdCgroup"):
                lines.append(f"containerd: {table} {text}")
    if state.crio_dump is not None:
        lines += [f"crio: {raw.strip()}" for raw in state.crio_dump.splitlines()
                  if raw.strip().startswith("cgroup_manager")]
    return "\n".join(lines) + "\n"


def dev_nvidia(rig: Rig, boot: dt.datetime) -> str:
    when = f"{boot:%b} {boot.day:2d} {boot:%H:%M}"
    out = ["==> /dev/nvidia* <=="]
    for s in rig.slots:
        out.append(f"crw-rw-rw- 1 root root 195,   {s.index} {when} nvidia{s.index}")
    out += [f"crw-rw-rw- 1 root root 195, 255 {when} nvidiactl",
            f"crw-rw-rw- 1 root root 507,   0 {when} nvidia-uvm",
            f"crw-rw-rw- 1 root root 507,   1 {when} nvidia-uvm-tools",
            "==> /dev/char <=="]
    out += [f"lrwxrwxrwx 1 root root 10 {when} 195:{s.index} -> ../nvidia{s.index}"
            for s in rig.slots]
    return "\n".join(out) + "\n"


def gpu_processes(rig: Rig) -> str:
    pid = pid_of(rig, "nvidia-persistenced")
    return (f"{pid}\tnvidia-persiste\t/usr/bin/nvidia-persistenced --user nvidia-persistenced "
            "--persistence-mode --verbose\n")


# ------------------------------------------------------------------------ the writer


def write_node(bundle: Bundle, state: DistroState) -> None:
    """Every path node.sh writes on this node, in its order (see the module docstring)."""
    rig, f = state.rig, state.flavor
    h = rig.host
    base = f"nodes/{h.name}"

    def add(path: str, content: str, command: list[str]) -> None:
        bundle.add(f"{base}/{path}", content, command, node=h.name)

    def fail(path: str, command: list[str], error: str, code: int = 1) -> None:
        bundle.fail(f"{base}/{path}", command, error, exit_code=code, node=h.name)

    text, args = kubelet_text(state)
    add("host/kubelet.txt", text, args)
    add("runtime.json", runtime_json(state), ["node.sh", "detect-runtime"])

    dump: str | None = None
    if f.runtime == "containerd":
        dump = config_dump_of(state.config_files, f.config)
        add("containerd/version.txt", containerd.version_text(), [f.binary, "--version"])
        add("containerd/config-dump.toml", dump, [f.binary, "--config", f.config, "config", "dump"])
        copied: list[str] = []

        def copy(path: str) -> None:
            if path in copied:
                return
            copied.append(path)
            if path in state.config_files:
                add(f"containerd/files{path}", state.config_files[path], ["cat", path])
            else:
                fail(f"containerd/files{path}", ["cat", path],
                     f"cat: {path}: No such file or directory")

        copy(containerd.MAIN)
        copy(f.config)
        for template in f.templates:
            if template in state.config_files:
                copy(template)
        for path in sorted(state.config_files):
            if path not in copied and not path.startswith("/etc/containerd/conf.d/"):
                copy(path)  # the files the loaded configuration imports
        for path in sorted(state.config_files):
            if path.startswith("/etc/containerd/conf.d/"):
                copy(path)
        if f.log_file is not None:
            add("containerd/log.txt", log_lines(state.runtime_log),
                ["tail", "-n", LOG_TAIL_LINES, f.log_file])
    else:
        add("crio/version.txt", crio_version(), ["crio", "--version"])
        assert state.crio_dump is not None
        add("crio/config-dump.toml", state.crio_dump, ["crio", "status", "config"])
        for path, content in sorted(state.crio_files.items()):
            add(f"crio/files{path}", content, ["cat", path])

    journals = {"containerd": "", "kubelet": ""}
    for unit in JOURNAL_UNITS:
        if unit in f.units or unit == "nvidia-persistenced":
            journals[unit] = ""
    if f.containerd_unit is not None:
        journals[f.containerd_unit] = state.runtime_log.render()
    if f.kubelet_unit is not None:
        journals[f.kubelet_unit] = state.kubelet_log.render()
    for unit, content in journals.items():
        add(f"journal/{unit}.jsonl", content,
            ["journalctl", "-u", unit, "-o", "json", "--since", f"-{SINCE}"])

    for unit in ("containerd", "kubelet", *(u for u in RUNTIME_UNITS if u in f.units)):
        loaded = unit in f.units
        started = state.unit_started.get(unit)
        add(f"systemd/{unit}.txt",
            show_unit(loaded, pid_of(rig, unit), started, state.unit_restarts.get(unit, 0)),
            ["systemctl", "show", unit, "-p", SYSTEMD_PROPS])

    add("dmesg.txt", dcgpu.dmesg_lines(h, list(rig.slots), []), ["dmesg", "--time-format", "iso"])
    add("nvidia-smi.xml", dcgpu.nvidia_smi_xml(list(rig.slots), bundle.now(), len(rig.slots)),
        ["nvidia-smi", "-q", "-x"])
    add("host/uname.txt", host.uname(h), ["uname", "-a"])
    add("host/os-release", os_release(f, h), ["cat", "/etc/os-release"])
    add("host/cmdline", f.cmdline or host.cmdline(h).replace("quiet splash vt.handoff=7",
                                                                "iommu=pt"),
        ["cat", "/proc/cmdline"])
    add("host/modules.txt", proc_modules(), ["cat", "/proc/modules"])
    add("host/lspci.txt", lspci(rig), ["lspci", "-nnk", "-d", "10de:"])
    add("host/nvidia-driver-version.txt", driver_version(f),
        ["cat", "/proc/driver/nvidia/version"])
    add("host/secureboot.txt", "SecureBoot disabled\n", ["mokutil", "--sb-state"])
    fail("host/nvidia-ctk.txt", ["sh", "-c", "command -v nvidia-ctk && nvidia-ctk --version"],
         "nvidia-ctk: not found in PATH", 127)
    if f.os_image.startswith("Ubuntu"):
        add("host/unattended-upgrades.txt", host.unattended_upgrades(),
            ["cat", "/etc/apt/apt.conf.d/20auto-upgrades",
             "/etc/apt/apt.conf.d/50unattended-upgrades"])
    else:
        add("host/unattended-upgrades.txt", "", ["cat"])
    add("host/cgroup.txt", cgroup_text(state, dump), ["stat", "-fc", "%T", "/sys/fs/cgroup"])
    if f.selinux is not None:
        add("host/selinux.txt", f.selinux, ["getenforce"])
    add("host/dev-nvidia.txt", dev_nvidia(rig, h.boot_at), ["sh", "-c", DEV_SCRIPT, "sh", ""])
    add("host/gpu-processes.txt", gpu_processes(rig), ["sh", "-c", GPU_PROC_SCRIPT, "sh", ""])
    cdi = {}  # node.sh records nothing where neither directory holds a file
    if state.cdi_management:
        cdi["management.nvidia.com-gpu.yaml"] = host.cdi_management_yaml()
    if state.cdi:
        cdi["k8s.device-plugin.nvidia.com-gpu.json"] = _cdi_plugin_json(rig.slots)
    for name, content in sorted(cdi.items(), key=lambda kv: kv[0]):
        add(f"cdi/{name}", content, ["cat", f"/var/run/cdi/{name}"])


# node.sh's two inline scripts, as its steps.tsv records them
DEV_SCRIPT = ('cd "$1/dev" || exit 1\necho "==> /dev/nvidia* <=="\nfor f in nvidia*; do '
              '[ -e "$f" ] || [ -L "$f" ] || continue; ls -ld "$f"; done\necho "==> /dev/char '
              '<=="\n[ -d char ] && ls -l char | grep -i nvidia\nexit 0')
GPU_PROC_SCRIPT = ('for d in "$1"/proc/[0-9]*; do\nc=; { IFS= read -r c <"$d/comm"; } '
                   '2>/dev/null || continue\ncase $c in nvidia-persiste* | nv-hostengine | '
                   'nv-fabricmanage* | dcgm*)\nprintf "%s\\t%s\\t%s\\n" "${d##*/}" "$c" '
                   '"$(tr "\\000" " " <"$d/cmdline" 2>/dev/null | sed "s/ *\\$//")" ;;\nesac\n'
                   'done')


_DUMPS: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}


def config_dump_of(files: dict[str, str], main: str) -> str:
    """``containerd --config <main> config dump`` over the files containerd loads (the
    toolkit's files under /etc/containerd are not among them off the stock layout)."""
    if main == containerd.MAIN:
        return config_dump(files)
    loaded = {p: t for p, t in files.items() if p == main or _imported(files[main], p)}
    key = (main, tuple(sorted(loaded.items())))
    if key not in _DUMPS:
        _DUMPS[key] = containerd.config_dump(loaded, main)
    return _DUMPS[key]


def _imported(main_text: str, path: str) -> bool:
    return f'"{path}"' in main_text


def log_lines(j: Journal) -> str:
    """containerd's own log file: the messages of its lines, one a line."""
    return "".join(fields["MESSAGE"] + "\n" for _, fields in sorted(j.entries,
                                                                     key=lambda e: e[0]))


def crio_version() -> str:
    return ("Version:        1.33.5-3.rhaos4.20.gitd0ea985.el9\n"
            f"GitCommit:      {hexid(40, 'cri-o', '1.33.5')}\n"
            "GitCommitDate:  2026-10-02T14:11:38Z\n"
            "GitTreeState:   clean\n"
            "BuildDate:      1970-01-01T00:00:00Z\n"
            "GoVersion:      go1.24.6 (Red Hat 1.24.6-1.el9_6) X:strictfipsruntime\n"
            "Compiler:       gc\n"
            "Platform:       linux/amd64\n"
            "Linkmode:       dynamic\n"
            "BuildTags:      \n"
            "  containers_image_ostree_stub\n"
            "  exclude_graphdriver_btrfs\n"
            "  seccomp\n"
            "  selinux\n"
            "LDFlags:          unknown\n"
            "SeccompEnabled:   true\n"
            "AppArmorEnabled:  false\n")


def os_release(f: Flavor, h: Host) -> str:
    if f.os_image.startswith("Ubuntu"):
        return host.os_release(h)
    return (
        'NAME="Red Hat Enterprise Linux CoreOS"\n'
        'VERSION="9.6.20251023-0 (Plow)"\n'
        'ID="rhel"\n'
        'ID_LIKE="centos fedora"\n'
        'VERSION_ID="9.6"\n'
        'PLATFORM_ID="platform:el9"\n'
        f'PRETTY_NAME="{f.os_image}"\n'
        'ANSI_COLOR="0;31"\n'
        'CPE_NAME="cpe:/o:redhat:enterprise_linux:9::baseos::coreos"\n'
        'HOME_URL="https://www.redhat.com/"\n'
        'BUG_REPORT_URL="https://issues.redhat.com/"\n'
        'REDHAT_BUGZILLA_PRODUCT="OpenShift Container Platform"\n'
        'REDHAT_BUGZILLA_PRODUCT_VERSION="4.20"\n'
        'OPENSHIFT_VERSION="4.20"\n'
        'RHEL_VERSION=9.6\n'
        'OSTREE_VERSION="9.6.20251023-0"\n'
    )


# ---------------------------------------------------------------------- the cluster


def node_fields(scene: Scene, flavors: dict[str, Flavor]) -> None:
    """Node objects as the distribution registers them: nodeInfo versions, OS image and
    the distribution's labels; kubeadm's CRI-socket annotation only on kubeadm nodes."""
    for node in scene.nodes:
        flavor = flavors[node["metadata"]["name"]]
        info = node["status"]["nodeInfo"]
        info["kubeletVersion"] = flavor.kubelet_version
        if "kubeProxyVersion" in info:
            info["kubeProxyVersion"] = flavor.kubelet_version
        info["containerRuntimeVersion"] = flavor.runtime_version
        info["osImage"] = flavor.os_image
        meta = node["metadata"]
        meta["labels"] = dict(sorted({**meta["labels"], **flavor.labels}.items()))
        meta["annotations"].pop("kubeadm.alpha.kubernetes.io/cri-socket", None)


StateOf = Callable[[Rig, dt.datetime], DistroState]


def node_writers(scene: Scene, rigs: list[Rig], state_of: StateOf) -> None:
    for r in rigs:
        if r.slots:
            scene.node_writers[r.name] = partial(_write, state_of, r)


def _write(state_of: StateOf, rig: Rig, bundle: Bundle) -> None:
    state = state_of(rig, bundle.now())
    when = plus(bundle.now(), -2.6)
    debug_pod(_Shim(state), when)  # the collector's own pod, in the runtime's lines
    write_node(bundle, state)


@dataclass
class _Shim:
    """The two journals ``fleet.debug_pod`` writes to, under the names it reads."""

    state: DistroState

    @property
    def rig(self) -> Rig:
        return self.state.rig

    @property
    def containerd_journal(self) -> Journal:
        return self.state.runtime_log

    @property
    def kubelet_journal(self) -> Journal:
        return self.state.kubelet_log

    @property
    def containerd_pid(self) -> int:
        return pid_of(self.state.rig, "containerd")
