"""Open a bundle path as a :class:`~bundle.archive.Source`: a directory is read by
:mod:`bundle.directory`, a ``.tar`` or ``.tgz`` by :mod:`bundle.archive`.

This sits above both modules (the directory reader builds on the archive's caps and
refusals), so that neither of them has to import the other's caller.
"""

from __future__ import annotations

import stat
from pathlib import Path

from bundle.archive import ArchiveSource, Watcher
from bundle.container import Limits, RootFinder, Source
from bundle.directory import DirectorySource
from bundle.problems import BundleError, ProblemLog


def open_source(path: Path, limits: Limits, problems: ProblemLog,
                find_root: RootFinder | None = None, watcher: Watcher | None = None) -> Source:
    """Open a directory or archive as a Source; BundleError when it cannot be read.
    ``find_root`` locates the bundle root among the stored names (default: the
    directory of ``manifest.json``; :mod:`bundle.layouts` adds foreign layouts).
    ``watcher`` hears an archive's members as it is read (a directory needs none)."""
    try:
        info = path.stat()
    except OSError as exc:
        raise BundleError(str(path), f"cannot open: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        return DirectorySource(path, limits, problems, find_root)
    if not stat.S_ISREG(info.st_mode):
        raise BundleError(str(path), "not a regular file or directory")
    return ArchiveSource(path, limits, problems, find_root, watcher)
