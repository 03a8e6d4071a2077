"""One node as the rules see it: ``ctx.facts.node(name)``.

Everything a rule knows about a node is reached here: its Node object, the files
collected under ``nodes/<name>/`` (each parsed at most once per run, on first use) and
the per-node facts (its runtime, CRI, kernel events, modules ...). Rules do not open
node files themselves: a file is read by the attribute that parses it, so the same
file is never parsed twice in two ways, and what a rule reads has a name the input
check can follow (``facts.reads``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from analyzers.facts import gpu_health, hostmodules, journals, smi
from analyzers.facts.cdi import CdiSpec, node_specs
from analyzers.facts.driverkernel import node_kernel as node_kernel_release
from analyzers.facts.handlers import CriRuntimes, cri_runtimes
from analyzers.facts.kernel_events import NodeKernel, node_kernel
from bundle import Bundle, NodeArtifacts, specs, versions
from bundle.devnodes import CgroupInfo, DevNvidia, over_budget, parse_cgroup, parse_dev_nvidia
from bundle.evidence import Locator
from bundle.hostprocs import HostProcess, parse_gpu_processes
from bundle.kube import Node
from bundle.lspci import PciDevice, parse_lspci
from bundle.nvsmi import NvidiaSmi
from bundle.nvsmi_health import locate
from bundle.textfiles import parse_key_values

if TYPE_CHECKING:
    from analyzers.facts.distro import NodeRuntime
    from analyzers.facts.preconditions import NodeCri
    from analyzers.facts.runtimes import RuntimeState
    from analyzers.results.models import Evidence


class Facts(Protocol):
    """What a NodeFacts asks of the run's ``analyzers.facts.Facts`` (named here, not
    imported: that module imports this one)."""

    bundle: Bundle

    @property
    def node_dirs(self) -> frozenset[str]: ...
    @property
    def nodes(self) -> dict[str, Node]: ...
    def runtime(self, node: str) -> RuntimeState: ...
    def node_runtime(self, node: str) -> NodeRuntime: ...
    def node_cri(self, node: str) -> NodeCri: ...
    def smi_failure(self, node: str) -> smi.SmiFailure | None: ...
    def modules(self, node: str) -> hostmodules.Modules | None: ...
    def secure_boot(self, node: str) -> tuple[bool | None, Evidence | None]: ...


@dataclass(frozen=True, slots=True)
class DockerDaemon:
    """``/etc/docker/daemon.json`` as copied from the node: its settings, or why they
    could not be read (``unreadable``: "is not JSON (...)"; a recorded problem too)."""

    path: str
    text: str
    settings: dict[str, Any] | None
    unreadable: str | None = None


@dataclass(frozen=True, slots=True)
class DeviceAccess:
    """The node's ``host/cgroup.txt`` and ``host/dev-nvidia.txt``, parsed; ``refused``
    names the files over the parser's budget (each a recorded problem)."""

    cgroup: CgroupInfo | None
    devices: DevNvidia | None
    cgroup_text: str | None
    devices_text: str | None
    refused: tuple[str, ...] = ()


class NodeFacts:
    """What the bundle says about one node, parsed once (see the module's docstring).

    ``collected`` is False for a node without a ``nodes/<name>/`` folder: its files are
    then all absent (None or empty), while its Node object and the per-node facts drawn
    from the cluster files may still be known."""

    def __init__(self, facts: Facts, name: str) -> None:
        self._facts = facts
        self.name = name
        self._units: dict[str, dict[str, str] | None] = {}

    # -- where --------------------------------------------------------------------------

    @cached_property
    def collected(self) -> bool:
        """Whether the bundle has a ``nodes/<name>/`` folder for this node."""
        return self.name in self._facts.node_dirs

    @property
    def _files(self) -> NodeArtifacts:
        return self._facts.bundle.node(self.name)

    def path(self, relative: str) -> str:
        """The bundle path of the node path ``relative`` (``specs.LSPCI`` ...): the
        place evidence points at."""
        return specs.node_file(self.name, relative)

    def has(self, relative: str) -> bool:
        """Whether the node's file ``relative`` is in the bundle."""
        return self._facts.bundle.has(self.path(relative))

    def text(self, relative: str) -> str | None:
        """The text of the node file ``relative``; None where absent. For a file no
        attribute below parses, and for quoting a line of one that is. Not kept: a
        node's nvidia-smi.xml may be megabytes, and a bundle may hold a thousand nodes
        (the attributes below keep what they parse)."""
        return self._files.text(relative)

    # -- the Node object and the facts drawn from the cluster ----------------------------

    @property
    def object(self) -> Node | None:
        """The node's object in ``cluster/nodes.json`` (None when it lists no such node)."""
        return self._facts.nodes.get(self.name)

    @property
    def runtime(self) -> RuntimeState:
        """The runtimes its container runtime has loaded (``Facts.runtime``)."""
        return self._facts.runtime(self.name)

    @property
    def node_runtime(self) -> NodeRuntime:
        """Its container runtime and Kubernetes distribution (``Facts.node_runtime``)."""
        return self._facts.node_runtime(self.name)

    @property
    def cri(self) -> NodeCri:
        """The CRI its kubelet talks to (``Facts.node_cri``)."""
        return self._facts.node_cri(self.name)

    # -- container runtime files ---------------------------------------------------------

    @property
    def config_dump_text(self) -> str | None:
        """``containerd config dump`` as collected (``containerd/config-dump.toml``)."""
        return self._files.config_dump_text

    @property
    def config_dump(self) -> dict[str, Any] | None:
        """The same, parsed; None when absent or not TOML (a recorded problem)."""
        return self._files.config_dump

    @cached_property
    def cri_runtimes(self) -> CriRuntimes | None:
        """The runtime handlers of the configuration containerd runs with
        (``facts.handlers``), read once from its dump; None where the node has no folder,
        its runtime is not containerd, the dump is absent or not TOML, or the dump is not
        of the file containerd runs with (``runtime.wrong_dump``: then nothing in it
        says what containerd loaded)."""
        if not self.collected or not self.node_runtime.containerd:
            return None
        if self.runtime.wrong_dump is not None:
            return None
        return cri_runtimes(self.config_dump)

    @property
    def containerd_version(self) -> str | None:
        """``containerd --version`` (``containerd/version.txt``), stripped."""
        return self._files.containerd_version

    @property
    def containerd_files(self) -> dict[str, str]:
        """Host path (``/etc/containerd/...``) → text of the copied containerd file."""
        return self._files.containerd_files

    @property
    def systemd_containerd(self) -> dict[str, str] | None:
        """``systemctl show containerd``'s properties (``systemd/containerd.txt``)."""
        return self._files.systemd_containerd

    def systemd_unit(self, unit: str) -> dict[str, str] | None:
        """``systemctl show <unit>``'s properties (``systemd/<unit>.txt``), read once;
        None where that file was not collected."""
        if unit not in self._units:
            text = self.text(specs.systemd(unit))
            self._units[unit] = parse_key_values(text) if text is not None else None
        return self._units[unit]

    def journal(self, unit: str) -> journals.JournalScan:
        """The one scan of the node's journal of ``unit`` (``journal/<unit>.jsonl``)."""
        return journals.journal_scan(self._facts.bundle, self.name, unit)

    @property
    def journal_units(self) -> list[str]:
        """Units with a journal collected on the node (``journal/<unit>.jsonl``)."""
        return journals.journal_units(self._facts.bundle, self.name)

    @property
    def host_files(self) -> Iterator[tuple[str, str, str]]:
        """(host path, bundle path, text) of every host file the collector copied
        (``<area>/files/<host path>``: containerd, CRI-O, Docker, toolkit, kubelet)."""
        bundle = self._facts.bundle
        for area in specs.HOST_FILE_DIRS:
            prefix = specs.node_file(self.name, area)
            for path in bundle.paths_under(prefix):
                text = bundle.read_text(path)
                if text:
                    yield "/" + path[len(prefix):], path, text

    @cached_property
    def docker_daemon(self) -> DockerDaemon | None:
        """The copied ``/etc/docker/daemon.json``, parsed once; None where not collected."""
        path = self.path(specs.DOCKER_DAEMON_JSON)
        text = self.text(specs.DOCKER_DAEMON_JSON)
        if text is None:
            return None
        bundle = self._facts.bundle
        try:
            settings = json.loads(text)
        except ValueError as exc:
            bundle.problem(path, f"daemon.json is not JSON: {exc}", lost=True)
            return DockerDaemon(path, text, None, f"is not JSON ({exc})")
        if not isinstance(settings, dict):
            bundle.problem(path, "daemon.json is not a JSON object", lost=True)
            return DockerDaemon(path, text, None, "is not a JSON object")
        return DockerDaemon(path, text, settings)

    # -- CDI -----------------------------------------------------------------------------

    @property
    def cdi_files(self) -> dict[str, str]:
        """Name under ``cdi/`` → text of the node's copied CDI spec file."""
        return self._files.cdi_files

    @cached_property
    def cdi_drivers(self) -> dict[str, set[str]]:
        """Name under ``cdi/`` → the driver versions that spec file's libraries carry in
        their sonames (``libnvidia-ml.so.550.54.15``): the driver it was generated for."""
        return {name: versions.library_versions(text) for name, text in self.cdi_files.items()}

    @cached_property
    def cdi_specs(self) -> list[CdiSpec]:
        """The node's CDI specs, parsed (a file that is no spec is a recorded problem)."""
        return node_specs(self._files)

    # -- the GPUs and the driver ---------------------------------------------------------

    @property
    def nvidia_smi(self) -> NvidiaSmi | None:
        """``nvidia-smi -q -x`` parsed (``nvidia-smi.xml``); None where absent or unread."""
        return self._files.nvidia_smi

    @property
    def gpu_issues(self) -> gpu_health.GpuIssues:
        """What nvidia-smi says is wrong with each of its GPUs that has anything wrong
        (``gpu_health.node_issues``: made by the node-file workers where there are)."""
        return gpu_health.node_issues(self._facts.bundle, self.name)

    @property
    def smi_failure(self) -> smi.SmiFailure | None:
        """How nvidia-smi failed on the node (``Facts.smi_failure``)."""
        return self._facts.smi_failure(self.name)

    @cached_property
    def lspci(self) -> list[PciDevice] | None:
        """``lspci -k``'s PCI devices (``host/lspci.txt``); None where not collected."""
        text = self.text(specs.LSPCI)
        if text is None:
            return None
        return parse_lspci(text) if text else []

    @cached_property
    def kernel_release(self) -> tuple[str | None, Locator | None]:
        """(release, where read) of the running kernel: ``host/uname.txt``, else the Node
        object's ``kernelVersion``; (None, None) where neither says."""
        return node_kernel_release(self._files, self.object)

    @property
    def modules(self) -> hostmodules.Modules | None:
        """The loaded nvidia / nouveau modules (``host/modules.txt``)."""
        return self._facts.modules(self.name)

    @property
    def secure_boot(self) -> tuple[bool | None, Evidence | None]:
        """(enabled, evidence line) from ``host/secureboot.txt``."""
        return self._facts.secure_boot(self.name)

    @property
    def kernel(self) -> NodeKernel:
        """Xid events and GPU kernel signals from dmesg and the journals."""
        return node_kernel(self._facts.bundle, self.name)

    def smi_line(self, bus_id: str, element: str) -> tuple[int, str] | None:
        """(line, text) of ``element`` (a path below ``<gpu>``, ``mig_mode/current_mig``)
        inside the ``<gpu id="bus_id">`` block of ``nvidia-smi.xml``; None where absent."""
        return locate(self.text(specs.NVIDIA_SMI) or "", bus_id, element)

    # -- host files ------------------------------------------------------------------------

    @cached_property
    def gpu_processes(self) -> list[HostProcess]:
        """The host processes holding ``/dev/nvidia*`` (``host/gpu-processes.txt``);
        empty where not collected."""
        return parse_gpu_processes(self.text(specs.GPU_PROCESSES) or "")

    @property
    def nvidia_ctk(self) -> str | None:
        """``host/nvidia-ctk.txt``: where nvidia-ctk is and its version, as collected."""
        return self.text(specs.NVIDIA_CTK)

    @cached_property
    def device_access(self) -> DeviceAccess:
        """``host/cgroup.txt`` and ``host/dev-nvidia.txt``, parsed once when both were
        collected; a file over the parser's budget is refused (a recorded problem) and
        named in ``refused``, and neither is then parsed."""
        cgroup_text = self.text(specs.CGROUP)
        devices_text = self.text(specs.DEV_NVIDIA)
        if cgroup_text is None or devices_text is None:
            return DeviceAccess(None, None, cgroup_text, devices_text)
        refused = []
        for relative, text in ((specs.CGROUP, cgroup_text), (specs.DEV_NVIDIA, devices_text)):
            why = over_budget(text)
            if why is not None:
                self._facts.bundle.problem(self.path(relative), why, kind="refused",
                                           lost=True)
                refused.append(relative)
        if refused:
            return DeviceAccess(None, None, cgroup_text, devices_text, tuple(refused))
        return DeviceAccess(parse_cgroup(cgroup_text), parse_dev_nvidia(devices_text),
                            cgroup_text, devices_text)
