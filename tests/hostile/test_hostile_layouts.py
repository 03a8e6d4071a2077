"""Foreign layouts (must-gather, troubleshoot) under the budgets of a format v1 bundle.

The two bombs of this area at full size (a 16 MiB YAML list, a gzip'd bug report that
expands 1000 times), each YAML cap and the nested gzip caps from both sides, and
malformed content: every value of every structured file of both layouts replaced by
values of the wrong type, size or depth (a property, plus the cases that used to end
the run with exit 4). Each ends in a recorded problem of the original file, or in the
value being ignored, and never in an exception or a rule ``error``.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from bombs import must_gather_yaml, nested_gzip
from hostile_kit import HOSTILE, analyse_json, assert_no_rule_errors, problems_of, statuses
from hypothesis import given
from hypothesis import strategies as st
from layouts_kit import (
    OPERATOR_POD,
    SEP,
    bug_report,
    must_gather_files,
    troubleshoot_files,
    write,
)

import bundle.layouts.base
from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from bundle import Limits, open_bundle
from bundle.layouts.base import INNER_RATIO_FLOOR, YAML_MAX_BYTES, to_json, yaml_over_budget
from gpu_triage.cli import main

NODES_CAP = Limits().max_yaml_nodes
OUTER = ("expands beyond the 1048576 bytes that the ratio cap (200 times the compressed "
         "archive's size) leaves; not read")
RATIO = ("expands more than 200 times its size (a decompression bomb: over the ratio cap); "
         "not read")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any]]:
    work = tmp_path_factory.mktemp("clean")
    return analyse_json(write(work / "must-gather", must_gather_files()), work)


def _opened(root: Path, limits: Limits | None = None) -> tuple[list[tuple[str, str, Any, str]],
                                                               list[str]]:
    """(problems, paths) of a bundle after every rule ran on it (none in error)."""
    with open_bundle(root, limits) as opened:
        report = analyze(opened, discover().rules)
        assert [(r.rule_id, r.reason) for r in report.rules if r.status.value == "error"] == []
        return ([(p.path, p.kind, p.where, p.message) for p in opened.problems],
                opened.paths_under(""))


# --------------------------------------------------------------------------- the bombs


def test_must_gather_yaml_bomb_is_refused_at_the_node_cap(
        tmp_path: Path, clean: tuple[int, dict[str, Any]]) -> None:
    code, report = analyse_json(must_gather_yaml(tmp_path), tmp_path)
    assert problems_of(report) == [(
        "gpu_operand_ds.yaml", "refused", None,
        "more than 1,000,000 YAML nodes, over the cap on the nodes of one YAML file; not read")]
    assert_no_rule_errors(report)
    assert code == clean[0]
    # Only the rules that read the DaemonSets can answer otherwise; those that need them
    # (CMP001, CMP010: the GPU stack's own DaemonSets) say so and find nothing.
    differ = {rule for rule, status in statuses(report).items()
              if status != statuses(clean[1])[rule]}
    assert differ <= {"BND002", "CMP001", "CMP010", "OP001", "OP002", "OP003", "OP004", "OP005",
                      "OP006"}, differ
    assert {r["rule_id"]: (r["status"], r["reason"]) for r in report["rules"]
            if r["rule_id"] in ("CMP001", "CMP010")} == dict.fromkeys(
        ("CMP001", "CMP010"), ("skipped", "cluster/daemonsets.json is not in the bundle"))
    assert not [f for f in report["findings"] if f["rule_id"] in ("CMP001", "CMP010")]


def test_max_yaml_nodes_sets_the_node_cap(tmp_path: Path) -> None:
    files = must_gather_files()
    path = tmp_path / "mg"
    write(path, files)
    out = tmp_path / "r.json"
    code = main(["analyze", str(path), "-f", "json", "-o", str(out), "--max-yaml-nodes", "20"])
    refused = [(p["path"], p["message"]) for p in orjson.loads(out.read_bytes())["problems"]
               if p["kind"] == "refused"]
    assert code in (0, 1)
    assert ("cluster_policy.yaml", "more than 20 YAML nodes, over the cap on the nodes of one "
            "YAML file; not read") in refused


def test_nested_gzip_bomb_is_refused_at_the_ratio_cap(
        tmp_path: Path, clean: tuple[int, dict[str, Any]]) -> None:
    code, report = analyse_json(nested_gzip(tmp_path), tmp_path)
    # The outer archive (1.9 KiB) leaves less than the inner stream's own ratio would:
    # its cap, floored at 1 MiB, fires first.
    assert problems_of(report) == [("nvidia-bug-report_gpu-a.log.gz", "refused", None, OUTER)]
    assert_no_rule_errors(report)
    # The clean must-gather's critical finding is the Xid 79 of its bug report, unread here.
    assert (code, clean[0]) == (0, 1)


# --------------------------------------------------------------------------- YAML caps


def _list_of(items: int) -> bytes:
    """A YAML list with exactly ``items`` + 2 nodes (the mapping, its key, the list)."""
    return ("items:\n" + "- {}\n" * (items - 3)).encode()


def test_yaml_at_the_node_cap_is_read_and_one_node_over_is_refused() -> None:
    cap = 5_000
    assert yaml_over_budget(_list_of(cap), cap) is None
    assert yaml_over_budget(_list_of(cap + 1), cap) == (
        "more than 5,000 YAML nodes, over the cap on the nodes of one YAML file; not read")


def test_the_cheap_bound_lets_ordinary_yaml_through_uncounted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """kubectl's YAML has far fewer nodes than the bound allows: it is not counted."""
    def counted(*_: Any) -> None:
        raise AssertionError("counted")

    monkeypatch.setattr(bundle.layouts.base, "_LOADER", counted)
    assert yaml_over_budget(must_gather_files()["gpu_operand_pods.yaml"].encode(), 200) is None


@HOSTILE
@given(st.lists(st.sampled_from(["a", ": ", "- ", ", ", "[", "]", "{", "}", "? ", "\n", "  ",
                                 "x: [a, b]\n", "- {a, b}\n", "[a: b]", "---\n"]), max_size=30))
def test_the_cheap_bound_is_an_upper_bound(parts: list[str]) -> None:
    data = "".join(parts).encode()
    try:
        nodes = sum(isinstance(e, yaml.ScalarEvent | yaml.CollectionStartEvent | yaml.AliasEvent)
                    for e in yaml.parse(data, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return
    marks = sum(data.count(mark) for mark in (b":", b"-", b",", b"[", b"{", b"?"))
    assert nodes <= 1 + 2 * marks


def test_yaml_over_the_byte_cap_is_refused(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.setattr(bundle.layouts.base, "YAML_MAX_BYTES", 1_000)
    policy = must_gather_files()["cluster_policy.yaml"]
    padded = str(policy) + "#" * (1_000 - len(str(policy)))
    problems, paths = _opened(write(tmp_path / "at", {**must_gather_files(),
                                                      "cluster_policy.yaml": padded}))
    assert problems == [] and "cluster/clusterpolicies.json" in paths
    problems, paths = _opened(write(tmp_path / "over", {**must_gather_files(),
                                                        "cluster_policy.yaml": padded + "#"}))
    assert problems == [("cluster_policy.yaml", "refused", None, "1,001 bytes of YAML, over the "
                         "cap of 1,000 bytes for one YAML file; not read")]
    assert "cluster/clusterpolicies.json" not in paths
    assert YAML_MAX_BYTES == 64 << 20


def test_the_node_cap_is_a_limit_of_the_run(tmp_path: Path) -> None:
    root = write(tmp_path / "mg", must_gather_files())
    problems, paths = _opened(root, Limits(max_yaml_nodes=30))  # the operator pod: 30
    assert problems == [("gpu_operand_pods.yaml", "refused", None, "more than 30 YAML nodes, "
                         "over the cap on the nodes of one YAML file; not read")]
    assert "cluster/pods.json" in paths  # from gpu_operator_pod.yaml, under the cap
    assert NODES_CAP == 1_000_000


# --------------------------------------------------------------------------- nested gzip


def _with_report(text: str) -> dict[str, str | bytes]:
    return {**must_gather_files(), "nvidia-bug-report_gpu-a.log.gz": gzip.compress(text.encode())}


def test_an_inner_gzip_under_the_floor_is_read_whatever_its_ratio(tmp_path: Path) -> None:
    dmesg = "[ 1.0] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
    text = f"x\n{SEP}\ndmesg:\n{dmesg}" + " " * (INNER_RATIO_FLOOR - 200) + f"\n{SEP}\n"
    problems, paths = _opened(write(tmp_path / "mg", _with_report(text)))
    assert problems == [] and "nodes/gpu-a/dmesg.txt" in paths


def test_an_inner_gzip_over_the_floor_and_the_ratio_is_refused(tmp_path: Path) -> None:
    text = f"x\n{SEP}\ndmesg:\n[ 1.0] a\n" + " " * (2 * INNER_RATIO_FLOOR) + f"\n{SEP}\n"
    problems, paths = _opened(write(tmp_path / "mg", _with_report(text)))
    assert problems == [("nvidia-bug-report_gpu-a.log.gz", "refused", None, RATIO)]
    assert not [p for p in paths if p.startswith("nodes/gpu-a/")]


def test_inner_gzip_output_counts_against_the_total_cap(tmp_path: Path) -> None:
    files = must_gather_files()
    archive = sum(len(v) for v in files.values())
    inner = len(gzip.decompress(bug_report()))
    root = write(tmp_path / "mg", files)
    problems, paths = _opened(root, Limits(max_total_bytes=archive + inner))
    assert problems == [] and "nodes/gpu-a/dmesg.txt" in paths
    problems, paths = _opened(root, Limits(max_total_bytes=archive + inner - 1))
    assert problems == [("nvidia-bug-report_gpu-a.log.gz", "refused", None,
                         f"expands beyond the {inner - 1} bytes left of the "
                         f"{archive + inner - 1} byte cap on the total size; not read")]
    assert "nodes/gpu-a/dmesg.txt" not in paths


# --------------------------------------------------------------------------- malformed content


def _pod(**changes: Any) -> str:
    pod = yaml.safe_load(OPERATOR_POD)
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        target = pod
        for key in parents:
            target = target[key]
        target[last] = value
    return yaml.safe_dump(pod)


def _operands(**changes: Any) -> str:
    pods = yaml.safe_load(str(must_gather_files()["gpu_operand_pods.yaml"]))
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        target = pods["items"][1]
        for key in parents:
            target = target[key]
        target[last] = value
    return yaml.safe_dump(pods)


def _release(**changes: Any) -> str:
    releases = json.loads(str(troubleshoot_files()["helm/gpu-operator.json"]))
    releases[0].update(changes)
    return json.dumps(releases)


DEEP = "[" * 300 + "]" * 300
MG = "must-gather"
TS = "support-bundle"
# (layout, file, content, the problem it records, or None: ignored without one)
CASES: dict[str, tuple[str, str, str, tuple[str, str, Any, str] | None]] = {
    "containers not a list": (MG, "gpu_operator_pod.yaml", _pod(**{"spec.containers": 5}), (
        "gpu_operator_pod.yaml", "parse", None, "the pod names no container (spec.containers "
        "is not a list of named objects); its log was not mapped")),
    "init containers not a list": (  # the v1 reader drops the field of the converted pod
        MG, "gpu_operand_pods.yaml", _operands(**{"spec.initContainers": True}),
        ("cluster/pods.json", "parse", "/items/1/spec/initContainers", "Pod: a field of the "
         "wrong type was ignored: spec/initContainers: Input should be a valid list")),
    "a namespace that is a number": (MG, "gpu_operand_pods.yaml",
                                     _operands(**{"metadata.namespace": 5}), None),
    "an integer past 64 bits": (MG, "gpu_operand_pods.yaml",
                                _operands(**{"metadata.labels.app": 2**70}), None),
    "a pod list item that is not an object": (
        TS, "cluster-resources/pods/gpu-operator.json", '{"items": [5, {}]}',
        ("cluster-resources/pods/gpu-operator.json", "parse", "/items/0",
         "1 item(s) of the list are not objects; ignored")),
    "a release history that is a number": (
        TS, "helm/gpu-operator.json", _release(releaseHistory=5),
        ("helm/gpu-operator.json", "parse", None, "1 revision(s) of release gpu-operator not "
         "understood (not an object with an integer revision); ignored")),
    "a revision past 64 bits": (
        TS, "helm/gpu-operator.json", _release(releaseHistory=[{"revision": str(2**70)}]),
        ("helm/gpu-operator.json", "parse", None, "1 revision(s) of release gpu-operator not "
         "understood (not an object with an integer revision); ignored")),
    "a version nested deeper than JSON is written": (
        TS, "cluster-info/cluster_version.json", '{"info": {"x": ' + DEEP + '}}',
        ("cluster-info/cluster_version.json", "parse", None,
         "not converted to cluster/version.json: nested more than 254 levels deep")),
    "a version that is not an object": (
        TS, "cluster-info/cluster_version.json", '{"info": ' + DEEP + '}',
        ("cluster-info/cluster_version.json", "parse", None,
         "no 'info' object; the server version was not read")),
    "errors nested deeply": (TS, "cluster-resources/deployments-errors.json",
                             "[" * 999 + "]" * 999, None),
    "a YAML custom resource nested deeply": (
        TS, "cluster-resources/custom-resources/clusterpolicies.nvidia.com.yaml",
        "- kind: ClusterPolicy\n  spec: " + DEEP + "\n",
        ("cluster-resources/custom-resources/clusterpolicies.nvidia.com.yaml", "parse", None,
         "not converted to cluster/clusterpolicies.json: nested more than 254 levels deep")),
    "YAML that is not UTF-8": (MG, "cluster_policy.yaml", "kind: \udcff\n",
                               ("cluster_policy.yaml", "parse", None, "invalid YAML: ReaderError")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_layout_content_is_a_problem_not_a_crash(name: str, tmp_path: Path) -> None:
    layout, file, content, problem = CASES[name]
    files = must_gather_files() if layout == MG else troubleshoot_files()
    data = content.encode("utf-8", "surrogateescape")
    problems, _ = _opened(write(tmp_path / layout, {**files, file: data}))
    assert problems == ([problem] if problem is not None else [])


def test_to_json_writes_what_orjson_reads() -> None:
    assert orjson.loads(to_json({"a": 2**70, 2**70: [2**64 - 1, -(2**63) - 1, 10**400]})) == {
        "a": float(2**70), str(float(2**70)): [2**64 - 1, float(-(2**63) - 1), str(10**400)]}


HOSTILE_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from([2**70, -(2**70), 1.5, ""]),
    st.text(max_size=5), st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=3)),
                                  max_size=3),
    st.dictionaries(st.text(max_size=3), st.none(), max_size=2),
    st.sampled_from([json.loads(DEEP), [[]] * 3]))


def _places(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _places(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _places(item, (*at, index))
    return found


def _replaced(value: Any, at: tuple[Any, ...], new: Any) -> Any:
    if not at:
        return new
    value = copy.deepcopy(value)
    target = value
    for key in at[:-1]:
        target = target[key]
    target[at[-1]] = new
    return value


STRUCTURED = [(MG, name) for name in sorted(must_gather_files()) if name.endswith(".yaml")] + \
             [(TS, name) for name in sorted(troubleshoot_files()) if name.endswith(".json")]


@HOSTILE
@given(st.sampled_from(STRUCTURED), st.data())
def test_any_value_of_the_wrong_type_anywhere_is_survived(tmp_path_factory: pytest.TempPathFactory,
                                                         where: tuple[str, str],
                                                         data: st.DataObject) -> None:
    layout, file = where
    files = must_gather_files() if layout == MG else troubleshoot_files()
    text = str(files[file])
    value = yaml.safe_load(text) if file.endswith(".yaml") else json.loads(text)
    at = data.draw(st.sampled_from(_places(value)))
    new = data.draw(HOSTILE_VALUES)
    changed = _replaced(value, at, new)
    try:
        content = yaml.safe_dump(changed) if file.endswith(".yaml") else json.dumps(changed)
    except (ValueError, RecursionError, yaml.YAMLError):
        return
    root = tmp_path_factory.mktemp("fuzz") / layout
    _opened(write(root, {**files, file: content}))  # opens, every rule runs, none in error


def test_dense_json_in_a_troubleshoot_bundle_is_refused_before_parsing(tmp_path: Path) -> None:
    """The foreign layouts ask the native reader's JSON density question."""
    files = troubleshoot_files()
    files["cluster-resources/pods/gpu-operator.json"] = (
        b'{"kind":"PodList","items":[' + b",".join([b"{}"] * 600_000) + b"]}")
    with open_bundle(write(tmp_path / "ts", files)) as opened:
        pods = opened.cluster.pods
        problems = [(p.path, p.kind) for p in opened.problems
                    if "JSON objects and arrays" in p.message]
    assert pods == []
    assert problems == [("cluster-resources/pods/gpu-operator.json", "refused")]
