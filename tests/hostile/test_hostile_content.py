"""Malformed content inside a well-formed bundle.

Each case replaces one file of a valid bundle. The outcome: one exact recorded problem
(path, kind, position, message fragment); no rule ends in ``error``; and every rule
that does not read the broken file ends exactly as it does on the valid bundle.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hostile_kit import SMI, valid_files
from kit.bundles import kube_list, write_dir

from analyzers.engine import analyze
from analyzers.engine.coverage import required_inputs
from analyzers.engine.plugins import LoadedRule, discover
from analyzers.results.models import Report, RuleStatus
from bundle import Bundle, open_bundle
from reports import render

NODE = "nodes/gpu-a/"


@dataclass(frozen=True)
class Case:
    path: str
    content: Any
    problem: tuple[str, str | None, str] | None  # (kind, where, message fragment)


def _pods_with(**changes: Any) -> dict[str, Any]:
    pods = valid_files()["cluster/pods.json"]
    first = pods["items"][0]
    for dotted, value in changes.items():
        node = first
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node[part]
        node[leaf] = value
    return pods


def _nodes_int_capacity() -> dict[str, Any]:
    nodes = valid_files()["cluster/nodes.json"]
    nodes["items"][0]["status"]["capacity"]["nvidia.com/gpu"] = 8
    nodes["items"][0]["status"]["allocatable"]["nvidia.com/gpu"] = 8
    return nodes


BILLION_LAUGHS = (b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
                  b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
                  b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>\n'
                  b"<nvidia_smi_log>&c;</nvidia_smi_log>")
EXTERNAL_ENTITY = (b'<?xml version="1.0"?>\n<!DOCTYPE l [\n<!ENTITY e SYSTEM '
                   b'"file:///etc/passwd">]>\n<nvidia_smi_log>&e;</nvidia_smi_log>')

CASES: dict[str, Case] = {
    "invalid JSON": Case("cluster/nodes.json", '{"kind": "List", "items": [}',
                         ("parse", "line 1, column 28", "invalid JSON")),
    "JSON nested beyond any parser's depth": Case(
        "cluster/events.json", "[" * 5000 + "]" * 5000,
        ("parse", "line 1, column 1026", "invalid JSON: depth limit exceeded")),
    "a Pod where a List is expected": Case(
        "cluster/events.json", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
        ("parse", None, "expected a List of Event objects, got 'Pod'")),
    "a JSON string where a List is expected": Case(
        "cluster/events.json", '"hello"', ("parse", None, "expected a List of Event objects, "
                                                          "got 'str'")),
    "an item of another kind": Case(
        "cluster/events.json", kube_list({"kind": "Pod", "metadata": {"name": "p"}}),
        ("parse", "/items/0", "item of kind 'Pod' in a Event list; ignored")),
    "an item that is not an object": Case(
        "cluster/events.json", kube_list(7), ("parse", "/items/0", "a JSON int")),
    "objects missing every optional field": Case(
        "cluster/events.json", kube_list({}, {"kind": "Event"}), None),
    "labels of the wrong type": Case(
        "cluster/pods.json", _pods_with(**{"metadata.labels": 5}),
        ("parse", "/items/0/metadata/labels",
         "Pod: a field of the wrong type was ignored: metadata/labels")),
    "containers of the wrong type": Case(
        "cluster/pods.json", _pods_with(**{"spec.containers": "x"}),
        ("parse", "/items/0/spec/containers",
         "Pod: a field of the wrong type was ignored: spec/containers")),
    "a count that is not a number": Case(
        "cluster/events.json", kube_list({"kind": "Event", "count": "many"}),
        ("parse", "/items/0/count", "Event: a field of the wrong type was ignored: count")),
    "GPU quantities written as numbers": Case("cluster/nodes.json", _nodes_int_capacity(), None),
    "helm history that is not a list": Case(
        "cluster/helm/gpu-operator.json", {"revision": 1},
        ("parse", None, "expected a list of release revisions")),
    "invalid TOML": Case(NODE + "containerd/config-dump.toml", 'version = 2\n[plugins\nx = "',
                         ("parse", "line 2, column 9", "invalid TOML")),
    "TOML nested too deeply": Case(
        NODE + "containerd/config-dump.toml", "a = " + "[" * 3000 + "]" * 3000,
        ("refused", "line 1", "TOML nested deeper than 64 levels")),
    "invalid XML": Case(NODE + "nvidia-smi.xml", "<nvidia_smi_log>\n<gpu>\n</nvidia_smi_log>\n",
                        ("parse", "line 3, column 3", "mismatched tag")),
    "XML entity expansion": Case(NODE + "nvidia-smi.xml", BILLION_LAUGHS,
                                 ("parse", "line 1, column 46", "entities, which are refused")),
    "XML external entity": Case(NODE + "nvidia-smi.xml", EXTERNAL_ENTITY,
                                ("parse", "line 3, column 39", "entities, which are refused")),
    "XML of another document": Case(NODE + "nvidia-smi.xml", "<html><body/></html>",
                                    ("parse", "line 1, column 1", "root element is <html>")),
    "XML numbers out of range": Case(
        NODE + "nvidia-smi.xml", SMI.replace("81920 MiB", "1e999 MiB"), None),
    "journal lines that are not JSON": Case(
        NODE + "journal/containerd.jsonl",
        '{"MESSAGE": "ok", "__REALTIME_TIMESTAMP": "1795960000000000"}\n'
        "-- Boot 3f2a --\n[1, 2]\n",
        ("parse", "line 2", "not JSON")),
    "journal fields of unexpected types": Case(
        NODE + "journal/containerd.jsonl",
        '{"MESSAGE": {"a": 1}, "__REALTIME_TIMESTAMP": "yesterday", "_PID": "\\u00b2"}\n'
        '{"MESSAGE": [104, 105, 999], "__REALTIME_TIMESTAMP": "99999999999999999999999"}\n',
        None),
    "timestamps in unexpected formats": Case(
        "cluster/events.json",
        kube_list({"kind": "Event", "lastTimestamp": "Tuesday", "eventTime": 5,
                   "involvedObject": {"kind": "Pod", "namespace": "gpu-operator",
                                      "name": "nvidia-device-plugin-daemonset-klmno"},
                   "reason": "BackOff", "message": "x"}),
        None),
    "kernel log with odd timestamps and binary": Case(
        NODE + "dmesg.txt",
        b"[99999999999.999999] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, fallen off\n"
        b"9999-99-99T99:99:99,000000+99:99 NVRM: Xid (PCI:zz): 48\n\x00\xff\x1b[2J\n",
        ("parse", "line 3", "not valid UTF-8 (first at byte ")),
    "systemd show output that is not KEY=VALUE": Case(
        NODE + "systemd/containerd.txt", b"\x00\x01 = = =\nNRestarts=lots\n=\n", None),
    "a huge single line": Case(NODE + "dmesg.txt", "NVRM: " + "A" * (8 << 20), (
        "refused", "line 1", "over the cap of 1,000 lines or 65,536 characters per record")),
    "binary in a container log": Case(
        "logs/gpu-operator/nvidia-device-plugin-daemonset-klmno/main.log",
        b"\x00\x01\x02\xff\xfe binary \x1b]0;title\x07\n"
        + valid_files()["logs/gpu-operator/nvidia-device-plugin-daemonset-klmno/main.log"]
        .encode(),  # the real line after the binary is still found
        ("parse", "line 1", "not valid UTF-8 (first at byte 3)")),
    "manifest fields of the wrong type": Case(
        "manifest.json",
        {"format": "gpu-triage-bundle", "format_version": 1, "created_at": 12345,
         "cluster": "prod", "items": [{"path": "cluster/pods.json", "error": ["x"]},
                                      {"path": "cluster/events.json", "error": "forbidden"}]},
        ("parse", "/cluster", "manifest: a field of the wrong type was ignored")),
}


def _run(path: Path) -> tuple[Report, Bundle]:
    opened = open_bundle(path)
    return analyze(opened, _rules()), opened


_RULES: list[LoadedRule] = []


def _rules() -> list[LoadedRule]:
    if not _RULES:
        _RULES.extend(discover().rules)
    return _RULES


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RuleStatus]:
    report, opened = _run(write_dir(tmp_path_factory.mktemp("valid") / "b", valid_files()))
    opened.close()
    assert report.problems == []
    assert all(r.status is not RuleStatus.ERROR for r in report.rules)
    return {r.rule_id: r.status for r in report.rules}


def _reads(loaded: LoadedRule, paths: tuple[str, ...], *, required: bool = False) -> bool:
    for needed in required_inputs(loaded.rule) if required else loaded.rule.inputs:
        pattern = f"nodes/*/{needed.path}" if needed.per_node else needed.path
        if any(fnmatch.fnmatchcase(p, pattern) for p in paths):
            return True
    return False


def _touch_accessors(opened: Bundle) -> None:
    """Read every artifact once, so problems of files no rule reads are recorded too."""
    for name in opened.node_names:
        node = opened.node(name)
        _ = (node.config_dump, node.containerd_files, node.journal("containerd"),
             node.journal("kubelet"), node.dmesg, node.systemd_containerd, node.nvidia_smi,
             node.cdi_files)
    for path in opened.logs.values():
        opened.read_text(path)


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_file(tmp_path: Path, name: str, baseline: dict[str, RuleStatus]) -> None:
    case = CASES[name]
    files = {**valid_files(), case.path: case.content}
    report, opened = _run(write_dir(tmp_path / "b", files))
    with opened:
        _touch_accessors(opened)
        problems = [(p.path, p.kind, p.where, p.message) for p in opened.problems]
    errors = [(r.rule_id, r.reason) for r in report.rules if r.status is RuleStatus.ERROR]
    assert errors == []
    if case.problem is None:
        assert problems == []
    else:
        kind, where, fragment = case.problem
        assert [p for p in problems if p[:3] == (case.path, kind, where) and fragment in p[3]], \
            problems
    # Rules that do not read the broken file end as they do on the valid bundle; rules
    # that need it never say "passed" (analyzers/engine/coverage.py).
    # A manifest's failed items are damaged inputs too (analyzers/knowledge/gaps.py).
    touched = (case.path, *(item["path"] for item in case.content.get("items", [])
                            if isinstance(item.get("error"), str))) \
        if case.path == "manifest.json" and isinstance(case.content, dict) else (case.path,)
    for result in report.rules:
        loaded = next(r for r in _rules() if r.rule.id == result.rule_id)
        if result.rule_id.startswith("BND"):
            continue
        if _reads(loaded, (case.path,), required=True):
            if case.problem is not None:
                assert result.status is not RuleStatus.PASSED, result.rule_id
            continue
        if _reads(loaded, touched):
            continue
        assert result.status == baseline[result.rule_id], (result.rule_id, result.reason)


def test_wrong_typed_field_keeps_the_object(tmp_path: Path) -> None:
    files = {**valid_files(), "cluster/pods.json": _pods_with(**{"metadata.labels": 5})}
    with open_bundle(write_dir(tmp_path / "b", files)) as opened:
        pods = opened.cluster.pods
        assert [p.name for p in pods][:1] == ["nvidia-driver-daemonset-abcde"]
        assert pods[0].metadata.labels == {}
        assert pods[0].spec.node_name == "gpu-a"


def test_quantities_written_as_numbers_are_counted(tmp_path: Path) -> None:
    files = {**valid_files(), "cluster/nodes.json": _nodes_int_capacity()}
    with open_bundle(write_dir(tmp_path / "b", files)) as opened:
        (node,) = [n for n in opened.cluster.nodes if n.name == "gpu-a"]
        assert node.status.capacity["nvidia.com/gpu"] == "8"
        report = analyze(opened, _rules())
        assert report.bundle.gpu_nodes == 1


def test_manifest_keeps_the_good_items(tmp_path: Path) -> None:
    case = CASES["manifest fields of the wrong type"]
    with open_bundle(write_dir(tmp_path / "b", {"manifest.json": case.content})) as opened:
        assert [(i.path, i.error) for i in opened.manifest.items] == [
            ("cluster/pods.json", None), ("cluster/events.json", "forbidden")]
        assert opened.manifest.created_at is None
        assert opened.manifest.cluster.context is None


def test_invalid_utf8_is_located(tmp_path: Path) -> None:
    files = {"nodes/gpu-a/host/os-release": b'NAME="Ubuntu"\nVERSION="\xff"\n'}
    with open_bundle(write_dir(tmp_path / "b", files)) as opened:
        assert opened.node("gpu-a").host("os-release") == 'NAME="Ubuntu"\nVERSION="\ufffd"\n'
        assert [(p.path, p.where, p.message) for p in opened.problems] == [
            ("nodes/gpu-a/host/os-release", "line 2",
             "not valid UTF-8 (first at byte 23); undecodable bytes were replaced")]


def test_a_flood_of_problems_is_capped(tmp_path: Path) -> None:
    journal = "not json\n" * 5000
    with open_bundle(write_dir(tmp_path / "b", {NODE + "journal/kubelet.jsonl": journal})) as b:
        assert b.node("gpu-a").journal("kubelet") == []
        problems = b.problems
        assert len(problems) == 1001
        assert problems[-1].path == "(more)"
        assert problems[-1].message == "4000 more parse problem(s) were not listed"


def test_quantity_with_a_non_ascii_digit(tmp_path: Path) -> None:
    """'²'.isdigit() is true but int('²') raises; GPU node detection runs outside the
    rules' isolation, so this used to end the whole run with exit 4."""
    nodes = valid_files()["cluster/nodes.json"]
    nodes["items"][1]["status"]["capacity"]["nvidia.com/gpu"] = "\u00b2"
    files = {**valid_files(), "cluster/nodes.json": nodes}
    with open_bundle(write_dir(tmp_path / "b", files)) as opened:
        report = analyze(opened, _rules())
    assert report.bundle.gpu_nodes == 1
    assert [r.rule_id for r in report.rules if r.status is RuleStatus.ERROR] == []


def test_problem_messages_escape_control_characters(tmp_path: Path) -> None:
    """A message can quote bundle text (here a label key); it is shown escaped."""
    pods = _pods_with(**{"metadata.labels": {"k\x1b[2J\u202e": [5], "ok": "1"}})
    files = {"cluster/pods.json": pods}
    with open_bundle(write_dir(tmp_path / "b", files)) as opened:
        assert opened.cluster.pods[0].metadata.labels == {"ok": "1"}
        (problem,) = opened.problems
    assert problem.where == "/items/0/metadata/labels/k\\x1b[2J\\u202e"
    assert "metadata/labels/k\\x1b[2J\\u202e: Input should be a valid string" in problem.message


def test_event_counts_at_the_int64_limit_still_render(tmp_path: Path) -> None:
    """Counts are added up by the timeline; JSON output carries 64-bit integers only."""
    events = kube_list(*[{"kind": "Event", "count": count, "reason": "BackOff", "type": "Warning",
                          "message": "Back-off restarting failed container",
                          "lastTimestamp": "2026-11-29T13:59:00Z",
                          "involvedObject": {"kind": "Pod", "namespace": "gpu-operator",
                                             "name": "nvidia-device-plugin-daemonset-klmno"}}
                         for count in (2**63 - 1, 2**63 - 1, 2**64 - 1, 1e300)])
    files = {**valid_files(), "cluster/events.json": events}
    report, opened = _run(write_dir(tmp_path / "b", files))
    with opened:
        problems = [(p.where, p.message) for p in opened.problems]
    assert problems == [("/items/2/count", "Event: a field of the wrong type was ignored: "
                                           "count: Input should be a valid integer"),
                        ("/items/3/count", "Event: a field of the wrong type was ignored: "
                                           "count: Input should be a valid integer")]
    assert "timeline" in render(report, "json")


def test_a_kind_nested_beyond_repr_is_described_by_its_type(tmp_path: Path) -> None:
    deep = '{"kind": "List", "items": [{"kind": ' + "[" * 1000 + '"Pod"' + "]" * 1000 + "}]}"
    files = {**valid_files(), "cluster/events.json": deep}
    report, opened = _run(write_dir(tmp_path / "b", files))
    with opened:
        problems = [(p.where, p.message) for p in opened.problems]
    assert problems == [("/items/0", "item of kind list in a Event list; ignored")]
    assert [r.rule_id for r in report.rules if r.status is RuleStatus.ERROR] == []
