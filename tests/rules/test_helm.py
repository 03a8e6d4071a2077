"""HELM001 (values dropped by an upgrade) and HELM002 (stuck release)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse

pass


def _rev(n: int, status: str, values: dict[str, Any], desc: str = "Upgrade complete") -> dict:  # type: ignore[type-arg]
    return {"revision": n, "status": status, "chart": "gpu-operator-v26.3.3",
            "app_version": "v26.3.3", "updated": f"2026-11-2{n}T10:00:00Z",
            "description": desc, "values": values}


HOST_DRIVER = {"driver": {"enabled": False}, "toolkit": {"enabled": False}}


def test_helm001_upgrade_without_reuse_values_drops_driver_enabled(tmp_path: Path) -> None:
    history = [_rev(1, "superseded", HOST_DRIVER, "Install complete"),
               _rev(2, "deployed", {"toolkit": {"enabled": True}})]
    found = analyse({"cluster/helm/gpu-operator.json": history}, tmp=tmp_path).by_id()
    finding = found["HELM001:gpu-operator/2"]
    assert finding.severity.value == "high"
    assert "driver.enabled: false → (unset, chart default true)" in finding.summary
    assert "driver container over the host driver" in finding.summary
    assert finding.evidence[0].pointer == "/0/values/driver/enabled"
    assert "--reuse-values --set driver.enabled=false" in finding.remediation
    assert "HELM002:gpu-operator" not in found


def test_helm001_explicit_change_is_deliberate_but_a_dropped_one_is_not(tmp_path: Path) -> None:
    history = [_rev(1, "superseded", {"mig": {"strategy": "mixed"}, "psa": {"enabled": True}}),
               _rev(2, "deployed", {"mig": {"strategy": "single"}})]
    found = analyse({"cluster/helm/gpu-operator.json": history}, tmp=tmp_path).by_id()
    finding = found["HELM001:gpu-operator/2"]
    assert "psa.enabled: true → (unset, chart default applies)" in finding.summary
    assert "mig.strategy" not in finding.summary
    assert finding.severity.value == "medium"


def test_helm002_pending_upgrade_names_the_rollback_target(tmp_path: Path) -> None:
    history = [_rev(1, "superseded", HOST_DRIVER), _rev(2, "deployed", HOST_DRIVER),
               _rev(3, "pending-upgrade", HOST_DRIVER, "Preparing upgrade")]
    found = analyse({"cluster/helm/gpu-operator.json": history}, tmp=tmp_path).by_id()
    stuck = found["HELM002:gpu-operator"]
    assert "pending-upgrade at revision 3" in stuck.summary
    assert "rollback gpu-operator 2" in stuck.remediation
    assert stuck.evidence[0].pointer == "/2"
