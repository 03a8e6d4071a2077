"""Issue 25: every rule on healthy clusters unlike the one the rules were written for
(``lookalikes_kit``): nothing at medium or above, and no ``passed`` where the rule's
claim has nothing to rest on (no operator, no containerd CRI, no node files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kit import lookalikes as kit

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.facts.operator_presence import STANDALONE
from analyzers.facts.preconditions import Need
from analyzers.results.models import Report, Severity
from bundle import open_bundle

LOUD = {Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL}
NO_OPERATOR = ("standalone-plugin", "standalone-dcgm-exporter", "docker-dockershim",
               "docker-cri-dockerd", "gke-managed", "eks-managed", "aks-managed",
               "talos-no-node-files", "bottlerocket-no-node-files")
DOCKER = ("docker-dockershim", "docker-cri-dockerd")
NO_NODE_FILES = ("gke-managed", "aks-managed", "talos-no-node-files",
                 "bottlerocket-no-node-files", "must-gather")
# Rules that read only node files (the cluster lists corroborate at most).
NODE_ONLY = ("RT001", "RT002", "RT003", "RT004", "RT005", "RT011", "RT012", "RT014",
             "DRV001", "DRV002", "DRV003", "DRV004", "DRV005", "DRV006", "DRV007", "DRV008",
             "DRV010", "DRV011")
CONTAINERD_RULES = ("RT001", "RT002", "RT003", "RT004", "RT005", "RT009", "RT011", "RT012")


def run(tmp_path: Path, name: str) -> Report:
    root = kit.LOOKALIKES[name](tmp_path / name)
    with open_bundle(root) as bundle:
        return analyze(bundle, discover().rules)


def statuses(report: Report) -> dict[str, tuple[str, str | None]]:
    return {r.rule_id: (r.status.value, r.reason) for r in report.rules}


@pytest.mark.parametrize("name", list(kit.LOOKALIKES))
def test_nothing_at_medium_or_above(tmp_path: Path, name: str) -> None:
    report = run(tmp_path, name)
    assert [(f.id, f.severity.value) for f in report.findings if f.severity in LOUD] == []
    assert [r.rule_id for r in report.rules if r.status.value == "error"] == []


@pytest.mark.parametrize("name", NO_OPERATOR)
def test_operator_rules_are_skipped_without_the_operator(tmp_path: Path, name: str) -> None:
    found = statuses(run(tmp_path, name))
    operator_rules = sorted(r.rule.id for r in discover().rules if Need.OPERATOR in r.rule.needs)
    # the registry's list is not empty and holds the rules the issue names
    assert {"OP001", "OP016", "HELM001", "HELM002", "CFG001"} <= set(operator_rules)
    for rule_id in [*operator_rules, "OP003", "OP006"]:
        state, reason = found[rule_id]
        assert state == "skipped", (rule_id, state, reason)
        assert reason is not None and reason.startswith(STANDALONE[:40]), (rule_id, reason)


@pytest.mark.parametrize("name", DOCKER)
def test_containerd_rules_are_skipped_on_docker_nodes(tmp_path: Path, name: str) -> None:
    found = statuses(run(tmp_path, name))
    for rule_id in CONTAINERD_RULES:
        state, reason = found[rule_id]
        assert state == "skipped", (rule_id, state, reason)
        assert reason is not None
        if rule_id == "RT009":  # the toolkit's template: the operator's absence is named first
            continue
        shim, basis = (("cri-dockerd", "kubelet --container-runtime-endpoint=unix:///var/"
                        "run/cri-dockerd.sock (nodes/gpu-a/host/kubelet.txt)")
                       if name.endswith("cri-dockerd") else
                       ("dockershim", "kubelet --container-runtime=docker (nodes/gpu-a/host/"
                        "kubelet.txt)"))
        assert reason == (f"no GPU node runs containerd as its CRI: docker ({shim}) on 4 "
                          f"node(s) (gpu-a: {basis})"), reason
    assert found["RT010"][0] == "skipped"          # no CRI-O either
    assert found["RT015"][0] == "passed"           # daemon.json has nvidia as the default


@pytest.mark.parametrize("name", NO_NODE_FILES)
def test_node_rules_never_pass_without_node_files(tmp_path: Path, name: str) -> None:
    found = statuses(run(tmp_path, name))
    for rule_id in NODE_ONLY:
        assert found[rule_id][0] != "passed", (rule_id, found[rule_id])
    if name != "must-gather":
        assert found["RT010"][0] == "skipped"
        assert found["RT015"][0] == "skipped"
    # the fabric is judged from nvidia-smi and the FM journal: without them, partial
    state, reason = found["OP005"]
    assert state == "partial" and reason is not None and "have no node files" in reason


@pytest.mark.parametrize("name", NO_NODE_FILES)
def test_drv009_never_passes_without_node_files(tmp_path: Path, name: str) -> None:
    state, reason = statuses(run(tmp_path, name))["DRV009"]
    if name == "must-gather":  # no manifest.json: its required input
        assert state == "skipped" and reason
    else:
        assert state == "partial" and reason is not None and "nvidia-smi run" in reason


def test_the_look_alikes_are_what_they_say(tmp_path: Path) -> None:
    """The kit's changes took: no operator pod, docker nodes, no node directories."""
    standalone = kit.LOOKALIKES["standalone-plugin"](tmp_path / "s")
    manifest = json.loads((standalone / "manifest.json").read_text())
    assert manifest["operator_namespace"] is None
    pods = json.loads((standalone / "cluster" / "pods.json").read_text())["items"]
    assert not [p for p in pods if p["metadata"]["namespace"] == "gpu-operator"]
    assert sorted(p["metadata"]["name"] for p in pods
                  if p["metadata"]["namespace"] == "kube-system"
                  and p["metadata"]["name"].startswith("nvidia-device-plugin-daemonset-")) == [
        "nvidia-device-plugin-daemonset-kx7q0", "nvidia-device-plugin-daemonset-kx7q1",
        "nvidia-device-plugin-daemonset-kx7q2", "nvidia-device-plugin-daemonset-kx7q3"]
    docker = kit.LOOKALIKES["docker-cri-dockerd"](tmp_path / "d")
    nodes = json.loads((docker / "cluster" / "nodes.json").read_text())["items"]
    assert {n["status"]["nodeInfo"]["containerRuntimeVersion"] for n in nodes} == {
        "docker://24.0.7"}
    assert (docker / "nodes/gpu-a/docker/files/etc/docker/daemon.json").is_file()
    assert not (kit.LOOKALIKES["talos-no-node-files"](tmp_path / "t") / "nodes").exists()


def test_a_standalone_plugin_is_no_operand(tmp_path: Path) -> None:
    """Case 1: the static manifest's pods in kube-system (operator_namespace null) are a
    standalone component, not operator operands, so nothing says the operator runs."""
    from analyzers.facts import Facts

    root = kit.LOOKALIKES["standalone-plugin"](tmp_path / "s")
    with open_bundle(root) as bundle:
        facts = Facts(bundle)
        assert facts.operator_namespace is None
        assert facts.operands == {}
        assert facts.operator_signs == []
        plugin = facts.components["device-plugin"]
        assert plugin.managed_by == "standalone"
        assert sorted(p.name for p in plugin.pods)[0] == "nvidia-device-plugin-daemonset-kx7q0"
        assert facts.components["toolkit"].managed_by == "absent"
        assert sorted(facts.device_plugins) == ["gpu-a", "gpu-b", "gpu-c", "gpu-d"]
    with open_bundle(kit.LOOKALIKES["operator-host-driver"](tmp_path / "o")) as bundle:
        facts = Facts(bundle)
        assert facts.components["device-plugin"].managed_by == "operator"
        assert facts.components["driver"].managed_by == "absent"  # driver.enabled=false
