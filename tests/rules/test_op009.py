"""OP009: MIG configs the GPU cannot hold, failed MIG manager, MIG on non-MIG GPUs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kit import analyse, paths, status
from kit import findings as of_rule
from kit.cluster import NS, Cluster, gpu_node, operand_pod, smi_xml

from analyzers.facts import mig
from analyzers.results.models import RuleStatus, Severity

CONFIG = """version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false

  # eight on a 40GB A100 cannot work: it has 7 compute slices
  all-1g.5gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 8

  all-balanced:
    - device-filter: ["0x20B010DE", "0x20B110DE"]
      devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}

  too-much-memory:
    - devices: [0]
      mig-enabled: true
      mig-devices: {"3g.20gb": 2, "1g.5gb": 1}
"""


def _configmap(text: str = CONFIG) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "default-mig-parted-config", "namespace": NS},
            "data": {"config.yaml": text}}


def _mig_cluster(config: str, state: str = "failed", **gpu: str) -> Cluster:
    cluster = Cluster()
    cluster.configmaps.append(_configmap())
    cluster.nodes["gpu-a"] = gpu_node("gpu-a", labels={
        "nvidia.com/mig.config": config, "nvidia.com/mig.config.state": state,
        "nvidia.com/mig.capable": "true", "nvidia.com/gpu.deploy.mig-manager": "true"})
    cluster.files["nodes/gpu-a/nvidia-smi.xml"] = smi_xml([{"mig": "Enabled", **gpu}])
    return cluster


def test_too_many_instances_on_an_a100_40gb(tmp_path: Path) -> None:
    cluster = _mig_cluster("all-1g.5gb")
    cluster.put(operand_pod("nvidia-mig-manager", "gpu-a"))
    log = cluster.log("nvidia-mig-manager", "gpu-a", "nvidia-mig-manager", [
        "Asserting that the requested configuration is present in the configuration file",
        "Unable to validate the selected MIG configuration",
        "Changing the 'nvidia.com/mig.config.state' node label to 'failed'"])
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP009")
    assert sorted(found) == ["OP009:gpu-a"]
    op = found["OP009:gpu-a"]
    assert op.severity is Severity.HIGH
    assert "the MIG manager failed to apply all-1g.5gb" in op.summary
    assert "8 x 1g.5gb requested, A100 40GB holds at most 7 (GPU 0)" in op.summary
    pointers = [(e.path, e.pointer) for e in op.evidence]
    assert ("cluster/nodes.json", "/items/1/metadata/labels/nvidia.com~1mig.config.state"
            ) in pointers
    assert ("cluster/configmaps.json", "/items/0/data/config.yaml") in pointers
    assert (log, 2) in paths(op) and (log, 3) in paths(op)


def test_slices_exceeded_and_undefined_config(tmp_path: Path) -> None:
    op = of_rule(analyse(_mig_cluster("too-much-memory"), tmp=tmp_path / "a"),
                 "OP009")["OP009:gpu-a"]
    assert "the layout needs 9 memory slices, A100 40GB has 8" in op.summary
    op = of_rule(analyse(_mig_cluster("custom-typo"), tmp=tmp_path / "b"), "OP009")["OP009:gpu-a"]
    assert "the selected config custom-typo is not defined in ConfigMap " \
           "default-mig-parted-config" in op.summary


def test_mig_requested_on_a_geforce(tmp_path: Path) -> None:
    cluster = _mig_cluster("all-1g.5gb", state="pending", product="NVIDIA GeForce RTX 4090",
                           brand="GeForce", device_id="268410DE", mig="N/A")
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP009")["OP009:gpu-a"]
    assert "MIG is requested on NVIDIA GeForce RTX 4090, which does not support MIG" in op.summary
    assert ("nodes/gpu-a/nvidia-smi.xml", 10) in paths(op)  # <current_mig>N/A


def test_supported_layouts_and_disabled_mig_are_quiet(tmp_path: Path) -> None:
    cluster = _mig_cluster("all-balanced", state="success")
    cluster.nodes["gpu-b"] = gpu_node("gpu-b", labels={"nvidia.com/mig.config": "all-disabled",
                                                       "nvidia.com/mig.config.state": "success"})
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP009") == {}
    assert status(report, "OP009") is RuleStatus.PASSED


@pytest.mark.parametrize(("product", "device", "counts", "problem"), [
    ("NVIDIA A100-SXM4-40GB", "20B010DE", {"1g.5gb": 7}, None),
    ("NVIDIA A100-SXM4-40GB", None, {"1g.10gb": 4}, None),
    ("NVIDIA A100 80GB PCIe", "20B510DE", {"1g.5gb": 1}, "profile 1g.5gb does not exist"),
    ("NVIDIA H100 80GB HBM3", "233010DE", {"3g.40gb": 2}, None),
    ("NVIDIA H100 NVL", "232110DE", {"7g.94gb": 1}, None),
    ("NVIDIA H200", "233510DE", {"2g.35gb": 4}, "holds at most 3"),
    ("NVIDIA A30", "20B710DE", {"2g.12gb": 2, "1g.6gb": 1}, "memory slices"),
    ("NVIDIA-A100-SXM4-40GB", None, {"4g.20gb": 1, "3g.20gb": 1}, None),
])
def test_profile_table(product: str, device: str | None, counts: dict[str, int],
                       problem: str | None) -> None:
    model = mig.model_for(product, mig.device_id(device))
    assert model is not None
    found = model.problems(counts)
    if problem is None:
        assert found == []
    else:
        assert any(problem in f for f in found), found


def test_unknown_gpus_have_no_table_entry() -> None:
    assert mig.model_for("NVIDIA GeForce RTX 4090", mig.device_id("268410DE")) is None
    assert mig.model_for("Tesla T4", None) is None


def test_mig_parted_config_reader() -> None:
    configs = mig.parse_configs(CONFIG)
    assert sorted(configs) == ["all-1g.5gb", "all-balanced", "all-disabled", "too-much-memory"]
    balanced = configs["all-balanced"][0]
    assert balanced.device_filter == ("20B0", "20B1")
    assert balanced.counts == {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
    assert balanced.applies(3, "20B0") and not balanced.applies(0, "2330")
    assert configs["too-much-memory"][0].devices == (0,)
    with pytest.raises(ValueError):
        mig.parse_configs("mig-configs: [1, 2]")


