"""OP011 on a cluster without the GPU Operator (NFD and GFD installed by hand, a standalone
device plugin): the refused ``nvidia.com`` label namespace is the one half that applies.
It is judged when a log of an NFD or GFD pod was collected (passed when nothing is
refused), and the rule is skipped, saying why, when there is nothing to judge it from.

The refusal wording is gpu-feature-discovery#5's
(https://github.com/NVIDIA/gpu-feature-discovery/issues/5); the healthy master's start
line is NFD's own banner (``Node Feature Discovery Master <version>``).
"""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of_rule
from kit.cluster import Cluster, gpu_node, stamp

from analyzers.facts.operator_presence import STANDALONE
from analyzers.results.models import Report, RuleStatus

NFD_NS = "node-feature-discovery"
MASTER = "nfd-master-6d9b8c7f5-qx2lm"
SUBJECT = "OP011:node-feature-discovery"
REFUSED = ("2020/11/12 13:03:48 Namespace 'nvidia.com' is not allowed. Ignoring label "
           "'nvidia.com/gpu.product'")
NO_LOG = (f"{STANDALONE}; no log line of an NFD or GFD pod was collected, so whether "
          "NFD's master refuses GFD's nvidia.com labels is not in the bundle")


def standalone(master_log: list[str] | None, *, master: bool = True) -> Cluster:
    """One GPU node without operator labels, no ClusterPolicy, no operator pod; NFD's
    master in its own namespace, with its log when ``master_log`` is given."""
    cluster = Cluster(gpu_nodes=())
    cluster.policies = None
    cluster.nodes["gpu-a"] = gpu_node("gpu-a", drop=tuple(
        k for k in gpu_node("x")["metadata"]["labels"] if k.startswith("nvidia.com/")))
    if master:
        cluster.put({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": MASTER, "namespace": NFD_NS,
                                  "labels": {"app.kubernetes.io/name": "node-feature-discovery",
                                             "role": "master"}},
                     "spec": {"nodeName": "cp-1",
                              "containers": [{"name": "master", "image": "nfd:v0.6.0"}]},
                     "status": {"phase": "Running", "containerStatuses": [
                         {"name": "master", "ready": True, "restartCount": 0,
                          "state": {"running": {}}}]}})
    if master_log is not None:
        cluster.files[f"logs/{NFD_NS}/{MASTER}/master.log"] = stamp(master_log)
    return cluster


def result(report: Report) -> tuple[RuleStatus, str | None]:
    found = next(r for r in report.rules if r.rule_id == "OP011")
    return found.status, found.reason


def test_passes_when_the_masters_log_refuses_nothing(tmp_path: Path) -> None:
    report = analyse(standalone(["2020/11/12 13:03:40 Node Feature Discovery Master v0.6.0"]
                        ), tmp=tmp_path)
    assert of_rule(report, "OP011") == {}
    assert result(report) == (RuleStatus.PASSED, None)


def test_fails_when_the_masters_log_refuses_the_namespace(tmp_path: Path) -> None:
    report = analyse(standalone(["2020/11/12 13:03:40 Node Feature Discovery Master v0.6.0",
                         REFUSED]), tmp=tmp_path)
    found = of_rule(report, "OP011")
    assert sorted(found) == [SUBJECT]
    assert [(e.path, e.line) for e in found[SUBJECT].evidence] == [
        (f"logs/{NFD_NS}/{MASTER}/master.log", 2)]
    assert result(report)[0] is RuleStatus.FAILED


def test_skipped_when_no_labeller_log_was_collected(tmp_path: Path) -> None:
    report = analyse(standalone(None), tmp=tmp_path)
    assert of_rule(report, "OP011") == {}
    assert result(report) == (RuleStatus.SKIPPED, NO_LOG)


def test_skipped_when_nothing_labels_at_all(tmp_path: Path) -> None:
    """A standalone device plugin without NFD: no labeller, nothing to judge."""
    report = analyse(standalone(None, master=False), tmp=tmp_path)
    assert of_rule(report, "OP011") == {}
    assert result(report) == (RuleStatus.SKIPPED, NO_LOG)


def test_skipped_when_the_masters_log_is_empty(tmp_path: Path) -> None:
    """An empty log has no line to judge: as if none was collected."""
    cluster = standalone(None)
    cluster.files[f"logs/{NFD_NS}/{MASTER}/master.log"] = ""
    assert result(analyse(cluster, tmp=tmp_path)) == (RuleStatus.SKIPPED, NO_LOG)
