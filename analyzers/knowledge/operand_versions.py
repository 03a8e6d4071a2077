"""Default operand image versions per GPU Operator release, from ``data/operand_versions.toml``.

:func:`expected` answers, for an operator version, which version each known operand image
should carry; :func:`image_version` reads an image reference; :func:`fits` compares.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache

from analyzers.knowledge import packaged

# A match never starts after a digit (the leftmost one would have started there), so a
# long run of digits with no dot is tried once, not again from each of its positions.
_NUMERIC = re.compile(r"(?<!\d)(\d+(?:\.\d+)+)")


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


def image_version(image: str) -> tuple[str, str | None]:
    """(repository name, numeric tag version) of an image reference.

    ``nvcr.io/nvidia/k8s/container-toolkit:v1.17.8-ubuntu20.04`` gives
    ``("container-toolkit", "1.17.8")``; a digest-only reference has no version.
    """
    reference = image.split("@", 1)[0]
    name, _, tag = reference.rpartition(":")
    if not name or "/" in tag:
        name, tag = reference, ""
    repository = name.rsplit("/", 1)[-1]
    found = _NUMERIC.search(tag)
    return repository, (found.group(1) if found else None)


def fits(expected: str, actual: str) -> bool:
    """Whether ``actual`` (numeric) is the expected release or lies in the expected series."""
    want = expected.split(".")
    have = actual.split(".")
    return have[: len(want)] == want


def expected(version: str) -> dict[str, Expected]:
    """Image repository → expected version for an operator version such as ``26.3.1``."""
    data = table()
    series = ".".join(version.split(".")[:2])
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
