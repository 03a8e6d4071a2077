"""ResourceQuotas on GPU resources: each ``nvidia.com/*`` key with its hard limit and
what is used of it, read once from ``cluster/resourcequotas.json``
(``Facts.gpu_quotas``)."""

from __future__ import annotations

from dataclasses import dataclass

from bundle.kube import ResourceQuota, quantity_int


@dataclass(frozen=True, slots=True)
class GpuQuota:
    """One GPU key of one ResourceQuota. ``section`` is where ``hard`` was read:
    ``status`` (what the API server enforces) or, before it reported one, ``spec``."""

    quota: ResourceQuota
    namespace: str
    key: str
    hard: int | None     # None: not a quantity
    used: int | None     # None: not reported, or not a quantity
    section: str

    @property
    def exhausted(self) -> bool:
        return self.hard is not None and (self.used or 0) >= self.hard


def gpu_quotas(quotas: list[ResourceQuota]) -> list[GpuQuota]:
    """Every ``nvidia.com/`` key of every quota, in bundle order, keys sorted."""
    found = []
    for quota in quotas:
        namespace = quota.metadata.namespace or "default"
        status = quota.status if isinstance(quota.status, dict) else {}
        hard = status.get("hard") or quota.spec.get("hard") or {}
        used = status.get("used") or {}
        section = "status" if status.get("hard") else "spec"
        for key, raw in sorted(hard.items()) if isinstance(hard, dict) else []:
            if "nvidia.com/" not in key:
                continue
            taken = quantity_int(used.get(key)) if isinstance(used, dict) else None
            found.append(GpuQuota(quota, namespace, key, quantity_int(raw), taken, section))
    return found
