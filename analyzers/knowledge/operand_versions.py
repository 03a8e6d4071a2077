"""Default operand image versions per GPU Operator release, from ``data/operand_versions.toml``.

:func:`expected` answers, for an operator version, which version each known operand image
should carry (an image reference's version is read, and compared, by ``bundle.versions``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache

from analyzers.knowledge import packaged
from bundle import versions


@dataclass(frozen=True, slots=True)
class Expected:
    image: str       # repository name, e.g. "k8s-device-plugin"
    label: str       # "device plugin / GFD"
    version: str     # "0.20.0" (exact) or "0.19" (series)
    scope: str       # "release 26.7.0" or "the 26.3.x line"


@dataclass(frozen=True, slots=True)
class OperandTable:
    source: str
    labels: dict[str, str]
    same_as_operator: tuple[str, ...]
    lines: dict[str, dict[str, str]]
    releases: dict[str, dict[str, str]]


@cache
def table() -> OperandTable:
    raw = tomllib.loads(packaged.read_toml("operand_versions"))
    return OperandTable(
        source=str(raw["source"]),
        labels={str(k): str(v) for k, v in raw["images"].items()},
        same_as_operator=tuple(str(i) for i in raw.get("same_as_operator", [])),
        lines={str(item["series"]): {str(k): str(v) for k, v in item["images"].items()}
               for item in raw.get("line", [])},
        releases={str(item["version"]): {str(k): str(v) for k, v in item["images"].items()}
                  for item in raw.get("release", [])},
    )


def expected(version: str) -> dict[str, Expected]:
    """Image repository → expected version for an operator version such as ``26.3.1``."""
    data = table()
    series = versions.series(version)
    found: dict[str, Expected] = {}
    for image, value in data.lines.get(series, {}).items():
        found[image] = Expected(image, data.labels.get(image, image), value,
                                f"the {series}.x line")
    for image, value in data.releases.get(version, {}).items():
        found[image] = Expected(image, data.labels.get(image, image), value,
                                f"release {version}")
    for image in data.same_as_operator:
        found[image] = Expected(image, data.labels.get(image, image), version,
                                f"release {version} (versioned with the operator)")
    return found
