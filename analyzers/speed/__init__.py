"""Speed: worker processes that parse node files ahead of the rules, behind one door.

Nothing here changes what a report says; it changes only when and where the node files
are parsed. A caller that wants workers makes one :class:`Preload`, hands its
:attr:`~Preload.watcher` to :func:`bundle.open_bundle` (workers then start on node
directories while the archive is still read: :mod:`analyzers.speed.stream`) and the
preload itself to :func:`analyzers.engine.analyze` (which runs it before the first rule:
the nodes no stream worker covered are parsed by :mod:`analyzers.speed.prefetch` while
this process reads the cluster objects). Without a preload, everything is read when a
rule first asks, in this process.

The room sits beside the rules: it reads facts and the bundle, only the engine imports
it (tests/test_layering.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType

from analyzers.speed import prefetch
from analyzers.speed.stream import NodeStream
from bundle import Bundle
from bundle.archive import Watcher

__all__ = ["Preload"]


class Preload:
    """Up to ``jobs`` processes for one analysis (this one included). Use as a context
    manager around the open bundle: leaving it stops any worker still running."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self._stream: NodeStream | None = NodeStream(jobs)

    @property
    def watcher(self) -> Watcher | None:
        """What :func:`bundle.open_bundle` takes as ``watcher=``: node directories are
        handed to workers as the archive reader passes them."""
        return self._stream

    def run(self, bundle: Bundle, meanwhile: Sequence[Callable[[], object]]) -> None:
        """Parse the node files of ``bundle`` ahead of the rules, running ``meanwhile``
        (the cluster objects' reads) here while workers parse. Nothing here raises: what
        a worker could not parse is read again, inside the rule that asks."""
        stream = self._stream
        if stream is not None and not stream.serves(bundle):
            stream.close()  # no worker parsed this bundle's nodes: none may compete below
            stream = None
        if stream is not None:
            rest = stream.collect(bundle, meanwhile)
            prefetch.preload(bundle, self.jobs, names=rest)
        elif self.jobs > 1 and len(bundle.node_names) >= prefetch.MIN_NODES:
            prefetch.preload(bundle, self.jobs, meanwhile=meanwhile)

    def close(self) -> None:
        """Stop the workers still running and remove their files (idempotent)."""
        if self._stream is not None:
            self._stream.close()

    def __enter__(self) -> Preload:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
