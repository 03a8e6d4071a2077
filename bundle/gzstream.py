"""The decompressed bytes of an archive, in large pieces, with caps against bombs.

``gzip.GzipFile`` hands out a few KiB per call through three layers of Python
buffering; reading a 3 GB bundle that way costs more than the decompression itself.
:class:`Decompressed` feeds zlib directly and hands out pieces of up to 512 KiB, which
the tar reader slices without copying. It reads gzip exactly as ``GzipFile`` does:
members back to back, zero padding between them, the CRC and length of each member
checked, and the same exceptions with the same messages (``BadGzipFile``,
``EOFError``, ``zlib.error``). Each error is raised only after every byte that came
before it was handed out, as ``GzipFile`` does, so the reader knows where the archive
broke. A plain .tar is read in the same pieces, and so are the other compressions
of :mod:`bundle.compressed` (xz, bzip2, zstd), under the same caps.

Inflate and CRC come from zlib-ng (the ``zlib-ng`` package, about twice as fast as the
standard library's zlib at both) when it can be imported, else from ``zlib``: the
bytes, the errors (always ``zlib.error``, with zlib's messages) and the salvage of a
broken stream are the same with either (``tests/test_gzstream_backends.py``).
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, cast

from bundle.compressed import GZIP, PLAIN, Counted, Reader, decoder

PIECE = 512 << 10  # decompressed bytes per piece: bounds memory, stays in cache
_INPUT = 64 << 10  # compressed bytes given to zlib per call
_SALVAGE_STEP = 512
RATIO_FLOOR = 64 << 20  # the ratio cap applies once this much was decompressed
_CUT = "Compressed file ended before the end-of-stream marker was reached"
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 2, 4, 8, 16


@dataclass(frozen=True)
class Backend:
    """Where inflate and CRC come from: ``zlib`` or zlib-ng's drop-in module."""

    name: str
    decompressobj: Callable[[int], Any]
    crc32: Callable[[bytes, int], int]
    error: type[Exception]


STDLIB = Backend("zlib", zlib.decompressobj, zlib.crc32, zlib.error)


def _fastest() -> Backend:
    try:
        from zlib_ng import zlib_ng
    except ImportError:  # not installed, or no wheel for this platform
        return STDLIB
    # (zlib-ng's type stubs declare ``error`` an instance; it is the exception class)
    error = cast("type[Exception]", zlib_ng.error)
    return Backend("zlib-ng", zlib_ng.decompressobj, zlib_ng.crc32, error)


BACKEND = _fastest()  # what new readers use; tests switch it


class Overrun(Exception):
    """The decompressed stream passed a cap; reading stops there."""


class Decompressed:
    """The decompressed content of ``raw`` (gzip when ``gzipped``, else ``codec``: one
    of :mod:`bundle.compressed`'s kinds, plain by default), piece by piece. ``budget``
    caps the decompressed bytes; ``ratio`` caps decompressed over compressed bytes once
    more than :data:`RATIO_FLOOR` came out."""

    def __init__(self, raw: BinaryIO, *, gzipped: bool, budget: int, ratio: int,
                 codec: str | None = None, backend: Backend | None = None) -> None:
        self._zlib = backend or BACKEND
        codec = GZIP if gzipped else codec or PLAIN
        self._counted: Counted | None = None
        self._decoder: Reader | None = None
        if codec not in (GZIP, PLAIN):
            self._counted = Counted(raw)
            self._decoder = decoder(codec, self._counted)
        self._raw = raw
        self._gzipped = gzipped
        self._budget = budget
        self._ratio = ratio
        self.total = 0  # decompressed bytes produced (the caps count them)
        self._input = b""  # compressed bytes read from the file, not yet used
        self._read = 0  # compressed bytes read from the file
        self._inflater: Any = None  # the current gzip member's
        self._in_member = False  # a member began whose trailer is not checked yet
        self._crc = 0
        self._size = 0
        self._error: BaseException | None = None  # raised on the next call

    def read(self) -> bytes:
        """The next piece; b"" at the end of the stream. Raises the stream's error, or
        :class:`Overrun` when this piece would pass a cap."""
        if self._error is not None:
            raise self._error
        if self._gzipped:
            piece = self._next_gzip()
        elif self._decoder is not None:
            piece = self._decoder.read1(PIECE)
        else:
            piece = self._raw.read(PIECE)
        self.total += len(piece)
        self._check_caps()
        return piece

    def _check_caps(self) -> None:
        if self.total > self._budget:
            raise Overrun(f"the archive expands beyond {self._budget} bytes")
        if self.total <= RATIO_FLOOR:
            return
        if self._counted is not None:
            packed = self._counted.count
        elif self._gzipped:
            packed = self._read - len(self._input)
        else:
            return
        if self.total > self._ratio * max(packed, 1):
            raise Overrun(f"the archive expands more than {self._ratio} times its "
                          f"compressed size ({self.total} bytes from the first "
                          f"{max(packed, 1)}); a decompression bomb")

    # -- gzip, as GzipFile reads it ----------------------------------------------------

    def _next_gzip(self) -> bytes:
        while True:
            if self._inflater is None:
                if self._in_member:
                    self._end_member()
                if not self._begin_member():
                    return b""
            piece = self._inflate()
            if piece:
                return piece

    def _inflate(self) -> bytes:
        inflater = self._inflater
        assert inflater is not None
        data = self._input or self._take(_INPUT)
        before = inflater.copy()
        try:
            piece = inflater.decompress(data, PIECE)
        except self._zlib.error as exc:
            # zlib drops what the failing call decoded: keep all that came before it,
            # and fail on the next call. zlib-ng's error becomes zlib's, same message.
            error = exc if isinstance(exc, zlib.error) else zlib.error(*exc.args)
            piece = _salvage(before, data, self._zlib.error)
            if not piece:
                raise error from None
            self._error = error
            return self._account(piece)
        if inflater.eof:
            self._input = inflater.unused_data
            self._inflater = None
        else:
            self._input = inflater.unconsumed_tail
            if not piece and not data:
                raise EOFError(_CUT)
        return self._account(piece)

    def _account(self, piece: bytes) -> bytes:
        self._crc = self._zlib.crc32(piece, self._crc)
        self._size += len(piece)
        return piece

    def _begin_member(self) -> bool:
        """Read a member header (``gzip._read_gzip_header``); False at the end."""
        magic = self._take(2)
        if not magic:
            return False
        if magic != b"\x1f\x8b":
            raise gzip.BadGzipFile(f"Not a gzipped file ({magic!r})")
        method, flags = struct.unpack("<BB6x", self._take_exact(8))
        if method != 8:
            raise gzip.BadGzipFile("Unknown compression method")
        if flags & _FEXTRA:
            (extra,) = struct.unpack("<H", self._take_exact(2))
            self._take_exact(extra)
        if flags & _FNAME:
            self._skip_string()
        if flags & _FCOMMENT:
            self._skip_string()
        if flags & _FHCRC:
            self._take_exact(2)
        self._inflater = self._zlib.decompressobj(-zlib.MAX_WBITS)
        self._in_member = True
        self._crc = self._size = 0
        return True

    def _end_member(self) -> None:
        """Check the member's trailer and skip zero padding (``_GzipReader._read_eof``)."""
        crc, size = struct.unpack("<II", self._take_exact(8))
        if crc != self._crc:
            raise gzip.BadGzipFile(f"CRC check failed {hex(crc)} != {hex(self._crc)}")
        if size != self._size & 0xFFFFFFFF:
            raise gzip.BadGzipFile("Incorrect length of data produced")
        self._in_member = False
        while True:
            self._input = self._input.lstrip(b"\0")
            if self._input:
                return
            self._input = self._take(_INPUT)
            if not self._input:
                return

    # -- compressed input --------------------------------------------------------------

    def _take(self, size: int) -> bytes:
        """Up to ``size`` compressed bytes (fewer only at the end of the file)."""
        if not self._input:
            data = self._raw.read(size)
            self._read += len(data)
            return data
        data, self._input = self._input[:size], self._input[size:]
        if len(data) < size:
            more = self._raw.read(size - len(data))
            self._read += len(more)
            data += more
        return data

    def _take_exact(self, size: int) -> bytes:
        data = self._take(size)
        if len(data) < size:
            raise EOFError(_CUT)
        return data

    def _skip_string(self) -> None:
        """Skip a zero-terminated header field (or the rest of the file)."""
        while True:
            if not self._input:
                self._input = self._take(_INPUT)
                if not self._input:
                    return
            end = self._input.find(b"\0")
            if end >= 0:
                self._input = self._input[end + 1 :]
                return
            self._input = b""


def _salvage(inflater: Any, data: bytes, error: type[Exception]) -> bytes:
    """What ``inflater`` decodes from ``data`` before it fails, in small steps."""
    pieces: list[bytes] = []
    try:
        while data and not inflater.eof:
            pieces.append(inflater.decompress(data, _SALVAGE_STEP))
            if not pieces[-1] and len(inflater.unconsumed_tail) == len(data):
                break
            data = inflater.unconsumed_tail
    except error:
        pass
    return b"".join(pieces)
