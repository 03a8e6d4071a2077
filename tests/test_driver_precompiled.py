"""``driver.usePrecompiled`` is read once (Facts.driver_precompiled): OP010's view of the
driver pod and DRV004's "built on the node" used to read it two ways, and disagreed on
the text "true" (OP010 saw a build on the node, DRV004 precompiled images)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kit.bundles import write_dir
from kit.cluster import Cluster, operand_pod

from analyzers.facts import Facts
from analyzers.facts.secureboot import builds_module_on_node
from analyzers.rule import Context
from bundle import open_bundle

DRIVER = "nvidia-driver-daemonset"


@pytest.mark.parametrize(("value", "precompiled"), [
    (True, True), ("true", True), (False, False), (None, False)])
def test_one_reading_of_use_precompiled(tmp_path: Path, value: Any, precompiled: bool) -> None:
    cluster = Cluster()
    cluster.put(operand_pod(DRIVER, "gpu-a"))  # image tag without the node's kernel
    assert cluster.policies is not None
    if value is not None:
        cluster.policies[0]["spec"]["driver"]["usePrecompiled"] = value
    with open_bundle(write_dir(tmp_path / "b", cluster.bundle_files())) as opened:
        facts = Facts(opened)
        assert facts.driver_precompiled is precompiled
        assert facts.driver_kernel["gpu-a"].precompiled is precompiled
        ctx = Context(opened, facts, [])
        assert builds_module_on_node(ctx.facts, "gpu-a") is not precompiled
