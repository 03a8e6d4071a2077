"""CMP001-CMP010: why a GPU-stack component is not running, one finding per workload.

Kubernetes wordings, from public threads:
- scheduler: ``0/1 nodes are available: 1 node(s) had untolerated taint {gpu: }.
  preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling..``
  (https://github.com/NVIDIA/k8s-device-plugin/issues/421)
- pulls: ``401 Unauthorized`` from nvcr.io (https://github.com/Mellanox/network-operator/issues/1052),
  ``toomanyrequests`` (https://github.com/kata-containers/kata-containers/issues/10109),
  ``not found`` (https://github.com/NVIDIA/gpu-operator/issues/273)
- ``Error: configmap "cluster-config" not found`` in CreateContainerConfigError
  (https://github.com/rustyrazorblade/easy-db-lab/issues/733)
- dcgm-exporter OOMKilled, exit code 137, limit 358Mi
  (https://github.com/open-edge-platform/geti_v2/issues/340)
- dcgm-exporter's fatal line ``Error watching fields: This request is serviced by a module
  of DCGM that is not currently loaded`` (https://github.com/NVIDIA/gpu-monitoring-tools/issues/120)
- eviction: ``The node was low on resource: ephemeral-storage. Container ... was using
  34260Ki, which exceeds its request of 0.`` (https://github.com/kubernetes/kubernetes/issues/91600)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kit import lookalikes as kit

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.facts.pulls import classify
from analyzers.results.models import Finding
from bundle import open_bundle

PLUGIN = "kube-system/nvidia-device-plugin-daemonset"
EXPORTER = "monitoring/dcgm-exporter"
FATAL = ('time="2020-10-27T20:31:42Z" level=fatal msg="Error watching fields: This request is '
         'serviced by a module of DCGM that is not currently loaded"')


def cmp(root: Path) -> dict[str, Finding]:
    with open_bundle(root) as bundle:
        report = analyze(bundle, discover().rules)
    return {f.id: f for f in report.findings if f.rule_id.startswith("CMP")}


def standalone(tmp_path: Path) -> kit.Bundle:
    return kit.Bundle(kit.standalone_dcgm_exporter(tmp_path / "b"))


def edit_pods(bundle: kit.Bundle, prefix: str, change: Callable[[dict[str, Any]], None],
              count: int = 1) -> list[str]:
    """Change the first ``count`` pods whose name starts with ``prefix``; their names."""
    pods = bundle.items("pods")
    changed = []
    for pod in pods:
        if pod["metadata"]["name"].startswith(prefix) and len(changed) < count:
            change(pod)
            changed.append(pod["metadata"]["name"])
    bundle.set_items("pods", pods)
    return changed


def waiting(reason: str, message: str = "") -> Callable[[dict[str, Any]], None]:
    def change(pod: dict[str, Any]) -> None:
        status = pod["status"]["containerStatuses"][0]
        status["state"] = {"waiting": {"reason": reason, **({"message": message}
                                                            if message else {})}}
        status["ready"] = False
    return change


def event(namespace: str, pod: str, reason: str, message: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{pod}.{reason}", "namespace": namespace},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod},
            "reason": reason, "message": message, "type": "Warning", "count": 3,
            "lastTimestamp": "2026-11-20T11:00:00Z", "source": {"component": "kubelet"}}


def add_events(bundle: kit.Bundle, *events: dict[str, Any]) -> None:
    bundle.set_items("events", [*bundle.items("events"), *events])


def test_healthy_standalone_and_operator_clusters_have_no_cmp_finding(tmp_path: Path) -> None:
    assert cmp(kit.standalone_dcgm_exporter(tmp_path / "s")) == {}
    assert cmp(kit.operator_host_driver(tmp_path / "o")) == {}
    assert cmp(kit.gke_managed(tmp_path / "g")) == {}


def test_cmp001_selector_label_no_gpu_node_carries(tmp_path: Path) -> None:
    bundle = standalone(tmp_path)
    sets = bundle.items("daemonsets")
    for ds in sets:
        if ds["metadata"]["name"] == "dcgm-exporter":
            ds["spec"]["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
            ds["status"].update(desiredNumberScheduled=0, currentNumberScheduled=0,
                                numberReady=0, numberAvailable=0)
    bundle.set_items("daemonsets", sets)
    bundle.set_items("pods", [p for p in bundle.items("pods")
                              if not p["metadata"]["name"].startswith("dcgm-exporter-")])
    found = cmp(bundle.save())
    assert sorted(found) == [f"CMP001:{EXPORTER}"]
    finding = found[f"CMP001:{EXPORTER}"]
    assert "places no pod (desiredNumberScheduled 0) while the cluster has 4 GPU node(s): " \
        "nodeSelector nvidia.com/gpu.present=true (node lacks the label) on 4 GPU node(s) " \
        "(gpu-a, gpu-b, gpu-c, gpu-d)" in finding.summary
    assert finding.nodes == ["gpu-a", "gpu-b", "gpu-c", "gpu-d"]
    assert finding.severity.value == "medium"  # monitoring, not a gate
    assert [e.pointer for e in finding.evidence][1].endswith(
        "/spec/template/spec/nodeSelector/nvidia.com~1gpu.present")


def test_cmp001_untolerated_taint_and_operator_daemonsets_left_alone(tmp_path: Path) -> None:
    bundle = standalone(tmp_path)

    def taint(node: dict[str, Any]) -> None:
        if node["metadata"]["name"] in ("gpu-a", "gpu-b"):
            node["spec"]["taints"] = [{"key": "gpu", "effect": "NoSchedule"}]
    bundle.edit_nodes(taint)
    sets = bundle.items("daemonsets")
    for ds in sets:
        if ds["metadata"]["name"] == "nvidia-device-plugin-daemonset":
            ds["spec"]["template"]["spec"]["nodeSelector"] = {"gpu": "on"}
            ds["status"].update(desiredNumberScheduled=0, currentNumberScheduled=0,
                                numberReady=0, numberAvailable=0)
    bundle.set_items("daemonsets", sets)
    found = cmp(bundle.save())
    summary = found[f"CMP001:{PLUGIN}"].summary
    assert "gpu:NoSchedule on 2 GPU node(s) (gpu-a, gpu-b)" in summary
    assert "nodeSelector gpu=on (node lacks the label) on 4 GPU node(s)" in summary
    assert found[f"CMP001:{PLUGIN}"].severity.value == "high"
    # the operator's MIG manager places no pod on nodes without MIG: that is not CMP001's
    operator = cmp(kit.operator_host_driver(tmp_path / "o"))
    assert not any(k.startswith("CMP001") for k in operator)


def test_cmp002_defers_to_op017_and_reports_what_op017_does_not_know(tmp_path: Path) -> None:
    from rules.test_op017 import PSA, refuse

    bundle = standalone(tmp_path)
    kit.add_plugin(bundle, namespace="nvidia-network-operator", ds_name="mofed-ubuntu22.04-ds",
                   labels={"nvidia.com/ofed-driver": ""}, container="mofed-container",
                   image="nvcr.io/nvidia/mellanox/doca-driver:24.10-0.7.0.0-0", log=False)
    refuse(bundle, "nvidia-network-operator", "mofed-ubuntu22.04-ds", PSA, desired=4, current=0)
    refuse(bundle, "monitoring", "dcgm-exporter", PSA, desired=4, current=0)
    root = bundle.save()
    found = cmp(root)
    assert sorted(found) == ["CMP002:nvidia-network-operator/mofed-ubuntu22.04-ds"]
    assert "(desired 4, current 0, ready 0): Pod Security admission refuses them" in \
        found["CMP002:nvidia-network-operator/mofed-ubuntu22.04-ds"].summary
    with open_bundle(root) as opened:
        ids = {f.id for f in analyze(opened, discover().rules).findings}
    assert f"OP017:{EXPORTER}" in ids


def test_cmp003_unscheduled_pod_quotes_the_scheduler(tmp_path: Path) -> None:
    bundle = standalone(tmp_path)
    message = ("0/5 nodes are available: 1 node(s) had untolerated taint {gpu: }. preemption: "
               "0/5 nodes are available: 5 Preemption is not helpful for scheduling..")

    def pending(pod: dict[str, Any]) -> None:
        node = pod["spec"].pop("nodeName")
        pod["spec"]["affinity"] = {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In",
                                  "values": [node]}]}]}}}
        pod["status"] = {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": message}]}
    names = edit_pods(bundle, "nvidia-device-plugin-daemonset-", pending)
    add_events(bundle, event("kube-system", names[0], "FailedScheduling", message))
    found = cmp(bundle.save())
    assert sorted(found) == [f"CMP003:{PLUGIN}"]
    assert found[f"CMP003:{PLUGIN}"].nodes == ["gpu-a"]
    assert "1 pod(s) stay Pending, unscheduled; the scheduler says '0/5 nodes are " \
        "available: 1 node(s) had untolerated taint {gpu: }" in found[f"CMP003:{PLUGIN}"].summary


@pytest.mark.parametrize(("message", "kind"), [
    ('Failed to pull image "nvcr.io/nvidia/driver:460.73.01-ubuntu21.04": rpc error: code = '
     'NotFound desc = failed to pull and unpack image "nvcr.io/nvidia/driver:460.73.01-'
     'ubuntu21.04": failed to resolve reference "nvcr.io/nvidia/driver:460.73.01-ubuntu21.04": '
     'nvcr.io/nvidia/driver:460.73.01-ubuntu21.04: not found', "not found"),
    ('Failed to pull image "nvcr.io/nvstaging/mellanox/network-operator:v24.7.0": failed to '
     'resolve reference "nvcr.io/nvstaging/mellanox/network-operator:v24.7.0": unexpected status '
     'from HEAD request to https://nvcr.io/v2/nvstaging/mellanox/network-operator/manifests/'
     'v24.7.0: 401 Unauthorized', "unauthorized"),
    ('Failed to pull image "busybox": rpc error: code = Unknown desc = failed to pull and unpack '
     'image "docker.io/library/busybox:latest": failed to copy: httpReadSeeker: failed open: '
     'unexpected status code https://registry-1.docker.io/v2/library/busybox/manifests/sha256:'
     '50aa: 429 Too Many Requests - Server message: toomanyrequests: You have reached your pull '
     'rate limit.', "rate limit"),
    ('Failed to pull image "nvcr.io/nvidia/k8s-device-plugin:v0.17.0": rpc error: code = Unknown '
     'desc = failed to pull and unpack image: failed to resolve reference: failed to do request: '
     'Head "https://nvcr.io/v2/nvidia/k8s-device-plugin/manifests/v0.17.0": dial tcp '
     '10.0.0.1:443: i/o timeout', "network"),
    ('Back-off pulling image "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"', "unknown"),
])
def test_pull_failures_are_classified(message: str, kind: str) -> None:
    assert classify(message) == kind


def test_cmp004_unauthorized_pull_on_two_nodes(tmp_path: Path) -> None:
    bundle = standalone(tmp_path)
    names = edit_pods(bundle, "dcgm-exporter-", waiting(
        "ImagePullBackOff", 'Back-off pulling image "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3"'),
        count=2)
    unauthorized = ('Failed to pull image "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3": failed to '
                    'resolve reference: unexpected status from HEAD request to https://nvcr.io/'
                    'v2/nvidia/k8s/dcgm-exporter/manifests/4.2.3: 401 Unauthorized')
    add_events(bundle, *[event("monitoring", n, "Failed", unauthorized) for n in names])
    found = cmp(bundle.save())
    assert sorted(found) == [f"CMP004:{EXPORTER}"]
    finding = found[f"CMP004:{EXPORTER}"]
    assert finding.nodes == ["gpu-a", "gpu-b"]
    assert "cannot be pulled on 2 pod(s) (unauthorized: Failed to pull image" in finding.summary
    assert "add or fix the imagePullSecret" in finding.summary


def test_cmp005_config_error_and_cmp006_init_failure(tmp_path: Path) -> None:
    bundle = standalone(tmp_path)
    edit_pods(bundle, "nvidia-device-plugin-daemonset-", waiting(
        "CreateContainerConfigError", 'configmap "nvidia-device-plugin-configs" not found'))

    def init_fails(pod: dict[str, Any]) -> None:
        pod["spec"]["initContainers"] = [{"name": "config-manager-init", "image": "x"}]
        pod["status"]["initContainerStatuses"] = [{
            "name": "config-manager-init", "ready": False, "restartCount": 4,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]
        pod["status"]["phase"] = "Pending"
    edit_pods(bundle, "dcgm-exporter-", init_fails)
    found = cmp(bundle.save())
    assert sorted(found) == [f"CMP005:{PLUGIN}", f"CMP006:{EXPORTER}"]
    assert "container nvidia-device-plugin-ctr cannot start on 1 pod(s): " \
        "CreateContainerConfigError: configmap \"nvidia-device-plugin-configs\" not found" in \
        found[f"CMP005:{PLUGIN}"].summary
    assert "init container config-manager-init fails on 1 pod(s) (" in \
        found[f"CMP006:{EXPORTER}"].summary


def crashed(reason: str, code: int, limit: str | None = None) -> Callable[[dict[str, Any]], None]:
    def change(pod: dict[str, Any]) -> None:
        if limit:
            pod["spec"]["containers"][0]["resources"] = {"limits": {"memory": limit}}
        status = pod["status"]["containerStatuses"][0]
        status.update(ready=False, restartCount=15,
                      state={"waiting": {"reason": "CrashLoopBackOff"}},
                      lastState={"terminated": {"exitCode": code, "reason": reason}})
    return change


def test_cmp007_crash_loop_quotes_the_previous_logs_first_error(tmp_path: Path) -> None:
    bundle = standalone(tmp_path)
    names = edit_pods(bundle, "dcgm-exporter-", crashed("Error", 1))
    bundle.write(f"logs/monitoring/{names[0]}/exporter.previous.log",
                 'time="2020-10-27T20:31:42Z" level=info msg="Starting dcgm-exporter"\n'
                 f"{FATAL}\n")
    found = cmp(bundle.save())
    assert sorted(found) == [f"CMP007:{EXPORTER}"]
    finding = found[f"CMP007:{EXPORTER}"]
    assert "crashes in a loop on 1 pod(s) (last: Error, exit code 1); the previous log's " \
        "first error: 'time=\"2020-10-27T20:31:42Z\" level=fatal msg=\"Error watching fields" \
        in finding.summary
    located = [e for e in finding.evidence if e.path.endswith("exporter.previous.log")]
    assert [e.line for e in located] == [2]


def test_cmp008_oom_killed_names_the_limit(tmp_path: Path) -> None:
    bundle = standalone(tmp_path)
    edit_pods(bundle, "dcgm-exporter-", crashed("OOMKilled", 137, limit="358Mi"), count=3)
    found = cmp(bundle.save())
    assert sorted(found) == [f"CMP008:{EXPORTER}"]
    finding = found[f"CMP008:{EXPORTER}"]
    assert finding.nodes == ["gpu-a", "gpu-b", "gpu-c"]
    assert "container exporter is OOMKilled on 3 pod(s) (OOMKilled, exit code 137 (SIGKILL)); " \
        "its memory limit is 358Mi; the bundle holds no record of what it used (no OOM-killer " \
        "line for it in the node's dmesg; kubectl top shows it live)" in finding.summary


# the kernel's line, as https://github.com/NVIDIA/dcgm-exporter/issues/702 quotes it
OOM_LINE = ("[86012.551342] Memory cgroup out of memory: Killed process 3833171 (dcgm-exporter) "
            "total-vm:4478432kB, anon-rss:517656kB, file-rss:47148kB, shmem-rss:0kB, UID:0 "
            "pgtables:1636kB oom_score_adj:-997")


def test_cmp008_quotes_what_the_kernel_killed_it_holding(tmp_path: Path) -> None:
    bundle = standalone(tmp_path)
    names = edit_pods(bundle, "dcgm-exporter-", crashed("OOMKilled", 137, limit="512Mi"))
    node = next(p["spec"]["nodeName"] for p in bundle.items("pods")
                if p["metadata"]["name"] == names[0])
    dmesg = bundle.root / "nodes" / node / "dmesg.txt"
    other = ("[86000.000001] Memory cgroup out of memory: Killed process 1 (python3) "
             "total-vm:1kB, anon-rss:9999kB, file-rss:0kB")
    dmesg.write_text(dmesg.read_text() + other + "\n" + OOM_LINE + "\n")
    finding = cmp(bundle.save())[f"CMP008:{EXPORTER}"]
    assert "its memory limit is 512Mi; the kernel killed it holding 505Mi (anon-rss, " \
        f"nodes/{node}/dmesg.txt line " in finding.summary
    assert [e.excerpt for e in finding.evidence if e.path.endswith("dmesg.txt")] == [OOM_LINE]


def test_cmp009_evicted(tmp_path: Path) -> None:
    bundle = standalone(tmp_path)
    message = ("The node was low on resource: ephemeral-storage. Container exporter was using "
               "34260Ki, which exceeds its request of 0. ")

    def evicted(pod: dict[str, Any]) -> None:
        pod["status"] = {"phase": "Failed", "reason": "Evicted", "message": message}
    edit_pods(bundle, "dcgm-exporter-", evicted)
    found = cmp(bundle.save())
    assert sorted(found) == [f"CMP009:{EXPORTER}"]
    assert "1 pod(s) were evicted; the kubelet says 'The node was low on resource: " \
        "ephemeral-storage" in found[f"CMP009:{EXPORTER}"].summary


def test_cmp010_unready_without_a_pod_cause(tmp_path: Path) -> None:
    bundle = standalone(tmp_path)
    sets = bundle.items("daemonsets")
    for ds in sets:
        if ds["metadata"]["name"] == "dcgm-exporter":
            ds["status"].update(numberReady=2, numberAvailable=2)
    bundle.set_items("daemonsets", sets)

    def unready(pod: dict[str, Any]) -> None:
        pod["status"]["containerStatuses"][0]["ready"] = False
    names = edit_pods(bundle, "dcgm-exporter-", unready, count=2)
    add_events(bundle, event("monitoring", names[0], "Unhealthy",
                             "Readiness probe failed: HTTP probe failed with statuscode: 503"))
    found = cmp(bundle.save())
    assert sorted(found) == [f"CMP010:{EXPORTER}"]
    assert "has 2 of 4 pod(s) ready: their probes fail: Readiness probe failed: HTTP probe " \
        "failed with statuscode: 503" in found[f"CMP010:{EXPORTER}"].summary


def findings(root: Path) -> dict[str, Finding]:
    with open_bundle(root) as bundle:
        return {f.id: f for f in analyze(bundle, discover().rules).findings}


def test_an_operand_oom_kill_is_op001s_cause_when_no_specific_rule_explains_it(
        tmp_path: Path) -> None:
    bundle = kit.base(tmp_path / "b")
    names = edit_pods(bundle, "nvidia-dcgm-exporter-",
                      crashed("OOMKilled", 137, limit="358Mi"))
    assert names == ["nvidia-dcgm-exporter-grqhb"]  # the exporter of gpu-d
    found = findings(bundle.save())
    key = "CMP008:gpu-operator/nvidia-dcgm-exporter"
    assert sorted(f for f in found if f.startswith("CMP")) == [key]
    op001 = found["OP001:gpu-d"]
    assert op001.caused_by == [key]
    assert "No rule identified" not in op001.summary
    assert "Kubernetes' record of the dcgm-exporter pod: nvidia-dcgm-exporter: OOMKilled, " \
        "exit code 137 (SIGKILL) (see CMP008)." in op001.summary
    # the known exporter OOM (KI-DCGM-003: the chart's limit too low) is the cause above it
    assert found[key].caused_by == ["KI001:KI-DCGM-003/gpu-operator/nvidia-dcgm-exporter"]
    assert found[key].causes == ["OP001:gpu-d"]


def test_a_specific_rule_stays_root_and_the_cmp_finding_is_its_evidence() -> None:
    found = findings(kit.ROOT / "samples" / "driver-upgrade-failed")
    key = "CMP004:gpu-operator/nvidia-driver-daemonset-6.8.0-90-generic-ubuntu24.04"
    assert found[key].caused_by == ["DRV003:gpu-2", "OP010:gpu-2"]
    # it hangs under OP010 beside OP001, which keeps its causes: one root, OP010
    assert found[key].causes == []
    assert found["OP001:gpu-2"].caused_by == ["DRV003:gpu-2", "OP010:gpu-2"]
    assert found["OP010:gpu-2"].caused_by == []
