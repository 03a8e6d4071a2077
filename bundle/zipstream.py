"""The members of a .zip, handed to the archive reader as a tar stream's are.

A zip is read through its central directory (``zipfile``), member after member in the
order it lists them, and each member is presented as a tar :class:`~bundle.tarstream.Member`
so that :class:`bundle.archive.ArchiveSource` keeps, refuses and records it under the same
caps and with the same messages as a tar member:

- a symbolic link (Unix mode in the external attributes, as Info-ZIP ``zip --symlinks``
  stores one), a FIFO or a device is a link or special member, refused;
- an encrypted member is refused with a clear message (gpu-triage takes no password);
- a member compressed with a method ``zipfile`` cannot read is refused, not fatal;
- names go through the same check (absolute, ``..``, backslashes, control characters);
- each member's declared size counts against the member and total caps before anything
  is decompressed, ``zipfile`` never decompresses past the declared size (and checks the
  CRC), and the declared sizes together may not pass the ratio cap over the archive's
  size once :data:`bundle.gzstream.RATIO_FLOOR` is passed (entries that overlap, the
  classic zip bomb, declare far more than the archive holds).

The central directory's own entry count is checked against the member cap before
``zipfile`` builds an object per entry.
"""

from __future__ import annotations

import stat
import struct
import tarfile
import zipfile
from typing import BinaryIO

from bundle.gzstream import RATIO_FLOOR, Overrun
from bundle.tarstream import Member, Sink

_CHUNK = 512 << 10
_READABLE = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_EOCD64 = b"PK\x06\x06"
_TAIL = 22 + 0xFFFF  # the end record and the longest comment after it
ENCRYPTED = ("encrypted (password-protected) zip member; gpu-triage takes no password: "
             "ask for the archive without one")


def declared_entries(raw: BinaryIO) -> int | None:
    """The number of entries the zip's end-of-central-directory record (or its Zip64
    form) declares; None when there is none to be found."""
    raw.seek(0, 2)
    size = raw.tell()
    start = max(0, size - _TAIL)
    raw.seek(start)
    tail = raw.read()
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < 22:
        return None
    (entries,) = struct.unpack("<H", tail[at + 10 : at + 12])
    if entries != 0xFFFF:
        return int(entries)
    locator = tail[at - 20 : at] if at >= 20 else b""
    if not locator.startswith(_EOCD64_LOCATOR):
        return None
    (offset,) = struct.unpack("<Q", locator[8:16])
    raw.seek(offset)
    record = raw.read(56)
    if len(record) < 56 or not record.startswith(_EOCD64):
        return None
    (total,) = struct.unpack("<Q", record[32:40])
    return int(total)


class ZipMembers:
    """A zip archive's members as :class:`bundle.tarstream.TarStream` hands them out
    (``next``, ``read_data``, ``copy_data``, ``rest``)."""

    def __init__(self, raw: BinaryIO, *, ratio: int) -> None:
        raw.seek(0, 2)
        self._archive_size = max(raw.tell(), 1)
        raw.seek(0)
        self._zip = zipfile.ZipFile(raw)  # noqa: SIM115 - closed with the raw file
        self._infos = iter(self._zip.infolist())
        self._ratio = ratio
        self._declared = 0
        self._current: zipfile.ZipInfo | None = None
        self.offset = 0
        self.end: str | None = None  # a zip has no end marker to miss

    def next(self) -> Member | None:
        info = next(self._infos, None)
        self._current = None
        if info is None:
            return None
        self.offset = info.header_offset
        mode = info.external_attr >> 16
        # The name as stored: zipfile's own drops a leading "/" and so would let an
        # absolute name pass for a relative one.
        name = info.orig_filename
        if info.is_dir():
            return Member(name, tarfile.DIRTYPE, 0)
        if stat.S_ISLNK(mode):
            return Member(name, tarfile.SYMTYPE, 0, linkname=self._link(info))
        if stat.S_ISFIFO(mode):
            return Member(name, tarfile.FIFOTYPE, 0)
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            return Member(name, tarfile.CHRTYPE, 0)
        if info.flag_bits & 0x1:
            return Member(name, tarfile.REGTYPE, 0, refusal=ENCRYPTED)
        if info.compress_type not in _READABLE:
            return Member(name, tarfile.REGTYPE, 0, refusal=(
                f"compressed with zip method {info.compress_type}, which gpu-triage "
                "cannot read; not read"))
        self._declared += info.file_size
        if self._declared > RATIO_FLOOR and self._declared > self._ratio * self._archive_size:
            raise Overrun(f"the archive's members declare more than {self._ratio} times its "
                          f"size ({self._declared} bytes in {self._archive_size}); a "
                          "decompression bomb")
        self._current = info
        return Member(name, tarfile.REGTYPE, info.file_size)

    def _link(self, info: zipfile.ZipInfo) -> str:
        """A link's target (its data), when it is short and readable."""
        if info.file_size > 4096 or info.flag_bits & 0x1:
            return ""
        try:
            return self._zip.read(info).decode("utf-8", "replace")
        except (zipfile.BadZipFile, OSError, NotImplementedError, EOFError):
            return ""

    def read_data(self, size: int) -> bytes:
        pieces: list[bytes] = []
        self.copy_data(size, lambda piece: pieces.append(bytes(piece)))
        return b"".join(pieces)

    def copy_data(self, size: int, sink: Sink) -> None:
        """The current member's ``size`` bytes (as declared; zipfile stops there and
        checks the CRC at the end). Damage raises ``OSError``."""
        info = self._current
        assert info is not None and info.file_size == size
        got = 0
        try:
            with self._zip.open(info) as member:
                while True:
                    piece = member.read(_CHUNK)
                    if not piece:
                        break
                    got += len(piece)
                    sink(memoryview(piece))
        except (zipfile.BadZipFile, EOFError, NotImplementedError, RuntimeError) as exc:
            raise OSError(f"zip member damaged: {exc}") from None
        if got != size:
            raise OSError(f"zip member ends after {got} of its {size} bytes")

    def rest(self, limit: int) -> tuple[bytes, BaseException | None]:
        return b"", None
