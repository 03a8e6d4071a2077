"""Open a bundle path as a :class:`~bundle.archive.Source`: a directory is read by
:mod:`bundle.directory`, an archive by :mod:`bundle.archive`, a standalone NVIDIA bug
report by :mod:`bundle.singlefile`. An archive that holds one archive alone (a .zip of
the .tgz) is opened one level deep.

This sits above both modules (the directory reader builds on the archive's caps and
refusals), so that neither of them has to import the other's caller.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from bundle.archive import ArchiveSource, Reading, Watcher
from bundle.compressed import PLAIN, SNIFF_BYTES, sniff
from bundle.container import Limits, RootFinder, Source, manifest_root, not_a_bundle
from bundle.directory import DirectorySource
from bundle.problems import BundleError, ProblemLog
from bundle.singlefile import SingleFileSource, bug_report_name, head_of


def open_source(path: Path, limits: Limits, problems: ProblemLog,
                find_root: RootFinder | None = None, watcher: Watcher | None = None,
                reading: Reading | None = None) -> Source:
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
    name = bug_report_name(path, head_of(path))
    if name is not None:  # a bug report on its own: a gzip or text file, no archive
        return SingleFileSource(path, name, limits)
    finder = find_root or manifest_root

    def or_one_file(names: list[str]) -> str | None:
        """The root, or the top when the archive holds one file: maybe an archive."""
        found = finder(names)
        if found is None and len([n for n in names if not n.endswith("/")]) == 1:
            return ""
        return found

    source = ArchiveSource(path, limits, problems, or_one_file, watcher, reading)
    paths = source.paths()
    if finder(paths) is not None:
        return source
    with contextlib.closing(source):
        data = source.read(paths[0]) or b""
        if sniff(data[:SNIFF_BYTES]) == PLAIN and data[257:262] != b"ustar":
            raise BundleError(str(path), not_a_bundle(paths))
        return _wrapped(path, paths[0], data, limits, problems, finder)


def _wrapped(path: Path, name: str, data: bytes, limits: Limits, problems: ProblemLog,
             find_root: RootFinder) -> Source:
    """The archive ``name`` that an archive holds alone (a .zip a mail client made of the
    .tgz), opened one level deep under the same caps; an archive in it is not opened."""
    fd, temporary = tempfile.mkstemp(prefix="gpu-triage-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        inner = ArchiveSource(Path(temporary), limits, problems, find_root)
    except BundleError as exc:
        raise BundleError(f"{path} ({name})", exc.problem) from None
    finally:
        os.unlink(temporary)
    inner.display = f"{path} ({name})"
    return inner
