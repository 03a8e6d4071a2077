"""The held-out measurement's harness (``samples/heldout.py``): every thread of
``tests/fixtures/known_issues_heldout/threads.toml`` gets a bundle that holds its evidence
verbatim where the thread's source says it appears, and every bundle analyses without a
rule in error. The verdicts (``judgements.toml``) are a measurement and are NOT tested."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzers.results.models import Report
from samples import heldout, measure_heldout

THREADS = heldout.load_threads()
# Where each source kind lives in a bundle (bundle-format.md).
PLACES = {
    "pod-log": ("logs/",),
    "event": ("cluster/events.json",),
    "pod-status": ("cluster/pods.json", "manifest:logs/"),
    # a kernel line pasted from journalctl ("kernel: …") lives in the node's dmesg.txt
    "journal": ("nodes/gpu-a/journal/", "nodes/gpu-a/dmesg.txt"),
}


def _ids(thread: heldout.Thread) -> str:
    return f"{thread.order}-{thread.component}"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, heldout.Placed]]:
    out = tmp_path_factory.mktemp("heldout")
    return {t.order: heldout.build(t, out) for t in THREADS}


def _texts(root: Path, where: str) -> list[str]:
    """The strings a place holds: log or journal lines, event messages, container-state
    messages, or a collection step's recorded error."""
    if where.startswith("manifest:"):
        manifest = json.loads((root / "manifest.json").read_text())
        return [i["error"] or "" for i in manifest["items"] if i["path"] == where[9:]]
    path = root / where
    if where == "cluster/events.json":
        return [e["message"] for e in json.loads(path.read_text())["items"]]
    if where == "cluster/pods.json":
        texts = []
        for pod in json.loads(path.read_text())["items"]:
            texts.append(pod["status"].get("message", ""))  # kubelet admission's refusal
            for status in pod["status"].get("containerStatuses", []):
                for state in status.get("state", {}).values():
                    texts.append(state.get("message", ""))
        return texts
    if where.endswith("dmesg.txt"):  # as journalctl prints kernel lines: "kernel: <msg>"
        return [f"kernel: {line.split(' ', 1)[1]}" for line in path.read_text().splitlines()]
    if where.endswith(".jsonl"):
        entries = [json.loads(line) for line in path.read_text().splitlines()]
        return [f"{e['SYSLOG_IDENTIFIER']}[{e['_PID']}]: {e['MESSAGE']}" for e in entries]
    return path.read_text().splitlines()


def test_every_thread_has_a_builder() -> None:
    assert len(THREADS) == 88
    assert sorted(heldout.BUILDERS) == sorted(t.order for t in THREADS)
    assert {t.source for t in THREADS} <= set(PLACES)


@pytest.mark.parametrize("thread", THREADS, ids=_ids)
def test_evidence_is_verbatim_where_the_source_says(
        built: dict[int, tuple[Path, heldout.Placed]], thread: heldout.Thread) -> None:
    root, placed = built[thread.order]
    assert placed.where.startswith(PLACES[thread.source]), (thread.source, placed.where)
    texts = _texts(root, placed.where)
    for line, held in zip(thread.evidence, thread.lines, strict=True):
        # what the bundle holds is the thread's line, at most without a title or the
        # columns of a `kubectl describe` row
        assert held and held in line
        assert any(held in text for text in texts), (placed.where, held)


def test_pod_log_threads_leave_the_pod_in_the_log_directory(
        built: dict[int, tuple[Path, heldout.Placed]]) -> None:
    for thread in THREADS:
        root, placed = built[thread.order]
        if thread.source != "pod-log":
            continue
        _, namespace, pod, _ = placed.where.split("/")
        pods = json.loads((root / "cluster/pods.json").read_text())["items"]
        assert any(p["metadata"]["name"] == pod and p["metadata"]["namespace"] == namespace
                   for p in pods), (thread.order, pod)


def test_title_and_describe_columns_are_cut_only_where_present() -> None:
    by_order = {t.order: t for t in THREADS}
    assert by_order[75].lines[0].startswith("failed to get sandbox runtime")
    assert by_order[50].lines[0].startswith("Failed to create pod sandbox: rpc error")
    assert by_order[5].lines == by_order[5].evidence


@pytest.mark.parametrize("thread", THREADS, ids=_ids)
def test_bundle_analyses_without_a_rule_in_error(
        built: dict[int, tuple[Path, heldout.Placed]], thread: heldout.Thread) -> None:
    root, _ = built[thread.order]
    report: Report = measure_heldout.analyse(root)
    assert [r.rule_id for r in report.rules if r.status.value == "error"] == []
    # the edits leave every file readable: nothing the parsers could not read
    assert [(p.path, p.message) for p in report.problems] == []


def test_a_changed_report_needs_re_judging(
        built: dict[int, tuple[Path, heldout.Placed]]) -> None:
    root, _ = built[5]
    report = measure_heldout.analyse(root)
    roots = measure_heldout.root_ids(report)
    same = {5: measure_heldout.Judgement("named", roots, "")}
    other = {5: measure_heldout.Judgement("named", (*roots, "OP001"), "")}
    assert measure_heldout.verdict_of(5, report, same) == "named"
    assert measure_heldout.verdict_of(5, report, other) is None
    assert measure_heldout.verdict_of(5, report, {}) is None


def test_every_judgement_names_a_known_verdict_and_thread() -> None:
    judged = measure_heldout.load_judgements()
    assert set(judged) <= {t.order for t in THREADS}
    assert {j.verdict for j in judged.values()} <= set(measure_heldout.VERDICTS)
