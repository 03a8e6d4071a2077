"""The fast archive readers read whatever they are given exactly as the stdlib does.

bundle.tarstream (with bundle.tarheaders) must read any tar, well formed or damaged,
member for member as tarfile's stream mode reads it; bundle.gzstream must hand out
what gzip.GzipFile hands out and fail where and how it fails (on corrupt deflate data
it may hand out more: the bytes zlib decoded before the damage). The archives are
generated with every member type, all three tar formats, pax records and long names,
then damaged: header bytes changed (with the checksum made right again, so that the
damage reaches the field parsers), the stream cut, bytes flipped. Pieces are drawn
small too, so that headers and data straddle them.
"""

from __future__ import annotations

import io
import tarfile
import zlib
from unittest import mock

from hostile_kit import HOSTILE
from hypothesis import given
from hypothesis import strategies as st
from stream_kit import decompressed_reading, gzip_reading, record, stream_reading, tarfile_reading

import bundle.gzstream
from bundle.tarheaders import ENCODING

KINDS = [tarfile.REGTYPE, tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE,
         tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE, tarfile.CONTTYPE,
         tarfile.GNUTYPE_SPARSE, tarfile.XGLTYPE, b"Z"]
KEYWORDS = ["path", "size", "linkpath", "comment", "mtime", "uname", "hdrcharset",
            "GNU.sparse.map", "GNU.sparse.size", "SCHILY.xattr.user.x"]
# Bytes written over header fields. Not 0x80 or 0xff: a base-256 size would send
# tarfile, the reference, seeking for hours (bundle.tarstream stops at the end).
DAMAGE = [0, 0x20, 0x2D, 0x2F, 0x30, 0x35, 0x37, 0x38, 0x41, 0x4C, 0x5F, 0x67, 0x78, 0x7F,
          0xC3, 0xFE]
names = st.one_of(st.text(alphabet="ab/.-_\\ü\x00", max_size=260),
                  st.sampled_from(["b/manifest.json", "b/d/", "b//x", "./b/y", "/abs", "../up"]))
pax = st.dictionaries(st.sampled_from(KEYWORDS), st.text(alphabet="09az/.,- ü", max_size=12),
                      max_size=3)
members = st.lists(st.tuples(names, st.sampled_from(KINDS), st.integers(0, 1500), pax),
                   max_size=6)
formats = st.sampled_from([tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])


def _tar(entries: list[tuple[str, bytes, int, dict[str, str]]],
         fmt: int) -> tuple[bytes, list[int]]:
    """The archive and where each member's first header begins."""
    out = io.BytesIO()
    starts = []
    for index, (name, kind, size, records) in enumerate(entries):
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = "target/" * (index % 3) * 20
        info.mtime = 1_700_000_000
        data = bytes([65 + index]) * size
        if kind == tarfile.XGLTYPE:
            data = b"".join(record(k.encode(), v.encode()) for k, v in records.items())
        info.size = len(data)
        info.pax_headers = dict(records) if fmt == tarfile.PAX_FORMAT else {}
        try:
            header = info.tobuf(fmt, ENCODING, "surrogateescape")
        except (ValueError, UnicodeError):
            continue  # tarfile cannot write this header
        starts.append(out.tell())
        out.write(header + data + bytes(-len(data) % 512))
    out.write(bytes(1024))
    return out.getvalue(), starts



def _damaged(data: bytes, starts: list[int], draw: st.DrawFn) -> bytes:
    damaged = bytearray(data)
    at = draw(st.sampled_from(starts or [0]))
    for _ in range(draw(st.integers(1, 3))):
        pos = at + draw(st.integers(0, 1023))
        if pos < len(damaged):
            damaged[pos] = draw(st.sampled_from(DAMAGE))
    if draw(st.booleans()) and at + 512 <= len(damaged):
        block = damaged[at : at + 512]
        block[148:156] = b" " * 8
        damaged[at + 148 : at + 156] = b"%06o\0 " % sum(block)
    return bytes(damaged)


@HOSTILE
@given(members, formats, st.data())
def test_tar_reads_like_tarfile(entries: list[tuple[str, bytes, int, dict[str, str]]],
                                fmt: int, data: st.DataObject) -> None:
    archive, starts = _tar(entries, fmt)
    if data.draw(st.booleans(), label="damage headers"):
        archive = _damaged(archive, starts, data.draw)
    cut = data.draw(st.none() | st.integers(0, len(archive)), label="cut")
    archive = archive[:cut]
    piece = data.draw(st.sampled_from([bundle.gzstream.PIECE, 512, 777, 1500]), label="piece")
    with mock.patch.object(bundle.gzstream, "PIECE", piece):
        assert stream_reading(archive) == tarfile_reading(archive)


def _gzip_members(parts: list[tuple[bytes, int, int]]) -> bytes:
    out = b""
    for content, level, padding in parts:
        deflate = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        out += deflate.compress(content) + deflate.flush() + bytes(padding)
    return out


@HOSTILE
@given(st.lists(st.tuples(st.binary(max_size=3000) | st.text(max_size=3000).map(str.encode),
                          st.integers(0, 9), st.sampled_from([0, 0, 1, 700])),
                min_size=1, max_size=4),
       st.data())
def test_gzip_reads_like_gzipfile(parts: list[tuple[bytes, int, int]],
                                  data: st.DataObject) -> None:
    raw = bytearray(_gzip_members(parts))
    for _ in range(data.draw(st.integers(0, 3), label="damage")):
        at = data.draw(st.integers(2, len(raw) - 1), label="at")  # keep the gzip magic
        raw[at] ^= data.draw(st.integers(1, 255), label="xor")
    cut = data.draw(st.none() | st.integers(2, len(raw)), label="cut")
    raw = raw[:cut] + data.draw(st.sampled_from([b"", b"GARBAGE", b"\x1f"]), label="tail")
    piece = data.draw(st.sampled_from([bundle.gzstream.PIECE, 100, 1000]), label="piece")
    with mock.patch.object(bundle.gzstream, "PIECE", piece):
        ours, error = decompressed_reading(bytes(raw))
    theirs, their_error = gzip_reading(bytes(raw))
    assert error == their_error
    if error is not None and error.startswith("error: Error -3"):
        assert ours.startswith(theirs)  # zlib.error: Decompressed keeps what came before
    else:
        assert ours == theirs
