"""The GPU Operator release table (data) and how a version string maps to support."""

from __future__ import annotations

import pytest

from analyzers.knowledge import releases
from analyzers.knowledge.releases import SupportStatus
from bundle import versions


@pytest.mark.parametrize(("text", "version", "status", "known"), [
    ("nvcr.io/nvidia/gpu-operator:v26.7.0", "26.7.0", SupportStatus.SUPPORTED, True),
    ("v26.3.1", "26.3.1", SupportStatus.DEPRECATED, True),
    ("gpu-operator-v26.3.9", "26.3.9", SupportStatus.DEPRECATED, False),
    ("gpu-operator-v25.10.1", "25.10.1", SupportStatus.END_OF_SUPPORT, True),
    ("24.3.0", "24.3.0", SupportStatus.END_OF_SUPPORT, False),      # older than the table
    ("v22.9.2", "22.9.2", SupportStatus.END_OF_SUPPORT, False),
    ("v27.1.0", "27.1.0", SupportStatus.UNKNOWN, False),            # newer than the table
])
def test_support_status_of_versions(text: str, version: str, status: SupportStatus,
                                    known: bool) -> None:
    found = releases.support(text)
    assert found is not None
    assert (found.version, found.status, found.known_release) == (version, status, known)
    assert found.label == releases.table().label(status)
    assert found.as_of in found.note


@pytest.mark.parametrize("text", ["latest", "", None, "v1.37.1", "sha256:abcdef", "v26.3"])
def test_strings_without_an_operator_version_give_none(text: str | None) -> None:
    assert releases.support(text) is None


def test_table_follows_the_lifecycle_policy() -> None:
    """Newest line Supported, the one before Deprecated, every older one End of Support."""
    table = releases.table()
    statuses = [line.status for line in table.lines]
    assert statuses[0] is SupportStatus.SUPPORTED
    assert statuses[1] is SupportStatus.DEPRECATED
    assert set(statuses[2:]) == {SupportStatus.END_OF_SUPPORT}
    assert table.older is SupportStatus.END_OF_SUPPORT
    for line in table.lines:
        assert line.releases, line.name
        assert all(versions.operator_release(r)[:2] == line.series  # type: ignore[index]
                   for r in line.releases)
    assert [line.series for line in table.lines] == sorted(
        (line.series for line in table.lines), reverse=True)
