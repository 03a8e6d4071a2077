"""What a customer's file is, by its first bytes, and decoders for the compressions
other than gzip that a tar archive comes in.

Customers send what their tools make: ``.tgz`` from the collector, ``.tar.xz`` from
sosreport, ``.tar.zst`` and ``.tar.bz2`` from other archivers, ``.zip`` from a mail client
or an upload portal, a plain ``.tar`` from ``sh node.sh > node.tar``, and
``nvidia-bug-report.log.gz`` from NVIDIA's own script. Names lie (a ``.tgz`` that is a
zip, a ``.zip`` saved without one), so :func:`sniff` reads the magic bytes. The
decoders of :func:`decoder` hand out at most the size asked for per read, and only what
one step of decoding gave (``read1``: a damaged stream loses nothing decoded before
the damage), so the caps of
:class:`bundle.gzstream.Decompressed` stop a bomb after its first pieces, and count the
compressed bytes they consume, which the ratio cap divides by.
"""

from __future__ import annotations

import bz2
import lzma
from typing import IO, BinaryIO, Protocol, cast

GZIP = "gzip"
XZ = "xz"
BZIP2 = "bzip2"
ZSTD = "zstd"
ZIP = "zip"
PLAIN = "plain"  # a tar archive, or text (a bug report), uncompressed

# Magic numbers: gzip (RFC 1952), xz (the .xz file format, "\xfd7zXZ\0"), bzip2 ("BZh" and
# a block size digit), Zstandard frames (RFC 8878, 0xFD2FB528 little-endian), zip local
# file header, and the end-of-central-directory record of an empty zip.
_MAGIC = ((b"\x1f\x8b", GZIP), (b"\xfd7zXZ\x00", XZ), (b"\x28\xb5\x2f\xfd", ZSTD),
          (b"PK\x03\x04", ZIP), (b"PK\x05\x06", ZIP))
SNIFF_BYTES = 8


def sniff(head: bytes) -> str:
    """The container of a file that begins with ``head`` (:data:`SNIFF_BYTES` bytes)."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[3:4] != b"0":
        return BZIP2
    return PLAIN


class Reader(Protocol):
    def read1(self, size: int = -1, /) -> bytes: ...


class Counted:
    """``raw`` read through, counting the bytes read (the compressed size so far)."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.count = 0

    def read(self, size: int = -1, /) -> bytes:
        data = self._raw.read(size)
        self.count += len(data)
        return data

    def readable(self) -> bool:
        return True


class _Errors:
    """A decoder whose own exception types (``LZMAError``, ``ZstdError``) become
    ``OSError`` with the same text, as bz2 and zlib's stream errors are, so that the
    archive reader records them as a damaged archive."""

    def __init__(self, inner: Reader, errors: tuple[type[BaseException], ...]) -> None:
        self._inner = inner
        self._errors = errors

    def read1(self, size: int = -1, /) -> bytes:
        try:
            return self._inner.read1(size)
        except self._errors as exc:
            raise OSError(str(exc) or type(exc).__name__) from None


def decoder(kind: str, raw: Counted) -> Reader:
    """A reader of the decompressed bytes of ``raw`` (xz, bzip2 or zstd), every stream or
    frame of it in turn, as ``xz -d``, ``bzip2 -d`` and ``zstd -d`` read them."""
    stream = cast(IO[bytes], raw)  # a file object as far as these decoders go
    if kind == XZ:
        return _Errors(lzma.LZMAFile(stream), (lzma.LZMAError,))
    if kind == BZIP2:
        return bz2.BZ2File(stream)
    if kind == ZSTD:
        import zstandard

        reader = zstandard.ZstdDecompressor().stream_reader(
            stream, read_size=64 << 10, read_across_frames=True, closefd=False)
        return _Errors(reader, (zstandard.ZstdError,))
    raise ValueError(f"no decoder for {kind!r}")
