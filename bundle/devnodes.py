"""Parse ``host/cgroup.txt`` and ``host/dev-nvidia.txt`` (bundle format 1.1).

``cgroup.txt`` holds ``key: value`` lines (``fs-type``, ``version``,
``kubelet-cgroup-driver``), then ``containerd: [<table>] SystemdCgroup = <value>`` and
``crio: cgroup_manager = "<value>"`` lines. ``dev-nvidia.txt`` holds a
``==> /dev/nvidia* <==`` section with ``ls -ld`` of each ``/dev/nvidia*`` entry and a
``==> /dev/char <==`` section with the ``ls -l /dev/char`` lines that name NVIDIA devices.
Pure format parsing, with 1-based line numbers kept for evidence.

A file may also hold the plain output of the commands those formats name, pasted or
written by another collector: the kubelet's own configuration line (``cgroupDriver:
systemd`` in its YAML, ``"cgroupDriver": "systemd"`` in JSON, ``--cgroup-driver=systemd``
on its command line), containerd's ``SystemdCgroup = true`` and CRI-O's
``cgroup_manager = "systemd"`` without the collector's prefix, and GNU ``ls -l
/dev/nvidia* /dev/char``, which lists the files named first and then each directory
under a ``/dev/char:`` heading. Those are read too; a file that yields none of them is
not readable (``CgroupInfo.readable``, ``DevNvidia.readable``), which the caller reports.

Both files are a few dozen lines on a real node (``/dev/nvidia*`` of eight GPUs, their
``/dev/char`` links). A file of more than :data:`MAX_LINES` lines is not parsed
(:func:`over_budget` says why; the caller records it): 64 MiB of ``c n`` lines, which
a 64 KiB archive can hold, cost a minute and 3 GB as line objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SYSTEMD_CGROUP = re.compile(r"SystemdCgroup\s*=\s*(true|false)", re.IGNORECASE)
_CGROUP_MANAGER = re.compile(r"cgroup_manager\s*=\s*\"?(\w+)")
# The kubelet's own setting: KubeletConfiguration YAML/JSON, or its command-line flag.
_KUBELET_DRIVER = re.compile(r"^\W*cgroupDriver\W*\s*[:=]\s*\W*(\w+)|--cgroup-driver[= ](\w+)")
MAX_LINES = 100_000
# what str.splitlines() ends a line at ("\r\n" counts twice: the cap is not exact)
_BREAKS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def over_budget(text: str) -> str | None:
    """Why ``text`` is not parsed (more than :data:`MAX_LINES` lines), or None. Counted
    at C speed before anything is split."""
    if sum(map(text.count, _BREAKS)) > MAX_LINES:
        return f"more than {MAX_LINES:,} lines, over the cap for this host file; not read"
    return None


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    text: str


@dataclass(frozen=True, slots=True)
class CgroupInfo:
    """What ``host/cgroup.txt`` says; ``None`` where a value was not recorded."""

    version: str | None = None
    kubelet_driver: Line | None = None      # its value: kubelet_driver_name
    kubelet_driver_name: str | None = None  # "systemd", "cgroupfs", or None ("not set")
    systemd_runtime: tuple[Line, ...] = ()  # containerd SystemdCgroup = true / crio systemd
    cgroupfs_runtime: tuple[Line, ...] = ()  # containerd SystemdCgroup = false / crio cgroupfs

    @property
    def readable(self) -> bool:
        """Whether any line was one this parser knows."""
        return bool(self.version or self.kubelet_driver or self.systemd_runtime
                    or self.cgroupfs_runtime)

    @property
    def systemd(self) -> Line | None:
        """The line that says systemd manages the containers' cgroups, if any."""
        if self.systemd_runtime:
            return self.systemd_runtime[0]
        if self.kubelet_driver_name == "systemd":
            return self.kubelet_driver
        return None


def parse_cgroup(text: str) -> CgroupInfo:
    version = None
    kubelet: Line | None = None
    kubelet_name: str | None = None
    systemd: list[Line] = []
    cgroupfs: list[Line] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        key, _, value = line.partition(":")
        value = value.strip()
        if key == "version":
            version = value or None
        elif key == "kubelet-cgroup-driver":
            name = value.split(" ", 1)[0].strip().lower()
            kubelet = Line(number, line)
            kubelet_name = name if name in ("systemd", "cgroupfs") else None
        elif key == "containerd":
            found = _SYSTEMD_CGROUP.search(value)
            if found is not None:
                (systemd if found[1].lower() == "true" else cgroupfs).append(Line(number, line))
        elif key == "crio":
            found = _CGROUP_MANAGER.search(value)
            if found is not None:
                (systemd if found[1] == "systemd" else cgroupfs).append(Line(number, line))
        elif (found := _KUBELET_DRIVER.search(line)) is not None and kubelet is None:
            name = (found[1] or found[2]).lower()
            kubelet = Line(number, line)
            kubelet_name = name if name in ("systemd", "cgroupfs") else None
        elif (found := _SYSTEMD_CGROUP.search(line)) is not None:
            (systemd if found[1].lower() == "true" else cgroupfs).append(Line(number, line))
        elif (found := _CGROUP_MANAGER.match(line)) is not None:
            (systemd if found[1] == "systemd" else cgroupfs).append(Line(number, line))
    return CgroupInfo(version, kubelet, kubelet_name, tuple(systemd), tuple(cgroupfs))


@dataclass(frozen=True, slots=True)
class DevNvidia:
    """NVIDIA device nodes and their ``/dev/char`` links; ``char_listed`` is False when
    the file has no ``/dev/char`` section (nothing can be said about links)."""

    devices: tuple[Line, ...] = ()
    char_links: tuple[Line, ...] = ()
    char_listed: bool = False
    char_header: int | None = None
    names: tuple[str, ...] = ()

    @property
    def readable(self) -> bool:
        """Whether the file showed any NVIDIA device or a /dev/char listing."""
        return bool(self.devices) or self.char_listed


def parse_dev_nvidia(text: str) -> DevNvidia:
    devices: list[Line] = []
    links: list[Line] = []
    names: list[str] = []
    section = None
    header: int | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        heading = _heading(line)
        if heading is not None:
            section = heading
            if section == "/dev/char":
                header = number
            continue
        if not line.strip() or line.startswith("total "):
            continue
        last = line.rsplit(None, 1)[-1] if line.strip() else ""
        if section == "/dev/char" and "nvidia" in line:
            links.append(Line(number, line))
        elif line[:1] in "cld" and (
                (section is not None and section.startswith("/dev/nvidia"))
                or (section is None and last.startswith("/dev/nvidia"))):
            # the collector's section, or a file ls was named (listed before any heading)
            devices.append(Line(number, line))
            names.append(last.rsplit("/", 1)[-1])  # one cut, however many fields
    return DevNvidia(tuple(devices), tuple(links), header is not None, header, tuple(names))


def _heading(line: str) -> str | None:
    """The directory a heading line opens: the collector's ``==> DIR <==`` or GNU ls's
    ``DIR:`` (printed before each directory when ls is given more than one name)."""
    if line.startswith("==> ") and line.endswith(" <=="):
        return line[4:-4].strip()
    if line.startswith("/") and line.endswith(":") and " " not in line:
        return line[:-1]
    return None
