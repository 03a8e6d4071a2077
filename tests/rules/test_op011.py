"""OP011: node labelling is broken, so the operator deploys nothing (and OP003 on a fresh
install, where only ``host/lspci.txt`` shows the GPU).

Bundles are built from real public threads:
- NFD missing, the operator logging that no node matches nvidia.com/gpu.present:
  https://github.com/NVIDIA/gpu-operator/issues/149
- the NFD worker unable to reach nfd-master (grpc ``connection refused``):
  https://github.com/NVIDIA/gpu-operator/issues/512 and
  https://github.com/NVIDIA/gpu-operator/issues/320
- nfd-master refusing GFD's label namespace (``Namespace 'nvidia.com' is not allowed``):
  https://github.com/NVIDIA/gpu-operator/issues/106 (operator 1.3) and, without the
  operator (NFD and GFD installed by hand), https://github.com/NVIDIA/gpu-feature-discovery/issues/5
- lspci of a GPU before any driver is loaded: the ``lspci -nnk -d 10de:`` layout of
  https://github.com/NVIDIA/gpu-operator/issues/1328, without a ``Kernel driver in use`` line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse, status
from kit import findings as of_rule
from kit.cluster import DEFAULT_APPS, NS, Cluster, daemonset, gpu_node, nfd_worker, pod_name, stamp

from analyzers.results.models import RuleStatus

SUBJECT = "OP011:node-feature-discovery"
FRESH_LSPCI = ("0000:17:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 80GB] "
               "[10de:20b2] (rev a1)\n"
               "\tSubsystem: NVIDIA Corporation Device [10de:1463]\n"
               "\tKernel modules: nvidiafb, nouveau\n")
# gpu-operator#149 (operator 1.5 JSON log)
NO_MATCH = ('{"level":"info","ts":1613468313.7898238,"logger":"controller_clusterpolicy",'
            '"msg":"Could not get any nodes to match nvidia.com/gpu.present label",'
            '"Request.Namespace":"default","Request.Name":"Node","ERROR":""}')
# gpu-operator#512
REFUSED = ('[core]grpc: addrConn.createTransport failed to connect to '
           '{gpu-operator-1680394617-node-feature-discovery-master:8080 '
           'gpu-operator-1680394617-node-feature-discovery-master:8080 <nil> 0 <nil>}. Err: '
           'connection error: desc = "transport: Error while dialing dial tcp '
           '10.105.174.41:8080: connect: connection refused". Reconnecting...')
# gpu-operator#320
REFUSED_OLD = ('W0209 15:45:58.067334 1 clientconn.go:1303] grpc: addrConn.createTransport '
               'failed to connect to {gpu-operator-node-feature-discovery-master:8080 <nil> 0 '
               '<nil>}. Err :connection error: desc = "transport: Error while dialing dial tcp '
               '10.96.189.1:8080: connect: connection refused". Reconnecting...')
# gpu-operator#106, gpu-feature-discovery#5
DENIED = ["2020/11/24 09:15:59 Namespace 'nvidia.com' is not allowed. Ignoring label "
          "'nvidia.com/cuda.runtime.major'",
          "2020/11/24 09:15:59 Namespace 'nvidia.com' is not allowed. Ignoring label "
          "'nvidia.com/gpu.product'"]
NVIDIA_LABELS = ("feature.node.kubernetes.io/pci-10de.present", "nvidia.com/gpu.present",
                 "nvidia.com/gpu.product", "nvidia.com/gpu.count")


def _fresh_install(nodes: tuple[str, ...] = ("gpu-a", "gpu-b")) -> Cluster:
    """The operator installed, NFD never labelled: no NVIDIA label, no capacity, no
    operand pod; only lspci shows the GPUs."""
    cluster = Cluster(gpu_nodes=nodes)
    for name in nodes:
        labels = gpu_node(name)["metadata"]["labels"]
        deploy = tuple(k for k in labels if k.startswith("nvidia.com/gpu.deploy."))
        cluster.nodes[name] = gpu_node(name, gpus=0, drop=(*NVIDIA_LABELS, *deploy))
        for app in DEFAULT_APPS:
            del cluster.pods[pod_name(app, name)]
        cluster.files[f"nodes/{name}/host/lspci.txt"] = FRESH_LSPCI
    for app in DEFAULT_APPS:
        cluster.daemonsets[app] = daemonset(app, desired=0)
    return cluster


def _operator(cluster: Cluster, lines: list[str]) -> str:
    name = "gpu-operator-7d6f9c8b5d-2kq7x"
    cluster.put({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": name, "namespace": NS, "labels": {"app": "gpu-operator"}},
                 "spec": {"nodeName": "cp-1", "containers": [
                     {"name": "gpu-operator", "image": "nvcr.io/nvidia/gpu-operator:v1.5.2"}]},
                 "status": {"phase": "Running", "containerStatuses": [
                     {"name": "gpu-operator", "ready": True, "restartCount": 0,
                      "state": {"running": {}}}]}})
    path = f"logs/{NS}/{name}/gpu-operator.log"
    cluster.files[path] = stamp(lines)
    return path


def _nfd_master(cluster: Cluster, lines: list[str], *, namespace: str = NS,
                state: dict[str, Any] | None = None) -> str:
    name = "gpu-operator-node-feature-discovery-master-6d9b8c7f5-qx2lm"
    cluster.put({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": name, "namespace": namespace,
                              "labels": {"app.kubernetes.io/name": "node-feature-discovery",
                                         "role": "master"}},
                 "spec": {"nodeName": "cp-1", "containers": [{"name": "master",
                                                              "image": "nfd:v0.6.0"}]},
                 "status": {"phase": "Running", "containerStatuses": [
                     {"name": "master", "ready": True, "restartCount": 0,
                      "state": state or {"running": {}}}]}})
    path = f"logs/{namespace}/{name}/master.log"
    cluster.files[path] = stamp(lines)
    return path


def test_fresh_install_without_nfd_fires_and_op003_uses_lspci(tmp_path: Path) -> None:
    """gpu-operator#149: NFD is not installed; the operator finds no GPU node."""
    cluster = _fresh_install()
    log = _operator(cluster, [NO_MATCH])
    report = analyse(cluster, tmp=tmp_path)
    found = of_rule(report, "OP011")
    assert sorted(found) == [SUBJECT]
    op = found[SUBJECT]
    assert op.nodes == ["gpu-a", "gpu-b"]
    assert "2 node(s) with NVIDIA GPUs carry no feature.node.kubernetes.io/pci-10de.present" \
        in op.summary
    assert "no NFD master or worker pod exists in the cluster" in op.summary
    assert ("nodes/gpu-a/host/lspci.txt", 1) in [(e.path, e.line) for e in op.evidence]
    assert (log, 1) in [(e.path, e.line) for e in op.evidence]
    assert {"OP003:gpu-a", "OP003:gpu-b"} <= set(op.causes)
    # OP003 fires on the fresh install, from lspci alone, under OP011
    op3 = of_rule(report, "OP003")
    assert sorted(op3) == ["OP003:gpu-a", "OP003:gpu-b"]
    assert "lspci lists 1 NVIDIA GPU(s)" in op3["OP003:gpu-a"].summary
    assert op3["OP003:gpu-a"].caused_by == [SUBJECT]
    assert "helm upgrade --reuse-values --set nfd.enabled=true" in op.remediation
    assert op.remediation.startswith("# look first")


def test_worker_cannot_reach_master_fires(tmp_path: Path) -> None:
    """gpu-operator#512: the workers run but cannot reach nfd-master."""
    cluster = _fresh_install(("gpu-a",))
    cluster.put(nfd_worker("gpu-a"))
    path = (f"logs/{NS}/gpu-operator-node-feature-discovery-worker-gpu-a/worker.log")
    cluster.files[path] = stamp([
        "I0402 10:00:00.000000       1 nfd-worker.go:155] Node Feature Discovery Worker v0.10.1",
        REFUSED])
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP011")[SUBJECT]
    assert op.nodes == ["gpu-a"]
    assert ("the NFD worker gpu-operator-node-feature-discovery-worker-gpu-a cannot reach the "
            "NFD master") in op.summary
    assert "connection refused" in op.summary
    assert (path, 2) in [(e.path, e.line) for e in op.evidence]
    assert ("kubectl -n gpu-operator logs gpu-operator-node-feature-discovery-worker-gpu-a "
            "-c worker --tail=30") in op.remediation


def test_operator_alone_with_unreachable_master_fires_without_lspci(tmp_path: Path) -> None:
    """gpu-operator#320: no node file names a GPU; the operator finds no GPU node and the
    worker's log says why."""
    cluster = _fresh_install(("gpu-a",))
    del cluster.files["nodes/gpu-a/host/lspci.txt"]
    _operator(cluster, [NO_MATCH])
    cluster.put(nfd_worker("gpu-a"))
    path = f"logs/{NS}/gpu-operator-node-feature-discovery-worker-gpu-a/worker.log"
    cluster.files[path] = stamp([REFUSED_OLD])
    report = analyse(cluster, tmp=tmp_path)
    op = of_rule(report, "OP011")[SUBJECT]
    assert op.nodes == []
    assert op.summary.startswith("Node labelling is broken: the operator finds no GPU node "
                                 "(")
    assert "cannot reach the NFD master" in op.summary
    assert of_rule(report, "OP003") == {}


def test_label_namespace_refused_fires(tmp_path: Path) -> None:
    """gpu-operator#106: operator 1.3's NFD master drops GFD's nvidia.com labels."""
    cluster = Cluster()
    cluster.put(nfd_worker("gpu-a"))
    cluster.put(nfd_worker("gpu-b"))
    path = _nfd_master(cluster, DENIED)
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP011")[SUBJECT]
    assert op.nodes == []
    assert "NFD's master refuses the nvidia.com label namespace" in op.summary
    assert [(e.path, e.line) for e in op.evidence] == [(path, 1), (path, 2)]
    assert "--extra-label-ns=nvidia.com" in op.remediation


def test_label_namespace_refused_without_the_operator(tmp_path: Path) -> None:
    """gpu-feature-discovery#5: NFD and GFD installed by hand, no GPU Operator."""
    cluster = Cluster(gpu_nodes=())
    cluster.policies = None
    cluster.nodes["gpu-a"] = gpu_node("gpu-a", drop=tuple(
        k for k in gpu_node("x")["metadata"]["labels"] if k.startswith("nvidia.com/")))
    path = _nfd_master(cluster, ["2020/11/12 13:03:48 Namespace 'nvidia.com' is not allowed. "
                                 "Ignoring label 'nvidia.com/gpu.product'"],
                       namespace="node-feature-discovery")
    report = analyse(cluster, tmp=tmp_path)
    op = of_rule(report, "OP011")[SUBJECT]
    assert [(e.path, e.line) for e in op.evidence] == [(path, 1)]
    assert "no NFD master or worker pod" not in op.summary


def test_quiet_on_a_healthy_cluster(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(nfd_worker("gpu-a"))
    cluster.put(nfd_worker("gpu-b"))
    _nfd_master(cluster, ["2026/11/29 13:00:00 Node Feature Discovery Master v0.14.2"])
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP011") == {}
    assert status(report, "OP011") is RuleStatus.PASSED


def test_quiet_when_no_gpu_node_has_joined_yet(tmp_path: Path) -> None:
    """A GPU pool scaled to zero: the operator waits for GPU nodes and NFD is healthy."""
    cluster = Cluster(gpu_nodes=())
    cluster.nodes["cpu-1"] = gpu_node("cpu-1", gpus=0, drop=NVIDIA_LABELS)
    cluster.put(nfd_worker("cpu-1"))
    _nfd_master(cluster, [])
    _operator(cluster, ["INFO controllers.ClusterPolicy No GPU node found, watching for new "
                        "nodes to join the cluster."])
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP011") == {}
    assert status(report, "OP011") is RuleStatus.PASSED


def test_master_crash_looping_fires(tmp_path: Path) -> None:
    """gpu-operator#619 (NFD master crash-looping, probes failing) on a cluster whose
    nodes show no GPU yet; the operator's newer wording of 'no NFD label'."""
    cluster = _fresh_install(("gpu-a",))
    del cluster.files["nodes/gpu-a/host/lspci.txt"]
    _operator(cluster, ["INFO controllers.ClusterPolicy WARNING: NFD labels missing in the "
                        "cluster, GPU nodes cannot be discovered."])
    cluster.put(nfd_worker("gpu-a"))
    _nfd_master(cluster, [], state={"waiting": {"reason": "CrashLoopBackOff"}})
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP011")[SUBJECT]
    assert ("NFD master gpu-operator/gpu-operator-node-feature-discovery-master-6d9b8c7f5-qx2lm "
            "is CrashLoopBackOff") in op.summary
    assert "NFD labels missing" in op.summary


def test_quiet_when_one_worker_is_pending_on_a_cpu_node(tmp_path: Path) -> None:
    """No GPU node has joined; one worker waits on a tainted CPU node: OP003's business
    at most, no labelling failure."""
    cluster = Cluster(gpu_nodes=())
    cluster.nodes["cpu-1"] = gpu_node("cpu-1", gpus=0, drop=NVIDIA_LABELS)
    cluster.put(nfd_worker("cpu-1", "waiting:ContainerCreating"))
    cluster.put(nfd_worker("cp-1"))
    _nfd_master(cluster, [])
    _operator(cluster, ["INFO controllers.ClusterPolicy No GPU node found, watching for new "
                        "nodes to join the cluster."])
    report = analyse(cluster, tmp=tmp_path)
    assert of_rule(report, "OP011") == {}
    assert status(report, "OP011") is RuleStatus.PASSED


def test_skipped_without_the_pods(tmp_path: Path) -> None:
    """Without cluster/pods.json nothing says whether NFD runs: OP003 names the node,
    OP011 does not guess a cause."""
    cluster = _fresh_install(("gpu-a",))
    files = cluster.bundle_files()
    del files["cluster/pods.json"]
    report = analyse(files, tmp=tmp_path)
    assert of_rule(report, "OP011") == {}
    assert status(report, "OP011") is RuleStatus.SKIPPED
    assert sorted(of_rule(report, "OP003")) == ["OP003:gpu-a"]
