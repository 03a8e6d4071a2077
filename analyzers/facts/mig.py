"""MIG: the profile table per GPU model (data) and the mig-parted configs a cluster uses.

The MIG manager applies the config named by the node label ``nvidia.com/mig.config``
from a ConfigMap in mig-parted format (``default-mig-parted-config`` unless the
ClusterPolicy names another). This module reads that ConfigMap and checks a layout
against what one GPU model can hold: known profile, at most ``max`` instances of it,
and no more memory or compute slices than the GPU has.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from bundle.kube import ClusterPolicy, ConfigMap
from bundle.yamldoc import load_yaml

DEFAULT_CONFIGMAP = "default-mig-parted-config"
CONFIG_KEY = "config.yaml"
DISABLED = "all-disabled"


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    memory: int
    compute: int
    max: int


@dataclass(frozen=True, slots=True)
class MigModel:
    name: str
    pci_device_ids: tuple[str, ...]
    names: tuple[re.Pattern[str], ...]
    memory_slices: int
    compute_slices: int
    profiles: Mapping[str, Profile]

    def matches(self, product: str | None, pci_id: str | None) -> bool:
        if pci_id and pci_id.upper() in self.pci_device_ids:
            return True
        return bool(product) and any(p.search(product or "") for p in self.names)

    def problems(self, counts: Mapping[str, int]) -> list[str]:
        """Why this layout does not fit one GPU of this model (empty when it fits)."""
        found: list[str] = []
        memory = compute = 0
        for name, count in sorted(counts.items()):
            profile = self.profiles.get(name)
            if profile is None:
                known = ", ".join(self.profiles)
                found.append(f"profile {name} does not exist on {self.name} (it has {known})")
                continue
            if count > profile.max:
                found.append(f"{count} x {name} requested, {self.name} holds at most "
                             f"{profile.max}")
            memory += profile.memory * count
            compute += profile.compute * count
        if not found and memory > self.memory_slices:
            found.append(f"the layout needs {memory} memory slices, {self.name} has "
                         f"{self.memory_slices}")
        if not found and compute > self.compute_slices:
            found.append(f"the layout needs {compute} compute slices, {self.name} has "
                         f"{self.compute_slices}")
        return found


@functools.cache
def models() -> tuple[MigModel, ...]:
    """The packaged MIG profile table (``analyzers/data/mig_profiles.toml``)."""
    text = (files("analyzers") / "data" / "mig_profiles.toml").read_text(encoding="utf-8")
    return parse_models(tomllib.loads(text))


def parse_models(document: Mapping[str, Any]) -> tuple[MigModel, ...]:
    result = []
    for raw in document.get("model", []):
        profiles = {p["name"]: Profile(p["name"], int(p["memory"]), int(p["compute"]),
                                       int(p["max"])) for p in raw["profiles"]}
        result.append(MigModel(
            name=raw["name"],
            pci_device_ids=tuple(str(d).upper() for d in raw["pci_device_ids"]),
            names=tuple(re.compile(n, re.IGNORECASE) for n in raw["names"]),
            memory_slices=int(raw["memory_slices"]),
            compute_slices=int(raw["compute_slices"]),
            profiles=profiles,
        ))
    return tuple(result)


def model_for(product: str | None, device_id: str | None) -> MigModel | None:
    """The table entry for a GPU, by PCI device id (``20B0``) or product name."""
    for model in models():
        if device_id and device_id.upper() in model.pci_device_ids:
            return model
    for model in models():
        if model.matches(product, None):
            return model
    return None


def device_id(pci_device_id: str | None) -> str | None:
    """``20B010DE`` (nvidia-smi) or ``0x20B010DE`` (mig-parted) → ``20B0``."""
    if not pci_device_id:
        return None
    text = pci_device_id.strip().upper().removeprefix("0X")
    return text[:4] if len(text) >= 4 else None


@dataclass(frozen=True, slots=True)
class MigEntry:
    """One item of a ``mig-configs.<name>`` list."""

    index: int
    devices: str | tuple[int, ...]          # "all" or GPU indices
    device_filter: tuple[str, ...]          # device ids (``20B0``); empty = any
    enabled: bool
    counts: Mapping[str, int]

    def applies(self, gpu_index: int, gpu_device_id: str | None) -> bool:
        if self.device_filter and gpu_device_id not in self.device_filter:
            return False
        return self.devices == "all" or gpu_index in self.devices


@dataclass(frozen=True, slots=True)
class MigConfigs:
    configmap: ConfigMap
    key: str
    configs: Mapping[str, tuple[MigEntry, ...]]
    error: str | None = None


def _entry(index: int, raw: Any) -> MigEntry:
    if not isinstance(raw, dict):
        raise ValueError(f"entry {index} is not a mapping")
    devices_raw = raw.get("devices", "all")
    devices: str | tuple[int, ...]
    if devices_raw == "all":
        devices = "all"
    elif isinstance(devices_raw, list) and all(isinstance(d, int) for d in devices_raw):
        devices = tuple(devices_raw)
    elif isinstance(devices_raw, int):
        devices = (devices_raw,)
    else:
        raise ValueError(f"entry {index}: devices {devices_raw!r} not understood")
    filters_raw = raw.get("device-filter", [])
    filters_list = [filters_raw] if isinstance(filters_raw, str) else filters_raw
    filters = tuple(d for d in (device_id(str(f)) for f in filters_list or []) if d)
    counts_raw = raw.get("mig-devices") or {}
    if not isinstance(counts_raw, dict):
        raise ValueError(f"entry {index}: mig-devices is not a mapping")
    counts = {str(k): int(v) for k, v in counts_raw.items() if isinstance(v, int)}
    return MigEntry(index, devices, filters, raw.get("mig-enabled") is True, counts)


def parse_configs(text: str) -> dict[str, tuple[MigEntry, ...]]:
    """``mig-configs`` of a mig-parted file; ValueError when it cannot be read."""
    document = load_yaml(text)
    if not isinstance(document, dict) or not isinstance(document.get("mig-configs"), dict):
        raise ValueError("no 'mig-configs' mapping")
    result: dict[str, tuple[MigEntry, ...]] = {}
    for name, entries in document["mig-configs"].items():
        if not isinstance(entries, list):
            raise ValueError(f"mig-configs.{name} is not a list")
        result[name] = tuple(_entry(i, e) for i, e in enumerate(entries))
    return result


def configmap_name(policy: ClusterPolicy | None) -> str:
    section = policy.spec.get("migManager") if policy is not None else None
    config = section.get("config") if isinstance(section, dict) else None
    name = config.get("name") if isinstance(config, dict) else None
    return name if isinstance(name, str) and name else DEFAULT_CONFIGMAP


def mig_configs(configmaps: Sequence[ConfigMap], policy: ClusterPolicy | None,
                namespace: str | None) -> MigConfigs | None:
    """The mig-parted ConfigMap the MIG manager reads, parsed (None if not collected)."""
    wanted = configmap_name(policy)
    for configmap in configmaps:
        if configmap.metadata.name != wanted:
            continue
        if namespace and configmap.metadata.namespace not in (None, namespace):
            continue
        key = CONFIG_KEY if CONFIG_KEY in configmap.data else next(iter(configmap.data), "")
        try:
            configs = parse_configs(configmap.data.get(key, ""))
        except (ValueError, TypeError) as exc:
            return MigConfigs(configmap, key, {}, error=str(exc))
        return MigConfigs(configmap, key, configs)
    return None
