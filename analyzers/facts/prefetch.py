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

import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from analyzers.facts.journals import JournalScan, journal_scan, journal_units, remember_scan
from analyzers.facts.kernel_events import NodeKernel, node_kernel, remember_kernel
from bundle import Bundle
from bundle.kernel import KernelLine
from bundle.nvsmi import NvidiaSmi
from bundle.problems import ProblemLog

if TYPE_CHECKING:
    from concurrent.futures import Future

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


def read_node(bundle: Bundle, name: str) -> NodeFiles | None:
    """Parse one node's journals, dmesg and nvidia-smi XML (and remember them here).

    None if a parser fails: the node is then read lazily, inside the rule that asks,
    where the engine isolates the failure as it always has."""
    artifacts = bundle.node(name)
    try:
        kernel = node_kernel(bundle, name)  # reads the journals, dmesg and nvidia-smi
        scans = {unit: journal_scan(bundle, name, unit)
                 for unit in journal_units(bundle, name)}
        return NodeFiles(name, scans, artifacts.dmesg, artifacts.nvidia_smi, kernel)
    except Exception:  # noqa: BLE001 - reported by the rule that reads it again
        return None


def install(bundle: Bundle, files: NodeFiles) -> None:
    """Put a node's parsed files where lazy reads look for them."""
    for unit, scan in files.scans.items():
        remember_scan(bundle, files.name, unit, scan)
    bundle.node(files.name).preload(dmesg=files.dmesg, nvidia_smi=files.nvidia_smi)
    remember_kernel(bundle, files.kernel)


def preload(bundle: Bundle, jobs: int,
            meanwhile: Sequence[Callable[[], object]] = ()) -> None:
    """Parse every node's files, with ``jobs - 1`` worker processes where that helps.

    ``meanwhile`` holds callables (no arguments) run here while the workers parse:
    the cluster objects, typically. Afterwards every node's files are cached. Nothing
    here raises: what fails is left to be read again, inside the rule that asks."""
    import multiprocessing  # noqa: PLC0415 - only where workers are started
    from concurrent.futures import ProcessPoolExecutor  # noqa: PLC0415

    names = bundle.node_names
    workers = min(jobs - 1, len(names) // CHUNK)
    if workers < 1 or len(names) < MIN_NODES or not _can_fork(multiprocessing):
        _run(meanwhile)
        _read_here(bundle, names)
        return
    chunks = [names[start:start + CHUNK] for start in range(0, len(names), CHUNK)]
    global _BUNDLE
    _BUNDLE = bundle
    previous_hook = threading.excepthook
    threading.excepthook = _quiet_cancelled_futures(previous_hook)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(_read_chunk, chunk) for chunk in chunks]
            _run(meanwhile)
            # Then this process reads chunks too, from the last one back, one at a time,
            # until it meets the ones the workers have started.
            taken = set()
            for index in reversed(range(len(futures))):
                if not futures[index].cancel():
                    break
                taken.add(index)
                _read_here(bundle, chunks[index])
            for index, future in enumerate(futures):
                if index not in taken:
                    _take(bundle, future, chunks[index])
    except Exception:  # noqa: BLE001 - no worker to be had (fork or pipes refused, a limit)
        _run(meanwhile)  # each is cached once it succeeded: a second call costs nothing
        _read_here(bundle, names)
    finally:
        _BUNDLE = None
        threading.excepthook = previous_hook


def _quiet_cancelled_futures(
        hook: Callable[[threading.ExceptHookArgs], object]) -> Callable[
            [threading.ExceptHookArgs], None]:
    """When a worker dies, Python 3.11's executor thread fails on setting an error on
    the futures this process cancelled to read them itself (InvalidStateError); nothing
    is lost by it, so it is not printed. Everything else goes to ``hook``."""
    from concurrent.futures import InvalidStateError  # noqa: PLC0415

    def quiet(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is not InvalidStateError:
            hook(args)

    return quiet


def _read_here(bundle: Bundle, names: Sequence[str]) -> None:
    for name in names:
        read_node(bundle, name)


# The bundle a forked worker reads; set only while preload() runs.
_BUNDLE: Bundle | None = None


def _read_chunk(names: list[str]) -> tuple[list[NodeFiles | None], ProblemLog]:
    """In a worker: parse a chunk of nodes; their files and the problems found."""
    bundle = _BUNDLE
    assert bundle is not None, "workers are forked from preload()"
    mark = bundle.problems_mark()
    files = [read_node(bundle, name) for name in names]
    return files, bundle.problems_since(mark)


def _take(bundle: Bundle, future: Future[tuple[list[NodeFiles | None], ProblemLog]],
          names: list[str]) -> None:
    try:
        files, problems = future.result()
    except Exception:  # noqa: BLE001 - a worker died (killed for memory, say): read here
        _read_here(bundle, names)
        return
    bundle.absorb_problems(problems)
    for node in files:
        if node is not None:
            install(bundle, node)


def _run(calls: Sequence[Callable[[], object]]) -> None:
    for call in calls:
        try:
            call()
        except Exception:  # noqa: BLE001 - raised again inside the rule that reads it
            continue


def _can_fork(multiprocessing: ModuleType) -> bool:
    # fork is the start method that lets workers inherit the opened bundle; it is only
    # used where the platform supports it without caveats.
    return sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods()

