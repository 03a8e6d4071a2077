"""bundle.tarstream and bundle.tarheaders read every header as tarfile's stream mode does.

Each case is a tar built here, often with a hand-made header, and read twice: by
tarfile (with the archive reader's guard on extended headers) and by TarStream. The
readings must be equal member for member: name, type, size, link name, sparse flag,
content, and how the archive ends or fails. Cases cover the forms the fast path
reads (ustar, GNU long names, pax records) and the ones it leaves to tarfile (base-256
numbers, signed checksums, links, sparse files, global pax headers, hdrcharset).
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable

import pytest
from stream_kit import record, stream_reading, tarfile_reading

import bundle.gzstream
from bundle import tarstream
from bundle.gzstream import Decompressed
from bundle.tarheaders import ENCODING, Header, plain_header
from bundle.tarstream import NO_MARKER, UNREADABLE, TarStream

END = bytes(1024)
HELLO = b"hello"


def member(name: str | bytes, data: bytes = b"", *, kind: bytes = tarfile.REGTYPE,
           fmt: int = tarfile.GNU_FORMAT, size: int | None = None, linkname: str = "",
           pax: dict[str, str] | None = None, mtime: int = 1_700_000_000) -> bytes:
    """One member, header and data, written by tarfile (any name, type and size)."""
    info = tarfile.TarInfo(name if isinstance(name, str)
                           else name.decode(ENCODING, "surrogateescape"))
    info.type = kind
    info.size = len(data) if size is None else size
    info.linkname = linkname
    info.mtime = mtime
    info.mode = 0o644
    info.pax_headers = dict(pax or {})
    return info.tobuf(fmt, ENCODING, "surrogateescape") + _padded(data)


def pax_member(records: list[bytes], data: bytes, *, kind: bytes = tarfile.XHDTYPE,
               size: int | None = None, name: str = "b/x.log") -> bytes:
    """A pax header made of raw ``records``, then a ustar member."""
    body = b"".join(records)
    extended = member("PaxHeaders/x", body, kind=kind, fmt=tarfile.USTAR_FORMAT)
    return extended + member(name, data, size=size, fmt=tarfile.USTAR_FORMAT)


def patched(data: bytes, at: int, field: int, value: bytes, *, signed: bool = False) -> bytes:
    """``data`` with the header at ``at`` given ``value`` at ``field`` offset and its
    checksum recomputed (the unsigned sum, or the signed one some old tars wrote)."""
    block = bytearray(data[at : at + 512])
    block[field : field + len(value)] = value
    block[148:156] = b" " * 8
    total = sum(b - 256 if signed and b > 127 else b for b in block)
    block[148:156] = b"%06o\0 " % total
    return data[:at] + bytes(block) + data[at + 512 :]


def _padded(data: bytes) -> bytes:
    return data + bytes(-len(data) % 512)


LONG = "b/" + "directory-" * 15 + "/file.log"
FIRST = member("b/manifest.json", b"{}")

CASES: dict[str, Callable[[], bytes]] = {
    "ustar name with a prefix": lambda: member(LONG, HELLO, fmt=tarfile.USTAR_FORMAT) + END,
    "directories, also old V7 ones": lambda: (
        member("b/d/", kind=tarfile.DIRTYPE) + member("b/v7//", kind=tarfile.AREGTYPE)
        + member("b/f", HELLO, kind=tarfile.AREGTYPE) + END),
    "GNU long names": lambda: (
        member(LONG, HELLO) + member(LONG.replace("file.log", "dir/"), kind=tarfile.DIRTYPE)
        + END),
    "GNU long link": lambda: member("b/l", kind=tarfile.SYMTYPE, linkname="t" * 200) + END,
    "pax path and unknown records": lambda: (
        member(LONG, HELLO, fmt=tarfile.PAX_FORMAT,
               pax={"comment": "x", "SCHILY.xattr.user.a": "b"}) + END),
    "pax size overrides the header": lambda: pax_member([record(b"size", b"5")], HELLO,
                                                        size=0) + END,
    "pax size that is not a number": lambda: pax_member([record(b"size", b"abc")], HELLO)
    + END,
    "pax path with slashes, not UTF-8": lambda: pax_member(
        [record(b"path", b"b/\xff\xfe.log//"), record(b"linkpath", b"\xff")], HELLO) + END,
    "pax hdrcharset": lambda: pax_member(
        [record(b"hdrcharset", b"BINARY"), record(b"path", b"b/\xff.log")], HELLO) + END,
    "global pax header": lambda: (
        member("g", record(b"comment", b"all"), kind=tarfile.XGLTYPE, fmt=tarfile.USTAR_FORMAT)
        + member("b/a", HELLO) + member(LONG, HELLO, fmt=tarfile.PAX_FORMAT) + END),
    "pax record of length zero": lambda: FIRST + pax_member([b"0 path=x\n"], HELLO) + END,
    "pax record that runs past its header": lambda: pax_member(
        [b"90 path=b/short\n"], HELLO) + END,
    "pax GNU sparse 0.1": lambda: pax_member(
        [record(b"GNU.sparse.map", b"0,5"), record(b"GNU.sparse.size", b"5")], HELLO) + END,
    "pax header at the end": lambda: FIRST + member("p", record(b"path", b"x"),
                                                    kind=tarfile.XHDTYPE) + END,
    "GNU long name at the end": lambda: FIRST + member("././@LongLink", b"x" * 200 + b"\0",
                                                       kind=tarfile.GNUTYPE_LONGNAME),
    "GNU sparse member": lambda: FIRST + member("b/s", b"x" * 512,
                                                kind=tarfile.GNUTYPE_SPARSE) + END,
    "base-256 size past the end": lambda: FIRST + member("b/big", size=1 << 33) + END,
    "largest octal size": lambda: FIRST + member("b/big", size=0o77777777777,
                                                 fmt=tarfile.USTAR_FORMAT) + END,
    "base-256 modification time": lambda: member("b/t", HELLO, mtime=1 << 40) + END,
    "size written with spaces and NULs": lambda: patched(member("b/a", HELLO) + END, 0,
                                                          124, b"  5 \0junk\0 "),
    "size without a terminator": lambda: patched(member("b/a", HELLO) + END, 0, 124,
                                                  b"00000000005"),
    "size with a sign": lambda: patched(FIRST + member("b/a", HELLO) + END, 512 + 512, 124,
                                         b"+5\0"),
    "size with an underscore": lambda: patched(FIRST + member("b/a", HELLO) + END, 1024,
                                               124, b"0_5\0"),
    "size with a space inside": lambda: patched(FIRST + member("b/a", HELLO) + END, 1024,
                                                124, b"1 2\0"),
    "negative size": lambda: patched(FIRST + member("b/a", HELLO) + END, 1024, 124, b"-5\0"),
    "negative size back to the start": lambda: patched(
        FIRST + member("b/a", HELLO) + END, 1024, 124, b"-2000\0"),
    "mode that is not a number": lambda: patched(FIRST + member("b/a", HELLO) + END, 1024,
                                                 100, b"rw-r--r\0"),
    "signed checksum": lambda: patched(member("b/ü", HELLO) + END, 0, 0, "b/ü".encode(),
                                       signed=True),
    "bad checksum": lambda: FIRST + patched(member("b/a", HELLO), 0, 0, b"b/a")[:148]
    + b"0000001\0" + member("b/a", HELLO)[156:] + END,
    "bad checksum first": lambda: member("b/a", HELLO)[:148] + b"0000001\0"
    + member("b/a", HELLO)[156:] + END,
    "truncated header": lambda: FIRST + member("b/a", HELLO)[:300],
    "no end-of-archive marker": lambda: FIRST + member("b/a", HELLO),
    "cut inside the data": lambda: FIRST + member("b/a", b"x" * 2000)[:1200],
    "cut inside the padding": lambda: FIRST + member("b/a", HELLO)[:700],
    "garbage after the end": lambda: FIRST + END + b"garbage",
    "empty": lambda: b"",
    "only zero blocks": lambda: END,
    "unknown type with data": lambda: FIRST + member("b/z", b"z" * 700, kind=b"Z")
    + member("b/a", HELLO) + END,
    "contiguous file": lambda: member("b/c", HELLO, kind=tarfile.CONTTYPE) + END,
    "links and devices": lambda: (
        FIRST + member("b/h", kind=tarfile.LNKTYPE, linkname="b/manifest.json")
        + member("b/s", kind=tarfile.SYMTYPE, linkname="/etc/passwd")
        + member("b/f", kind=tarfile.FIFOTYPE) + member("b/c", kind=tarfile.CHRTYPE)
        + member("b/d", size=700, kind=tarfile.DIRTYPE) + member("b/a", HELLO) + END),
    "name that is not UTF-8": lambda: member(b"b/\xff\xfe.log", HELLO) + END,
}


@pytest.mark.parametrize("piece", [None, 700])
@pytest.mark.parametrize("name", sorted(CASES))
def test_reads_like_tarfile(name: str, piece: int | None,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Also with pieces of 700 bytes, so that headers and data straddle pieces."""
    if piece is not None:
        monkeypatch.setattr(bundle.gzstream, "PIECE", piece)
    data = CASES[name]()
    assert stream_reading(data) == tarfile_reading(data)


def test_fast_path_readings() -> None:
    """What the common forms read as (the fast path's own results, in exact values)."""
    assert stream_reading(CASES["ustar name with a prefix"]()) == [
        (LONG, tarfile.REGTYPE, 5, "", False, HELLO), ("end",)]
    assert stream_reading(CASES["directories, also old V7 ones"]()) == [
        ("b/d", tarfile.DIRTYPE, 0, "", False, None),
        ("b/v7", tarfile.DIRTYPE, 0, "", False, None),
        ("b/f", tarfile.AREGTYPE, 5, "", False, HELLO), ("end",)]
    assert stream_reading(CASES["GNU long names"]()) == [
        (LONG, tarfile.REGTYPE, 5, "", False, HELLO),
        (LONG.replace("file.log", "dir"), tarfile.DIRTYPE, 0, "", False, None), ("end",)]
    assert stream_reading(CASES["pax size overrides the header"]()) == [
        ("b/x.log", tarfile.REGTYPE, 5, "", False, HELLO), ("end",)]
    assert stream_reading(CASES["pax path with slashes, not UTF-8"]()) == [
        ("b/\udcff\udcfe.log", tarfile.REGTYPE, 5, "\udcff", False, HELLO), ("end",)]
    assert stream_reading(CASES["size written with spaces and NULs"]()) == [
        ("b/a", tarfile.REGTYPE, 5, "", False, HELLO), ("end",)]


@pytest.mark.parametrize("name", ["ustar name with a prefix", "directories, also old V7 ones",
                                  "GNU long names", "pax path and unknown records",
                                  "pax size overrides the header",
                                  "pax path with slashes, not UTF-8",
                                  "size written with spaces and NULs"])
def test_common_forms_take_the_fast_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_archive: object) -> None:
        raise AssertionError("tarfile was asked to read a header")

    monkeypatch.setattr(tarstream._GuardedInfo, "fromtarfile", refuse)
    assert stream_reading(CASES[name]())[-1] == ("end",)


@pytest.mark.parametrize("name", ["GNU long link", "base-256 size past the end",
                                  "base-256 modification time", "signed checksum",
                                  "size with a sign", "size with an underscore",
                                  "negative size", "bad checksum first"])
def test_other_forms_are_left_to_tarfile(name: str) -> None:
    data = CASES[name]()
    at = 512 if name in ("GNU long link", "base-256 size past the end") else 0
    at += 512 if data[:512] == FIRST[:512] else 0
    assert plain_header(data[at : at + 512]) is None


def test_plain_header_reads_an_ordinary_header() -> None:
    block = member("b/nodes/n/journal/kubelet.jsonl", b"x" * 70_000)[:512]
    assert plain_header(block) == Header("b/nodes/n/journal/kubelet.jsonl", tarfile.REGTYPE,
                                         70_000)


def _stream(data: bytes) -> TarStream:
    return TarStream(Decompressed(io.BytesIO(data), gzipped=False, budget=1 << 40, ratio=1))


@pytest.mark.parametrize(("data", "end", "offset"), [
    (FIRST + END + b"\0" * 100, None, 1024),
    (FIRST, NO_MARKER, 1024),
    (FIRST + b"\x07" * 512, UNREADABLE, 1024),
    (FIRST + b"\x07" * 100, UNREADABLE, 1024),
])
def test_why_the_archive_ended(data: bytes, end: str | None, offset: int) -> None:
    tar = _stream(data)
    first = tar.next()
    assert first is not None and first.name == "b/manifest.json"
    assert tar.next() is None
    assert (tar.end, tar.offset) == (end, offset)


def test_data_goes_to_the_sink_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle.gzstream, "PIECE", 1000)
    payload = bytes(range(256)) * 20
    tar = _stream(member("b/a", payload) + END + b"tail")
    first = tar.next()
    assert first is not None and first.size == 5120
    pieces: list[bytes] = []
    tar.copy_data(first.size, lambda view: pieces.append(bytes(view)))
    assert b"".join(pieces) == payload
    assert [len(p) for p in pieces] == [488, 1000, 1000, 1000, 1000, 632]
    assert tar.next() is None and tar.end is None
    assert tar.rest(2000) == (END + b"tail", None)


def test_data_cut_short_raises_where_tarfile_does() -> None:
    tar = _stream(member("b/a", b"x" * 2000)[:1000])
    first = tar.next()
    assert first is not None
    with pytest.raises(tarfile.ReadError, match="unexpected end of data"):
        tar.read_data(first.size)
