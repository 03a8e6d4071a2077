"""Safe, read-only access to the files of a bundle: a directory, a .tar (plain or
compressed with gzip, xz, bzip2 or zstd) or a .zip.

Archives are read in one streaming pass and never extracted: small members stay in
memory, large ones are spooled into one anonymous temporary file. Every member that
is not a plain file with a clean relative name is refused and recorded, as is an
archive that ends early, is corrupt, or carries data after its end. Caps bound memory,
disk and time against hostile input: a member cap, a member-count cap, a cap on the
decompressed size, and a cap on the compression ratio that stops a decompression bomb
after its first few MiB instead of after the gigabytes it promises.
:mod:`bundle.gzstream` decompresses and :mod:`bundle.tarstream` splits the members;
this module decides what to keep, refuse and record. A :class:`Watcher` hears of each
member as it is stored, so that work on it can begin before the archive ends. A
directory is read by :mod:`bundle.directory` under the same caps and refusals.
"""

from __future__ import annotations

import gzip
import os
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, BinaryIO, Protocol

from bundle.compressed import GZIP, PLAIN, SNIFF_BYTES, ZIP, sniff
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
from bundle.gzstream import Decompressed, Overrun
from bundle.portable import read_at
from bundle.problems import BundleError, ProblemLog
from bundle.tarstream import Member, TarStream
from bundle.zipstream import ZipMembers, declared_entries

Members = TarStream | ZipMembers
# What a file that is no archive gpu-triage reads is called.
NOT_AN_ARCHIVE = "not a tar, gzip, xz, bzip2, zstd or zip archive"

_SPOOL_THRESHOLD = 64 << 10  # larger members go to the spool file, not to memory
_MEMORY_BUDGET = 128 << 20   # past this many bytes held in memory, every member is spooled
_AFTER_END = 1 << 20      # how far past the end-of-archive marker we look
# What reading a corrupt stream raises. tarfile, which reads the uncommon headers, is
# not total on hostile ones (a pax sparse map, a chain of long-name headers), hence
# the extra types.
_STREAM_ERRORS = (tarfile.TarError, OSError, EOFError, zlib.error, ValueError, OverflowError,
                  RecursionError)


class Watcher(Protocol):
    """Told of the members of an archive as it is read, for work that can begin before
    the archive ends (:mod:`analyzers.speed.stream` parses node files meanwhile).

    ``watching`` hears the first stored name; on False the watcher hears nothing more.
    Members for which ``spooled`` is true go to the spool file whatever their size, and
    ``stored`` gives their place there; ``ended`` gives the bundle root the reader
    settled on (None: no bundle), after which the watcher hears nothing more."""

    def watching(self, first: str, source: ArchiveSource) -> bool: ...

    def spooled(self, name: str) -> bool: ...

    def stored(self, name: str, offset: int, size: int) -> None: ...

    def ended(self, root: str | None) -> None: ...


Reading = Callable[[int, int], None]
"""Told ``(bytes read, file size)`` as the archive file is read."""


class _Reported:
    """The archive file, telling a :data:`Reading` of each read (the file is read front
    to back, except a zip's central directory)."""

    def __init__(self, raw: BinaryIO, reading: Reading) -> None:
        self._raw = raw
        self._reading = reading
        self.muted = False  # while a zip's directory at the end is read
        raw.seek(0, os.SEEK_END)
        self._size = raw.tell()
        raw.seek(0)

    def read(self, size: int = -1, /) -> bytes:
        data = self._raw.read(size)
        if not self.muted:
            self._reading(self._raw.tell(), self._size)
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET, /) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def __enter__(self) -> _Reported:
        return self

    def __exit__(self, *_: object) -> None:
        self._raw.close()


class ArchiveSource(Refusals):
    """A .tar (plain or compressed) read in a single streaming pass, or a .zip read
    member by member (:mod:`bundle.zipstream`), the kind told by its first bytes."""

    def __init__(self, path: Path, limits: Limits, problems: ProblemLog,
                 find_root: RootFinder | None = None, watcher: Watcher | None = None,
                 reading: Reading | None = None) -> None:
        self.display = str(path)
        self._watcher = watcher
        self._reading = reading
        self._stored_any = False
        self._find_root = find_root or manifest_root
        self._limits = limits
        self._problems = problems
        self._memory: dict[str, bytes] = {}
        self._in_memory = 0
        self._spooled: dict[str, tuple[int, int]] = {}
        self._spool: IO[bytes] | None = None
        self._spool_size = 0
        self.stopped_at: str | None = None
        self._last: str | None = None
        self._pending = []
        self._nodes = NodeCap(limits.max_nodes)
        # The compressed size of a compressed archive: the ratio cap's measure, which
        # also bounds what gzip files inside it may expand to (bundle.layouts.base)
        self.packed: int | None = None
        self._read_all(path)
        if (over := self._nodes.refusal()) is not None:
            self._refuse(*over)
        names = list(self._memory) + list(self._spooled)
        root = self._find_root(names)
        if self._watcher is not None:
            self._watcher.ended(root)
        if root is None:
            self.close()
            if self.stopped_at is not None:
                raise BundleError(self.display, f"archive is truncated or corrupt before "
                                  f"{MANIFEST} ({self.stopped_at})")
            raise BundleError(self.display, not_a_bundle(names))
        self._names = self._rebase(names, root)

    def _read_all(self, path: Path) -> None:
        try:
            raw = path.open("rb")
        except OSError as exc:
            raise BundleError(self.display, f"cannot open: {exc.strerror}") from None
        with raw:
            if self._reading is not None:
                raw = _Reported(raw, self._reading)  # type: ignore[assignment]
            head = raw.read(SNIFF_BYTES)
            if not head:
                raise BundleError(self.display, "empty file, not a bundle")
            raw.seek(0)
            kind = sniff(head)  # by content: names lie
            if kind != PLAIN:
                self.packed = path.stat().st_size
            tar = self._members(raw, kind)
            try:
                first = tar.next()
            except (*_STREAM_ERRORS, Overrun) as exc:
                what = (f"archive is truncated or corrupt before {MANIFEST}"
                        if kind != PLAIN and not isinstance(exc, tarfile.TarError)
                        else NOT_AN_ARCHIVE)
                raise BundleError(self.display, f"{what} ({_brief(exc)})") from None
            self._consume(tar, first)
            if self.stopped_at is None:
                self._check_end(tar)
            if self.stopped_at is None:
                self._check_after_end(tar)
        if self._spool is not None:
            self._spool.flush()  # once, before any read (and any forked reader)

    def _members(self, raw: BinaryIO, kind: str) -> Members:
        """The members of ``raw``: a zip's through its central directory, any other
        kind as a tar stream, decompressed as :func:`bundle.compressed.sniff` says."""
        limits = self._limits
        if kind == ZIP:
            reported = raw if isinstance(raw, _Reported) else None
            if reported is not None:  # progress counts the members' data, front to back
                reported.muted = True
            entries = declared_entries(raw)
            if entries is not None and entries > limits.max_members:
                raise BundleError(self.display, f"zip archive lists {entries} members, more "
                                  f"than the {limits.max_members} member cap (--max-members)")
            try:
                members = ZipMembers(raw, ratio=limits.max_ratio)
            except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
                raise BundleError(self.display, f"damaged zip archive ({_brief(exc)})") from None
            if reported is not None:
                reported.muted = False
            return members
        # The stream also holds headers and the members skipped over: twice the
        # content cap is the backstop that bounds the time spent decompressing.
        return TarStream(Decompressed(raw, gzipped=kind == GZIP, codec=kind,
                                      budget=2 * limits.max_total_bytes + (1 << 20),
                                      ratio=limits.max_ratio))

    def _check_end(self, tar: Members) -> None:
        """Record a truncation when the archive did not end with a zero block."""
        if tar.end is None:
            return
        self.stopped_at = f"at byte {tar.offset}: {tar.end}"
        self._problems.add(self.display, f"archive ends early or is corrupt at byte "
                           f"{tar.offset} of the tar stream ({tar.end}) "
                           f"{self._where(None)}; analysed what was read", kind="truncated")

    def _check_after_end(self, tar: Members) -> None:
        """Record data after the end-of-archive marker (zero padding is normal), and a
        compressed stream whose checksum fails or that goes on with garbage."""
        end = tar.offset
        seen, failure = tar.rest(_AFTER_END + 1)
        if seen.strip(b"\0"):
            self._problems.add(self.display, f"data follows the end-of-archive marker at byte "
                               f"{end} of the tar stream (another archive appended?); it was "
                               "not read", kind="trailing")
        elif len(seen) > _AFTER_END:
            self._problems.add(self.display, f"more than {_AFTER_END} bytes follow the "
                               f"end-of-archive marker at byte {end}; they were not read",
                               kind="trailing")
        if failure is not None:
            kind, what = _after_end_failure(failure)
            self._problems.add(self.display, f"{what} ({_brief(failure)})", kind=kind)

    def _consume(self, tar: Members, member: Member | None) -> None:
        total = 0
        count = 0
        current: str | None = None  # the member being read
        skipped: str | None = None  # the refused member whose data is being skipped
        try:
            while member is not None:
                current = skipped = None
                count += 1
                if count > self._limits.max_members:
                    self._refuse(printable(member.name), f"more than {self._limits.max_members}"
                                 " members; the rest were not read")
                    self.stopped_at = f"member cap reached {self._where(None)}"
                    return
                name = self._accept(member)
                if name is None:
                    if member.size > 0:
                        skipped = clean_name(member.name) or printable(member.name)
                else:
                    total += member.size
                    if total > self._limits.max_total_bytes:
                        self._refuse(name, "archive expands beyond "
                                     f"{self._limits.max_total_bytes} bytes; reading stopped")
                        self.stopped_at = f"size cap reached at {name}"
                        return
                    current = name
                    self._store(name, tar, member.size)
                    current = None
                    self._last = name
                member = tar.next()
        except Overrun as exc:
            where = self._where(current, skipped)
            self.stopped_at = f"{where}: {exc}"
            self._problems.add(self.display, f"reading stopped {where}: {exc}; the rest was not "
                               "read", kind="refused")
        except _STREAM_ERRORS as exc:
            where = self._where(current, skipped)
            self.stopped_at = f"{where}: {_brief(exc)}"
            if isinstance(exc, RecursionError):
                exc = tarfile.ReadError("too many chained extended headers")
            self._problems.add(self.display, f"archive ends early or is corrupt {where} "
                               f"({_brief(exc)}); analysed what was read", kind="truncated")

    def _where(self, current: str | None, skipped: str | None = None) -> str:
        """Where reading stopped, in bundle-relative names. Reading stops once, after
        the manifest (else the bundle is unreadable), so the root is known by then."""
        root = self._find_root(list(self._memory) + list(self._spooled)) or ""

        def shown(name: str) -> str:
            return name[len(root):] if name.startswith(root) else name

        if current is not None:
            return f"inside {shown(current)}"
        if skipped is not None:
            return f"while skipping {shown(skipped)}"
        return f"after {shown(self._last)}" if self._last else "at the start"

    def _accept(self, member: Member) -> str | None:
        if member.type == tarfile.DIRTYPE:
            return None
        name = clean_name(member.name)
        if name is None:
            self._refuse(printable(member.name) or "(empty name)", "unsafe name (absolute, "
                         "'..', control characters or not UTF-8)")
            return None
        if not self._nodes.admits(name):
            return None  # counted in one refusal (bundle.container.NodeCap)
        if member.type not in tarfile.REGULAR_TYPES:
            self._refuse(name, f"not a regular file ({_member_kind(member)})")
            return None
        if member.refusal:
            self._refuse(name, member.refusal)
            return None
        if member.sparse:
            self._refuse(name, "a sparse file, which bundles never hold; not read")
            return None
        if name in self._memory or name in self._spooled:
            self._refuse(name, "duplicate member; the first copy was kept")
            return None
        if member.size > self._limits.max_member_bytes:
            self._refuse(name, f"{member.size} bytes exceeds the "
                         f"{self._limits.max_member_bytes} byte cap; not read")
            return None
        return name

    def _store(self, name: str, tar: Members, size: int) -> None:
        watcher = self._watcher
        if watcher is not None and not self._stored_any and not watcher.watching(name, self):
            watcher = self._watcher = None
        self._stored_any = True
        if watcher is not None and watcher.spooled(name):
            offset = self._spool_size
            self._spool_to(tar, size)
            self._spooled[name] = (offset, size)
            watcher.stored(name, offset, size)
            return
        if size < _SPOOL_THRESHOLD and self._in_memory + size <= _MEMORY_BUDGET:
            self._memory[name] = data = tar.read_data(size)
            self._in_memory += len(data)
            return
        offset = self._spool_size
        self._spool_to(tar, size)
        self._spooled[name] = (offset, size)

    def _spool_to(self, tar: Members, size: int) -> None:
        if self._spool is None:
            self._spool = tempfile.TemporaryFile(prefix="gpu-triage-")  # noqa: SIM115
        tar.copy_data(size, self._spool.write)
        self._spool_size += size

    def flush_spool(self) -> None:
        """Make what was spooled so far readable to other processes (forked readers)."""
        if self._spool is not None:
            self._spool.flush()

    def read_at(self, offset: int, length: int) -> bytes:
        """``length`` bytes of the spool from ``offset`` (fewer if it ends before).

        A positional read: the spool's file offset is shared with forked workers
        (:mod:`analyzers.speed.prefetch`), so seek-then-read could interleave with theirs
        (:func:`bundle.portable.read_at` falls back to it only where nothing forks)."""
        assert self._spool is not None
        fd = self._spool.fileno()
        pieces = []
        while length > 0:
            piece = read_at(fd, length, offset)
            if not piece:
                break
            pieces.append(piece)
            offset += len(piece)
            length -= len(piece)
        return b"".join(pieces)

    def paths(self) -> list[str]:
        return sorted(self._names)

    def size(self, path: str) -> int | None:
        stored = self._names.get(path)
        if stored is None:
            return None
        if stored in self._memory:
            return len(self._memory[stored])
        return self._spooled[stored][1]

    def read(self, path: str) -> bytes | None:
        stored = self._names.get(path)
        if stored is None:
            return None
        if stored in self._memory:
            return self._memory[stored]
        return self.read_at(*self._spooled[stored])

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None


def _member_kind(member: Member) -> str:
    if member.type == tarfile.SYMTYPE:
        return f"symbolic link to {member.linkname!r}"
    if member.type == tarfile.LNKTYPE:
        return f"hard link to {member.linkname!r}"
    if member.type == tarfile.FIFOTYPE:
        return "FIFO"
    if member.type in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        return "device file"
    return "special member"


def _after_end_failure(exc: BaseException) -> tuple[str, str]:
    """(problem kind, what it means) for a stream error met after the archive's end."""
    text = str(exc)
    if isinstance(exc, gzip.BadGzipFile) and ("CRC" in text or "length" in text):
        return "corrupt", ("the gzip checksum of the archive does not match: what was read "
                           "may be damaged")
    if isinstance(exc, EOFError):
        return "trailing", ("the gzip stream is cut after the end of the archive, so its "
                            "checksum could not be verified")
    if isinstance(exc, Overrun):
        return "trailing", "data after the end of the archive was not read"
    return "trailing", "bytes after the end of the compressed archive are not gzip data; ignored"


def _brief(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())[:160]
