"""GPU Operator releases and their support status, read from ``data/operator_releases.toml``.

The table is data so that the report's glance and rule CFG001 agree. :func:`support`
answers for any version string a bundle shows (an image tag ``v26.3.1``, a Helm chart
``gpu-operator-v26.3.1``, an app version ``26.3.1``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from analyzers.knowledge import packaged
from bundle import versions

Version = versions.Version


class SupportStatus(StrEnum):
    SUPPORTED = "supported"
    DEPRECATED = "deprecated"
    END_OF_SUPPORT = "end-of-support"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class ReleaseLine:
    series: tuple[int, int]
    status: SupportStatus
    released: str
    releases: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.series[0]}.{self.series[1]}.x"


@dataclass(frozen=True, slots=True)
class ReleaseTable:
    as_of: str
    source: str
    older: SupportStatus
    labels: dict[str, str]
    lines: tuple[ReleaseLine, ...]  # newest first

    def label(self, status: SupportStatus) -> str:
        return self.labels.get(status.value, status.value)


@dataclass(frozen=True, slots=True)
class Support:
    """The support status of one operator version, with the words to show it."""

    version: str            # normalised "26.3.1"
    series: str             # "26.3.x"
    status: SupportStatus
    label: str              # "Deprecated"
    known_release: bool     # the patch release is listed in the table
    as_of: str
    note: str


def _series(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor)


@cache
def table() -> ReleaseTable:
    raw = tomllib.loads(packaged.read_toml("operator_releases"))
    lines = tuple(
        ReleaseLine(series=_series(str(item["series"])), status=SupportStatus(item["status"]),
                    released=str(item.get("released", "")),
                    releases=tuple(str(r) for r in item.get("releases", [])))
        for item in raw["line"]
    )
    return ReleaseTable(
        as_of=str(raw["as_of"]), source=str(raw["source"]),
        older=SupportStatus(raw["older"]),
        labels={str(k): str(v) for k, v in raw["labels"].items()},
        lines=tuple(sorted(lines, key=lambda line: line.series, reverse=True)),
    )


def support(text: str | None) -> Support | None:
    """Support status of the version found in ``text``; None if it holds no version."""
    version = versions.operator_release(text)
    if version is None:
        return None
    data = table()
    dotted = ".".join(str(part) for part in version)
    series = version[:2]
    name = f"{series[0]}.{series[1]}.x"
    line = next((item for item in data.lines if item.series == series), None)
    if line is not None:
        known = dotted in line.releases
        note = (f"{name} is {data.label(line.status)} as of {data.as_of}"
                + ("" if known else f"; {dotted} is not a release this table lists"))
        return Support(dotted, name, line.status, data.label(line.status), known, data.as_of,
                       note)
    newest = data.lines[0].series if data.lines else (0, 0)
    active = [item.series for item in data.lines
              if item.status is not SupportStatus.END_OF_SUPPORT]
    if series > newest:
        status = SupportStatus.UNKNOWN
        note = f"{name} is newer than this gpu-triage's release table (as of {data.as_of})"
    elif active and series < min(active):
        status = data.older
        note = f"{name} is older than every supported line as of {data.as_of}"
    else:
        status = SupportStatus.UNKNOWN
        note = f"{name} is not a release line this table lists (as of {data.as_of})"
    return Support(dotted, name, status, data.label(status), False, data.as_of, note)
