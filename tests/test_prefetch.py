"""Node files parsed by worker processes give the report one process gives."""

from __future__ import annotations

import io
import os
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.facts import gpu_health
from analyzers.results.models import Report
from analyzers.speed import Preload, prefetch
from bundle import open_bundle
from bundle.problems import ProblemLog

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
NOISE = [orjson.dumps({"MESSAGE": f"routine line {i}", "_PID": "812",
                       "SYSLOG_IDENTIFIER": "containerd",
                       "__REALTIME_TIMESTAMP": str(1795960000000000 + i)}).decode()
         for i in range(900)]


def _tgz(sample: str, target: Path) -> Path:
    """The sample as a .tgz whose journals are large enough to be spooled to disk (so
    workers read them through the spool), each with one line that is not JSON."""
    buffer = io.BytesIO()
    base = SAMPLES / sample
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in sorted(base.rglob("*")):
            if path.is_file():
                archive.add(path, arcname=f"b/{path.relative_to(base)}")
        for node in sorted(p.name for p in (base / "nodes").iterdir()):
            lines = [*NOISE[:450], "-- Boot 3f2a --", *NOISE[450:]]
            data = ("\n".join(lines) + "\n").encode()
            info = tarfile.TarInfo(f"b/nodes/{node}/journal/noise.jsonl")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    target.write_bytes(buffer.getvalue())
    return target


def _report(path: Path, jobs: int) -> Report:
    with Preload(jobs) as preload, open_bundle(path) as opened:
        return analyze(opened, discover().rules, preload=preload)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers for any bundle, one node per task."""
    monkeypatch.setattr(prefetch, "MIN_NODES", 1)
    monkeypatch.setattr(prefetch, "CHUNK", 1)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("sample", ["incident-toolkit-disabled", "xid79-fallen-off-bus",
                                    "hgx-no-fabricmanager", "dropin-clobber",
                                    "h100-ecc-row-remap"])
def test_workers_give_the_same_report(tmp_path: Path, sample: str) -> None:
    bundle = _tgz(sample, tmp_path / "b.tgz")
    alone = _report(bundle, jobs=1)
    shared = _report(bundle, jobs=3)
    assert shared.model_dump() == alone.model_dump()
    bad_lines = [p for p in alone.problems if p.path.endswith("/journal/noise.jsonl")]
    assert len(bad_lines) == len(list((SAMPLES / sample / "nodes").iterdir()))
    assert {p.where for p in bad_lines} == {"line 451"}


# Set before workers are forked, read by them (module globals travel with the fork).
PARENT = os.getpid()
MARKS: list[Path] = []


def _marked_read(opened: Any, name: str) -> Any:
    """read_node that leaves a mark per node read by a worker and refuses to run in
    the parent process."""
    if os.getpid() == PARENT:
        raise AssertionError(f"{name} was read by the parent process")
    (MARKS[0] / name).touch()
    return READ_NODE(opened, name)


def _dying_read(opened: Any, name: str) -> Any:
    """read_node that kills any worker process calling it."""
    if os.getpid() != PARENT:
        os._exit(9)
    return READ_NODE(opened, name)


READ_NODE = prefetch.read_node


@pytest.mark.usefixtures("small_chunks")
def test_problems_found_by_workers_come_back(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """This process waits until the workers have read every node; the problems of the
    journals are then only known to the workers."""
    bundle = _tgz("incident-toolkit-disabled", tmp_path / "b.tgz")
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setattr(sys.modules[__name__], "MARKS", [marks])
    monkeypatch.setattr(prefetch, "read_node", _marked_read)

    def until_read() -> None:
        deadline = time.monotonic() + 120
        while len(list(marks.iterdir())) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)

    with open_bundle(bundle) as opened:
        prefetch.preload(opened, 2, meanwhile=[until_read])
        problems = [p for p in opened.problems if p.path.endswith("noise.jsonl")]
    assert sorted(p.name for p in marks.iterdir()) == ["gpu-a", "gpu-b", "gpu-c", "gpu-d"]
    assert [p.path for p in problems] == [f"nodes/{n}/journal/noise.jsonl"
                                          for n in ("gpu-a", "gpu-b", "gpu-c", "gpu-d")]


ISSUES = gpu_health.issues


def _issues_in_workers(gpu: Any) -> list[gpu_health.Issue]:
    if os.getpid() == PARENT:
        raise AssertionError("a GPU's health was read by the parent process")
    return ISSUES(gpu)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("sample", ["h100-ecc-row-remap", "hgx-no-fabricmanager"])
def test_gpu_health_made_by_workers_is_the_one_made_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sample: str) -> None:
    """Workers read each GPU's health with the node's nvidia-smi; the parent, which
    may not read any here, then holds exactly what it would have made itself."""
    bundle = _tgz(sample, tmp_path / "b.tgz")
    with open_bundle(bundle) as opened:
        here = {name: gpu_health.node_issues(opened, name) for name in opened.node_names}
    assert any(here.values())
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setattr(sys.modules[__name__], "MARKS", [marks])
    monkeypatch.setattr(prefetch, "read_node", _marked_read)
    monkeypatch.setattr(gpu_health, "issues", _issues_in_workers)

    def until_read() -> None:
        deadline = time.monotonic() + 120
        while len(list(marks.iterdir())) < len(here) and time.monotonic() < deadline:
            time.sleep(0.05)

    with open_bundle(bundle) as opened:
        prefetch.preload(opened, 2, meanwhile=[until_read])
        made = {name: gpu_health.node_issues(opened, name) for name in opened.node_names}
    assert made == here


@pytest.mark.usefixtures("small_chunks")
def test_a_dead_worker_is_replaced_by_reading_here(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = _tgz("incident-toolkit-disabled", tmp_path / "b.tgz")
    alone = _report(bundle, jobs=1)
    monkeypatch.setattr(prefetch, "read_node", _dying_read)
    assert _report(bundle, jobs=2).model_dump() == alone.model_dump()


def test_a_failing_cluster_read_is_left_to_the_rules(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def fails() -> None:
        raise RecursionError("deep")

    with open_bundle(SAMPLES / "incident-toolkit-disabled") as opened:
        prefetch.preload(opened, 1, meanwhile=[fails])  # does not raise
        assert opened.node("gpu-a").__dict__.get("dmesg") is not None


def test_small_bundles_start_no_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pool(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker was started")

    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", no_pool)
    with open_bundle(SAMPLES / "incident-toolkit-disabled") as opened:
        prefetch.preload(opened, 4)
        assert opened.node("gpu-a").__dict__.get("dmesg") is not None  # read here


def test_problem_logs_merge_and_list_by_place() -> None:
    log = ProblemLog(limit=3, keep=5)
    log.add("b.json", "late", where="line 10")
    mark = log.mark()
    for path, message, where in (("b.json", "early", "line 9"), ("a.json", "first", None),
                                 ("c.json", "third", None), ("d.json", "fourth", None),
                                 ("e.json", "not kept", None)):
        log.add(path, message, where=where)
    later = log.since(mark)
    assert [(p.path, p.where, p.message) for p in later.items] == [
        ("a.json", None, "first"), ("b.json", "line 9", "early"), ("c.json", None, "third"),
        ("(more)", None, "2 more parse problem(s) were not listed")]
    merged = ProblemLog(limit=10)
    merged.add("b.json", "late", where="line 10")
    merged.absorb(later)
    assert [(p.path, p.where) for p in merged.items] == [
        ("a.json", None), ("b.json", "line 9"), ("b.json", "line 10"), ("c.json", None),
        ("d.json", None), ("(more)", None)]


def test_which_problems_are_listed_does_not_depend_on_the_order_found() -> None:
    found = [(f"nodes/n{i % 7}/journal/x.jsonl", f"line {i}") for i in range(50)]
    listed = []
    for order in (found, found[::-1], found[1::2] + found[::2]):
        log = ProblemLog(limit=10)
        for path, where in order:
            log.add(path, "not JSON", where=where)
        listed.append(log.items)
    assert listed[0] == listed[1] == listed[2]
    assert listed[0][-1].message == "40 more parse problem(s) were not listed"


_INTERRUPTED = """
import sys, time
sys.path[:0] = [{root!r}]
from analyzers.speed import Preload, prefetch
from bundle import open_bundle
prefetch.MIN_NODES, prefetch.CHUNK = 1, 1
read = prefetch.read_node
def slow(bundle, name):
    time.sleep(0.5)
    return read(bundle, name)
prefetch.read_node = slow
with open_bundle({bundle!r}) as opened:
    print("started", flush=True)
    prefetch.preload(opened, 3, meanwhile=[lambda: time.sleep(30)])
"""


def test_ctrl_c_stops_the_run_without_worker_tracebacks() -> None:
    """Ctrl-C reaches the whole process group; workers leave it to the parent."""
    import signal
    import subprocess

    script = _INTERRUPTED.format(root=str(ROOT),
                                 bundle=str(SAMPLES / "incident-toolkit-disabled"))
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert process.stdout is not None
    assert process.stdout.readline() == b"started\n"
    time.sleep(1.0)  # the workers are sleeping in their first chunk
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == -signal.SIGINT  # the parent ends on it, as without workers
    assert err.count(b"Traceback") == 1 and b"ForkProcess" not in err
    assert subprocess.run(["pgrep", "-g", str(process.pid)], capture_output=True).stdout == b""
