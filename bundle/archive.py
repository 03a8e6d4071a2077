"""Safe, read-only access to the files of a bundle: a directory, a .tar or a .tgz.

Archives are read in one streaming pass and never extracted: small members stay in
memory, large ones are spooled into one anonymous temporary file. Every member that
is not a plain file with a clean relative name is refused and recorded, as is an
archive that ends early, is corrupt, or carries data after its end. Caps bound memory,
disk and time against hostile input: a member cap, a member-count cap, a cap on the
decompressed size, and a cap on the compression ratio that stops a decompression bomb
after its first few MiB instead of after the gigabytes it promises.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from bundle.problems import BundleError, ProblemLog

MANIFEST = "manifest.json"
_UNSAFE_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")
_SPOOL_THRESHOLD = 64 << 10  # larger members go to the spool file, not to memory
_MEMORY_BUDGET = 128 << 20   # past this many bytes held in memory, every member is spooled
_TAIL = 64 << 10
_BLOCK = 512
_RATIO_FLOOR = 64 << 20   # the ratio cap applies once this much was decompressed
_HEADER_CAP = 1 << 20     # pax / GNU long-name headers are read whole by tarfile
_AFTER_END = 1 << 20      # how far past the end-of-archive marker we look
# What tarfile and gzip raise on a corrupt stream. tarfile is not total on hostile
# headers (a pax sparse map, a chain of long-name headers), hence the extra types.
_STREAM_ERRORS = (tarfile.TarError, OSError, EOFError, zlib.error, ValueError, OverflowError,
                  RecursionError)


class Overrun(Exception):
    """The decompressed stream passed a cap; reading stops there."""


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _Tail:
    """Wraps the decompressed stream, remembering how much was read and the last bytes.

    tarfile's stream mode ends quietly on a missing header, a garbage header or a
    short read; the remembered tail lets us tell a proper end-of-archive marker
    (a zero block) from an archive that was cut or corrupted.
    """

    def __init__(self, raw: _Readable, budget: int, ratio: int,
                 packed: Callable[[], int] | None) -> None:
        self._raw = raw
        self.total = 0
        self._tail = bytearray()
        self._budget = budget
        self._ratio = ratio
        self._packed = packed

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.total += len(data)
        self._tail += data
        if len(self._tail) > _TAIL:
            del self._tail[: len(self._tail) - _TAIL]
        self._check_caps()
        return data

    def _check_caps(self) -> None:
        if self.total > self._budget:
            raise Overrun(f"the archive expands beyond {self._budget} bytes")
        if self._packed is not None and self.total > _RATIO_FLOOR:
            packed = max(self._packed(), 1)
            if self.total > self._ratio * packed:
                raise Overrun(f"the archive expands more than {self._ratio} times its "
                              f"compressed size ({self.total} bytes from the first {packed}); "
                              "a decompression bomb")

    def since(self, offset: int) -> bytes | None:
        """The bytes read from ``offset`` on, when they are still in the tail."""
        start = len(self._tail) - (self.total - offset)
        return bytes(self._tail[start:]) if start >= 0 else None

    def block_at(self, offset: int) -> bytes | None:
        rest = self.since(offset)
        return rest[:_BLOCK] if rest is not None else None


class _GuardedInfo(tarfile.TarInfo):
    """Refuses headers that tarfile would otherwise read whole into memory.

    tarfile reads a pax or GNU long-name header in one piece, whatever size it
    declares, and follows a GNU sparse map for as long as it goes on.
    """

    def _proc_member(self, archive: tarfile.TarFile) -> tarfile.TarInfo | None:
        if self.type in _EXTENDED and self.size > _HEADER_CAP:
            raise tarfile.ReadError(
                f"an extended header of {self.size} bytes (more than {_HEADER_CAP})")
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise tarfile.ReadError("a GNU sparse member, which bundles never hold")
        process: Callable[[tarfile.TarFile], tarfile.TarInfo | None]
        process = super()._proc_member  # type: ignore[misc]
        return process(archive)

    def _proc_gnusparse_10(self, _next: tarfile.TarInfo, _pax: dict[str, str],
                           _archive: tarfile.TarFile) -> None:
        raise tarfile.ReadError("a pax sparse member, which bundles never hold")


_EXTENDED = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE,
             tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps applied while reading untrusted archives (raise them with CLI flags)."""

    max_member_bytes: int = 512 << 20
    max_total_bytes: int = 16 << 30
    max_members: int = 500_000
    # Decompressed over compressed size, checked once 64 MiB came out: bundles compress
    # about 10-20 times, gzip'd zeros about 1000 times.
    max_ratio: int = 200


class Source(Protocol):
    """What the rest of the package needs from a bundle container."""

    display: str

    def paths(self) -> list[str]: ...

    def size(self, path: str) -> int | None: ...

    def read(self, path: str) -> bytes | None: ...

    def close(self) -> None: ...


def clean_name(name: str) -> str | None:
    """Return the normalised relative name, or None when the name is unsafe."""
    if not name or name.startswith("/") or _UNSAFE_CHARS.search(name):
        return None
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def printable(name: str) -> str:
    """A name safe to show: undecodable bytes and control characters escaped."""
    return "".join(c if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF
                   else f"\\x{ord(c) & 0xFF:02x}" for c in name)


RootFinder = Callable[[list[str]], str | None]


def _find_root(names: list[str]) -> str | None:
    """The bundle root is the directory holding manifest.json, at the top or one down."""
    if MANIFEST in names:
        return ""
    candidates = sorted(n for n in names if n.count("/") == 1 and n.endswith("/" + MANIFEST))
    return candidates[0][: -len(MANIFEST)] if candidates else None


class _Refusals:
    """Refusals are noted under stored names and recorded once the root is known,
    so that problems name bundle-relative paths like every other problem."""

    _problems: ProblemLog
    _pending: list[tuple[str, str]]

    def _refuse(self, name: str, message: str) -> None:
        self._pending.append((name, message))

    def _rebase(self, names: list[str], root: str) -> dict[str, str]:
        """Map bundle-relative names to stored names; record members outside the root."""
        mapped: dict[str, str] = {}
        for name in names:
            if name.startswith(root):
                mapped[name[len(root) :]] = name
            else:
                self._problems.add(name, "outside the bundle root; ignored", kind="refused")
        for name, message in self._pending:
            shown = name[len(root) :] if root and name.startswith(root) else name
            self._problems.add(shown, message, kind="refused")
        self._pending.clear()
        return mapped


class DirectorySource(_Refusals):
    """A bundle that is already unpacked. Links and special files are refused."""

    def __init__(self, path: Path, limits: Limits, problems: ProblemLog,
                 find_root: RootFinder | None = None) -> None:
        self.display = str(path)
        self._find_root = find_root or _find_root
        self._limits = limits
        self._problems = problems
        self._pending = []
        files = dict(self._walk(path))
        root = self._find_root(list(files))
        if root is None:
            raise BundleError(self.display, f"no {MANIFEST} at the top or one directory down")
        rebased = self._rebase(list(files), root)
        self._files = {rel: files[stored] for rel, stored in rebased.items()}

    def _walk(self, top: Path) -> Iterator[tuple[str, Path]]:
        count = 0
        stack: list[tuple[Path, str]] = [(top, "")]
        while stack:
            directory, prefix = stack.pop()
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError as exc:
                self._refuse(prefix or ".", f"cannot list directory: {exc.strerror}")
                continue
            for entry in entries:
                rel = prefix + entry.name
                name = clean_name(rel)
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    self._refuse(printable(rel), f"cannot stat: {exc.strerror}")
                    continue
                mode = info.st_mode
                if name is None:
                    self._refuse(printable(rel), "unsafe or non-UTF-8 name")
                elif stat.S_ISDIR(mode):
                    stack.append((Path(entry.path), rel + "/"))
                elif not stat.S_ISREG(mode):
                    self._refuse(name, f"not a regular file ({_kind(mode)})")
                elif info.st_nlink > 1:
                    # It may be any file on this machine; a bundle never holds one.
                    self._refuse(name, f"a hard link ({info.st_nlink} names for one file); "
                                 "not read")
                else:
                    count += 1
                    if count > self._limits.max_members:
                        self._refuse(name, "too many files; the rest were not read")
                        return
                    yield name, Path(entry.path)

    def paths(self) -> list[str]:
        return sorted(self._files)

    def size(self, path: str) -> int | None:
        target = self._files.get(path)
        if target is None:
            return None
        try:
            return target.lstat().st_size
        except OSError:
            return None

    def read(self, path: str) -> bytes | None:
        target = self._files.get(path)
        if target is None:
            return None
        # No following links, no blocking on a FIFO swapped in since the walk.
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(target, flags)
        except OSError as exc:
            self._problems.add(path, f"cannot open: {exc.strerror}", kind="refused")
            return None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                self._problems.add(path, "no longer a regular file; not read", kind="refused")
                return None
            data = handle.read(self._limits.max_member_bytes + 1)
        if len(data) > self._limits.max_member_bytes:
            self._problems.add(path, f"larger than the {self._limits.max_member_bytes} byte cap; "
                               "not read", kind="refused")
            return None
        return data

    def close(self) -> None:
        return None


class ArchiveSource(_Refusals):
    """A .tar or .tgz read in a single streaming pass."""

    def __init__(self, path: Path, limits: Limits, problems: ProblemLog,
                 find_root: RootFinder | None = None) -> None:
        self.display = str(path)
        self._find_root = find_root or _find_root
        self._limits = limits
        self._problems = problems
        self._memory: dict[str, bytes] = {}
        self._in_memory = 0
        self._spooled: dict[str, tuple[int, int]] = {}
        self._spool: IO[bytes] | None = None
        self.stopped_at: str | None = None
        self._last: str | None = None
        self._pending = []
        self._read_all(path)
        names = list(self._memory) + list(self._spooled)
        root = self._find_root(names)
        if root is None:
            self.close()
            if self.stopped_at is not None:
                raise BundleError(self.display, f"archive is truncated or corrupt before "
                                  f"{MANIFEST} ({self.stopped_at})")
            raise BundleError(self.display, f"no {MANIFEST} at the top or one directory down")
        self._names = self._rebase(names, root)

    def _read_all(self, path: Path) -> None:
        try:
            raw = path.open("rb")
        except OSError as exc:
            raise BundleError(self.display, f"cannot open: {exc.strerror}") from None
        with raw:
            if not raw.read(1):
                raise BundleError(self.display, "empty file, not a bundle")
            raw.seek(0)
            gzipped = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            limits = self._limits
            # The stream also holds headers and the members skipped over: twice the
            # content cap is the backstop that bounds the time spent decompressing.
            stream = _Tail(gzip.GzipFile(fileobj=raw, mode="rb") if gzipped else raw,
                           budget=2 * limits.max_total_bytes + (1 << 20),
                           ratio=limits.max_ratio, packed=raw.tell if gzipped else None)
            try:
                archive = tarfile.open(  # type: ignore[call-overload]  # noqa: SIM115
                    fileobj=stream, mode="r|", tarinfo=_GuardedInfo)
            except (*_STREAM_ERRORS, Overrun) as exc:
                what = (f"archive is truncated or corrupt before {MANIFEST}"
                        if gzipped and not isinstance(exc, tarfile.TarError)
                        else "not a gzip or tar archive")
                raise BundleError(self.display, f"{what} ({_brief(exc)})") from None
            with archive:
                self._consume(archive)
                if self.stopped_at is None:
                    self._check_end(archive, stream)
                if self.stopped_at is None:
                    self._check_after_end(archive.offset, stream)

    def _check_end(self, archive: tarfile.TarFile, stream: _Tail) -> None:
        """Record a truncation when the archive did not end with a zero block."""
        block = stream.block_at(archive.offset)
        if block is not None and len(block) == _BLOCK and not block.strip(b"\0"):
            return
        reason = "no end-of-archive marker" if not block else "an unreadable member header"
        self.stopped_at = f"at byte {archive.offset}: {reason}"
        self._problems.add(self.display, f"archive ends early or is corrupt at byte "
                           f"{archive.offset} of the tar stream ({reason}) "
                           f"{self._where(None)}; analysed what was read", kind="truncated")

    def _check_after_end(self, end: int, stream: _Tail) -> None:
        """Record data after the end-of-archive marker (zero padding is normal), and a
        compressed stream whose checksum fails or that goes on with garbage."""
        seen = stream.since(end) or b""
        failure: BaseException | None = None
        try:
            while len(seen) <= _AFTER_END and (chunk := stream.read(64 << 10)):
                seen += chunk
        except (*_STREAM_ERRORS, Overrun) as exc:
            failure = exc
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

    def _consume(self, archive: tarfile.TarFile) -> None:
        total = 0
        count = 0
        current: str | None = None  # the member being read
        skipped: str | None = None  # the refused member whose data is being skipped
        try:
            while (member := archive.next()) is not None:
                # stream mode would otherwise keep every header it has read
                archive.members.clear()  # type: ignore[attr-defined]
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
                    continue
                total += member.size
                if total > self._limits.max_total_bytes:
                    self._refuse(name, f"archive expands beyond {self._limits.max_total_bytes}"
                                       " bytes; reading stopped")
                    self.stopped_at = f"size cap reached at {name}"
                    return
                handle = archive.extractfile(member)
                if handle is None:
                    continue
                current = name
                self._store(name, handle, member.size)
                current = None
                self._last = name
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

    def _accept(self, member: tarfile.TarInfo) -> str | None:
        if member.isdir():
            return None
        name = clean_name(member.name)
        if name is None:
            self._refuse(printable(member.name) or "(empty name)", "unsafe name (absolute, "
                         "'..', control characters or not UTF-8)")
            return None
        if not member.isreg():
            self._refuse(name, f"not a regular file ({_member_kind(member)})")
            return None
        if member.sparse is not None:
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

    def _store(self, name: str, handle: IO[bytes], size: int) -> None:
        if size < _SPOOL_THRESHOLD and self._in_memory + size <= _MEMORY_BUDGET:
            self._memory[name] = data = handle.read()
            self._in_memory += len(data)
            return
        if self._spool is None:
            self._spool = tempfile.TemporaryFile(prefix="gpu-triage-")  # noqa: SIM115
        offset = self._spool.seek(0, os.SEEK_END)
        written = 0
        while chunk := handle.read(1 << 20):
            self._spool.write(chunk)
            written += len(chunk)
        self._spooled[name] = (offset, written)

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
        assert self._spool is not None
        offset, length = self._spooled[stored]
        self._spool.seek(offset)
        return self._spool.read(length)

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None


def open_source(path: Path, limits: Limits, problems: ProblemLog,
                find_root: RootFinder | None = None) -> Source:
    """Open a directory or archive as a Source; BundleError when it cannot be read.
    ``find_root`` locates the bundle root among the stored names (default: the
    directory of ``manifest.json``; :mod:`bundle.layouts` adds foreign layouts)."""
    try:
        info = path.stat()
    except OSError as exc:
        raise BundleError(str(path), f"cannot open: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        return DirectorySource(path, limits, problems, find_root)
    if not stat.S_ISREG(info.st_mode):
        raise BundleError(str(path), "not a regular file or directory")
    return ArchiveSource(path, limits, problems, find_root)


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


def _member_kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return f"symbolic link to {member.linkname!r}"
    if member.islnk():
        return f"hard link to {member.linkname!r}"
    if member.isfifo():
        return "FIFO"
    if member.ischr() or member.isblk():
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
