"""How one rule names another rule's finding: one typed reference per linked rule.

A finding's id is ``<rule id>:<subject>``. A rule that links a finding of another rule
(``caused_by`` / ``causes``) builds the id here, never by hand: ``refs.RT001(node)``,
``refs.DRV001(node, pci)``, ``refs.OP006.missing()``. Each reference belongs to the
rule it points at and holds that rule's subject format, and a rule whose subject has
several parts builds its own subject with the same reference
(``refs.DRV001.subject(node, pci)``), so the finding and the links to it cannot drift
apart.

The references live in this module, below every rule, rather than on the rule classes:
rule modules already import one another (OP001's ``op/_causes`` reads DRV003's and
OP013's judgements), and importing the target rule's class for each link would close
import cycles. This module imports nothing of the project.

The engine (``analyzers/engine.py``) asks :func:`dangling` about every link a rule
makes: a link to a rule that does not exist, or to a subject its rule never produces,
is an error of the rule that made it. A link to a finding that simply did not fire this
time is normal and is dropped when the findings are linked.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import NewType

# A finding id built by a reference below; ``Rule.finding`` takes links of this type.
Link = NewType("Link", str)


@dataclass(frozen=True, slots=True)
class Ref:
    """The findings of one rule, by subject. ``shape`` says what its subject is."""

    rule_id: str
    shape: str = "<node>"

    def _link(self, subject: str) -> Link:
        return Link(f"{self.rule_id}:{subject}")

    def accepts(self, subject: str) -> bool:
        """Whether the rule can have produced a finding with this subject."""
        return bool(subject)


@dataclass(frozen=True, slots=True)
class NodeRef(Ref):
    """A rule with one finding per node: the subject is the node name."""

    def __call__(self, node: str) -> Link:
        return self._link(node)


@dataclass(frozen=True, slots=True)
class GpuRef(Ref):
    """A rule with one finding per GPU: ``<node>/<gpu>``, the GPU being the canonical PCI
    address the kernel log or nvidia-smi gives (``NodeKernel.key``)."""

    shape: str = "<node>/<gpu>"

    @staticmethod
    def subject(node: str, gpu: str) -> str:
        return f"{node}/{gpu}"

    def __call__(self, node: str, gpu: str) -> Link:
        return self._link(self.subject(node, gpu))

    def accepts(self, subject: str) -> bool:
        node, slash, gpu = subject.rpartition("/")
        return bool(node and slash and gpu)


@dataclass(frozen=True, slots=True)
class PolicyRef(Ref):
    """A rule with one finding per ClusterPolicy: the subject is the policy's name."""

    shape: str = "<ClusterPolicy>"

    def __call__(self, policy: str) -> Link:
        return self._link(policy)


@dataclass(frozen=True, slots=True)
class PolicyStateRef(PolicyRef):
    """OP006: a finding per ClusterPolicy, or ``missing`` when there is none to judge."""

    shape: str = "<ClusterPolicy> or missing"
    MISSING = "missing"

    def missing(self) -> Link:
        return self._link(self.MISSING)


@dataclass(frozen=True, slots=True)
class SharingRef(Ref):
    """SC006: a finding per workload (the ``namespace/owner`` key that
    ``sc_common.workload_subject`` gives) or per sharing ConfigMap."""

    shape: str = "<namespace>/<workload or ConfigMap>"

    @staticmethod
    def configmap_subject(namespace: str, name: str) -> str:
        return f"{namespace}/{name}"

    def workload(self, key: str) -> Link:
        return self._link(key)

    def configmap(self, namespace: str, name: str) -> Link:
        return self._link(self.configmap_subject(namespace, name))

    def accepts(self, subject: str) -> bool:
        namespace, slash, name = subject.partition("/")
        return bool(namespace and slash and name)


@dataclass(frozen=True, slots=True)
class DaemonSetRef(Ref):
    """OP017: a finding per DaemonSet, ``<namespace>/<name>``."""

    shape: str = "<namespace>/<DaemonSet>"

    def __call__(self, key: str) -> Link:
        return self._link(key)

    def accepts(self, subject: str) -> bool:
        namespace, slash, name = subject.partition("/")
        return bool(namespace and slash and name)


@dataclass(frozen=True, slots=True)
class RevisionRef(Ref):
    """HELM001: a finding per Helm release revision, ``<release>/<revision>``."""

    shape: str = "<release>/<revision>"

    @staticmethod
    def subject(release: str, revision: int) -> str:
        return f"{release}/{revision}"

    def __call__(self, release: str, revision: int) -> Link:
        return self._link(self.subject(release, revision))

    def accepts(self, subject: str) -> bool:
        release, _, revision = subject.rpartition("/")
        return bool(release) and revision.isdigit()


@dataclass(frozen=True, slots=True)
class ReleaseRef(Ref):
    """A rule with one finding per Helm release: the subject is the release name."""

    shape: str = "<release>"

    def __call__(self, release: str) -> Link:
        return self._link(release)


@dataclass(frozen=True, slots=True)
class PodRef(Ref):
    """A rule with one finding per pod: ``<namespace>/<pod>``."""

    shape: str = "<namespace>/<pod>"

    @staticmethod
    def subject(namespace: str, pod: str) -> str:
        return f"{namespace}/{pod}"

    def __call__(self, namespace: str, pod: str) -> Link:
        return self._link(self.subject(namespace, pod))

    def accepts(self, subject: str) -> bool:
        namespace, slash, pod = subject.partition("/")
        return bool(namespace and slash and pod)


# One reference per rule that other rules link to, named by the rule's id (and the
# rule's class beside it).
CFG004 = PolicyRef("CFG004")      # ToolkitDisabledHostNotConfigured
# the CMP family: one finding per GPU-stack workload, ``<namespace>/<workload>``
CMP003 = DaemonSetRef("CMP003", shape="<namespace>/<workload>")  # ComponentNotScheduled
CMP004 = DaemonSetRef("CMP004", shape="<namespace>/<workload>")  # ComponentImagePull
CMP005 = DaemonSetRef("CMP005", shape="<namespace>/<workload>")  # ComponentCannotStart
CMP006 = DaemonSetRef("CMP006", shape="<namespace>/<workload>")  # ComponentInitFails
CMP007 = DaemonSetRef("CMP007", shape="<namespace>/<workload>")  # ComponentCrashLoop
CMP008 = DaemonSetRef("CMP008", shape="<namespace>/<workload>")  # ComponentOomKilled
CMP009 = DaemonSetRef("CMP009", shape="<namespace>/<workload>")  # ComponentEvicted
CMP020 = NodeRef("CMP020")        # DriverStepFails
DRV001 = GpuRef("DRV001")         # XidEvents
DRV002 = GpuRef("DRV002")         # GpuLost
DRV003 = NodeRef("DRV003")        # DriverNotUsable
DRV004 = NodeRef("DRV004")        # SecureBootRefusedModule
DRV005 = NodeRef("DRV005", shape="<node> or kernels/<os>")  # AutomaticKernelUpgrades
DRV006 = GpuRef("DRV006")         # GpuHealth
DRV007 = GpuRef("DRV007")         # IdleButNotEmpty
DRV008 = NodeRef("DRV008")        # DriverCannotDriveGpu
DRV009 = NodeRef("DRV009")        # NvidiaSmiFailed
DRV010 = NodeRef("DRV010")        # GpuBoundToOtherDriver
HELM001 = RevisionRef("HELM001")  # ValuesDroppedByUpgrade
HELM002 = ReleaseRef("HELM002")   # ReleaseStuck
OP001 = NodeRef("OP001")          # OperandsStuck
OP002 = NodeRef("OP002")          # OperandsNotScheduled
OP003 = NodeRef("OP003")          # NfdNotLabelling
OP004 = NodeRef("OP004")          # DcgmExporterNoDcgm
OP005 = NodeRef("OP005")          # FabricManagerNotWorking
OP006 = PolicyStateRef("OP006")   # ClusterPolicyNotReady
OP008 = NodeRef("OP008")          # DevicePluginUnhealthy
OP009 = NodeRef("OP009")          # MigMisconfigured
OP010 = NodeRef("OP010")          # DriverKernelMismatch
OP012 = NodeRef("OP012")          # HostDriverConflict
OP013 = NodeRef("OP013")          # DcgmProfilingUnavailable
OP015 = NodeRef("OP015")          # DriverBuildFails
OP017 = DaemonSetRef("OP017")     # DaemonSetRefused
RT001 = NodeRef("RT001")          # NoNvidiaRuntime
RT002 = NodeRef("RT002")          # DropInClobber
RT003 = NodeRef("RT003")          # DropInNotImported
RT006 = NodeRef("RT006")          # CdiSpecMissing
RT008 = NodeRef("RT008")          # ToolkitMisdirected
RT009 = NodeRef("RT009")          # TemplateLostRuntime
RT015 = NodeRef("RT015")          # DockerNoNvidiaRuntime
SC001 = PodRef("SC001")           # InsufficientGPU
SC006 = SharingRef("SC006")       # SharedGpuMisuse

# Every reference above, by rule id.
BY_ID: dict[str, Ref] = {value.rule_id: value for value in list(globals().values())
                         if isinstance(value, Ref)}


def dangling(link: str, rule_ids: AbstractSet[str]) -> str | None:
    """Why ``link`` can never name a finding (None: it can), given the ids of the rules
    loaded for this run. Only the rules listed here have a known subject shape."""
    rule_id, colon, subject = link.partition(":")
    if not colon or not subject:
        return f"{link!r} is not <rule id>:<subject>"
    ref = BY_ID.get(rule_id)
    if ref is None:
        return None if rule_id in rule_ids else f"{link} names no rule ({rule_id} does not exist)"
    if not ref.accepts(subject):
        return f"{link} is not a finding {rule_id} produces (its subject is {ref.shape})"
    return None
