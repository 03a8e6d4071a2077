"""Read every node's files in worker processes while this one reads the cluster.

On a large bundle the node files (journals, dmesg, ``nvidia-smi -q -x``) cost about as
much to parse as everything else together, and each node's files are independent of
every other's. :func:`preload` therefore hands them, in chunks of nodes, to forked
worker processes while this process parses the cluster objects; it then takes back the
chunks no worker has started and parses those itself. Workers return what parsing
keeps (the journal scans, kernel lines and events, nvidia-smi GPUs, and the problems
found), which goes into the same caches a lazy read fills, so rules see exactly what
they would see without workers.

Workers are forked so that they inherit the opened bundle (the reader serves members
with positional reads, which forked processes can share). Where ``fork`` is not
available, or for small bundles where starting a process costs more than it saves,
everything is read here.
"""

from __future__ import annotations

import pickle
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzers.facts.gpu_health import GpuIssues, node_issues, remember_issues
from analyzers.facts.journals import JournalScan, journal_scan, journal_units, remember_scan
from analyzers.facts.kernel_events import NodeKernel, node_kernel, remember_kernel
from bundle import Bundle
from bundle.kernel import KernelLine
from bundle.nvsmi import NvidiaSmi
from bundle.problems import ProblemLog
from bundle.spooldir import spool_dir

MIN_NODES = 32  # below this a worker costs more to start than it saves
CHUNK = 16  # nodes per task: large enough to amortize pickling, small enough to balance


@dataclass(frozen=True, slots=True)
class NodeFiles:
    """What parsing one node's files keeps."""

    name: str
    scans: dict[str, JournalScan]
    dmesg: list[KernelLine]
    nvidia_smi: NvidiaSmi | None
    kernel: NodeKernel
    gpu_issues: GpuIssues


def read_node(bundle: Bundle, name: str) -> NodeFiles | None:
    """Parse one node's journals, dmesg and nvidia-smi XML (and remember them here).

    None if a parser fails: the node is then read lazily, inside the rule that asks,
    where the engine isolates the failure as it always has."""
    artifacts = bundle.node(name)
    try:
        kernel = node_kernel(bundle, name)  # reads the journals, dmesg and nvidia-smi
        scans = {unit: journal_scan(bundle, name, unit)
                 for unit in journal_units(bundle, name)}
        return NodeFiles(name, scans, artifacts.dmesg, artifacts.nvidia_smi, kernel,
                         node_issues(bundle, name))
    except Exception:  # noqa: BLE001 - reported by the rule that reads it again
        return None


Parsed = tuple[str, NodeFiles | None, ProblemLog]
"""One node as a worker hands it back: its name, what parsing kept (None: a parser
failed) and the problems found on the way."""


def parse_here(bundle: Bundle, name: str) -> Parsed:
    """:func:`read_node` with the problems it found, for handing back to the parent."""
    mark = bundle.problems_mark()
    files = read_node(bundle, name)
    return name, files, bundle.problems_since(mark)


def write_whole(path: Path, value: object) -> None:
    """``value`` pickled into ``path``, written under another name first, so that a
    file there is always whole (another process reads it once it is there)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    partial.rename(path)


def write_result(results: Path, index: int, parsed: list[Parsed]) -> None:
    """A worker's chunk into ``results/<index>.pickle``, where :func:`take` reads it."""
    write_whole(results / f"{index}.pickle", parsed)


def take(bundle: Bundle, results: Path, index: int,
         wanted: Callable[[str], bool] = lambda name: True) -> list[str] | None:
    """Install a worker's chunk: the nodes ``wanted`` that it parsed, with their problems
    (a node a parser failed on is left to be read again, problems and all). The names
    installed; None when there is no whole result (the worker died, killed for memory)."""
    try:
        parsed: list[Parsed] = pickle.loads(  # noqa: S301 - our own worker's
            (results / f"{index}.pickle").read_bytes())
    except Exception:  # noqa: BLE001 - read again by the caller
        return None
    taken = []
    for name, files, problems in parsed:
        if files is not None and wanted(name):
            bundle.absorb_problems(problems)
            install(bundle, files)
            taken.append(name)
    return taken


def install(bundle: Bundle, files: NodeFiles) -> None:
    """Put a node's parsed files where lazy reads look for them."""
    for unit, scan in files.scans.items():
        remember_scan(bundle, files.name, unit, scan)
    bundle.node(files.name).preload(dmesg=files.dmesg, nvidia_smi=files.nvidia_smi)
    remember_kernel(bundle, files.kernel)
    remember_issues(bundle, files.name, files.gpu_issues)


def preload(bundle: Bundle, jobs: int, meanwhile: Sequence[Callable[[], object]] = (),
            names: Sequence[str] | None = None) -> None:
    """Parse the files of every node (or of ``names``), with ``jobs - 1`` worker
    processes where that helps.

    ``meanwhile`` holds callables (no arguments) run here while the workers parse:
    the cluster objects, typically. Afterwards every node's files are cached. Nothing
    here raises: what fails is left to be read again, inside the rule that asks."""
    import multiprocessing  # noqa: PLC0415 - only where workers are started

    names = bundle.node_names if names is None else list(names)
    workers = min(jobs - 1, len(names) // CHUNK)
    if workers < 1 or len(names) < MIN_NODES or not can_fork():
        run_all(meanwhile)
        read_here(bundle, names)
        return
    chunks = [names[start:start + CHUNK] for start in range(0, len(names), CHUNK)]
    with spool_dir() as results:
        try:
            work = Work(multiprocessing.get_context("fork"), len(chunks))
            started = work.start(workers, bundle, chunks, Path(results))
        except Exception:  # noqa: BLE001 - no worker to be had (fork refused, a limit)
            started = []
        run_all(meanwhile)
        # Then this process reads chunks too, from the last one back, until it meets
        # the ones the workers have claimed.
        mine = []
        while started and (index := work.claim_last()) is not None:
            mine.append(index)
            read_here(bundle, chunks[index])
        for process in started:
            process.join()
        for index, chunk in enumerate(chunks):
            if index not in mine and take(bundle, Path(results), index) is None:
                read_here(bundle, chunk)


class Work:
    """Chunks claimed from the front by workers and from the back by this process,
    through counters in shared memory: nobody waits on another process's Python."""

    def __init__(self, context: Any, count: int) -> None:
        self._context = context
        self._lock = context.Lock()
        self._front = context.RawValue("i", 0)
        self._back = context.RawValue("i", count)

    def claim_first(self) -> int | None:
        with self._lock:
            if self._front.value >= self._back.value:
                return None
            self._front.value += 1
            return int(self._front.value - 1)

    def claim_last(self) -> int | None:
        with self._lock:
            if self._front.value >= self._back.value:
                return None
            self._back.value -= 1
            return int(self._back.value)

    def start(self, workers: int, bundle: Bundle, chunks: list[list[str]],
              results: Path) -> list[Any]:
        started = []
        for _ in range(workers):
            process = self._context.Process(target=_work, daemon=True,
                                            args=(self, bundle, chunks, results))
            process.start()
            started.append(process)
        return started


def _work(work: Work, bundle: Bundle, chunks: list[list[str]], results: Path) -> None:
    """A worker: read chunks until none is left, each into its result file. Ctrl-C is
    for the parent: it stops, and daemon workers end with it."""
    worker_signals()
    while (index := work.claim_first()) is not None:
        write_result(results, index, [parse_here(bundle, name) for name in chunks[index]])


def worker_signals() -> None:
    """In a forked worker: Ctrl-C is for the parent, and ``SIGTERM`` (the parent stopping
    it) ends it at once, without the parent's handler that unwinds to remove the spool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def read_here(bundle: Bundle, names: Sequence[str]) -> None:
    for name in names:
        read_node(bundle, name)


def run_all(calls: Sequence[Callable[[], object]]) -> None:
    for call in calls:
        try:
            call()
        except Exception:  # noqa: BLE001 - raised again inside the rule that reads it
            continue


def can_fork() -> bool:
    """Whether workers can be forked: fork is the start method that lets them inherit
    the opened bundle; it is only used where the platform supports it without caveats."""
    import multiprocessing  # noqa: PLC0415 - only where workers are started

    return sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods()
