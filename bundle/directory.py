"""An unpacked bundle, a directory, read under the same caps as an archive.

The directory is listed once, when it is opened, in the order the collector writes
its archive: ``manifest.json`` first, then every file by its path. Listing refuses
what an archive member would be refused for (symbolic links, special files, hard
links, unsafe names, sparse files, files over the member cap) with the archive's
messages, and stops where an archive stops: at the member cap, where every entry
listed counts, directories too, as they do in a tar of the directory; and at the
total-size cap, the sum of the sizes of the files accepted. The entries of a
directory are counted as they are listed, so a directory of millions of entries costs
no more than the cap. Directories nested deeper than :data:`MAX_DEPTH` are not
listed, which also bounds the directory descriptors held open while listing.

A file is read when it is asked for, straight from the directory: nothing is copied
or held. Its path is opened one component at a time from the bundle's directory,
refusing a symbolic link at every step, so a directory swapped for a link after the
listing is never followed out of the bundle. The file opened must be the one listed
(same device, inode, size and modification time, a regular file with one link), it
is opened without blocking (a FIFO swapped in is refused, not waited on), and no more
than its listed size is read, so the total-size cap holds for what is actually read.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import NamedTuple

from bundle.container import (
    MANIFEST,
    Limits,
    NodeCap,
    Refusals,
    RootFinder,
    clean_name,
    manifest_root,
    not_a_bundle,
    printable,
)
from bundle.portable import Handle, directory_access, marked_sparse, reparse_point
from bundle.problems import BundleError, ProblemLog

# Path components a listed file may have: deeper directories are refused. Bundles and
# the foreign layouts nest about ten deep.
MAX_DEPTH = 32
# At most this many data extents are looked at to measure a file's holes; a file with
# more is taken for sparse (bundle files are written front to back, in one extent or
# a few).
_MAX_EXTENTS = 1024


class _Listed(NamedTuple):
    """A file accepted by the listing, as it was then."""

    parts: tuple[str, ...]  # path components from the opened directory
    device: int
    inode: int
    size: int
    modified: int  # st_mtime_ns


class _Frame(NamedTuple):
    """A directory being listed: its descriptor, its path, and its entries still to
    visit, last first."""

    fd: Handle
    prefix: str
    names: list[str]


class _Stop(Exception):
    """A cap stopped the listing at ``path``; the refusal is recorded."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class DirectorySource(Refusals):
    """A bundle that is already unpacked. Links and special files are refused."""

    def __init__(self, path: os.PathLike[str] | str, limits: Limits, problems: ProblemLog,
                 find_root: RootFinder | None = None) -> None:
        self.display = str(path)
        self._limits = limits
        self._problems = problems
        self._pending = []
        self._nodes = NodeCap(limits.max_nodes)
        self._entries = 0
        self._total = 0
        self._listed: dict[str, _Listed] = {}
        self._stopped: _Stop | None = None
        # Directory descriptors where the platform has them, else checked paths
        # (bundle.portable; docs/security.md says what each keeps).
        self._access = directory_access()
        try:
            self._fd: Handle | None = self._access.open_top(path)
        except OSError as exc:
            raise BundleError(self.display, f"cannot open: {exc.strerror}") from None
        try:
            try:
                self._list(self._fd)
            except OSError as exc:  # the top directory itself could not be listed
                raise BundleError(self.display, f"cannot list: {exc.strerror}") from None
            root = (find_root or manifest_root)(list(self._listed))
            if root is None and self._stopped is not None:
                raise BundleError(self.display, f"reading stopped before {MANIFEST} was found "
                                  f"({self._stopped})")
            if root is None:
                raise BundleError(self.display, not_a_bundle(list(self._listed)))
        except BaseException:
            self.close()
            raise
        if (over := self._nodes.refusal()) is not None:
            self._refuse(*over)
        rebased = self._rebase(list(self._listed), root)
        self._files = {rel: self._listed[stored] for rel, stored in rebased.items()}

    # -- listing -----------------------------------------------------------------------

    def _list(self, top: Handle) -> None:
        """Visit the tree under ``top`` depth first, in archive order, accepting files."""
        stack: list[_Frame] = []
        try:
            stack.append(_Frame(top, "", self._entries_of(top, "")))
            while stack:
                fd, prefix, names = stack[-1]
                if not names:
                    stack.pop()
                    if fd != top:
                        self._access.close(fd)
                    continue
                child = self._visit(fd, prefix, names.pop(), len(stack))
                if child is not None:
                    stack.append(child)
        except _Stop as stop:
            self._refuse(stop.path, stop.message)
            self._stopped = stop
        finally:
            for frame in stack:
                if frame.fd != top:
                    self._access.close(frame.fd)

    def _entries_of(self, fd: Handle, prefix: str) -> list[str]:
        """The names in directory ``fd``, last to visit first; each counts as a member."""
        found: list[tuple[tuple[bool, str], str]] = []
        cap = self._limits.max_members
        with self._access.entries(fd) as listing:
            for entry in listing:
                self._entries += 1
                if self._entries > cap:
                    raise _Stop(prefix.rstrip("/") or ".",
                                f"more than {cap} members; the rest were not read")
                try:
                    directory = entry.is_dir(follow_symlinks=False)
                except OSError:
                    directory = False
                # The collector's order: manifest.json first, then by path ("a/" sorts
                # after "a-b", as a directory's files do in a sorted list of paths).
                key = (entry.name != MANIFEST or directory,
                       entry.name + "/" if directory else entry.name)
                found.append((key, entry.name))
        found.sort(reverse=True)
        return [name for _, name in found]

    def _visit(self, fd: Handle, prefix: str, name: str, depth: int) -> _Frame | None:
        """Accept or refuse one entry of directory ``fd``; a directory to list next is
        returned. ``depth`` is the number of components of the entry's path."""
        rel = prefix + name
        clean = clean_name(rel)
        try:
            info = self._access.lstat(fd, name)
        except OSError as exc:
            self._refuse(printable(rel), f"cannot stat: {exc.strerror}")
            return None
        mode = info.st_mode
        if clean is None:
            self._refuse(printable(rel), "unsafe or non-UTF-8 name")
        elif reparse_point(info):  # a Windows junction lstat calls a directory
            self._refuse(clean, "not a regular file (symbolic link or junction)")
        elif stat.S_ISDIR(mode):
            if not self._nodes.admits(clean + "/"):
                return None  # counted in one refusal (bundle.container.NodeCap)
            return self._enter(fd, name, clean, info, depth)
        elif not stat.S_ISREG(mode):
            self._refuse(clean, f"not a regular file ({_kind(mode)})")
        elif info.st_nlink > 1:
            # It may be any file on this machine; a bundle never holds one.
            self._refuse(clean, f"a hard link ({info.st_nlink} names for one file); not read")
        elif marked_sparse(info) or self._sparse(fd, name, info):
            self._refuse(clean, "a sparse file, which bundles never hold; not read")
        elif info.st_size > self._limits.max_member_bytes:
            self._refuse(clean, f"{info.st_size} bytes exceeds the "
                         f"{self._limits.max_member_bytes} byte cap; not read")
        else:
            self._total += info.st_size
            if self._total > self._limits.max_total_bytes:
                raise _Stop(clean, f"archive expands beyond {self._limits.max_total_bytes} "
                            "bytes; reading stopped")
            self._listed[clean] = _Listed(tuple(clean.split("/")), info.st_dev, info.st_ino,
                                          info.st_size, info.st_mtime_ns)
        return None

    def _enter(self, fd: Handle, name: str, clean: str, info: os.stat_result,
               depth: int) -> _Frame | None:
        if depth >= MAX_DEPTH:
            self._refuse(clean, f"a directory more than {MAX_DEPTH} levels deep; not read")
            return None
        try:
            child = self._access.open_dir(fd, name)
        except OSError as exc:
            self._refuse(clean, f"cannot list directory: {exc.strerror}")
            return None
        try:
            now = self._access.identity(child)
            if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
                self._refuse(clean, "changed while the directory was listed; not read")
                self._access.close(child)
                return None
            return _Frame(child, clean + "/", self._entries_of(child, clean + "/"))
        except OSError as exc:
            self._access.close(child)
            self._refuse(clean, f"cannot list directory: {exc.strerror}")
            return None
        except BaseException:
            self._access.close(child)
            raise

    # -- reading -----------------------------------------------------------------------

    def paths(self) -> list[str]:
        return sorted(self._files)

    def size(self, path: str) -> int | None:
        listed = self._files.get(path)
        return None if listed is None else listed.size

    def read(self, path: str) -> bytes | None:
        listed = self._files.get(path)
        if listed is None or self._fd is None:
            return None
        try:
            fd = self._access.open_beneath(self._fd, listed.parts)
        except OSError as exc:
            # ELOOP, ENOTDIR: a link, or a file, where the listing saw a directory or file.
            changed = exc.errno in (errno.ELOOP, errno.ENOTDIR)
            self._problems.add(path, f"changed since the directory was listed ({exc.strerror}); "
                               "not read" if changed else f"cannot open: {exc.strerror}",
                               kind="refused")
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                self._problems.add(path, "no longer a regular file; not read", kind="refused")
                return None
            data = b""
            if (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_nlink) == (
                    listed.device, listed.inode, listed.size, listed.modified, 1):
                data = _read_up_to(fd, listed.size + 1)
            if len(data) != listed.size:
                self._problems.add(path, "changed since the directory was listed; not read",
                                   kind="refused")
                return None
            return data
        except OSError as exc:
            self._problems.add(path, f"cannot read: {exc.strerror}", kind="refused")
            return None
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._fd is not None:
            self._access.close(self._fd)
            self._fd = None

    def _sparse(self, directory: Handle, name: str, info: os.stat_result) -> bool:
        """Whether holes make up at least half of the file.

        The disk space a file takes (``st_blocks``) is a cheap first test: a file that
        takes at least half its size is not sparse. Less is not proof, since compressing
        file systems (ZFS, btrfs with compression) count compressed blocks, so holes are
        then measured with ``SEEK_DATA``/``SEEK_HOLE``. A file system that cannot tell
        holes reports none, and the file is read like any other, under the caps.
        """
        blocks = getattr(info, "st_blocks", None)
        if blocks is None or blocks * 512 * 2 >= info.st_size:
            return False
        try:
            fd = self._access.open_file(directory, name)
        except OSError:
            return False  # reading it will say why
        try:
            now = os.fstat(fd)
            if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
                return False  # swapped since; reading it will refuse it
            return 2 * _hole_bytes(fd, info.st_size) >= info.st_size
        finally:
            os.close(fd)


def _read_up_to(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes from ``fd``: fewer only at its end. A regular file
    usually comes in one read, returned without a copy."""
    pieces: list[bytes] = []
    left = limit
    while left > 0:
        piece = os.read(fd, min(left, 1 << 30))
        if not piece:
            break
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


def _hole_bytes(fd: int, size: int) -> int:
    """The bytes of the first ``size`` that lie in holes; ``size`` when the file has
    too many data extents to count."""
    seek_data = getattr(os, "SEEK_DATA", None)
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_data is None or seek_hole is None:
        return 0
    holes = 0
    position = 0
    for _ in range(_MAX_EXTENTS):
        try:
            data = os.lseek(fd, position, seek_data)
        except OSError as exc:
            # ENXIO: no data from here to the end. Anything else: holes unknown.
            return holes + size - position if exc.errno == errno.ENXIO else 0
        if data >= size:
            return holes + size - position
        holes += data - position
        try:
            position = os.lseek(fd, data, seek_hole)
        except OSError:
            return 0
        if position >= size:
            return holes
    return size


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"
