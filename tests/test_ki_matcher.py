"""KI001 and the facts behind it: where entries are matched, how their context is judged,
how a second opinion gives way, and the false-match guard over every sample.

Log lines quoted here are the verbatim examples of the entries they exercise (their
threads are the entries' ``sources``)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import kit
import pytest

from analyzers.commands import opens_destructively
from analyzers.engine.casebundle import parse, write
from analyzers.engine.deference import give_way
from analyzers.facts import Facts
from analyzers.facts.known_issue_conditions import Judged, Verdict, in_range, judge, numbers
from analyzers.knowledge.known_issues import Context, load
from analyzers.results.models import Evidence, Finding, ObjectRef, Severity
from bundle import open_bundle

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted(p for p in (ROOT / "samples").iterdir() if (p / "manifest.json").exists())
LOUD = {Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL}
# Samples whose own failure is an entry's failure: the entry is right there, and names it.
RIGHTLY_NAMED = {"exporter-oomkilled": ["KI001:KI-DCGM-003/gpu-operator/nvidia-dcgm-exporter"]}

TOOLKIT_LOG = ("logs/gpu-operator/nvidia-container-toolkit-daemonset-gpu-a/"
               "nvidia-container-toolkit-ctr")
VERSION_3 = ('time="2026-01-21T12:32:09Z" level=fatal msg="Error: unable to load config: '
             'unsupported config version: 3"\n')
CONTAINERD_2 = "containerd containerd.io v2.0.5 fb4c30d4ede3531652d86197bf3fc9515e5276d9\n"


def _toolkit(image: str, *, failing: bool) -> dict[str, Any]:
    status: dict[str, Any] = {"name": "nvidia-container-toolkit-ctr", "ready": not failing,
                              "restartCount": 7 if failing else 0}
    status["state"] = ({"waiting": {"reason": "CrashLoopBackOff"}} if failing
                       else {"running": {"startedAt": "2026-11-29T13:00:00Z"}})
    patch: dict[str, Any] = {
        "file": "cluster/pods.json", "name": "nvidia-container-toolkit-daemonset-gpu-a",
        "merge": {"spec": {"containers": [{"name": "nvidia-container-toolkit-ctr",
                                           "image": image}]},
                  "status": {"containerStatuses": [status]}}}
    if failing:
        patch["unset"] = [["status", "containerStatuses", "nvidia-container-toolkit-ctr",
                           "state", "running"]]
    return patch


def _analyse(tmp_path: Path, files: dict[str, Any], patches: list[dict[str, Any]]
             ) -> dict[str, Finding]:
    inline = parse({"base": "healthy-operator", "files": files, "patch": patches}, "test")
    root = write(inline, tmp_path / "bundle", "test")
    return kit.findings(kit.analyse(root), "KI001")


def test_versions_compare_on_the_parts_a_clause_names() -> None:
    assert numbers("v1.17.4-ubuntu20.04") == (1, 17, 4)
    assert numbers("5.15.0-1040-aws") == (5, 15, 0)
    assert numbers("containerd://2.0.5-k3s1") == (2, 0, 5)
    assert numbers("latest") is None
    assert in_range((1, 17, 3), "<1.17.4") and not in_range((1, 17, 4), "<1.17.4")
    assert not in_range((2, 0, 5), "<2.0") and in_range((2, 0, 5), ">=2.0")
    assert in_range((24, 9, 2), ">=24.9.0,<25.3") and not in_range((25, 3, 0), ">=24.9.0,<25.3")


def test_conditions_that_hold_make_a_confirmed_high_finding(tmp_path: Path) -> None:
    found = _analyse(tmp_path, {f"{TOOLKIT_LOG}.previous.log": VERSION_3,
                                "nodes/gpu-a/containerd/version.txt": CONTAINERD_2},
                     [_toolkit("nvcr.io/nvidia/k8s/container-toolkit:v1.14.6", failing=True)])
    finding = found["KI001:KI-TOOLKIT-003/gpu-operator/nvidia-container-toolkit-daemonset"]
    assert (finding.severity, finding.confidence.value) == (Severity.HIGH, "confirmed")
    assert finding.nodes == ["gpu-a"]
    assert [(e.path, e.line) for e in finding.evidence] == [
        (f"{TOOLKIT_LOG}.previous.log", 1)]
    assert "https://github.com/NVIDIA/gpu-operator/issues/2060" in finding.summary
    assert "toolkit 1.14.6 (<1.17.4); containerd 2.0.5 (>=2.0); cri containerd" in \
        finding.summary
    # the component's crash loop hangs under it (and the node's stage under that)
    assert finding.causes == ["CMP007:gpu-operator/nvidia-container-toolkit-daemonset"]


def test_a_condition_the_bundle_does_not_show_makes_it_only_likely(tmp_path: Path) -> None:
    unknown_runtime = {"file": "cluster/nodes.json", "name": "gpu-a",
                       "unset": [["status", "nodeInfo", "containerRuntimeVersion"]]}
    found = _analyse(tmp_path, {f"{TOOLKIT_LOG}.previous.log": VERSION_3},
                     [_toolkit("nvcr.io/nvidia/k8s/container-toolkit:v1.14.6", failing=True),
                      unknown_runtime])
    finding = found["KI001:KI-TOOLKIT-003/gpu-operator/nvidia-container-toolkit-daemonset"]
    assert finding.confidence.value == "likely"
    assert "Not shown by the bundle: containerd >=2.0" in finding.summary


def test_a_failed_condition_drops_the_entry(tmp_path: Path) -> None:
    found = _analyse(tmp_path, {f"{TOOLKIT_LOG}.previous.log": VERSION_3,
                                "nodes/gpu-a/containerd/version.txt": CONTAINERD_2},
                     [_toolkit("nvcr.io/nvidia/k8s/container-toolkit:v1.17.8", failing=True)])
    assert found == {}


def test_a_line_in_a_running_ready_container_is_history_and_low(tmp_path: Path) -> None:
    found = _analyse(tmp_path, {f"{TOOLKIT_LOG}.log": VERSION_3,
                                "nodes/gpu-a/containerd/version.txt": CONTAINERD_2},
                     [_toolkit("nvcr.io/nvidia/k8s/container-toolkit:v1.14.6", failing=False)])
    finding = found["KI001:KI-TOOLKIT-003/gpu-operator/nvidia-container-toolkit-daemonset"]
    assert finding.severity is Severity.LOW
    assert "a past occurrence" in finding.summary


def test_a_journal_line_is_matched_for_its_unit_only(tmp_path: Path) -> None:
    # the first Fabric Manager entry's example, as the unit's journal would hold it
    entry = next(i for i in load() if i.source.value == "journal"
                 and i.unit == "nvidia-fabricmanager")
    record = ('{"MESSAGE": %s, "_TRANSPORT": "stdout", "SYSLOG_IDENTIFIER": "nv-fabricmanager",'
              ' "__REALTIME_TIMESTAMP": "1764000000000000"}\n')
    line = record % json.dumps(entry.examples[0])
    found = _analyse(tmp_path, {"nodes/gpu-b/journal/nvidia-fabricmanager.jsonl": line,
                                "nodes/gpu-b/journal/containerd.jsonl": line}, [])
    key = f"KI001:{entry.id}/gpu-b"
    assert list(found) == [key]
    assert [(e.path, e.line) for e in found[key].evidence] == [
        ("nodes/gpu-b/journal/nvidia-fabricmanager.jsonl", 1)]
    # OP005 reads the same Fabric Manager line with evidence of its own: KI001 gives way
    assert found[key].severity is Severity.INFO
    assert found[key].summary.endswith(
        "OP005 already explains this with evidence of its own: shown as context.")


def test_a_log_line_is_quoted_with_its_own_number_after_characters_lowering_lengthens(
        tmp_path: Path) -> None:
    # 'İ' lowers to two characters: matching on the lowered text must still quote line 3
    log = "İİİ starting\nİ ready\n" + VERSION_3
    found = _analyse(tmp_path, {f"{TOOLKIT_LOG}.log": log,
                                "nodes/gpu-a/containerd/version.txt": CONTAINERD_2},
                     [_toolkit("nvcr.io/nvidia/k8s/container-toolkit:v1.14.6", failing=True)])
    finding = found["KI001:KI-TOOLKIT-003/gpu-operator/nvidia-container-toolkit-daemonset"]
    assert [(e.path, e.line, e.excerpt) for e in finding.evidence[:1]] == [
        (f"{TOOLKIT_LOG}.log", 3, VERSION_3.strip())]


def _finding(ident: str, *, causes: list[str] | None = None, caused_by: list[str] | None = None,
             evidence: list[Evidence] | None = None, pods: list[str] | None = None,
             severity: Severity = Severity.HIGH) -> Finding:
    return Finding(id=ident, rule_id=ident.partition(":")[0], title="t", severity=severity,
                   summary="s", causes=causes or [], caused_by=caused_by or [],
                   evidence=evidence or [],
                   objects=[ObjectRef(kind="Pod", namespace="ns", name=p) for p in pods or []])


def test_a_second_opinion_gives_way_to_a_rule_explaining_its_effect() -> None:
    ki = _finding("KI001:KI-X-001/ns/w", causes=["CMP007:ns/w"])
    cmp = _finding("CMP007:ns/w", caused_by=["KI001:KI-X-001/ns/w", "OP008:gpu-a"])
    op = _finding("OP008:gpu-a", causes=["CMP007:ns/w"])
    out = {f.id: f for f in give_way([ki, cmp, op], {"KI001"})}
    assert out[ki.id].severity is Severity.INFO and out[ki.id].causes == []
    assert "OP008 already explains this" in out[ki.id].summary
    assert out["CMP007:ns/w"].caused_by == ["OP008:gpu-a"]


def test_a_second_opinion_stays_the_cause_of_what_only_it_explains() -> None:
    ki = _finding("KI001:KI-X-001/ns/w", causes=["CMP007:ns/w"])
    cmp = _finding("CMP007:ns/w", caused_by=["KI001:KI-X-001/ns/w"],
                   evidence=[Evidence(path="logs/a.log", line=3, excerpt="boom")])
    out = give_way([ki, cmp], {"KI001"})
    assert out == [ki, cmp]


def test_a_second_opinion_gives_way_to_a_rule_quoting_its_line_or_naming_its_pod() -> None:
    line = Evidence(path="nodes/gpu-a/dmesg.txt", line=31, excerpt="Xid 79")
    ki = _finding("KI001:KI-KERNEL-005/gpu-a", evidence=[line])
    drv = _finding("DRV001:gpu-a/0000:b1:00.0", evidence=[line])
    assert give_way([ki, drv], {"KI001"})[0].severity is Severity.INFO
    ki_pod = _finding("KI001:KI-DP-011/ns/p", pods=["p"])
    sc = _finding("SC006:ns/w", pods=["p"])
    info = _finding("SC007:ns/w", pods=["p"], severity=Severity.INFO)
    assert give_way([ki_pod, info], {"KI001"})[0].severity is Severity.HIGH
    assert give_way([ki_pod, sc], {"KI001"})[0].severity is Severity.INFO


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_no_sample_matches_an_entry_at_medium_or_above(sample: Path) -> None:
    """The false-match guard: a sample's failure is explained by its own rule, and an
    entry matching a line there is context (low) unless it names that very failure."""
    report = kit.analyse(sample)
    loud = sorted(f.id for f in report.findings if f.rule_id == "KI001" and f.severity in LOUD)
    assert loud == RIGHTLY_NAMED.get(sample.name, [])


def test_no_entry_opens_with_a_command_that_changes_the_cluster() -> None:
    """KI001 makes likely findings; a likely cause never opens with a destructive step."""
    bad = [(issue.id, step) for issue in load()
           if (step := opens_destructively("\n".join(issue.commands)))]
    assert bad == []


def test_the_case_file_covers_a_firing_and_a_quiet_case() -> None:
    cases = tomllib.loads((ROOT / "tests/rules/cases/KI001.toml").read_text())["case"]
    assert any(c.get("expect") for c in cases) and any(not c.get("expect") for c in cases)


def _exporter(image: str) -> dict[str, Any]:
    return {"file": "cluster/pods.json", "name": "nvidia-dcgm-exporter-gpu-a",
            "merge": {"spec": {"containers": [{"name": "nvidia-dcgm-exporter", "image": image}]},
                      "status": {"containerStatuses": [{
                          "name": "nvidia-dcgm-exporter", "ready": False, "restartCount": 4,
                          "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}},
            "unset": [["status", "containerStatuses", "nvidia-dcgm-exporter", "state",
                       "running"]]}


@pytest.mark.parametrize(("tag", "fires"), [("3.3.5-3.4.1-ubuntu22.04", True),
                                            ("4.1.1-4.0.3-ubuntu22.04", False)])
def test_the_exporter_condition_reads_the_dcgm_release_of_its_image(
        tmp_path: Path, tag: str, fires: bool) -> None:
    # KI-DCGM-011: the segfault of exporter images built on DCGM 3.3.3 to 4.1.0
    log = "logs/gpu-operator/nvidia-dcgm-exporter-gpu-a/nvidia-dcgm-exporter.previous.log"
    found = _analyse(tmp_path, {log: "SIGSEGV: segmentation violation\n"},
                     [_exporter(f"nvcr.io/nvidia/k8s/dcgm-exporter:{tag}")])
    key = "KI001:KI-DCGM-011/gpu-operator/nvidia-dcgm-exporter"
    assert (key in found) is fires
    if fires:
        assert "dcgm_exporter 3.3.5 (>=3.3.3,<4.1.1)" in found[key].summary


def _admission_event(pod: str) -> dict[str, Any]:
    # KI-OPERATOR-021's example (https://github.com/NVIDIA/gpu-operator/issues/233)
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{pod}.1", "namespace": "gpu-operator"},
            "involvedObject": {"kind": "Pod", "namespace": "gpu-operator", "name": pod},
            "reason": "UnexpectedAdmissionError", "type": "Warning",
            "message": "Allocate failed due to requested number of devices unavailable for "
                       "nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected"}


def test_an_entry_about_one_pod_reads_only_that_pods_events(tmp_path: Path) -> None:
    validator = "nvidia-device-plugin-validator-x7k2p"
    found = _analyse(tmp_path / "v", {"cluster/events.json": [_admission_event(validator)]}, [])
    assert f"KI001:KI-OPERATOR-021/gpu-operator/{validator}" in found
    found = _analyse(tmp_path / "u", {"cluster/events.json": [_admission_event("trainer-0")]},
                     [])
    assert not [key for key in found if "KI-OPERATOR-021" in key]


def _judged(tmp_path: Path, patches: list[dict[str, Any]], node: str | None,
            context: Context, drop: tuple[str, ...] = ()) -> Judged:
    inline = parse({"base": "healthy-operator", "patch": patches, "drop": list(drop)}, "test")
    with open_bundle(write(inline, tmp_path / "bundle", "test")) as opened:
        return judge(Facts(opened), node, context)


KERNEL_LABEL = "feature.node.kubernetes.io/kernel-version.full"


def _labelled(*nodes: str) -> list[dict[str, Any]]:
    return [{"file": "cluster/nodes.json", "name": name,
             "merge": {"metadata": {"labels": {KERNEL_LABEL: "5.15.0-105-generic"}}}}
            for name in nodes]


def test_a_missing_label_cause_holds_only_where_a_node_lacks_the_label(tmp_path: Path) -> None:
    # KI-OPERATOR-013 says NFD's kernel-version label is missing: false where all carry it
    context = Context(labels_missing=(KERNEL_LABEL,))
    every = _judged(tmp_path / "all", _labelled("cp-1", "gpu-a", "gpu-b"), None, context)
    assert (every.verdict, every.failed) == (Verdict.FAILS, f"every node carries {KERNEL_LABEL}")
    one_lacks = _judged(tmp_path / "one", _labelled("cp-1", "gpu-a"), None, context)
    assert (one_lacks.verdict, one_lacks.checked) == (Verdict.HOLDS,
                                                      (f"a node lacks {KERNEL_LABEL}",))


def test_a_cause_through_another_pod_needs_that_pod_on_the_node(tmp_path: Path) -> None:
    # KI-DCGM-015 blames GKE's driver installer: without one on the node it is not the cause
    context = Context(pods=("nvidia-driver-installer*",))
    absent = _judged(tmp_path / "absent", [], "gpu-a", context)
    assert (absent.verdict, absent.failed) == (
        Verdict.FAILS, "no pod named nvidia-driver-installer* runs on gpu-a")
    installer = {"file": "cluster/pods.json", "name": "nvidia-dcgm-exporter-gpu-a",
                 "merge": {"spec": {"initContainers": [
                     {"name": "nvidia-driver-installer", "image": "cos-nvidia-installer:fixed"}]}}}
    present = _judged(tmp_path / "present", [installer], "gpu-a", context)
    assert present.verdict is Verdict.HOLDS
    elsewhere = _judged(tmp_path / "elsewhere", [installer], "gpu-b", context)
    assert elsewhere.verdict is Verdict.FAILS
    unread = _judged(tmp_path / "unread", [], "gpu-a", context, drop=("cluster/pods.json",))
    assert (unread.verdict, unread.unknown) == (Verdict.UNKNOWN,
                                                ("pods nvidia-driver-installer*",))


def _trainer(pod: str, node: str) -> dict[str, Any]:
    return {"file": "cluster/pods.json", "item": {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod, "namespace": "ml", "labels": {"pod-template-hash": "7d9f8c6b5"},
                     "ownerReferences": [{"kind": "ReplicaSet", "name": "trainer-7d9f8c6b5"}]},
        "spec": {"nodeName": node, "containers": [{"name": "train", "image": "pytorch:24.01"}]},
        "status": {"phase": "Running", "containerStatuses": [{
            "name": "train", "ready": False, "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}}


def test_pods_of_one_deployment_make_one_finding_naming_them(tmp_path: Path) -> None:
    # KI-TOOLKIT-005's line in two replicas of a user's Deployment on two nodes
    line = "Failed to initialize NVML: Unknown Error\n"
    pods = ("trainer-7d9f8c6b5-abcde", "trainer-7d9f8c6b5-fghij")
    inline = parse({"base": "healthy-operator",
                    "add": [_trainer(pods[0], "gpu-a"), _trainer(pods[1], "gpu-b")],
                    "files": {f"logs/ml/{pod}/train.log": line for pod in pods}}, "test")
    found = kit.findings(kit.analyse(write(inline, tmp_path / "bundle", "test")), "KI001")
    toolkit = {key: f for key, f in found.items() if "KI-TOOLKIT-005" in key}
    assert list(toolkit) == ["KI001:KI-TOOLKIT-005/ml/trainer"]
    finding = toolkit["KI001:KI-TOOLKIT-005/ml/trainer"]
    assert finding.nodes == ["gpu-a", "gpu-b"]
    assert [o.name for o in finding.objects] == list(pods)
