"""The ClusterPolicy CRD each GPU Operator release ships, from
``data/clusterpolicy_crd.toml``: the first release that carries each spec field and
each CRD, so that a CRD older than the running operator shows what it lacks."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache

from analyzers.knowledge import packaged
from bundle import versions


@dataclass(frozen=True, slots=True)
class Shipped:
    """A spec field (``driver.kernelModuleType``) or a CRD, and the first release that
    ships it."""

    name: str
    since: versions.Version

    @property
    def release(self) -> str:
        """That release as the operator names it: ``v25.3.0``."""
        return versions.dotted(self.since, prefix="v")


Since = tuple[Shipped, ...]


@cache
def needs() -> tuple[Since, Since]:
    """(ClusterPolicy spec fields, CRDs), each with the first release that ships it,
    ordered by that release (then by name)."""
    data = tomllib.loads(packaged.read_toml("clusterpolicy_crd"))

    def table(key: str) -> Since:
        rows = []
        for name, entry in data.get(key, {}).items():
            since = versions.release(entry["since"])
            if since is not None:
                rows.append(Shipped(name, since))
        return tuple(sorted(rows, key=lambda row: (row.since, row.name)))

    return table("field"), table("crd")
