"""bundle.gzstream reads gzip as gzip.GzipFile does, and stops at its caps.

Every case compares what Decompressed hands out, and how it fails, with GzipFile read
piece by piece: the same bytes, then the same exception type and message. Only on
corrupt deflate data may Decompressed hand out more, never less: zlib drops the
output of the call that fails, and Decompressed goes back to keep it.
"""

from __future__ import annotations

import gzip
import io
import random
import struct
import zlib
from collections.abc import Callable

import pytest
from stream_kit import decompressed_reading, gzip_reading

import bundle.gzstream
from bundle.gzstream import RATIO_FLOOR, Decompressed

DATA = random.Random(7).randbytes(50_000) + b"0123456789" * 20_000
CUT = "EOFError: Compressed file ended before the end-of-stream marker was reached"


def gz(data: bytes, *, flags: int = 0, extra: bytes = b"", name: bytes = b"",
       comment: bytes = b"") -> bytes:
    """One gzip member, with the optional header fields that ``flags`` names."""
    head = struct.pack("<BBBBIBB", 0x1F, 0x8B, 8, flags, 0, 0, 255)
    if flags & 4:
        head += struct.pack("<H", len(extra)) + extra
    if flags & 8:
        head += name + b"\0"
    if flags & 16:
        head += comment + b"\0"
    if flags & 2:
        head += struct.pack("<H", zlib.crc32(head) & 0xFFFF)
    deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflate.compress(data) + deflate.flush()
    return head + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x55]) + data[at + 1 :]


ONE = gz(DATA)
LOG_GZ = gz(b"".join(f"{i} kubelet: pod sandbox {i * 7919 % 1000} ready\n".encode()
                     for i in range(40_000)))
CASES: dict[str, tuple[Callable[[], bytes], bytes, str | None]] = {
    "one member": (lambda: ONE, DATA, None),
    "members back to back": (lambda: gz(DATA[:1000]) + gz(b"") + gz(DATA[1000:]), DATA, None),
    "zero padding between and after members": (
        lambda: gz(DATA[:1000]) + bytes(3000) + gz(DATA[1000:]) + bytes(70_000), DATA, None),
    "every optional header field": (
        lambda: gz(DATA, flags=2 | 4 | 8 | 16, extra=b"ex", name=b"bundle.tar",
                   comment=b"c" * 100_000), DATA, None),
    "checksum does not match": (lambda: ONE[:-8] + b"\0\0\0\0" + ONE[-4:], DATA,
                                f"BadGzipFile: CRC check failed 0x0 != {hex(zlib.crc32(DATA))}"),
    "length does not match": (lambda: ONE[:-4] + b"\1\0\0\0", DATA,
                              "BadGzipFile: Incorrect length of data produced"),
    "cut in the trailer": (lambda: ONE[:-3], DATA, CUT),
    "cut in the next header": (lambda: ONE + gz(b"x")[:5], DATA, CUT),
    "cut in a header's name": (lambda: gz(DATA) + gz(b"x", flags=8, name=b"abc")[:12], DATA,
                               CUT),
    "garbage after a member": (lambda: ONE + b"GARBAGE", DATA,
                               "BadGzipFile: Not a gzipped file (b'GA')"),
    "one stray byte after a member": (lambda: ONE + b"\x1f", DATA,
                                      "BadGzipFile: Not a gzipped file (b'\\x1f')"),
    "unknown compression method": (lambda: ONE + b"\x1f\x8b\x07" + ONE[3:], DATA,
                                   "BadGzipFile: Unknown compression method"),
}


@pytest.mark.parametrize("piece", [None, 1000])
@pytest.mark.parametrize("name", sorted(CASES))
def test_reads_like_gzipfile(name: str, piece: int | None,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    if piece is not None:
        monkeypatch.setattr(bundle.gzstream, "PIECE", piece)
    build, data, error = CASES[name]
    raw = build()
    assert decompressed_reading(raw) == (data, error)
    assert gzip_reading(raw) == (data, error)


@pytest.mark.parametrize("at", [0.1, 0.5, 0.9])
def test_cut_deflate_data_yields_all_it_can(at: float) -> None:
    raw = ONE[: int(len(ONE) * at)]
    ours, error = decompressed_reading(raw)
    assert (ours, error) == gzip_reading(raw)
    assert error == CUT
    assert ours == zlib.decompressobj(-zlib.MAX_WBITS).decompress(raw[10:])


@pytest.mark.parametrize(("at", "error"), [
    (12, "error: Error -3 while decompressing data: invalid code lengths set"),
    (443, "error: Error -3 while decompressing data: invalid distance too far back"),
    (20_000, "BadGzipFile: CRC check failed 0x8f66da87 != 0x32191885"),
])
def test_corrupt_deflate_data_keeps_what_came_before(at: int, error: str) -> None:
    raw = _flip(LOG_GZ, at)
    ours, our_error = decompressed_reading(raw)
    theirs, their_error = gzip_reading(raw)
    assert our_error == their_error == error
    assert ours.startswith(theirs)
    if error.startswith("error:"):
        most = _most_before_the_error(raw)
        assert len(most) - 512 < len(ours) <= len(most) and most.startswith(ours)
    else:
        assert ours == theirs


def _most_before_the_error(raw: bytes) -> bytes:
    """Everything zlib decodes before it fails, a byte at a time."""
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    out, data = [], raw[10:]
    try:
        while data:
            out.append(inflater.decompress(data, 1))
            data = inflater.unconsumed_tail
    except zlib.error:
        pass
    return b"".join(out)


def test_errors_come_after_the_data_before_them() -> None:
    source = Decompressed(io.BytesIO(ONE + b"GARBAGE"), gzipped=True, budget=1 << 40,
                          ratio=1000)
    pieces = []
    while len(b"".join(pieces)) < len(DATA):
        pieces.append(source.read())
    assert b"".join(pieces) == DATA
    with pytest.raises(gzip.BadGzipFile, match=r"Not a gzipped file \(b'GA'\)"):
        source.read()


def test_plain_data_passes_through() -> None:
    source = Decompressed(io.BytesIO(DATA), gzipped=False, budget=1 << 40, ratio=2)
    assert b"".join(iter(source.read, b"")) == DATA


def test_budget_cap() -> None:
    assert decompressed_reading(ONE, budget=100_000) == (
        b"", "Overrun: the archive expands beyond 100000 bytes")


def test_ratio_cap_applies_past_the_floor() -> None:
    out, error = decompressed_reading(gz(bytes(RATIO_FLOOR + (8 << 20))), ratio=200)
    assert error is not None and error.startswith(
        "Overrun: the archive expands more than 200 times its compressed size (")
    assert error.endswith("); a decompression bomb")
    # the piece that passed the cap is not handed out
    assert RATIO_FLOOR - bundle.gzstream.PIECE < len(out) <= RATIO_FLOOR
    # below the floor, any ratio is fine
    assert decompressed_reading(gz(bytes(RATIO_FLOOR // 2)), ratio=2) == (
        bytes(RATIO_FLOOR // 2), None)
