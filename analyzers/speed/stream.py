"""Parse node files in worker processes while the archive is still being read.

The collector writes ``manifest.json`` first, then the cluster files, the logs, and one
directory per node with that node's files together. Once the reader has passed a node's
directory, all of that node's files are in the spool file, so a forked worker can parse
them while this process decompresses the rest: the node files, about half of the work
on a large bundle, no longer wait for the end of the archive.

:class:`NodeStream` is the archive reader's :class:`~bundle.archive.Watcher`. It hands
finished nodes over in chunks of :data:`~analyzers.speed.prefetch.CHUNK`; workers start
once :data:`~analyzers.speed.prefetch.MIN_NODES` nodes are ready (a small bundle costs no
process) and parse each node with a bundle made of that node's files alone. After the
open, :meth:`NodeStream.collect` takes chunks from the back itself while the workers
finish theirs, installs what they parsed, and names the nodes nobody covered: a node
whose files were not together in the archive (its directory came back later), the
nodes of a worker that died. Those are read as without a stream, so the report is the
one a single process gives.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from analyzers.speed import prefetch
from bundle import Bundle, specs
from bundle.archive import ArchiveSource
from bundle.container import MANIFEST, manifest_root
from bundle.manifest import Manifest
from bundle.problems import ProblemLog
from bundle.reader import is_k8s_name
from bundle.spooldir import spool_dir

Place = tuple[int, int]  # (offset, size) of a member in the spool file


class NodeStream:
    """Hands each finished node directory of an archive to worker processes (see the
    module docstring). Use as a context manager: leaving it stops the workers."""

    def __init__(self, jobs: int) -> None:
        self._jobs = jobs
        self._root: str | None = None
        self._source: ArchiveSource | None = None
        self._manifest: Place | None = None
        self._node: str | None = None  # the node directory being read
        self._members: dict[str, Place] = {}
        self._ready: list[tuple[str, dict[str, Place]]] = []
        self._seen: set[str] = set()
        self._dirty: set[str] = set()  # nodes whose directory came back after it ended
        self._chunks: list[list[str]] = []
        self._work: _StreamWork | None = None
        self._processes: list[Any] = []
        self._results: Path | None = None
        self._spool = contextlib.ExitStack()
        self._stopped = False  # nothing more is handed over (failure, or a wrong root)
        self._ended = False

    # -- the archive reader's Watcher ---------------------------------------------------

    def watching(self, first: str, source: ArchiveSource) -> bool:
        if self._jobs < 2 or not prefetch.can_fork():
            return False
        self._root = manifest_root([first])
        if self._root is None:
            return False  # not the collector's order: read as without a stream
        self._source = source
        return True

    def spooled(self, name: str) -> bool:
        root = self._root or ""
        return not self._stopped and (name == root + MANIFEST
                                      or name.startswith(root + specs.NODES_DIR))

    def stored(self, name: str, offset: int, size: int) -> None:
        relative = name[len(self._root or ""):]
        if relative == MANIFEST:
            self._manifest = (offset, size)
            return
        parts = relative.split("/", 2)
        if len(parts) < 3:
            return  # a file directly under nodes/: no node's
        node = parts[1]
        if node != self._node:
            self._end_node()
            if node in self._seen:
                self._dirty.add(node)
            self._seen.add(node)
            self._node = node
        self._members[relative] = (offset, size)

    def ended(self, root: str | None) -> None:
        self._ended = True
        if root != self._root:
            self._stop()  # the reader settled on another root: nothing handed over holds
            return
        self._end_node()
        self._hand_over(final=True)
        if self._work is not None:
            self._work.finish(len(self._processes))

    # -- after the open ---------------------------------------------------------------

    def serves(self, bundle: Bundle) -> bool:
        """Whether workers parsed nodes of ``bundle`` (read in the collector's layout)."""
        return (self._ended and not self._stopped and self._work is not None
                and bundle.layout_report is None)

    def collect(self, bundle: Bundle, meanwhile: Sequence[Callable[[], object]]) -> list[str]:
        """Run ``meanwhile`` here, then parse chunks from the back until meeting the
        workers, install the workers' results; the node names nobody parsed."""
        assert self._work is not None and self._results is not None
        prefetch.run_all(meanwhile)
        names = set(bundle.node_names)
        covered: set[str] = set()
        mine: set[int] = set()
        while (index := self._work.claim_last()) is not None:
            mine.add(index)
            chunk = [n for n in self._chunks[index] if n in names and n not in self._dirty]
            prefetch.read_here(bundle, chunk)
            covered.update(chunk)
        for process in self._processes:
            process.join()
        wanted = names - self._dirty  # the others are read again, problems and all
        for index in range(len(self._chunks)):
            if index not in mine:
                covered.update(prefetch.take(bundle, self._results, index,
                                             wanted.__contains__) or ())
        self.close()
        return [name for name in bundle.node_names if name not in covered]

    # -- handing over -------------------------------------------------------------------

    def _end_node(self) -> None:
        node, members = self._node, self._members
        self._node, self._members = None, {}
        if node is None or self._stopped or node in self._dirty or not is_k8s_name(node):
            return
        self._ready.append((node, members))
        if len(self._ready) >= prefetch.CHUNK and (
                self._work is not None or len(self._ready) >= prefetch.MIN_NODES):
            self._hand_over()

    def _hand_over(self, *, final: bool = False) -> None:
        if self._stopped or self._manifest is None or self._source is None:
            return
        if self._work is None and len(self._ready) < prefetch.MIN_NODES:
            return  # too few nodes for a worker to pay off: read after the open
        if self._work is None and not self._start():
            return
        assert self._results is not None and self._work is not None
        self._source.flush_spool()
        while len(self._ready) >= prefetch.CHUNK or (final and self._ready):
            chunk, self._ready = self._ready[:prefetch.CHUNK], self._ready[prefetch.CHUNK:]
            index = len(self._chunks)
            prefetch.write_whole(self._results / f"{index}.chunk", chunk)
            self._chunks.append([name for name, _ in chunk])
            self._work.add()

    def _start(self) -> bool:
        import multiprocessing  # noqa: PLC0415 - only where workers are started

        assert self._source is not None and self._manifest is not None
        try:
            self._results = self._spool.enter_context(spool_dir())
            context = multiprocessing.get_context("fork")
            self._work = _StreamWork(context)
            for _ in range(self._jobs - 1):
                process = context.Process(target=_work, daemon=True, args=(
                    self._work, self._source, self._manifest, self._results, os.getpid()))
                process.start()
                self._processes.append(process)
        except Exception:  # noqa: BLE001 - no worker to be had (fork refused, a limit)
            self._stop()
            return False
        return True

    def _stop(self) -> None:
        self._stopped = True
        self._ready.clear()
        self.close()

    def close(self) -> None:
        """Stop the workers and remove their files (what they made is no longer read)."""
        for process in self._processes:
            if process.is_alive():
                process.terminate()
            process.join()
        self._processes.clear()
        self._spool.close()
        self._results = None

    def __enter__(self) -> NodeStream:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


class _StreamWork(prefetch.Work):
    """The chunk counters, with chunks added while workers run and a semaphore that
    wakes a worker for each chunk added and, at the end, once more per worker."""

    def __init__(self, context: Any) -> None:
        super().__init__(context, 0)
        self._wake = context.Semaphore(0)
        self._finished = context.RawValue("b", 0)

    def add(self) -> None:
        with self._lock:
            self._back.value += 1
        self._wake.release()

    def finish(self, workers: int) -> None:
        self._finished.value = 1
        for _ in range(workers):
            self._wake.release()

    def wait(self, timeout: float) -> bool:
        return bool(self._wake.acquire(timeout=timeout))

    @property
    def finished(self) -> bool:
        return bool(self._finished.value)


class _Members:
    """One node's files (and the manifest) as a bundle source, read from the spool."""

    def __init__(self, source: ArchiveSource, members: dict[str, Place]) -> None:
        self.display = source.display
        self._source = source
        self._members = members

    def paths(self) -> list[str]:
        return sorted(self._members)

    def size(self, path: str) -> int | None:
        found = self._members.get(path)
        return found[1] if found is not None else None

    def read(self, path: str) -> bytes | None:
        found = self._members.get(path)
        return self._source.read_at(*found) if found is not None else None

    def close(self) -> None:
        return None


def _work(work: _StreamWork, source: ArchiveSource, manifest_at: Place, results: Path,
          parent: int) -> None:
    """A worker: parse chunks as they are added, each into its result file
    (:func:`~analyzers.speed.prefetch.write_result`), until the archive has ended and
    none is left. It leaves when its parent is gone. Ctrl-C is for the parent, which
    stops it."""
    prefetch.worker_signals()
    # Whatever ends it (a manifest the parent refuses, a full disk), its chunks are
    # read by the parent instead, and nothing is printed.
    with contextlib.suppress(Exception):
        _serve(work, source, manifest_at, results, parent)


def _serve(work: _StreamWork, source: ArchiveSource, manifest_at: Place, results: Path,
           parent: int) -> None:
    manifest: Manifest | None = None
    while True:
        if not work.wait(1.0):
            if os.getppid() != parent:
                return
            continue
        index = work.claim_first()
        if index is None:
            if work.finished:
                return
            continue
        chunk = pickle.loads((results / f"{index}.chunk").read_bytes())  # noqa: S301 - our own
        if manifest is None:
            # BundleError (the parent says why) ends this worker: the parent reads
            # every chunk left
            manifest = Bundle(_Members(source, {MANIFEST: manifest_at}), ProblemLog(),
                              source.display).manifest
        prefetch.write_result(results, index, [_parse(source, manifest, name, members)
                                               for name, members in chunk])


def _parse(source: ArchiveSource, manifest: Manifest, name: str, members: dict[str, Place]
           ) -> prefetch.Parsed:
    bundle = Bundle(_Members(source, members), ProblemLog(), source.display, manifest=manifest)
    return prefetch.parse_here(bundle, name)
