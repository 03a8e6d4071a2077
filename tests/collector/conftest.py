"""Fixtures for the collector tests (see collector_support.py)."""

import pytest
from collector_support import FakeCluster


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """The fixture cluster behind a fake kubectl/ssh (no helm binary: Helm data from Secrets)."""
    return FakeCluster(tmp_path, monkeypatch)


@pytest.fixture
def cluster_with_helm(tmp_path, monkeypatch):
    """The same cluster with a fake helm binary on PATH."""
    return FakeCluster(tmp_path, monkeypatch, helm=True)
