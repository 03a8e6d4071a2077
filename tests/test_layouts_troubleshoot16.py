"""Troubleshoot and must-gather bundles as they really come, and the layout
report that says what a foreign layout could not provide.

What troubleshoot writes is read from its source (replicatedhq/troubleshoot,
Apache-2.0, at 5bf008f7d2460b500085eb948ce416a475131f6c):

- ``pkg/collect/result.go`` ``SymLinkResult``, called from ``pkg/collect/logs.go``
  (``<collector>/<pod>/<container>.log`` to the pod log) and
  ``pkg/collect/cluster_resources.go`` (a ``.yaml`` link beside each custom resource
  ``.json``); archived with relative link targets;
- ``pkg/collect/host_run.go``: ``-info.json`` holds ``exec.Cmd.String()`` (arguments
  joined by spaces, unquoted), ``exitCode`` as a string, ``error`` the stderr;
- a namespace without pods is a ``PodList`` whose nil ``Items`` marshal as ``null``;
- ``resource-quotas/`` became ``resource-quota/`` in
  https://github.com/replicatedhq/troubleshoot/commit/2fcdc77cd312c8bb0c2449387a76d5ea78d36d8d

must-gather's ``gpu_nodes.labels`` is written by ``hack/must-gather.sh`` of
NVIDIA/gpu-operator: the node name, then its labels as ``- key=value`` lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from layouts_kit import (
    DUMP,
    must_gather_files,
    symlink,
    tar,
    troubleshoot_files,
    write,
)

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.results.models import Report
from bundle import open_bundle
from bundle.manifest import ManifestItem

TOP = "support-bundle-2026-11-20T09_30_00"
LOGS = "cluster-resources/pods/logs/gpu-operator/nvidia-device-plugin-daemonset-x7k2p"
PLUGIN_POD = "nvidia-device-plugin-daemonset-x7k2p"
RUN = "host-collectors/gpu-a/run-host"
CONFIG_INFO = f"{RUN}/containerd-config-info.json"


def report_of(path: Path) -> Report:
    with open_bundle(path) as opened:
        return analyze(opened, discover().rules)


def statuses(report: Report) -> dict[str, tuple[str, str | None]]:
    return {r.rule_id: (r.status.value, r.reason) for r in report.rules}


# -- "items": null ---------------------------------------------------------------------


def test_a_list_with_null_items_is_an_empty_namespace_not_a_parse_problem(
        tmp_path: Path) -> None:
    files = troubleshoot_files()
    files["cluster-resources/pods/kube-public.json"] = json.dumps(
        {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "4025"},
         "items": None})
    files["cluster-resources/events/kube-public.json"] = json.dumps(
        {"kind": "EventList", "apiVersion": "v1", "metadata": {}, "items": None})
    with open_bundle(write(tmp_path / "sb", files)) as opened:
        assert sorted(p.name for p in opened.cluster.pods) == [
            "gpu-operator-7d9f-abcde", PLUGIN_POD]
        assert [e.reason for e in opened.cluster.events] == ["Started"]
        assert opened.problems == ()


def test_a_list_of_another_shape_is_still_a_problem(tmp_path: Path) -> None:
    files = troubleshoot_files()
    files["cluster-resources/pods/kube-public.json"] = json.dumps({"kind": "PodList",
                                                                   "items": "none"})
    with open_bundle(write(tmp_path / "sb", files)) as opened:
        assert len(opened.cluster.pods) == 2
        assert [(p.path, p.message) for p in opened.problems] == [
            ("cluster-resources/pods/kube-public.json", "expected a list of Pod objects")]


# -- troubleshoot's own symbolic links -----------------------------------------------------


def own_links() -> dict[str, str]:
    return {
        # logs collector named all-logs: <collector>/<pod>/<container>.log
        f"all-logs/{PLUGIN_POD}/nvidia-device-plugin.log":
            f"../../{LOGS}/nvidia-device-plugin.log",
        f"all-logs/{PLUGIN_POD}/nvidia-device-plugin-previous.log":
            f"../../{LOGS}/nvidia-device-plugin-previous.log",
        # YAML twin of a custom resource file
        "cluster-resources/custom-resources/nvidiadrivers.nvidia.com.yaml":
            "nvidiadrivers.nvidia.com.json",
    }


def linked_files() -> dict[str, str | bytes]:
    files = troubleshoot_files()
    files["cluster-resources/custom-resources/nvidiadrivers.nvidia.com.json"] = json.dumps(
        [{"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver",
          "metadata": {"name": "default"}, "spec": {}}])
    return files


NOTES = [
    ("all-logs/nvidia-device-plugin-daemonset-x7k2p/nvidia-device-plugin-previous.log",
     f"a symbolic link troubleshoot adds to {LOGS}/nvidia-device-plugin-previous.log, "
     "which the bundle holds; the link itself is not read"),
    ("all-logs/nvidia-device-plugin-daemonset-x7k2p/nvidia-device-plugin.log",
     f"a symbolic link troubleshoot adds to {LOGS}/nvidia-device-plugin.log, "
     "which the bundle holds; the link itself is not read"),
    ("cluster-resources/custom-resources/nvidiadrivers.nvidia.com.yaml",
     "a symbolic link troubleshoot adds to "
     "cluster-resources/custom-resources/nvidiadrivers.nvidia.com.json, which the bundle "
     "holds; the link itself is not read"),
]


@pytest.mark.parametrize("packed", [True, False], ids=["tar.gz", "directory"])
def test_own_symlinks_are_notes_not_refused_members(tmp_path: Path, packed: bool) -> None:
    if packed:
        path = tar(tmp_path / "sb.tar.gz", TOP, linked_files(), own_links())
    else:
        path = symlink(write(tmp_path / "sb", linked_files()), own_links())
    with open_bundle(path) as opened:
        assert opened.problems == ()
        assert opened.layout_report is not None
        assert sorted(opened.layout_report.notes) == NOTES
        assert [d.metadata.name for d in opened.cluster.nvidiadrivers] == ["default"]
        assert opened.has(f"logs/gpu-operator/{PLUGIN_POD}/nvidia-device-plugin.log")
        report = analyze(opened, discover().rules)
    assert [f.id for f in report.findings if f.rule_id == "BND002"] == []
    assert statuses(report)["BND002"] == ("passed", None)
    assert sorted((n.path, n.note) for n in report.bundle.layout_notes) == NOTES


def test_other_symlinks_are_still_refused(tmp_path: Path) -> None:
    links = {"host-collectors/gpu-a/run-host/passwd.txt": "/etc/passwd",
             f"all-logs/{PLUGIN_POD}/no-such-container.log": f"../../{LOGS}/no-such.log",
             "cluster-resources/custom-resources/other.example.com.yaml":
                 "other.example.com.json"}
    path = tar(tmp_path / "sb.tar.gz", TOP, linked_files(), links)
    with open_bundle(path) as opened:
        refused = sorted((p.path, p.kind) for p in opened.problems)
        assert refused == [(name, "refused") for name in sorted(links)]
        assert opened.layout_report is not None and opened.layout_report.notes == ()
        report = analyze(opened, discover().rules)
    assert [f.id for f in report.findings if f.rule_id == "BND002"] == ["BND002:refused"]


# -- host commands, however quoted ---------------------------------------------------------


@pytest.mark.parametrize("command", [
    "/bin/sh -c containerd config dump",          # exec.Cmd.String() of sh -c '<script>'
    "sh -c 'containerd config dump'",
    '/bin/bash -c "containerd config dump 2>&1"',
    ["/bin/sh", "-c", "containerd config dump"],
    "/usr/local/bin/containerd --config /etc/containerd/config.toml config dump",
])
def test_config_dump_is_mapped_however_the_command_was_quoted(
        tmp_path: Path, command: str | list[str]) -> None:
    files = troubleshoot_files()
    files[CONFIG_INFO] = json.dumps({"command": command, "exitCode": "0"})
    with open_bundle(write(tmp_path / "sb", files)) as opened:
        assert opened.read_text("nodes/gpu-a/containerd/config-dump.toml") == DUMP
        assert [i.path for i in opened.manifest.failed_items] == ["cluster/deployments.json"]


def test_a_shell_script_of_something_else_is_not_mapped(tmp_path: Path) -> None:
    files = troubleshoot_files()
    files[CONFIG_INFO] = json.dumps({"command": "/bin/sh -c containerd config default",
                                     "exitCode": "0"})
    with open_bundle(write(tmp_path / "sb", files)) as opened:
        assert not opened.has("nodes/gpu-a/containerd/config-dump.toml")
        assert opened.has(f"original/{RUN}/containerd-config.txt")


# -- a host collector that failed ----------------------------------------------------------

STDERR = ("time=\"2026-11-20T09:30:01Z\" level=info msg=\"starting\"\n"
          "containerd: failed to load TOML from /etc/containerd/config.toml: invalid "
          "plugin key URI \"cri\" expect io.containerd.x.vx\n")


def failed_files(exit_code: str) -> dict[str, str | bytes]:
    files = troubleshoot_files()
    files[f"{RUN}/containerd-config.txt"] = ""
    files[CONFIG_INFO] = json.dumps({"command": "/bin/sh -c containerd config dump",
                                     "exitCode": exit_code, "error": STDERR})
    return files


def test_a_failed_host_collector_is_a_collection_gap_and_the_rule_is_skipped(
        tmp_path: Path) -> None:
    root = write(tmp_path / "sb", failed_files("1"))
    error = ("exited with status 1: containerd: failed to load TOML from "
             "/etc/containerd/config.toml: invalid plugin key URI \"cri\" expect "
             "io.containerd.x.vx")
    with open_bundle(root) as opened:
        assert not opened.has("nodes/gpu-a/containerd/config-dump.toml")
        assert opened.has(f"original/{RUN}/containerd-config.txt")
        assert [i for i in opened.manifest.failed_items if i.node] == [ManifestItem(
            path="nodes/gpu-a/containerd/config-dump.toml", node="gpu-a",
            command=["troubleshoot", CONFIG_INFO], exit_code=1, error=error)]
        report = analyze(opened, discover().rules)
    assert statuses(report)["RT001"] == (
        "skipped", "no node collected containerd/config-dump.toml")
    assert [(g.path, g.node, g.error) for g in report.collection_gaps if g.node] == [
        ("nodes/gpu-a/containerd/config-dump.toml", "gpu-a", error)]


def test_a_collector_killed_by_a_signal_is_a_gap_too(tmp_path: Path) -> None:
    with open_bundle(write(tmp_path / "sb", failed_files("signal: killed"))) as opened:
        [item] = [i for i in opened.manifest.failed_items if i.node]
        assert (item.exit_code, item.error) == (None, (
            "failed (signal: killed): containerd: failed to load TOML from "
            "/etc/containerd/config.toml: invalid plugin key URI \"cri\" expect "
            "io.containerd.x.vx"))


def test_a_failed_collector_is_no_gap_when_another_filled_the_path(tmp_path: Path) -> None:
    files = failed_files("1")
    files[f"{RUN}/config-dump-again.txt"] = DUMP
    files[f"{RUN}/config-dump-again-info.json"] = json.dumps(
        {"command": "/usr/bin/containerd config dump", "exitCode": "0"})
    with open_bundle(write(tmp_path / "sb", files)) as opened:
        assert opened.read_text("nodes/gpu-a/containerd/config-dump.toml") == DUMP
        assert [i.path for i in opened.manifest.failed_items] == ["cluster/deployments.json"]


# -- resource-quotas/ of older versions ----------------------------------------------------


@pytest.mark.parametrize("directory", ["resource-quota", "resource-quotas"])
def test_resource_quotas_are_read_under_both_names(tmp_path: Path, directory: str) -> None:
    files = troubleshoot_files()
    files[f"cluster-resources/{directory}/team-a.json"] = json.dumps(
        {"kind": "ResourceQuotaList", "items": [
            {"metadata": {"name": "gpu-quota", "namespace": "team-a"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "4"}}}]})
    with open_bundle(write(tmp_path / "sb", files)) as opened:
        assert [(q.metadata.name, q.metadata.namespace)
                for q in opened.cluster.resourcequotas] == [("gpu-quota", "team-a")]
        assert not opened.has(f"original/cluster-resources/{directory}/team-a.json")


# -- must-gather: an empty gpu_nodes.descr ---------------------------------------------------

LABELS = ("gpu-a\n- feature.node.kubernetes.io/pci-10de.present=true\n"
          "- kubernetes.io/hostname=gpu-a\n\n"
          "gpu-b\n- feature.node.kubernetes.io/pci-10de.present=true\n\n"
          "gpu-a\n- feature.node.kubernetes.io/pci-10de.present=true\n"
          "- kubernetes.io/hostname=gpu-a\n\n"
          "Timeout getting labels for node/gpu-c\n- stray=line\n\n")


def test_empty_describe_takes_the_nodes_from_the_labels_file(tmp_path: Path) -> None:
    files = must_gather_files()
    files["gpu_nodes.descr"] = ""
    files["gpu_nodes.labels"] = LABELS
    root = write(tmp_path / "mg", files)
    with open_bundle(root) as opened:
        assert [(n.name, n.labels) for n in opened.cluster.nodes] == [
            ("gpu-a", {"feature.node.kubernetes.io/pci-10de.present": "true",
                       "kubernetes.io/hostname": "gpu-a"}),
            ("gpu-b", {"feature.node.kubernetes.io/pci-10de.present": "true"})]
        assert opened.problems == ()
        assert opened.layout_report is not None
        assert opened.layout_report.notes == (("gpu_nodes.descr", (
            "describes no node; cluster/nodes.json lists the 2 node(s) of gpu_nodes.labels, "
            "with their names and labels only")),)
        report = analyze(opened, discover().rules)
    assert (report.bundle.nodes, report.bundle.gpu_nodes) == (2, 2)


def test_empty_describe_and_no_labels_file_is_no_node_and_no_problem(tmp_path: Path) -> None:
    files = must_gather_files()
    files["gpu_nodes.descr"] = ""
    del files["gpu_nodes.labels"]
    with open_bundle(write(tmp_path / "mg", files)) as opened:
        assert opened.cluster.nodes == [] and opened.problems == ()
        assert opened.layout_report is not None and opened.layout_report.notes == ()


def test_unreadable_describe_is_a_problem_and_the_labels_still_give_the_nodes(
        tmp_path: Path) -> None:
    files = must_gather_files()
    files["gpu_nodes.descr"] = "error: You must be logged in to the server (Unauthorized)\n"
    files["gpu_nodes.labels"] = LABELS
    with open_bundle(write(tmp_path / "mg", files)) as opened:
        assert [n.name for n in opened.cluster.nodes] == ["gpu-a", "gpu-b"]
        assert [(p.path, p.message) for p in opened.problems] == [
            ("gpu_nodes.descr", "no 'Name:' record of kubectl describe found")]


def test_describe_is_still_preferred_to_the_labels(tmp_path: Path) -> None:
    files = must_gather_files()
    files["gpu_nodes.labels"] = LABELS
    with open_bundle(write(tmp_path / "mg", files)) as opened:
        assert [n.name for n in opened.cluster.nodes] == ["gpu-a", "gpu-b"]
        assert opened.cluster.nodes[1].status.capacity["nvidia.com/gpu"] == "1"
        assert opened.layout_report is not None and opened.layout_report.notes == ()


# -- the layout report ------------------------------------------------------------------------

MUST_GATHER_MISSING = [
    "cluster/version.json", "cluster/events.json", "cluster/deployments.json",
    "cluster/namespaces.json", "cluster/runtimeclasses.json", "cluster/resourcequotas.json",
    "cluster/nvidiadrivers.json", "cluster/configmaps.json", "cluster/helm/",
    "nodes/*/containerd/config-dump.toml", "nodes/*/containerd/version.txt",
    "nodes/*/containerd/files/", "nodes/*/journal/containerd.jsonl",
    "nodes/*/journal/kubelet.jsonl", "nodes/*/nvidia-smi.xml", "nodes/*/systemd/containerd.txt",
    "nodes/*/host/os-release", "nodes/*/host/secureboot.txt", "nodes/*/host/nvidia-ctk.txt",
]
TROUBLESHOOT_MISSING = [
    "cluster/daemonsets.json", "cluster/deployments.json", "cluster/namespaces.json",
    "cluster/runtimeclasses.json", "cluster/resourcequotas.json", "cluster/nvidiadrivers.json",
    "cluster/configmaps.json",
    "nodes/*/containerd/version.txt", "nodes/*/containerd/files/",
    "nodes/*/journal/kubelet.jsonl", "nodes/*/dmesg.txt", "nodes/*/nvidia-smi.xml",
    "nodes/*/systemd/containerd.txt", "nodes/*/host/uname.txt", "nodes/*/host/os-release",
    "nodes/*/host/cmdline", "nodes/*/host/modules.txt", "nodes/*/host/secureboot.txt",
    "nodes/*/host/nvidia-ctk.txt",
]


def test_the_report_lists_the_format_v1_paths_each_layout_could_not_provide(
        tmp_path: Path) -> None:
    must_gather = report_of(write(tmp_path / "mg", must_gather_files()))
    assert must_gather.bundle.layout_missing == MUST_GATHER_MISSING
    assert must_gather.bundle.layout_notes == []
    troubleshoot = report_of(write(tmp_path / "sb", troubleshoot_files()))
    assert troubleshoot.bundle.layout_missing == TROUBLESHOOT_MISSING
    data = json.loads(troubleshoot.model_dump_json())["bundle"]
    assert data["layout_missing"] == TROUBLESHOOT_MISSING and data["layout_notes"] == []


def test_a_format_v1_bundle_has_no_layout_report(tmp_path: Path) -> None:
    samples = Path(__file__).resolve().parent.parent / "samples"
    report = report_of(samples / "incident-toolkit-disabled")
    assert (report.bundle.layout, report.bundle.layout_missing, report.bundle.layout_notes) \
        == ("gpu-triage v1", [], [])



def test_thousands_of_own_links_are_all_notes(tmp_path: Path) -> None:
    # a large cluster has a log link per container: more than the problems listed
    files = troubleshoot_files()
    links = {}
    for n in range(1500):
        pod = f"worker-{n:04d}"
        log = f"cluster-resources/pods/logs/default/{pod}/main.log"
        files[log] = "ok\n"
        links[f"all-logs/{pod}/main.log"] = f"../../{log}"
    with open_bundle(tar(tmp_path / "sb.tar.gz", TOP, files, links)) as opened:
        assert opened.problems == ()
        assert opened.layout_report is not None
        assert len(opened.layout_report.notes) == 1500


def test_run_pod_links_with_and_without_a_collector_name(tmp_path: Path) -> None:
    # the shapes of troubleshoot's own test bundles: test/baselines/supportbundle/
    # baseline.tar.gz ("run-example/run-example.log -> ../cluster-resources/pods/logs/
    # default/run-example/collector.log") and testdata/supportbundle/support-bundle.tar.gz
    # ("static-hi.log -> cluster-resources/pods/logs/default/static-hi/static-hi.log")
    files = troubleshoot_files()
    for pod, container in (("run-example", "collector"), ("static-hi", "static-hi")):
        files[f"cluster-resources/pods/logs/default/{pod}/{container}.log"] = "hi\n"
    links = {"run-example/run-example.log":
             "../cluster-resources/pods/logs/default/run-example/collector.log",
             "static-hi.log": "cluster-resources/pods/logs/default/static-hi/static-hi.log"}
    with open_bundle(tar(tmp_path / "sb.tar.gz", TOP, files, links)) as opened:
        assert opened.problems == ()
        assert opened.layout_report is not None
        assert [link for link, _ in opened.layout_report.notes] == [
            "run-example/run-example.log", "static-hi.log"]
        assert opened.has("logs/default/static-hi/static-hi.log")
