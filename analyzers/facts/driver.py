"""Whether a node's NVIDIA driver can serve its GPUs, and if not, why: judged once per
run and read by the rule that reports each verdict and by every rule whose findings
hang under it.

- :func:`judge_unusable`: the driver is not usable (library and kernel module differ in
  version, the module is not loaded while nvidia-smi fails, nouveau or nova_core holds
  the GPU);
- :func:`judge_gpu_refusal`: the loaded driver refuses a GPU (a branch that does not
  list it, the wrong kernel-module flavour);
- :func:`judge_foreign_binding`: GPUs bound to another kernel driver on a node not meant
  for virtual machines;
- :func:`judge_host_conflict`: the host's own driver and the operator's
  ``driver.enabled`` disagree;
- :func:`judge_build_failure`: the driver container cannot build or load its module;
- :func:`smi_causes`: which of these verdicts explain nvidia-smi failing on the node.

Each verdict rests on one kind of input, and where no node (or the cluster) has it,
the verdict is not judged (None): a rule that links to it then links nothing, as it
would to a rule that could not run. ``Facts`` keeps each answer per node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from analyzers.facts import smi as smifail
from analyzers.facts.collected import holds, on_a_node
from analyzers.facts.evidence import capped, event_evidence
from analyzers.facts.journals import journal_scan
from analyzers.facts.kernel_events import NodeKernel, line_evidence
from analyzers.facts.logindex import node_logs
from analyzers.facts.memo import per_node
from analyzers.facts.secureboot import refusal as secure_boot_refusal
from analyzers.facts.stages import Stage
from analyzers.knowledge import signatures
from analyzers.results.models import Evidence, Severity
from bundle import specs, versions
from bundle.evidence import clip
from bundle.kube import ClusterPolicy
from bundle.lspci import PciDevice

if TYPE_CHECKING:
    from analyzers.facts import Facts

# The input each verdict rests on: without it on any node, the verdict is not judged.
KERNEL_LOG = specs.DMESG
POLICIES_FILE = specs.CLUSTERPOLICIES
CONTAINER_LOGS = specs.LOGS_ANY

# -- the driver is not usable ---------------------------------------------------------

MISMATCH_SIGNATURE = "nvml-driver-library-mismatch"
_OTHER_DRIVER = re.compile(r"not called|already bound|another driver|nouveau|rivafb",
                           re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Unusable:
    """Why the driver is not usable on a node: one sentence per problem, the lines that
    show them, how serious the worst is, and their kinds (``nouveau``, ``mismatch``,
    ``not-loaded``)."""

    node: str
    texts: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    severity: Severity
    kinds: frozenset[str]


@dataclass
class _Problems:
    texts: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    severity: Severity = Severity.HIGH
    kinds: set[str] = field(default_factory=set)

    def add(self, kind: str, text: str, evidence: list[Evidence], severity: Severity) -> None:
        self.kinds.add(kind)
        self.texts.append(text)
        self.evidence.extend(capped(evidence, 3))
        if severity.rank > self.severity.rank:
            self.severity = severity


def smi_words(facts: Facts, name: str) -> str | None:
    """Why nvidia-smi gave nothing on the node, or None when it listed GPUs: in
    nvidia-smi's own words and exit code when they say the driver is not usable."""
    node = facts.node(name)
    smi = node.nvidia_smi
    if smi is not None and smi.gpus:
        return None
    said = node.smi_failure
    if said is not None:
        return f"nvidia-smi failed: {clip(said.said, 160) or said.meaning}"
    item = facts.bundle.manifest.item(node.path(specs.NVIDIA_SMI))
    if item is not None and item.error:
        return f"nvidia-smi failed: {item.error}"
    if not node.has(specs.NVIDIA_SMI):
        return "nvidia-smi.xml was not collected"
    return "nvidia-smi listed no GPU"


def _mismatch_evidence(facts: Facts, name: str, kernel: NodeKernel) -> list[Evidence]:
    found = [line_evidence(s.source) for s in kernel.signals_of("api_mismatch")]
    signature = (signatures.get(MISMATCH_SIGNATURE),)
    for path, container, text in node_logs(facts, name):
        for hit in signatures.match(text, "log", container=container, signatures=signature):
            found.append(Evidence(path=path, line=hit.line, excerpt=clip(hit.text)))
            break
    for unit in ("kubelet", "containerd"):  # the shared scan (facts/journals) kept the hits
        for entry in journal_scan(facts.bundle, name, unit).matching(MISMATCH_SIGNATURE)[:1]:
            found.append(Evidence(path=specs.node_file(name, specs.journal(unit)),
                                  line=entry.line, excerpt=clip(entry.message)))
    for pod in facts.pods_by_node.get(name, []):
        found += [event_evidence(event)
                  for event in facts.pod_events_with(pod, MISMATCH_SIGNATURE)[:1]]
    return found


def judge_unusable(facts: Facts, name: str) -> Unusable | None:
    """Why the driver is not usable on ``name``; None when nothing says so, or when no
    node's kernel log was collected (nothing to judge it by)."""
    kernel = facts.kernel_events.get(name)
    if kernel is None or not on_a_node(facts.bundle, KERNEL_LOG):
        return None
    problems = _Problems()
    modules = facts.modules(name)
    owners = [s for s in kernel.signals_of("nouveau", "nova_core", "probe_failed")
              if s.kind != "probe_failed" or _OTHER_DRIVER.search(s.source.message)]
    nouveau = [line_evidence(s.source) for s in owners]
    if modules is not None and modules.loaded("nouveau"):
        nouveau.insert(0, modules.evidence("nouveau"))
    if nouveau:
        drivers = sorted({s.kind for s in owners if s.kind != "probe_failed"}
                         | ({"nouveau"} if modules and modules.loaded("nouveau") else set()))
        who = " and ".join(drivers) or "another driver"
        problems.add("nouveau", f"{who} holds the GPU, so nvidia.ko cannot bind it",
                     nouveau, Severity.CRITICAL)
    mismatch = _mismatch_evidence(facts, name, kernel)
    failure = smi_words(facts, name)
    said = facts.smi_failure(name)
    if said is not None and said.meaning == smifail.MISMATCH_MEANING:
        mismatch += said.evidence
    if mismatch:
        differ = next((s.detail for s in kernel.signals_of("api_mismatch")
                       if "client " in s.detail and "not on this line" not in s.detail),
                      "")
        text = "driver user-space libraries and kernel module differ in version"
        problems.add("mismatch", text + (f" ({differ})" if differ else ""), mismatch,
                     Severity.CRITICAL if failure else Severity.HIGH)
    gpu_node = name in facts.gpu_node_set
    if (modules is not None and gpu_node and failure and not modules.loaded("nvidia")):
        evidence = [Evidence(path=modules.path, excerpt="(no 'nvidia' module in "
                             "/proc/modules)")]
        evidence += said.evidence if said is not None else ()
        problems.add("not-loaded", f"the nvidia kernel module is not loaded ({failure})",
                     evidence, Severity.CRITICAL)
    if not problems.texts:
        return None
    return Unusable(name, tuple(problems.texts), tuple(problems.evidence), problems.severity,
                    frozenset(problems.kinds))


# What rules read: judge_unusable on a node, once per run.
unusable = per_node(judge_unusable)


# -- the loaded driver refuses a GPU --------------------------------------------------

REFUSAL_SIGNATURE = "kernel-gpu-unsupported-by-driver"
_OPEN = re.compile(r"not supported by\s+(?:NVRM:\s*)?open", re.IGNORECASE)
_NEEDS_OPEN = re.compile(r"requires use of the\s+(?:NVRM:\s*)?NVIDIA open", re.IGNORECASE)
_OPEN_DATACENTER = re.compile(r"Open nvidia\.ko is only ready for use on Data Center GPUs",
                              re.IGNORECASE)
_LEGACY = re.compile(r"supported through the\s+(?:NVRM:\s*)?NVIDIA\s+(?:NVRM:\s*)?"
                     r"(?P<branch>[\w.-]+)\s+(?:NVRM:\s*)?Legacy", re.IGNORECASE)
_PCI_ID = re.compile(r"PCI ID:\s*(?P<id>10de:[0-9a-fA-F]{4})")
_BDF = re.compile(r"(?:[0-9a-fA-F]{4,8}:)?(?P<bdf>[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])")
REFUSAL_EVIDENCE_CAP = 4


@dataclass
class _Reading:
    """What the node's kernel (and the driver container's log) said about its GPUs."""

    open_flavour: bool = False      # open modules on a GPU without GSP
    needs_open: bool = False        # proprietary module on a GPU that needs the open ones
    open_datacenter: bool = False   # early open modules on a non-data-center GPU
    branch: bool = False
    legacy: str = ""                # the legacy branch the kernel names ("470.xx")
    version: str = ""
    pci_ids: set[str] = field(default_factory=set)
    addresses: set[str] = field(default_factory=set)
    evidence: list[Evidence] = field(default_factory=list)

    def read(self, text: str, evidence: Evidence) -> None:
        legacy = _LEGACY.search(text)
        if _OPEN.search(text):
            self.open_flavour = True
        elif _NEEDS_OPEN.search(text):
            self.needs_open = True
        elif _OPEN_DATACENTER.search(text):
            self.open_datacenter = True
        elif legacy is not None:
            self.legacy = self.legacy or legacy["branch"]
        else:
            self.branch = True
        version = versions.refused_driver(text)
        if version and not self.version:
            self.version = version
        if pci := _PCI_ID.search(text):
            self.pci_ids.add(pci["id"].lower())
        if len(self.evidence) < REFUSAL_EVIDENCE_CAP and evidence not in self.evidence:
            self.evidence.append(evidence)


@dataclass(frozen=True, slots=True)
class GpuRefusal:
    """The loaded driver refused the node's GPU(s): why (which flavour or branch), the
    refused GPUs' ``host/lspci.txt`` entries, and which GPUs by kernel key (``keys``;
    ``unaddressed`` when a refusal named no address: the node-wide open-module line,
    the driver container's copy)."""

    node: str
    open_flavour: bool
    needs_open: bool
    open_datacenter: bool
    branch: bool
    legacy: str
    version: str
    pci_ids: frozenset[str]
    evidence: tuple[Evidence, ...]
    devices: tuple[PciDevice, ...]
    lspci_path: str
    keys: frozenset[str]
    unaddressed: bool


def _short(address: str) -> str:
    found = _BDF.search(address)
    return found["bdf"].lower() if found else address.lower()


def judge_gpu_refusal(facts: Facts, name: str) -> GpuRefusal | None:
    """The driver's refusal of ``name``'s GPU(s), or None where it refused none (or no
    node's kernel log was collected)."""
    if not on_a_node(facts.bundle, KERNEL_LOG):
        return None
    reading = _Reading()
    kernel = facts.kernel_events.get(name)
    signals = kernel.signals_of("unsupported_gpu") if kernel is not None else []
    for signal in signals:
        reading.read(signal.source.message, line_evidence(signal.source))
        if signal.pci:
            reading.addresses.add(_short(signal.pci))
    wanted = (signatures.get(REFUSAL_SIGNATURE),)
    for path, container, text in node_logs(facts, name, components=("driver",)):
        for hit in signatures.match(text, "log", container=container, signatures=wanted):
            reading.read(hit.text, Evidence(path=path, line=hit.line, excerpt=clip(hit.text)))
            break
    if not reading.evidence:
        return None
    gpus = [device for device in facts.node(name).lspci or () if device.is_gpu]
    devices = [d for d in gpus if _short(d.address) in reading.addresses] or [
        d for d in gpus if f"10de:{d.device_id}" in reading.pci_ids]
    keys = frozenset(kernel.key(s.pci) for s in signals if s.pci and kernel is not None)
    return GpuRefusal(
        name, reading.open_flavour, reading.needs_open, reading.open_datacenter,
        reading.branch, reading.legacy, reading.version, frozenset(reading.pci_ids),
        tuple(reading.evidence), tuple(devices), specs.node_file(name, specs.LSPCI),
        keys, not signals or any(not s.pci for s in signals))


# What rules read: judge_gpu_refusal on a node, once per run.
gpu_refusal = per_node(judge_gpu_refusal)


# -- GPUs bound to another driver -----------------------------------------------------

# The GPU Operator's per-node workload label: these values hand GPUs to virtual machines,
# where vfio-pci (or the vGPU manager) is the intended owner.
WORKLOAD_LABEL = "nvidia.com/gpu.workload.config"
VM_WORKLOADS = frozenset({"vm-passthrough", "vm-vgpu"})


@dataclass(frozen=True, slots=True)
class ForeignBinding:
    """The node's NVIDIA GPUs bound to another kernel driver (``lspci -k``), on a node
    whose GPUs are meant for containers."""

    node: str
    devices: tuple[PciDevice, ...]
    lspci_path: str


def meant_for_vms(facts: Facts, name: str) -> bool:
    """Whether the operator hands the node's GPUs to virtual machines (its workload
    label, else the ClusterPolicy's sandbox default), where vfio-pci owns them."""
    node_obj = facts.nodes.get(name)
    if node_obj is not None and node_obj.labels.get(WORKLOAD_LABEL) in VM_WORKLOADS:
        return True
    policy = facts.cluster_policy
    if node_obj is None or policy is None or WORKLOAD_LABEL in node_obj.labels:
        return False
    sandbox = policy.spec.get("sandboxWorkloads")
    return (isinstance(sandbox, dict) and sandbox.get("enabled") in (True, "true")
            and sandbox.get("defaultWorkload") in VM_WORKLOADS)


def judge_foreign_binding(facts: Facts, name: str) -> ForeignBinding | None:
    """``name``'s GPUs bound to another driver, or None (none, meant for VMs, or no
    node's ``host/lspci.txt`` collected)."""
    if not on_a_node(facts.bundle, specs.LSPCI):
        return None
    devices = facts.foreign_gpus(name)
    if not devices or meant_for_vms(facts, name):
        return None
    return ForeignBinding(name, tuple(devices), specs.node_file(name, specs.LSPCI))


# What rules read: judge_foreign_binding on a node, once per run.
foreign_binding = per_node(judge_foreign_binding)


# -- the host's driver against the operator's -----------------------------------------

IN_USE_SIGNATURE = "driver-module-in-use"
DEPLOY_LABEL = "nvidia.com/gpu.deploy.driver"
# The upgrade controller's per-node state: any value but these means an upgrade is under
# way, where the loaded module is the previous container's (not a conflict).
UPGRADE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
_SETTLED = frozenset({"", "upgrade-done"})
# Kernel signals that show a host driver was there and tried (or another driver won).
_DRIVER_TRIED = ("driver_loaded", "nouveau", "nova_core", "probe_failed", "unsupported_gpu",
                 "lockdown", "module_load_failed", "module_verification", "api_mismatch")
VERSION_FILE = specs.DRIVER_VERSION


@dataclass(frozen=True, slots=True)
class HostDriver:
    """What the node says about a driver loaded outside the operator's control."""

    loaded: bool
    version: str
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True, slots=True)
class HostConflict:
    """The host's driver and the ClusterPolicy's ``driver.enabled`` disagree on a node.

    ``fight``: the container is enabled over a loaded host driver and fails — it cannot
    unload the module (``in_use``, its log lines) or its pod is failing (``pod_state``)
    while the host runs another version than the policy's ``wanted``. Otherwise the
    container is disabled and nothing on the host provides a driver (``version_error``:
    the manifest's error for the driver version file, if any)."""

    node: str
    fight: bool
    host: HostDriver
    policy: ClusterPolicy
    in_use: tuple[Evidence, ...] = ()
    wanted: str | None = None
    pod_state: str | None = None
    version_error: Evidence | None = None


def host_driver(facts: Facts, name: str) -> HostDriver | None:
    """The node's loaded NVIDIA driver, or None when the bundle cannot tell."""
    modules = facts.modules(name)
    node = facts.node(name)
    text = node.text(VERSION_FILE)
    if modules is None and text is None:
        return None
    loaded, version, evidence = False, "", []
    if modules is not None and modules.loaded("nvidia"):
        loaded = True
        evidence.append(modules.evidence("nvidia"))
    if text:
        first = text.splitlines()[0] if text.splitlines() else ""
        if found := versions.nvrm_driver(first):
            loaded, version = True, found
            evidence.append(Evidence(path=node.path(VERSION_FILE), line=1,
                                     excerpt=clip(first)))
    return HostDriver(loaded, version, tuple(evidence))


def driver_enabled(policy: ClusterPolicy) -> bool:
    enabled = policy.component_enabled("driver")
    return True if enabled is None else enabled  # the operator's default


def _host_driver_tried(facts: Facts, name: str) -> bool:
    """Whether the node shows a host driver that exists but did not load, or another
    driver holding the GPU: then another verdict here names the cause."""
    kernel = facts.kernel_events.get(name)
    if kernel is not None and kernel.signals_of(*_DRIVER_TRIED):
        return True
    modules = facts.modules(name)
    return (modules is not None and modules.loaded("nouveau")) or bool(facts.foreign_gpus(name))


def _has_gpu(facts: Facts, name: str) -> bool:
    if name in facts.gpu_node_set:
        return True
    return any(device.is_gpu for device in facts.node(name).lspci or ())


def _in_use(facts: Facts, name: str) -> tuple[Evidence, ...]:
    wanted = (signatures.get(IN_USE_SIGNATURE),)
    for path, container, text in node_logs(facts, name, components=("driver",)):
        for hit in signatures.match(text, "log", container=container, signatures=wanted):
            return (Evidence(path=path, line=hit.line, excerpt=clip(hit.text)),)
    return ()


def judge_host_conflict(facts: Facts, name: str) -> HostConflict | None:
    """The conflict between ``name``'s host driver and the policy, or None (none, no
    active ClusterPolicy, or no ``cluster/clusterpolicies.json``)."""
    policy = facts.cluster_policy
    if policy is None or not holds(facts.bundle, POLICIES_FILE):
        return None
    host = host_driver(facts, name)
    if host is None:
        return None
    if driver_enabled(policy):
        return _fight(facts, policy, name, host)
    return _nobody(facts, policy, name, host)


# What rules read: judge_host_conflict on a node, once per run.
host_conflict = per_node(judge_host_conflict)


def _fight(facts: Facts, policy: ClusterPolicy, name: str,
           host: HostDriver) -> HostConflict | None:
    node_obj = facts.nodes.get(name)
    labels = node_obj.labels if node_obj is not None else {}
    if (not host.loaded or labels.get(DEPLOY_LABEL) == "pre-installed"
            or labels.get(UPGRADE_LABEL, "") not in _SETTLED):
        return None
    in_use = _in_use(facts, name)
    operand = facts.operands.get(name, {}).get("driver")
    driver = policy.spec.get("driver")
    wanted = driver.get("version") if isinstance(driver, dict) else None
    differs = bool(isinstance(wanted, str) and wanted and host.version
                   and not wanted.startswith(host.version))
    failing = operand is not None and not operand.healthy
    if operand is not None and operand.healthy:
        return None  # whatever its old log says, the container runs now
    if not in_use and not (failing and differs):
        return None
    pod_state = operand.state if failing and differs and operand is not None else None
    return HostConflict(name, True, host, policy, in_use,
                        wanted if isinstance(wanted, str) else None, pod_state)


def _nobody(facts: Facts, policy: ClusterPolicy, name: str,
            host: HostDriver) -> HostConflict | None:
    if host.loaded or not _has_gpu(facts, name) or _host_driver_tried(facts, name):
        return None
    item = facts.bundle.manifest.item(specs.node_file(name, VERSION_FILE))
    error = Evidence(path=specs.MANIFEST, excerpt=clip(f"{item.path}: {item.error}")) \
        if item is not None and item.error else None
    return HostConflict(name, False, host, policy, version_error=error)


# -- the driver container cannot build its module -------------------------------------

HEADERS = "driver-kernel-headers-unavailable"
PACKAGES = "driver-build-package-unavailable"
DENIED = "driver-module-insert-permission-denied"
SELINUX_FILE = specs.SELINUX


@dataclass(frozen=True, slots=True)
class BuildFailure:
    """The driver container's log says it cannot build or load its module: the first
    line of each wording (``HEADERS``, ``PACKAGES``, ``DENIED``), and the host's SELinux
    state (``host/selinux.txt``'s first line) where it was collected."""

    node: str
    hits: Mapping[str, Evidence]
    selinux: str | None
    selinux_line: Evidence | None


def judge_build_failure(facts: Facts, name: str) -> BuildFailure | None:
    """What stops ``name``'s driver container building its module, or None (nothing,
    or no container log collected at all)."""
    if not holds(facts.bundle, CONTAINER_LOGS):
        return None
    wanted = (signatures.get(HEADERS), signatures.get(PACKAGES), signatures.get(DENIED))
    found: dict[str, Evidence] = {}
    for path, container, text in node_logs(facts, name, components=("driver",)):
        for hit in signatures.match(text, "log", container=container, signatures=wanted):
            found.setdefault(hit.signature.id,
                             Evidence(path=path, line=hit.line, excerpt=clip(hit.text)))
    if not found:
        return None
    node = facts.node(name)
    selinux = node.text(SELINUX_FILE)
    if not selinux or not selinux.strip():
        return BuildFailure(name, found, None, None)
    first = selinux.strip().splitlines()[0].strip()
    return BuildFailure(name, found, first, Evidence(path=node.path(SELINUX_FILE), line=1,
                                                     excerpt=clip(first)))


# What rules read: judge_build_failure on a node, once per run.
build_failure = per_node(judge_build_failure)


# -- why nvidia-smi failed ------------------------------------------------------------

class SmiCause(Enum):
    """A verdict that explains nvidia-smi failing on a node, in the order they are named."""

    MODULE_REFUSED = "Secure Boot refuses the unsigned module"
    UNUSABLE = "the driver is not usable"
    INSTALL_BROKEN = "the driver container cannot install for the node's kernel"
    DRIVER_CONTAINER = "the operator's driver container is failing"


def driver_container_failing(facts: Facts, name: str) -> bool:
    """Whether the node's operand stack stops at the driver container itself. Where
    the stage is only the validator waiting on a host driver, nvidia-smi failing is
    the explanation of that stage, not its consequence."""
    stages = facts.operand_stages.get(name)
    return (stages is not None and stages.first is Stage.DRIVER
            and any(b.operand.component == "driver" for b in stages.at_first))


@per_node
def smi_causes(facts: Facts, name: str) -> tuple[SmiCause, ...]:
    """The verdicts that explain nvidia-smi failing on ``name`` (whether or not it did)."""
    found = []
    if secure_boot_refusal(facts, name) is not None:
        found.append(SmiCause.MODULE_REFUSED)
    if unusable(facts, name) is not None:
        found.append(SmiCause.UNUSABLE)
    driver = facts.driver_kernel.get(name)
    if driver is not None and driver.broken:
        found.append(SmiCause.INSTALL_BROKEN)
    if driver_container_failing(facts, name):
        found.append(SmiCause.DRIVER_CONTAINER)
    return tuple(found)


def smi_unexplained(facts: Facts, name: str) -> bool:
    """Whether nvidia-smi failed on ``name`` and no verdict here explains it (judged
    where the bundle has its manifest, which records how nvidia-smi ended)."""
    return (holds(facts.bundle, specs.MANIFEST) and facts.smi_failure(name) is not None
            and not smi_causes(facts, name))
