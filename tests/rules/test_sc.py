"""SC001-SC006: the number gate, decided from the numbers, with exact subjects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kit import analyse, findings
from kit.gate import GPU, container, gpu_node, insufficient, pod_event, raw_findings, workload
from kit.gate import bundle_files as gate_files
from kit.objects import DUMP_WITHOUT_NVIDIA, runtime_class

from analyzers.results.models import Severity
from analyzers.rules.sc.SC001 import InsufficientGPU
from analyzers.rules.sc.SC005 import AdmissionAllocateFailed

MIG = "nvidia.com/mig-1g.5gb"
SHARED = "nvidia.com/gpu.shared"

TITLES = {
    "full": "GPU pod pending: every node that could hold it is full",
    "unhealthy": "GPU pod pending: unhealthy devices (capacity > allocatable)",
    "not-advertised": "GPU resource not advertised by any node",
    "exceeds": "GPU pod pending: request exceeds every node's allocatable",
}


def _one_node(tmp_path: Path, capacity: int | None, allocatable: int | None, assigned: int,
              request: int, resource: str = GPU) -> dict[str, Any]:
    """gpu-a with these numbers, a holder pod of ``assigned``, and ml/trainer asking
    for ``request``; returns the SC001 findings by id."""
    pods = [workload("trainer", gpus=request, resource=resource)]
    if assigned:
        pods.append(workload("holder", "gpu-a", gpus=assigned, resource=resource))
    report = analyse(gate_files(nodes=[gpu_node("cp-1", gpu_label=False),
                        gpu_node("gpu-a", capacity, allocatable, resource=resource)],
                 pods=pods,
                 events=[pod_event("trainer", "FailedScheduling", insufficient(2, 1, resource))]),
                     tmp=tmp_path)
    return findings(report, "SC001")


# ------------------------------------------------------------------------------ SC001

# One number changes between neighbouring rows; the branch follows the numbers only.
BRANCHES = [
    # capacity, allocatable, assigned, request -> branch (None: no finding, it fits)
    pytest.param(4, 4, 4, 1, "full", "capacity 4, allocatable 4, assigned 4, free 0",
                 id="full"),
    pytest.param(5, 4, 4, 1, "unhealthy", "capacity 5, allocatable 4, assigned 4, free 0",
                 id="capacity-up-one-is-unhealthy"),
    pytest.param(4, 4, 3, 1, None, "", id="assigned-down-one-fits"),
    pytest.param(4, 4, 4, 5, "exceeds", "capacity 4, allocatable 4, assigned 4, free 0",
                 id="request-above-capacity-exceeds"),
    pytest.param(4, 4, 0, 5, "exceeds", "capacity 4, allocatable 4, assigned 0, free 4",
                 id="empty-node-still-exceeds"),
    pytest.param(5, 4, 0, 5, "unhealthy", "capacity 5, allocatable 4, assigned 0, free 4",
                 id="request-over-allocatable-within-capacity-is-unhealthy"),
    pytest.param(4, 0, 0, 1, "unhealthy", "capacity 4, allocatable 0, assigned 0, free 0",
                 id="plugin-disconnected-allocatable-zero"),
    pytest.param(0, 0, 0, 1, "not-advertised", "capacity 0, allocatable 0, assigned 0, free 0",
                 id="capacity-zero-not-advertised"),
    pytest.param(None, None, 0, 1, "not-advertised", "capacity -, allocatable -, assigned 0",
                 id="resource-absent-not-advertised"),
    pytest.param(5, 4, 5, 1, "full", "capacity 5, allocatable 4, assigned 5, free 0",
                 id="unhealthy-but-full-even-if-healed"),
]


@pytest.mark.parametrize(("cap", "alloc", "assigned", "asks", "branch", "cells"), BRANCHES)
def test_sc001_branch_follows_the_numbers(tmp_path: Path, cap: int | None, alloc: int | None,
                                          assigned: int, asks: int, branch: str | None,
                                          cells: str) -> None:
    found = _one_node(tmp_path, cap, alloc, assigned, asks)
    if branch is None:
        assert found == {}
        return
    assert list(found) == ["SC001:ml/trainer"]
    finding = found["SC001:ml/trainer"]
    assert finding.title == TITLES[branch]
    rows = [e for e in finding.evidence if e.path == "cluster/nodes.json"]
    assert len(rows) == 1
    assert rows[0].excerpt.startswith(f"gpu-a {GPU}: {cells}")
    assert f"the numbers say: {branch}." in finding.summary
    assert finding.objects[0].name == "trainer"


def test_sc001_per_node_table_two_nodes(tmp_path: Path) -> None:
    report = analyse(gate_files(
        nodes=[gpu_node("gpu-a", 8, 7), gpu_node("gpu-b", 4, 4),
               gpu_node("cp-1", gpu_label=False)],
        pods=[workload("trainer", gpus=1), workload("a1", "gpu-a", gpus=7),
              workload("b1", "gpu-b", gpus=2, owner="b"), workload("b2", "gpu-b", gpus=2)],
        events=[pod_event("trainer", "FailedScheduling", insufficient(3, 2))]), tmp=tmp_path)
    finding = findings(report, "SC001")["SC001:ml/trainer"]
    # gpu-a would fit if its unhealthy device were back: the unhealthy branch, not "full".
    assert finding.title == TITLES["unhealthy"]
    assert finding.nodes == ["gpu-a"]
    assert "Per node (capacity/allocatable/assigned/free): gpu-a 8/7/7/0 (1 unhealthy), " \
           "gpu-b 4/4/4/0." in finding.summary
    assert "gpu-a has capacity 8 but allocatable 7: 1 device(s) marked unhealthy" \
        in finding.summary
    rows = {e.excerpt.split(" ", 1)[0]: e for e in finding.evidence
            if e.path == "cluster/nodes.json"}
    assert sorted(rows) == ["gpu-a", "gpu-b"]
    assert rows["gpu-a"].pointer == "/items/0/status/allocatable/nvidia.com~1gpu"
    assert rows["gpu-a"].excerpt == ("gpu-a nvidia.com/gpu: capacity 8, allocatable 7, "
                                     "assigned 7, free 0 (1 unhealthy)")
    assert rows["gpu-b"].excerpt == ("gpu-b nvidia.com/gpu: capacity 4, allocatable 4, "
                                     "assigned 4, free 0")
    assert finding.evidence[0].path == "cluster/events.json"
    assert any(e.pointer == "/items/0/spec/containers/0/resources/limits/nvidia.com~1gpu"
               for e in finding.evidence)


def test_sc001_event_says_insufficient_numbers_say_unhealthy(tmp_path: Path) -> None:
    found = _one_node(tmp_path, 8, 7, 7, 1)
    finding = found["SC001:ml/trainer"]
    assert ("The scheduler's event says 'Insufficient nvidia.com/gpu'; the numbers say: "
            "unhealthy.") in finding.summary
    assert finding.severity is Severity.HIGH


def test_sc001_without_event_still_decides_from_numbers(tmp_path: Path) -> None:
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 2, 2)],
                 pods=[workload("trainer", gpus=1), workload("h", "gpu-a", gpus=2)]), tmp=tmp_path)
    finding = findings(report, "SC001")["SC001:ml/trainer"]
    assert finding.title == TITLES["full"]
    assert "event says" not in finding.summary
    assert "gpu-a 2 of 2 assigned" in finding.summary
    assert "held by ml/h" in finding.summary


def test_sc001_pod_status_condition_is_quoted_without_events(tmp_path: Path) -> None:
    message = insufficient(1, 1)
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 2, 2)],
                 pods=[workload("trainer", gpus=1, scheduling_message=message),
                       workload("h", "gpu-a", gpus=2)]), tmp=tmp_path)
    finding = findings(report, "SC001")["SC001:ml/trainer"]
    assert finding.evidence[0].pointer == "/items/0/status/conditions/0/message"


def test_sc001_mig_resource_full(tmp_path: Path) -> None:
    found = _one_node(tmp_path, 7, 7, 7, 1, resource=MIG)
    finding = found["SC001:ml/trainer"]
    assert finding.title == TITLES["full"]
    rows = [e for e in finding.evidence if e.path == "cluster/nodes.json"]
    assert rows[0].excerpt == (f"gpu-a {MIG}: capacity 7, allocatable 7, assigned 7, free 0")


def test_sc001_mig_resource_not_advertised_names_the_strategy(tmp_path: Path) -> None:
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 1, 1)],
                 pods=[workload("trainer", gpus=1, resource=MIG)]), tmp=tmp_path)
    finding = findings(report, "SC001")["SC001:ml/trainer"]
    assert finding.title == TITLES["not-advertised"]
    assert f"no node advertises {MIG}" in finding.summary
    assert "other NVIDIA resources instead (nvidia.com/gpu on gpu-a)" in finding.summary
    assert "'mixed' MIG strategy" in finding.summary
    assert finding.caused_by == []  # gpu-a's plugin is registered: no OP008 link


def test_sc001_shared_resource_full_and_not_advertised(tmp_path: Path) -> None:
    full = _one_node(tmp_path / "full", 4, 4, 4, 1, resource=SHARED)
    assert full["SC001:ml/trainer"].title == TITLES["full"]
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)],
                 pods=[workload("trainer", gpus=1, resource=SHARED)]), tmp=tmp_path / "absent")
    finding = findings(report, "SC001")["SC001:ml/trainer"]
    assert finding.title == TITLES["not-advertised"]
    assert "renameByDefault: true" in finding.summary


def test_sc001_init_container_max_rule(tmp_path: Path) -> None:
    def holder(init_gpus: int) -> dict[str, Any]:
        return workload("holder", "gpu-a", containers=[
            container("a", limits={GPU: 1}), container("b", limits={GPU: 1})],
            init=[container("prep", limits={GPU: init_gpus})])

    # max(init 3, apps 1+1) = 3 held of 4: one free, the pending pod fits.
    quiet = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)],
                pods=[workload("trainer", gpus=1), holder(3)]), tmp=tmp_path / "fits")
    assert findings(quiet, "SC001") == {}
    # max(init 4, apps 2) = 4 held of 4: full.
    full = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)],
               pods=[workload("trainer", gpus=1), holder(4)]), tmp=tmp_path / "full")
    finding = findings(full, "SC001")["SC001:ml/trainer"]
    assert "assigned 4, free 0" in [e for e in finding.evidence
                                    if e.path == "cluster/nodes.json"][0].excerpt
    # The pending pod's own request follows the same rule: init 3 > apps 1 → asks for 3.
    pending = workload("trainer", containers=[container(limits={GPU: 1})],
                       init=[container("prep", limits={GPU: 3})])
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 2, 2)], pods=[pending]),
                     tmp=tmp_path / "own")
    finding = findings(report, "SC001")["SC001:ml/trainer"]
    assert finding.title == TITLES["exceeds"]
    assert finding.summary.startswith("Pod ml/trainer asks for 3 nvidia.com/gpu")


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_sc001_terminated_pods_hold_no_devices(tmp_path: Path, phase: str) -> None:
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)],
                 pods=[workload("trainer", gpus=1),
                       workload("done", "gpu-a", gpus=4, phase=phase)],
                 events=[pod_event("trainer", "FailedScheduling", insufficient(1, 1))]),
                     tmp=tmp_path)
    assert findings(report, "SC001") == {}


def test_sc001_not_advertised_links_runtime_and_plugin(tmp_path: Path) -> None:
    nodes = [gpu_node("gpu-a"), gpu_node("gpu-b", 1, 1), gpu_node("cp-1", gpu_label=False)]
    pods = [workload("trainer", gpus=2)]
    files = {"nodes/gpu-a/containerd/config-dump.toml": DUMP_WITHOUT_NVIDIA}
    raw = raw_findings(tmp_path / "raw", InsufficientGPU, nodes=nodes, pods=pods, files=files)
    assert [f.id for f in raw] == ["SC001:ml/trainer"]
    # gpu-b advertises 1: the request of 2 exceeds it, but gpu-a advertises nothing.
    assert raw[0].title == TITLES["exceeds"]
    nodes[1] = gpu_node("gpu-b")
    raw = raw_findings(tmp_path / "raw2", InsufficientGPU, nodes=nodes, pods=pods, files=files)
    finding = raw[0]
    assert finding.title == TITLES["not-advertised"]
    assert finding.caused_by == ["OP008:gpu-a", "OP008:gpu-b", "RT001:gpu-a"]
    assert finding.nodes == ["gpu-a", "gpu-b"]
    assert "containerd on gpu-a has no nvidia runtime" in finding.summary
    # Through the engine, the link to the RT001 finding that exists is kept.
    report = analyse(gate_files(nodes=nodes, pods=pods, files=files,
                 runtimeclasses=[runtime_class("nvidia")]), tmp=tmp_path / "engine")
    linked = findings(report, "SC001")["SC001:ml/trainer"]
    present = report.by_id()
    assert "RT001:gpu-a" in linked.caused_by
    assert linked.caused_by == [link for link in finding.caused_by if link in present]
    assert "SC001:ml/trainer" in present["RT001:gpu-a"].causes


XID_79 = ("2026-11-29T10:11:12,000000+00:00 NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
          "name=<unknown>, GPU has fallen off the bus.\n")
XID_13 = ("2026-11-29T10:11:12,000000+00:00 NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, "
          "name=python, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0)\n")


def test_sc001_unhealthy_links_kernel_faults(tmp_path: Path) -> None:
    nodes = [gpu_node("gpu-a", 8, 7)]
    pods = [workload("trainer", gpus=8)]
    raw = raw_findings(tmp_path / "xid", InsufficientGPU, nodes=nodes, pods=pods,
                       files={"nodes/gpu-a/dmesg.txt": XID_79})
    finding = raw[0]
    assert finding.title == TITLES["unhealthy"]
    assert finding.caused_by == ["DRV001:gpu-a/0000:3b:00.0", "DRV002:gpu-a/0000:3b:00.0"]
    assert any(e.path == "nodes/gpu-a/dmesg.txt" and e.line == 1 for e in finding.evidence)
    # An application Xid does not make a device unhealthy: no link.
    quiet = raw_findings(tmp_path / "app", InsufficientGPU, nodes=nodes, pods=pods,
                         files={"nodes/gpu-a/dmesg.txt": XID_13})
    assert quiet[0].caused_by == []


def test_sc001_plugin_disconnect_links_op008(tmp_path: Path) -> None:
    raw = raw_findings(tmp_path, InsufficientGPU, nodes=[gpu_node("gpu-a", 4, 0)],
                       pods=[workload("trainer", gpus=1)])
    assert raw[0].caused_by == ["OP008:gpu-a"]
    assert "5-minute grace period" in raw[0].summary


def test_sc001_excluded_nodes_do_not_make_it_fit(tmp_path: Path) -> None:
    taint = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
    report = analyse(gate_files(
        nodes=[gpu_node("gpu-a", 4, 4, taints=[taint]), gpu_node("gpu-b", 4, 4)],
                 pods=[workload("trainer", gpus=1), workload("h", "gpu-b", gpus=4)]), tmp=tmp_path)
    finding = findings(report, "SC001")["SC001:ml/trainer"]
    assert finding.title == TITLES["full"]
    assert finding.nodes == ["gpu-b"]
    assert "gpu-a 4/4/0/4 (excluded)" in finding.summary
    assert findings(report, "SC002") == {}


# ------------------------------------------------------------------------------ SC002

TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def test_sc002_untolerated_taint_is_named(tmp_path: Path) -> None:
    message = ("0/3 nodes are available: 1 node(s) had untolerated taint "
               "{node-role.kubernetes.io/control-plane: }, 2 node(s) had untolerated taint "
               "{nvidia.com/gpu: present}. preemption: 0/3 nodes are available: 3 Preemption "
               "is not helpful for scheduling.")
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4, taints=[TAINT]),
                        gpu_node("gpu-b", 4, 4, taints=[TAINT]),
                        gpu_node("cp-1", gpu_label=False)],
                 pods=[workload("trainer", gpus=1)],
                 events=[pod_event("trainer", "FailedScheduling", message)]), tmp=tmp_path)
    assert findings(report, "SC001") == {}
    found = findings(report, "SC002")
    assert list(found) == ["SC002:ml/trainer"]
    finding = found["SC002:ml/trainer"]
    assert ("every node that advertises it (gpu-a, gpu-b) excludes the pod: taint "
            "nvidia.com/gpu=present:NoSchedule on gpu-a, gpu-b.") in finding.summary
    pointers = {(e.path, e.pointer) for e in finding.evidence}
    assert ("cluster/nodes.json", "/items/0/spec/taints/0") in pointers
    assert ("cluster/events.json", "/items/0/message") in pointers
    assert "tolerations: [{key: nvidia.com/gpu, operator: Equal, value: present, " \
           "effect: NoSchedule}]" in finding.remediation


@pytest.mark.parametrize("toleration", [
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"},
    {"operator": "Exists"},
])
def test_sc002_tolerated_taint_is_quiet(tmp_path: Path, toleration: dict[str, str]) -> None:
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4, taints=[TAINT])],
                 pods=[workload("trainer", gpus=1, tolerations=[toleration])]), tmp=tmp_path)
    assert findings(report, "SC002") == {}
    assert findings(report, "SC001") == {}


def test_sc002_prefer_no_schedule_does_not_block(tmp_path: Path) -> None:
    soft = {"key": "gpu", "value": "yes", "effect": "PreferNoSchedule"}
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4, taints=[soft])],
                 pods=[workload("trainer", gpus=1)]), tmp=tmp_path)
    assert findings(report, "SC002") == {}


def test_sc002_node_selector_label_is_named(tmp_path: Path) -> None:
    report = analyse(gate_files(
        nodes=[gpu_node("gpu-a", 4, 4, labels={"nvidia.com/gpu.product": "H100"})],
                 pods=[workload("trainer", gpus=1,
                                node_selector={"nvidia.com/gpu.product": "A100"})]), tmp=tmp_path)
    finding = findings(report, "SC002")["SC002:ml/trainer"]
    assert "selector nodeSelector nvidia.com/gpu.product=A100 (node has 'H100') on gpu-a" \
        in finding.summary
    assert any(e.pointer == "/items/0/spec/nodeSelector/nvidia.com~1gpu.product"
               for e in finding.evidence)


def test_sc002_required_affinity_and_cordon(tmp_path: Path) -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "pool", "operator": "In", "values": ["training"]}]}]}}}
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4, labels={"pool": "inference"}),
                        gpu_node("gpu-b", 4, 4, labels={"pool": "training"},
                                 unschedulable=True)],
                 pods=[workload("trainer", gpus=1, affinity=affinity)]), tmp=tmp_path)
    finding = findings(report, "SC002")["SC002:ml/trainer"]
    assert "affinity required node affinity pool In (training) on gpu-a" in finding.summary
    assert "cordoned node is cordoned (spec.unschedulable) on gpu-b" in finding.summary
    matching = analyse(gate_files(nodes=[gpu_node("gpu-b", 4, 4, labels={"pool": "training"})],
                   pods=[workload("trainer", gpus=1, affinity=affinity)]), tmp=tmp_path / "ok")
    assert findings(matching, "SC002") == {}


# ------------------------------------------------------------------------------ SC003


def test_sc003_visible_devices_without_limit(tmp_path: Path) -> None:
    sneaky = workload("sneaky", "gpu-a", containers=[
        container(env={"NVIDIA_VISIBLE_DEVICES": "all"})])
    hidden = workload("hidden", "gpu-a", containers=[
        container(env={"NVIDIA_VISIBLE_DEVICES": "void"})])
    honest = workload("honest", "gpu-a", containers=[
        container(limits={GPU: 1}, env={"NVIDIA_VISIBLE_DEVICES": "all"})])
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)], pods=[sneaky, hidden, honest]),
                     tmp=tmp_path)
    found = findings(report, "SC003")
    assert list(found) == ["SC003:ml/sneaky"]
    finding = found["SC003:ml/sneaky"]
    assert finding.nodes == ["gpu-a"]
    assert finding.evidence[0].pointer == "/items/0/spec/containers/0/env/0"
    assert "NVIDIA_VISIBLE_DEVICES=all" in finding.evidence[0].excerpt


def test_sc003_privileged_nvidia_image(tmp_path: Path) -> None:
    priv = workload("priv", "gpu-a", containers=[container(privileged=True)])
    busybox = workload("box", "gpu-a", containers=[container(image="busybox:1.36",
                                                             privileged=True)])
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)], pods=[priv, busybox]),
                     tmp=tmp_path)
    assert list(findings(report, "SC003")) == ["SC003:ml/priv"]


def test_sc003_operator_operands_are_excluded(tmp_path: Path) -> None:
    exporter = workload("nvidia-dcgm-exporter-x7k2p", "gpu-a", namespace="gpu-operator",
                        containers=[container(env={"NVIDIA_VISIBLE_DEVICES": "all"},
                                              privileged=True)])
    exporter["metadata"]["labels"] = {"app": "nvidia-dcgm-exporter"}
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)], pods=[exporter]), tmp=tmp_path)
    assert findings(report, "SC003") == {}


def test_sc003_a_dra_driver_kubelet_plugin_is_excluded(tmp_path: Path) -> None:
    """NVIDIA's DRA driver reaches GPUs outside the device plugin's accounting by design
    (held-out measurement: kubernetes-sigs/dra-driver-nvidia-gpu#149 read it as misuse)."""
    plugin = workload("nvidia-dra-driver-gpu-kubelet-plugin-8kz5p", "gpu-a",
                      namespace="nvidia-dra-driver-gpu",
                      owner="nvidia-dra-driver-gpu-kubelet-plugin",
                      containers=[container(privileged=True)])
    plugin["metadata"]["ownerReferences"][0]["kind"] = "DaemonSet"
    plugin["metadata"]["labels"] = {"app.kubernetes.io/name": "nvidia-dra-driver-gpu"}
    look_alike = workload("dra-demo", "gpu-a", containers=[container(privileged=True)])
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)], pods=[plugin, look_alike]),
                     tmp=tmp_path)
    assert list(findings(report, "SC003")) == ["SC003:ml/dra-demo"]


def test_sc003_log_shows_missing_limit(tmp_path: Path) -> None:
    pods = [workload("notebook", "gpu-a"), workload("ok", "gpu-a", gpus=1)]
    log = ("2026-11-29T10:00:00Z starting\n"
           "2026-11-29T10:00:01Z bash: nvidia-smi: command not found\n")
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)], pods=pods,
                 files={"logs/ml/notebook/main.log": log, "logs/ml/ok/main.log": log}),
                     tmp=tmp_path)
    found = findings(report, "SC003")
    assert list(found) == ["SC003:ml/notebook"]
    evidence = found["SC003:ml/notebook"].evidence[0]
    assert (evidence.path, evidence.line) == ("logs/ml/notebook/main.log", 2)


def test_sc003_pods_of_one_controller_are_one_finding(tmp_path: Path) -> None:
    pods = [workload(f"web-{i}", "gpu-a", owner="web-6d4f",
                     containers=[container(env={"NVIDIA_VISIBLE_DEVICES": "0"})])
            for i in range(3)]
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)], pods=pods), tmp=tmp_path)
    found = findings(report, "SC003")
    assert list(found) == ["SC003:ml/web-6d4f"]
    assert found["SC003:ml/web-6d4f"].summary.startswith("3 pod(s) of ml/web-6d4f on gpu-a")


# ------------------------------------------------------------------------------ SC004


def _quota(used: int, hard: int = 4, key: str = "requests.nvidia.com/gpu") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "gpu-quota", "namespace": "team-a"},
            "spec": {"hard": {key: str(hard)}},
            "status": {"hard": {key: str(hard), "pods": "50"},
                       "used": {key: str(used), "pods": "3"}}}


def test_sc004_exhausted_quota(tmp_path: Path) -> None:
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 8, 8)],
                 pods=[workload("a", "gpu-a", namespace="team-a", gpus=4)],
                 resourcequotas=[_quota(4)]), tmp=tmp_path)
    finding = findings(report, "SC004")["SC004:team-a/gpu-quota"]
    assert finding.severity is Severity.LOW
    assert "requests.nvidia.com/gpu used 4 of 4" in finding.summary
    assert "GPUs are held by team-a/a." in finding.summary
    assert finding.evidence[0].pointer == "/items/0/status/hard/requests.nvidia.com~1gpu"


def test_sc004_quota_with_room_is_quiet(tmp_path: Path) -> None:
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 8, 8)], pods=[],
                 resourcequotas=[_quota(3)]), tmp=tmp_path)
    assert findings(report, "SC004") == {}


def test_sc004_exceeded_quota_event(tmp_path: Path) -> None:
    message = ('Error creating: pods "trainer-7c9d-x2x8q" is forbidden: exceeded quota: '
               "gpu-quota, requested: requests.nvidia.com/gpu=1, used: "
               "requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4")
    event = pod_event("trainer-7c9d", "FailedCreate", message, namespace="team-a", count=12,
                      kind="ReplicaSet")
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 8, 8)], pods=[], events=[event],
                 resourcequotas=[]), tmp=tmp_path)
    finding = findings(report, "SC004")["SC004:team-a/gpu-quota"]
    assert finding.severity is Severity.MEDIUM
    assert "refused 12 pod creation(s) over it (from trainer-7c9d)" in finding.summary


# ------------------------------------------------------------------------------ SC005

ADMISSION = ("Pod was rejected: Allocate failed due to requested number of devices unavailable "
             "for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected")


def test_sc005_thousands_of_failed_pods_are_one_finding(tmp_path: Path) -> None:
    failed = [workload(f"job-{i:04d}", "gpu-b", gpus=1, phase="Failed",
                       reason="UnexpectedAdmissionError", message=ADMISSION)
              for i in range(1500)]
    report = analyse(gate_files(nodes=[gpu_node("gpu-b", 8, 7)], pods=failed), tmp=tmp_path)
    found = findings(report, "SC005")
    assert list(found) == ["SC005:gpu-b"]
    finding = found["SC005:gpu-b"]
    assert finding.nodes == ["gpu-b"]
    assert ("On gpu-b, 1500 pod(s) were rejected by kubelet at admission "
            "(UnexpectedAdmissionError, not retried): nvidia.com/gpu requested 1, available 0 "
            "×1500. Examples: ml/job-0000, ml/job-0001, ml/job-0002 and 1497 more.") \
        in finding.summary
    assert "nvidia.com/gpu capacity 8, allocatable 7" in finding.summary
    assert len([e for e in finding.evidence if e.path == "cluster/pods.json"]) == 3


def test_sc005_event_without_node_goes_to_cluster(tmp_path: Path) -> None:
    message = ("Allocate failed due to no healthy devices present; cannot allocate unhealthy "
               "devices nvidia.com/gpu, which is unexpected")
    report = analyse(gate_files(nodes=[gpu_node("gpu-b", 8, 0)], pods=[],
                 events=[pod_event("gone-pod", "UnexpectedAdmissionError", message)]), tmp=tmp_path)
    found = findings(report, "SC005")
    assert list(found) == ["SC005:cluster"]
    assert "nvidia.com/gpu: only unhealthy devices left ×1" in found["SC005:cluster"].summary


def test_sc005_links_node_faults(tmp_path: Path) -> None:
    failed = [workload("job-1", "gpu-b", gpus=1, phase="Failed",
                       reason="UnexpectedAdmissionError", message=ADMISSION)]
    raw = raw_findings(tmp_path, AdmissionAllocateFailed, nodes=[gpu_node("gpu-b", 8, 7)],
                       pods=failed, files={"nodes/gpu-b/dmesg.txt": XID_79})
    assert raw[0].caused_by == ["DRV001:gpu-b/0000:3b:00.0", "DRV002:gpu-b/0000:3b:00.0",
                                "OP008:gpu-b"]


# ------------------------------------------------------------------------------ SC006

TIME_SLICING = """version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    renameByDefault: false
    failRequestsGreaterThanOne: {flag}
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


def _policy() -> dict[str, Any]:
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"},
            "spec": {"devicePlugin": {"config": {"name": "time-slicing-config",
                                                 "default": "any"}}},
            "status": {"state": "ready"}}


def _configmap(text: str, changed: str = "2026-11-29T09:00:00Z") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator",
                         "creationTimestamp": "2026-11-20T09:00:00Z",
                         "managedFields": [
                             {"manager": "kubectl-client-side-apply", "operation": "Update",
                              "time": "2026-11-20T09:00:00Z"},
                             {"manager": "kubectl-edit", "operation": "Update",
                              "time": changed}]},
            "data": {"any": text}}


def _plugin(node: str, started: str) -> dict[str, Any]:
    pod = workload(f"nvidia-device-plugin-daemonset-{node}", node, namespace="gpu-operator",
                   containers=[container("nvidia-device-plugin", image="nvcr.io/nvidia/"
                                         "k8s-device-plugin:v0.19.0")])
    pod["metadata"]["labels"] = {"app": "nvidia-device-plugin-daemonset"}
    pod["status"]["containerStatuses"] = [
        {"name": "nvidia-device-plugin", "ready": True, "restartCount": 0,
         "state": {"running": {"startedAt": started}}}]
    return pod


def _sharing(tmp_path: Path, pods: list[dict[str, Any]], *, flag: str = "true",
             text: str | None = None, changed: str = "2026-11-29T09:00:00Z",
             started: str = "2026-11-29T10:00:00Z") -> dict[str, Any]:
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)],
                 pods=pods + [_plugin("gpu-a", started)],
                 configmaps=[_configmap(text or TIME_SLICING.format(flag=flag), changed)],
                 clusterpolicies=[_policy()]), tmp=tmp_path)
    return findings(report, "SC006")


def test_sc006_request_above_one_with_fail_flag(tmp_path: Path) -> None:
    found = _sharing(tmp_path, [workload("trainer", "gpu-a", gpus=2)])
    assert list(found) == ["SC006:ml/trainer"]
    finding = found["SC006:ml/trainer"]
    assert ("container main asks for 2 nvidia.com/gpu, a time-slicing resource with 4 "
            "replicas per GPU and failRequestsGreaterThanOne on (config key 'any')") \
        in finding.summary
    assert finding.nodes == ["gpu-a"]


def test_sc006_quiet_without_the_flag_or_with_one(tmp_path: Path) -> None:
    assert _sharing(tmp_path / "flag", [workload("trainer", "gpu-a", gpus=2)],
                    flag="false") == {}
    assert _sharing(tmp_path / "one", [workload("trainer", "gpu-a", gpus=1)]) == {}


def test_sc006_mps_forces_the_flag_and_json_is_read(tmp_path: Path) -> None:
    text = ('{"version": "v1", "sharing": {"mps": {"resources": '
            '[{"name": "nvidia.com/gpu", "replicas": 2}]}}}')
    found = _sharing(tmp_path, [workload("trainer", gpus=2)], text=text)
    assert "a mps resource with 2 replicas" in found["SC006:ml/trainer"].summary


def test_sc006_rejected_pod_message_and_sc005_link(tmp_path: Path) -> None:
    message = ('Pod was rejected: Allocate failed due to rpc error: code = Unknown desc = '
               'invalid allocation request for "nvidia.com/gpu": invalid request: maximum '
               "request size for shared resources is 1; found 2, which is unexpected")
    rejected = workload("trainer", "gpu-a", gpus=2, phase="Failed",
                        reason="UnexpectedAdmissionError", message=message)
    report = analyse(gate_files(nodes=[gpu_node("gpu-a", 4, 4)],
                 pods=[rejected, _plugin("gpu-a", "2026-11-29T10:00:00Z")],
                 configmaps=[_configmap(TIME_SLICING.format(flag="true"))],
                 clusterpolicies=[_policy()]), tmp=tmp_path)
    sc006 = findings(report, "SC006")["SC006:ml/trainer"]
    assert "maximum request size for shared resources is 1" in sc006.summary
    sc005 = findings(report, "SC005")["SC005:gpu-a"]
    assert sc005.caused_by == ["SC006:ml/trainer"]
    assert "more than 1 slot of a shared GPU requested ×1" in sc005.summary


def test_sc006_config_changed_after_plugin_started(tmp_path: Path) -> None:
    found = _sharing(tmp_path, [], changed="2026-11-29T11:30:00Z")
    assert list(found) == ["SC006:gpu-operator/time-slicing-config"]
    finding = found["SC006:gpu-operator/time-slicing-config"]
    assert finding.nodes == ["gpu-a"]
    assert finding.severity is Severity.LOW
    assert finding.evidence[0].pointer == "/items/0/metadata/managedFields/1/time"
    assert "changed at 2026-11-29T11:30:00+00:00, after the device plugin started on gpu-a" \
        in finding.summary
    assert _sharing(tmp_path / "before", [], changed="2026-11-29T09:30:00Z") == {}


# ------------------------------------------------------------------- the lab samples


def _sample(samples: Path, name: str) -> dict[str, Any]:
    return analyse(samples / name).by_id()


def test_incident_sample_cuda_test_is_not_advertised(samples: Path) -> None:
    found = _sample(samples, "incident-toolkit-disabled")
    finding = found["SC001:default/cuda-test"]
    assert finding.title == TITLES["not-advertised"]
    assert finding.nodes == ["gpu-a", "gpu-b", "gpu-c", "gpu-d"]
    assert ("Per node (capacity/allocatable/assigned/free): gpu-a -/-/0/0, gpu-b -/-/0/0, "
            "gpu-c -/-/0/0, gpu-d -/-/0/0.") in finding.summary
    assert ("The scheduler's event says 'Insufficient nvidia.com/gpu'; the numbers say: "
            "not-advertised.") in finding.summary
    # CFG004 -> RT001 -> SC001: the chain of the write-up.
    for node in ("gpu-a", "gpu-b", "gpu-c", "gpu-d"):
        assert f"RT001:{node}" in finding.caused_by
    rows = [e for e in finding.evidence if e.path == "cluster/nodes.json"]
    assert [e.excerpt for e in rows][0] == ("gpu-a nvidia.com/gpu: capacity -, allocatable -, "
                                            "assigned 0, free 0 (not advertised)")
    assert not [i for i in found if i.startswith(("SC002", "SC003", "SC004", "SC005",
                                                  "SC006"))]


def test_healthy_sample_has_no_number_gate_findings(samples: Path) -> None:
    found = _sample(samples, "healthy-toolkit-enabled")
    assert not [i for i in found if i.startswith("SC")]


def test_sc005_other_vendors_devices_are_not_ours(tmp_path: Path) -> None:
    message = ("Pod was rejected: Allocate failed due to no healthy devices present; cannot "
               "allocate unhealthy devices gpu.intel.com/i915, which is unexpected")
    intel = workload("igpu", "gpu-b", phase="Failed", reason="UnexpectedAdmissionError",
                     message=message, containers=[container(image="intel/opencl")])
    report = analyse(gate_files(nodes=[gpu_node("gpu-b", 8, 8)], pods=[intel],
                 events=[pod_event("gone", "UnexpectedAdmissionError", message)]), tmp=tmp_path)
    assert findings(report, "SC005") == {}
