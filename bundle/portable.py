"""The two ways a bundle's files are reached, chosen by what the platform offers.

Linux and macOS have positional reads (``os.pread``) and directory-relative calls
(``openat``, ``fstatat``, ``fdopendir``: ``dir_fd`` and ``scandir(fd)`` in Python).
Windows has neither. :func:`read_at` falls back to seek-then-read under a lock (the
spool is only shared with forked workers on Linux, where ``pread`` always exists), and
:func:`directory_access` picks :class:`FdAccess` where every directory-relative call
exists and :class:`PathAccess` otherwise.

:class:`PathAccess` keeps what a path can keep (docs/security.md, "Platforms"): every
component of a path is checked with ``lstat`` before it is used and refused when it is
a symbolic link or any other reparse point (a Windows junction, which ``lstat`` reports
as a directory); ``O_NOFOLLOW`` is used where the platform has it; a directory entered
must still be the one ``lstat`` saw; and a file read must be the very file that was
listed (device, inode, size, modification time, one link), so no byte of a file that
was not listed is ever returned. What a path cannot keep is the atomicity of
``openat``: between the check of a component and its use, a component can be swapped,
so a directory being listed can be swapped for a link and its entries listed (never
read). Windows marks sparse files with an attribute instead of ``st_blocks``: such a
file is refused whole.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager

Handle = int | str  # an open directory: a descriptor (FdAccess) or a path (PathAccess)

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
FILE_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
              | _CLOEXEC | getattr(os, "O_BINARY", 0))
DIR_FLAGS = FILE_FLAGS | getattr(os, "O_DIRECTORY", 0)
_REPARSE = stat.FILE_ATTRIBUTE_REPARSE_POINT
_SPARSE = stat.FILE_ATTRIBUTE_SPARSE_FILE
_SEEK_LOCK = threading.Lock()


def read_at(fd: int, length: int, offset: int) -> bytes:
    """Up to ``length`` bytes of ``fd`` from ``offset``: ``os.pread`` where it exists,
    else seek-then-read under one lock (no process shares the descriptor there)."""
    pread = getattr(os, "pread", None)
    if pread is not None:
        return bytes(pread(fd, length, offset))
    with _SEEK_LOCK:
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, length)


def has_dir_fd() -> bool:
    """Whether directory-relative opens, stats and listings all exist here (asked at
    each call, so a test can take them away)."""
    return (os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd
            and os.scandir in os.supports_fd)


def reparse_point(info: os.stat_result) -> bool:
    """A Windows reparse point (a symbolic link or a junction); never true elsewhere."""
    return bool(getattr(info, "st_file_attributes", 0) & _REPARSE)


def marked_sparse(info: os.stat_result) -> bool:
    """A file Windows marks sparse (elsewhere holes are measured instead)."""
    return bool(getattr(info, "st_file_attributes", 0) & _SPARSE)


class FdAccess:
    """Directory-relative access: every component opened with ``O_NOFOLLOW`` from the
    descriptor of its parent, so no link is followed and no component can be swapped
    between its check and its use."""

    name = "directory descriptors"

    def open_top(self, path: os.PathLike[str] | str) -> Handle:
        return os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)

    @contextmanager
    def entries(self, handle: Handle) -> Iterator[Iterator[os.DirEntry[str]]]:
        assert isinstance(handle, int)
        with os.scandir(handle) as listing:
            yield listing

    def lstat(self, handle: Handle, name: str) -> os.stat_result:
        return os.stat(name, dir_fd=_fd(handle), follow_symlinks=False)

    def open_dir(self, handle: Handle, name: str) -> Handle:
        return os.open(name, DIR_FLAGS, dir_fd=_fd(handle))

    def identity(self, handle: Handle) -> os.stat_result:
        return os.fstat(_fd(handle))

    def close(self, handle: Handle) -> None:
        os.close(_fd(handle))

    def open_file(self, handle: Handle, name: str) -> int:
        return os.open(name, FILE_FLAGS, dir_fd=_fd(handle))

    def open_beneath(self, top: Handle, parts: tuple[str, ...]) -> int:
        """Open ``parts`` below ``top`` one component at a time (``O_NOFOLLOW`` applies
        to the last component only)."""
        opened: list[int] = []
        fd = _fd(top)
        try:
            for part in parts[:-1]:
                fd = os.open(part, DIR_FLAGS, dir_fd=fd)
                opened.append(fd)
            return os.open(parts[-1], FILE_FLAGS, dir_fd=fd)
        finally:
            for directory in opened:
                os.close(directory)


class PathAccess:
    """Access by path, for platforms without directory descriptors (Windows): each
    component checked with ``lstat`` before use (see the module docstring)."""

    name = "paths, each component checked"

    def open_top(self, path: os.PathLike[str] | str) -> Handle:
        top = os.fspath(path)
        if not stat.S_ISDIR(os.stat(top).st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", top)
        return top

    @contextmanager
    def entries(self, handle: Handle) -> Iterator[Iterator[os.DirEntry[str]]]:
        with os.scandir(_path(handle)) as listing:
            yield listing

    def lstat(self, handle: Handle, name: str) -> os.stat_result:
        return os.lstat(os.path.join(_path(handle), name))

    def open_dir(self, handle: Handle, name: str) -> Handle:
        path = os.path.join(_path(handle), name)
        _plain_directory(path)
        return path

    def identity(self, handle: Handle) -> os.stat_result:
        return os.stat(_path(handle))  # follows: a link swapped in shows another identity

    def close(self, handle: Handle) -> None:
        return None

    def open_file(self, handle: Handle, name: str) -> int:
        return os.open(os.path.join(_path(handle), name), FILE_FLAGS)

    def open_beneath(self, top: Handle, parts: tuple[str, ...]) -> int:
        path = _path(top)
        for part in parts[:-1]:
            path = os.path.join(path, part)
            _plain_directory(path)
        final = os.path.join(path, parts[-1])
        info = os.lstat(final)
        if stat.S_ISLNK(info.st_mode) or reparse_point(info):
            raise OSError(_ELOOP, "Too many levels of symbolic links", final)
        return os.open(final, FILE_FLAGS)


_ELOOP = getattr(errno, "ELOOP", 40)


def _plain_directory(path: str) -> None:
    """Raise ``ENOTDIR`` unless ``path`` is a directory that is neither a link nor a
    reparse point (what ``openat`` with ``O_DIRECTORY | O_NOFOLLOW`` says of a link)."""
    info = os.lstat(path)
    if (stat.S_ISLNK(info.st_mode) or reparse_point(info)
            or not stat.S_ISDIR(info.st_mode)):
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", path)


def _fd(handle: Handle) -> int:
    assert isinstance(handle, int)
    return handle


def _path(handle: Handle) -> str:
    assert isinstance(handle, str)
    return handle


def directory_access() -> FdAccess | PathAccess:
    """:class:`FdAccess` where the platform has every directory-relative call, else
    :class:`PathAccess`."""
    return FdAccess() if has_dir_fd() else PathAccess()
