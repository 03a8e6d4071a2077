"""Fixtures for the report tests: inline bundles analysed once per session.

Helpers shared by the tests are in ``report_support.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import report_bundles as bundles  # noqa: E402
from kit.bundles import write_dir  # noqa: E402
from report_support import analyse_dir  # noqa: E402

from analyzers.results.models import Report  # noqa: E402


@pytest.fixture(scope="session")
def bundle_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("report-bundles")
    cluster = {"context": "prod-east", "server_version": "v1.37.1"}
    return {
        "incident": write_dir(root / "incident", bundles.incident_files(),
                              bundles.INCIDENT_GAPS, cluster=cluster),
        "healthy": write_dir(root / "healthy", bundles.healthy_files(), cluster=cluster),
        "hostile": write_dir(root / "hostile", bundles.hostile_files(),
                             bundles.INCIDENT_GAPS, cluster=cluster),
    }


@pytest.fixture(scope="session")
def analysed(bundle_dirs: dict[str, Path]) -> dict[str, Report]:
    """Each inline bundle analysed by the real engine with every installed rule."""
    return {name: analyse_dir(path) for name, path in bundle_dirs.items()}
