"""BND001 (collection gaps): one finding per kind of gap, with what to do about it."""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of
from kit.driver import gpu_node
from kit.objects import lists

from analyzers.results.models import Finding
from analyzers.rules.bnd._base import _REMEDIATION
from reports.view import first_command

GAPS = [
    {"path": "cluster/events.json",
     "error": 'Error from server (Forbidden): events is forbidden: User "x" cannot list'},
    {"path": "nodes/gpu-a/host/nvidia-ctk.txt", "error": "sh: 1: nvidia-ctk: not found"},
    {"path": "nodes/gpu-b/host/nvidia-ctk.txt", "error": "sh: 1: nvidia-ctk: not found"},
    {"path": "logs/gpu-operator/nvidia-driver-daemonset-x1/nvidia-driver-ctr.log",
     "error": 'container "nvidia-driver-ctr" in pod "nvidia-driver-daemonset-x1" is '
              "waiting to start: PodInitializing"},
    {"path": "nodes/gpu-b/dmesg.txt", "error": "step timed out after 60 s"},
]


def test_each_kind_of_gap_is_one_finding_with_its_own_first_step(tmp_path: Path) -> None:
    files = lists(nodes=[gpu_node("gpu-a"), gpu_node("gpu-b")], pods=[], events=[])
    report = analyse(files, tmp=tmp_path, failed=GAPS)
    found = of(report, "BND001")
    assert sorted(found) == ["BND001:forbidden", "BND001:missing-command",
                             "BND001:not-started", "BND001:timeout"]
    forbidden = found["BND001:forbidden"]
    assert forbidden.severity.value == "medium"  # a cluster file: every node is blind
    assert [e.excerpt.split(":")[0] for e in forbidden.evidence] == ["cluster/events.json"]
    assert forbidden.remediation.startswith("kubectl auth can-i list events")
    missing = found["BND001:missing-command"]
    assert (missing.severity.value, missing.nodes) == ("low", ["gpu-a", "gpu-b"])
    assert "Rules left without these inputs: CFG004." in missing.summary
    assert missing.remediation.startswith("# the command or file does not exist on the node")
    started = found["BND001:not-started"]
    assert started.severity.value == "info" and "Rules left" not in started.summary
    assert started.remediation.startswith("kubectl get pods -A --field-selector")
    timeout = found["BND001:timeout"]
    assert timeout.nodes == ["gpu-b"]
    assert timeout.remediation.startswith("gpu-triage collect --step-timeout")


def test_other_failures_keep_the_rules_general_advice(tmp_path: Path) -> None:
    files = lists(nodes=[gpu_node("gpu-a")], pods=[], events=[])
    report = analyse(files, tmp=tmp_path, failed=[{"path": "nodes/gpu-a/host/uname.txt",
                                              "error": "exit status 3"}])
    (finding,) = of(report, "BND001").values()
    assert finding.id == "BND001:other"
    assert finding.remediation.splitlines()[-1] == (
        "gpu-triage collect --nodes <node> --node-mode ssh")
    assert first_command(finding.remediation) == (
        "kubectl auth can-i list events --all-namespaces")


# ---- kubectl's errors: the collector's error_kind, and older bundles' text ------------------

KLOG = ("E1201 18:58:57.180923   23949 memcache.go:265] couldn't get resource list for "
        "metrics.k8s.io/v1beta1: the server is currently unable to handle the request")
FORBIDDEN = ('Error from server (Forbidden): pods is forbidden: User "x" cannot list resource '
             '"pods" in API group "" at the cluster scope')
PREVIOUS = ('Error from server (BadRequest): previous terminated container "nvidia-dcgm-'
            'exporter" in pod "nvidia-dcgm-exporter-5kq2n" not found')
PREVIOUS_PATH = "logs/gpu-operator/nvidia-dcgm-exporter-5kq2n/nvidia-dcgm-exporter.previous.log"


def _gaps(tmp_path: Path, failed: list[dict[str, object]]) -> dict[str, Finding]:
    files = lists(nodes=[gpu_node("gpu-a")], events=[])
    return of(analyse(files, tmp=tmp_path, failed=failed), "BND001")


def test_the_collectors_error_kind_decides(tmp_path: Path) -> None:
    found = _gaps(tmp_path, [
        {"path": "cluster/pods.json", "error": FORBIDDEN, "error_kind": "forbidden"},
        {"path": PREVIOUS_PATH, "error": PREVIOUS, "error_kind": "previous-log-missing"},
        {"path": "cluster/daemonsets.json", "error": "error: You must be logged in to the "
         "server (Unauthorized)", "error_kind": "unauthorized"},
        {"path": "cluster/nvidiadrivers.json", "error": 'error: the server doesn\'t have a '
         'resource type "nvidiadrivers"', "error_kind": "not-found"},
        # a kind this analyzer does not know: the text decides
        {"path": "cluster/runtimeclasses.json", "error": "Unable to connect to the server: "
         "dial tcp 10.0.0.1:6443: i/o timeout", "error_kind": "something-new"},
    ])
    assert sorted(found) == ["BND001:forbidden", "BND001:not-found",
                             "BND001:previous-log-missing", "BND001:unauthorized",
                             "BND001:unreachable"]
    previous = found["BND001:previous-log-missing"]
    assert previous.title == "Collection gaps: previous container log not kept by the kubelet"
    assert previous.severity.value == "info" and "Rules left" not in previous.summary
    assert first_command(previous.remediation) == "kubectl describe pod -n <namespace> <pod>   " \
        "# 'Last State' says why the container restarted"
    unauthorized = found["BND001:unauthorized"]
    assert unauthorized.severity.value == "medium"
    assert first_command(unauthorized.remediation).startswith("kubectl get --raw /version")
    assert first_command(found["BND001:forbidden"].remediation).startswith(
        "kubectl auth can-i list events --all-namespaces")
    assert first_command(found["BND001:unreachable"].remediation).startswith(
        "kubectl get nodes -o wide")
    assert [e.excerpt for e in found["BND001:unreachable"].evidence] == [
        "cluster/runtimeclasses.json: Unable to connect to the server: dial tcp 10.0.0.1:6443: "
        "i/o timeout"]
    not_found = found["BND001:not-found"]
    assert not_found.severity.value == "low"
    assert first_command(not_found.remediation).startswith("kubectl api-resources")


def test_older_bundles_are_read_past_klog_noise(tmp_path: Path) -> None:
    """Bundles from older collectors: no error_kind, and klog noise before kubectl's error."""
    found = _gaps(tmp_path, [
        {"path": "cluster/pods.json", "error": f"{KLOG}\n{KLOG}\n{FORBIDDEN}"},
        {"path": PREVIOUS_PATH, "error": f"{KLOG}\n{PREVIOUS}"},
        {"path": "cluster/events.json", "error": "error: You must be logged in to the server "
         "(the server has asked for the client to provide credentials)"},
        {"path": "cluster/nodes.json", "error": "Unable to connect to the server: net/http: "
         "TLS handshake timeout"},
    ])
    assert sorted(found) == ["BND001:forbidden", "BND001:previous-log-missing",
                             "BND001:unauthorized", "BND001:unreachable"]
    assert "missing on the node" not in found["BND001:previous-log-missing"].title


def test_the_first_step_is_never_a_fragment_of_prose(tmp_path: Path) -> None:
    """The general advice (kind 'other') used to show 'node lacks, containers not yet
    started). In general, re-run the collector with the' as its first step."""
    (finding,) = _gaps(tmp_path, [{"path": "nodes/gpu-a/host/uname.txt",
                                   "error": "exit status 3"}]).values()
    assert first_command(finding.remediation) == "kubectl auth can-i list events --all-namespaces"
    for remediation in _REMEDIATION.values():
        step = first_command(remediation)
        assert step is None or step.split()[0] in ("kubectl", "gpu-triage"), step


def test_a_node_without_a_host_shell_is_its_own_gap(tmp_path: Path) -> None:
    """The collector's no-shell item (Talos, Bottlerocket): one gap naming the node, the
    way to read its kernel log without a shell first; older text without the kind too."""
    error = ("node not collected: Talos Linux has no shell on the host for the node script; "
             "the analysis judges this node from its pods")
    found = _gaps(tmp_path / "kind", [
        {"path": "nodes/gpu-a", "node": "gpu-a", "error": error, "error_kind": "no-shell"}])
    assert sorted(found) == ["BND001:no-shell"]
    gap = found["BND001:no-shell"]
    assert gap.nodes == ["gpu-a"]
    assert gap.title.startswith("Collection gaps: node not visited: its OS (Talos, Bottlerocket)")
    assert first_command(gap.remediation) == (
        "kubectl get node <node> -o jsonpath='{.status.nodeInfo.osImage}'   # Talos or "
        "Bottlerocket: no host shell")
    assert "talosctl -n <node> dmesg" in gap.remediation
    older = _gaps(tmp_path / "text", [{"path": "nodes/gpu-a", "node": "gpu-a", "error": error}])
    assert sorted(older) == ["BND001:no-shell"]
