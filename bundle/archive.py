"""Safe, read-only access to the files of a bundle: a directory, a .tar or a .tgz.

Archives are read in one streaming pass and never extracted: small members stay in
memory, large ones are spooled into one anonymous temporary file. Every member that
is not a plain file with a clean relative name is refused and recorded, as is an
archive that ends early. Caps bound memory, disk and time against hostile input.
"""

from __future__ import annotations

import gzip
import os
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from bundle.problems import BundleError, ProblemLog

MANIFEST = "manifest.json"
_SPOOL_THRESHOLD = 1 << 20
_TAIL = 64 << 10
_BLOCK = 512


class _Tail:
    """Wraps the decompressed stream, remembering how much was read and the last bytes.

    tarfile's stream mode ends quietly on a missing header, a garbage header or a
    short read; the remembered tail lets us tell a proper end-of-archive marker
    (a zero block) from an archive that was cut or corrupted.
    """

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.total = 0
        self._tail = bytearray()

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.total += len(data)
        self._tail += data
        if len(self._tail) > _TAIL:
            del self._tail[: len(self._tail) - _TAIL]
        return data

    def block_at(self, offset: int) -> bytes | None:
        start = len(self._tail) - (self.total - offset)
        if start < 0:
            return None
        return bytes(self._tail[start : start + _BLOCK])


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps applied while reading untrusted archives (raise them with CLI flags)."""

    max_member_bytes: int = 512 << 20
    max_total_bytes: int = 16 << 30
    max_members: int = 500_000


class Source(Protocol):
    """What the rest of the package needs from a bundle container."""

    display: str

    def paths(self) -> list[str]: ...

    def size(self, path: str) -> int | None: ...

    def read(self, path: str) -> bytes | None: ...

    def close(self) -> None: ...


def clean_name(name: str) -> str | None:
    """Return the normalised relative name, or None when the name is unsafe."""
    if not name or "\\" in name or "\x00" in name:
        return None
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return None
    if name.startswith("/"):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    if any(ord(c) < 0x20 or ord(c) == 0x7F for p in parts for c in p):
        return None
    return "/".join(parts)


def printable(name: str) -> str:
    """A name safe to show: undecodable bytes and control characters escaped."""
    return "".join(c if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF
                   else f"\\x{ord(c) & 0xFF:02x}" for c in name)


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

    def __init__(self, path: Path, limits: Limits, problems: ProblemLog) -> None:
        self.display = str(path)
        self._limits = limits
        self._problems = problems
        self._pending = []
        files = dict(self._walk(path))
        root = _find_root(list(files))
        if root is None:
            raise BundleError(self.display, f"no {MANIFEST} at the top or one directory down")
        self._files = {rel: files[stored] for rel, stored in self._rebase(list(files), root).items()}

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
                mode = entry.stat(follow_symlinks=False).st_mode
                if name is None:
                    self._refuse(printable(rel), "unsafe or non-UTF-8 name")
                elif stat.S_ISDIR(mode):
                    stack.append((Path(entry.path), rel + "/"))
                elif not stat.S_ISREG(mode):
                    self._refuse(name, f"not a regular file ({_kind(mode)})")
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
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(target, flags)
        except OSError as exc:
            self._problems.add(path, f"cannot open: {exc.strerror}", kind="refused")
            return None
        with os.fdopen(fd, "rb") as handle:
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

    def __init__(self, path: Path, limits: Limits, problems: ProblemLog) -> None:
        self.display = str(path)
        self._limits = limits
        self._problems = problems
        self._memory: dict[str, bytes] = {}
        self._spooled: dict[str, tuple[int, int]] = {}
        self._spool: IO[bytes] | None = None
        self.stopped_at: str | None = None
        self._last: str | None = None
        self._pending = []
        self._read_all(path)
        names = list(self._memory) + list(self._spooled)
        root = _find_root(names)
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
            stream = _Tail(gzip.GzipFile(fileobj=raw, mode="rb") if gzipped else raw)
            try:
                archive = tarfile.open(fileobj=stream, mode="r|")  # type: ignore[call-overload]
            except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
                raise BundleError(self.display, f"not a gzip or tar archive ({_brief(exc)})") from None
            with archive:
                self._consume(archive)
                if self.stopped_at is None:
                    self._check_end(archive, stream)

    def _check_end(self, archive: tarfile.TarFile, stream: _Tail) -> None:
        """Record a truncation when the archive did not end with a zero block."""
        block = stream.block_at(archive.offset)
        if block is not None and len(block) == _BLOCK and not block.strip(b"\0"):
            return
        reason = "no end-of-archive marker" if not block else "an unreadable member header"
        self.stopped_at = f"at byte {archive.offset}: {reason}"
        self._problems.add(self.display, f"archive ends early or is corrupt at byte "
                           f"{archive.offset} of the tar stream ({reason}) after "
                           f"{self._last or 'the start'}; analysed what was read",
                           kind="truncated")

    def _consume(self, archive: tarfile.TarFile) -> None:
        total = 0
        count = 0
        last = "the start"
        try:
            for member in archive:
                count += 1
                if count > self._limits.max_members:
                    self._refuse(member.name, f"more than {self._limits.max_members} "
                                       "members; the rest were not read")
                    self.stopped_at = f"member cap reached after {last}"
                    return
                name = self._accept(member)
                if name is None:
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
                self._store(name, handle, member.size)
                last = self._last = name
        except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
            self.stopped_at = f"after {last}: {_brief(exc)}"
            self._problems.add(self.display, f"archive ends early or is corrupt after {last} "
                               f"({_brief(exc)}); analysed what was read", kind="truncated")

    def _accept(self, member: tarfile.TarInfo) -> str | None:
        name = clean_name(member.name)
        shown = printable(member.name)
        if member.isdir():
            return None
        if name is None:
            self._refuse(shown, "unsafe name (absolute, '..', control characters or not "
                               "UTF-8)")
            return None
        if not member.isreg():
            self._refuse(name, f"not a regular file ({_member_kind(member)})")
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
        if size < _SPOOL_THRESHOLD:
            self._memory[name] = handle.read()
            return
        if self._spool is None:
            self._spool = tempfile.TemporaryFile(prefix="gpu-triage-")
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


def open_source(path: Path, limits: Limits, problems: ProblemLog) -> Source:
    """Open a directory or archive as a Source; BundleError when it cannot be read."""
    try:
        info = path.stat()
    except OSError as exc:
        raise BundleError(str(path), f"cannot open: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        return DirectorySource(path, limits, problems)
    if not stat.S_ISREG(info.st_mode):
        raise BundleError(str(path), "not a regular file or directory")
    return ArchiveSource(path, limits, problems)


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


def _brief(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())[:160]
