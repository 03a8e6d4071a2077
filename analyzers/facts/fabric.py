"""NVLink fabric registration per node: is Fabric Manager doing its job?

On NVSwitch systems (HGX/DGX) the GPUs must register with the NVLink fabric, which
Fabric Manager sets up; until then CUDA fails with ``system not yet initialized``.
Three independent sources say so: CUDA errors in validator and workload logs,
``nvidia-smi -q -x`` fabric state per GPU, and Fabric Manager's own lines (host
journal, or the driver container's log when the driver container runs FM).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzers.facts.journals import journal_scan
from analyzers.facts.podlogs import PodLogs
from bundle import NodeArtifacts, specs
from bundle.evidence import Locator, clip
from bundle.kube import Pod
from bundle.nvsmi_health import locate

# The wordings of the NVLink fabric and its Fabric Manager (analyzers/data/signatures.toml;
# the catalog rule they feed lists the same ids, which tests/test_fact_wordings.py checks).
FABRIC_WORDINGS = frozenset({
    "driver-fabricmanager-starting", "validator-fabric-not-initialized",
    "cuda-system-not-initialized", "fm-nvswitch-query-failed", "fm-driver-version-mismatch",
    "fm-service-failed", "fm-config-invalid",
})
FM_UNIT = specs.FABRIC_MANAGER_UNIT
FM_JOURNAL = specs.FABRIC_MANAGER_JOURNAL
SMI_FILE = specs.NVIDIA_SMI
NOT_INITIALIZED = ("validator-fabric-not-initialized", "cuda-system-not-initialized")
NO_SWITCH = "fm-nvswitch-query-failed"   # on PCIe systems this is expected
FM_STARTED = "driver-fabricmanager-starting"
DRIVER_CONTAINER = "nvidia-driver-ctr"
HEALTHY_STATE = "completed"
HEALTHY_STATUS = "success"
_NOT_FABRIC = frozenset({"", "n/a", "not supported", "[n/a]"})


@dataclass(frozen=True, slots=True)
class GpuFabric:
    bus_id: str
    state: str
    status: str | None
    artifacts: NodeArtifacts = field(repr=False, compare=False)

    @property
    def where(self) -> Locator:
        """The ``<state>`` line of this GPU in nvidia-smi.xml. Found on demand: only the
        GPUs that did not register are quoted, and locating needs the file's lines."""
        path = self.artifacts.path(SMI_FILE)
        line = locate(self.artifacts.text(SMI_FILE) or "", self.bus_id, "fabric/state")
        if line is None:
            return Locator(path=path, excerpt=f"GPU {self.bus_id} fabric state: {self.state}")
        return Locator(path=path, line=line[0], excerpt=f"GPU {self.bus_id}: {line[1]}")


@dataclass(frozen=True, slots=True)
class FabricState:
    """What one node's bundle says about its NVLink fabric."""

    node: str
    not_initialized: tuple[Locator, ...]   # CUDA 'system not yet initialized' lines
    fabric_gpus: tuple[GpuFabric, ...]     # GPUs that report a fabric state at all
    fm_errors: tuple[Locator, ...]         # Fabric Manager error lines (journal, driver log)
    no_switch: tuple[Locator, ...]         # FM found no NVSwitch
    fm_started: tuple[Locator, ...]        # the driver container started FM

    @property
    def unregistered(self) -> tuple[GpuFabric, ...]:
        return tuple(g for g in self.fabric_gpus
                     if g.state.lower() != HEALTHY_STATE
                     or (g.status is not None and g.status.lower() != HEALTHY_STATUS))

    @property
    def nvswitch(self) -> bool:
        """Evidence that this is an NVSwitch (fabric) system."""
        return bool(self.fabric_gpus or self.not_initialized or self.fm_started)

    @property
    def broken(self) -> bool:
        if self.not_initialized or self.unregistered or self.fm_errors:
            return True
        return bool(self.no_switch) and self.nvswitch


def _smi_fabric(artifacts: NodeArtifacts) -> list[GpuFabric]:
    smi = artifacts.nvidia_smi
    if smi is None:
        return []
    # Decoded here as it always was, so that a file that is not UTF-8 is reported at
    # the same point of the run; GpuFabric.where decodes it again when quoted.
    artifacts.text(SMI_FILE)
    found = []
    for gpu in smi.gpus:
        state = (gpu.element.findtext("fabric/state") or "").strip()
        if state.lower() in _NOT_FABRIC:
            continue
        status = (gpu.element.findtext("fabric/status") or "").strip()
        status_value = None if status.lower() in _NOT_FABRIC else status
        found.append(GpuFabric(gpu.bus_id, state, status_value, artifacts))
    return found


def _log_hits(logs: PodLogs, pods: Iterable[Pod]) -> tuple[list[Locator], list[Locator],
                                                           list[Locator], list[Locator]]:
    not_init: list[Locator] = []
    errors: list[Locator] = []
    no_switch: list[Locator] = []
    started: list[Locator] = []
    for pod in pods:
        for log in logs.of(pod):
            for found in log.matches():
                if found.signature.id not in FABRIC_WORDINGS:
                    continue
                sig = found.signature.id
                if sig in NOT_INITIALIZED:
                    not_init.append(log.locate(found))
                elif log.container != DRIVER_CONTAINER:
                    continue
                elif sig == FM_STARTED:
                    started.append(log.locate(found))
                elif sig == NO_SWITCH:
                    no_switch.append(log.locate(found))
                elif found.signature.kind == "error":
                    errors.append(log.locate(found))
    return not_init, errors, no_switch, started


def fabric_state(artifacts: NodeArtifacts, logs: PodLogs, pods: Iterable[Pod]) -> FabricState:
    """The fabric picture of one node from its pods' logs, nvidia-smi and FM journal."""
    not_init, errors, no_switch, started = _log_hits(logs, pods)
    journal_path = artifacts.path(FM_JOURNAL)
    for entry, matches in journal_scan(artifacts.bundle, artifacts.name, FM_UNIT).matches:
        for found in matches:
            if found.signature.id not in FABRIC_WORDINGS:
                continue
            hit = Locator(path=journal_path, line=entry.line, excerpt=clip(entry.message))
            if found.signature.id == NO_SWITCH:
                no_switch.append(hit)
            elif found.signature.kind == "error":
                errors.append(hit)
    return FabricState(
        node=artifacts.name,
        not_initialized=_unique(not_init),
        fabric_gpus=tuple(_smi_fabric(artifacts)),
        fm_errors=_unique(errors),
        no_switch=_unique(no_switch),
        fm_started=_unique(started),
    )


def _unique(hits: Iterable[Locator]) -> tuple[Locator, ...]:
    """One locator per (path, line): a line can match two signatures."""
    seen: dict[tuple[str, int | None], Locator] = {}
    for hit in hits:
        seen.setdefault((hit.path, hit.line), hit)
    return tuple(seen.values())
