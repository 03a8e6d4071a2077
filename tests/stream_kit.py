"""Readings of raw archive bytes in one comparable form: by Python's tarfile and gzip
(the reference) and by bundle.tarstream and bundle.gzstream (the fast readers).

A tar reading lists, per member, (name, type, size, link name, sparse, content) and
ends with ("end",) or ("error", exception type, message). Content is read for regular,
non-sparse members up to CONTENT_LIMIT bytes, as the archive reader would read them;
other members are skipped by the next header read. A gzip reading is the bytes handed
out before the stream ended or failed, and the failure.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Callable

from bundle.gzstream import Decompressed
from bundle.tarstream import TarStream, _GuardedInfo

Reading = list[tuple[object, ...]]
CONTENT_LIMIT = 1 << 20


def record(keyword: bytes, value: bytes) -> bytes:
    """A pax record "<length> <keyword>=<value>\\n" with its length right."""
    body = b" " + keyword + b"=" + value + b"\n"
    length = len(body) + 1
    while len(str(length)) + len(body) != length:
        length += 1
    return str(length).encode() + body


def tarfile_reading(data: bytes) -> Reading:
    """tarfile's stream mode, with the archive reader's guard on extended headers."""
    out: Reading = []
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r|",  # noqa: SIM115
                               tarinfo=_GuardedInfo)
        while (info := archive.next()) is not None:
            member = info

            def content(member: tarfile.TarInfo = member) -> bytes:
                handle = archive.extractfile(member)
                assert handle is not None
                return handle.read()

            out.append(_entry(info.name, info.type, info.size, info.linkname,
                              info.sparse is not None, content))
        out.append(("end",))
    except Exception as exc:  # noqa: BLE001 - the reading records what was raised
        out.append(("error", type(exc).__name__, str(exc)))
    return out


def stream_reading(data: bytes, *, gzipped: bool = False) -> Reading:
    """bundle.tarstream over bundle.gzstream, without caps."""
    tar = TarStream(Decompressed(io.BytesIO(data), gzipped=gzipped, budget=1 << 60,
                                 ratio=1 << 30))
    out: Reading = []
    try:
        while (member := tar.next()) is not None:
            out.append(_entry(member.name, member.type, member.size, member.linkname,
                              member.sparse, lambda size=member.size: tar.read_data(size)))
        out.append(("end",))
    except Exception as exc:  # noqa: BLE001
        out.append(("error", type(exc).__name__, str(exc)))
    return out


def _entry(name: str, kind: bytes, size: int, linkname: str, sparse: bool,
           content: Callable[[], bytes]) -> tuple[object, ...]:
    readable = kind in tarfile.REGULAR_TYPES and not sparse and size <= CONTENT_LIMIT
    return (name, kind, size, linkname, sparse, content() if readable else None)


def gzip_reading(data: bytes) -> tuple[bytes, str | None]:
    """What GzipFile hands out, piece by piece, and how it fails."""
    pieces: list[bytes] = []
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
        try:
            while piece := handle.read1(1 << 20):
                pieces.append(piece)
        except Exception as exc:  # noqa: BLE001
            return b"".join(pieces), f"{type(exc).__name__}: {exc}"
    return b"".join(pieces), None


def decompressed_reading(data: bytes, *, budget: int = 1 << 60,
                         ratio: int = 1 << 30) -> tuple[bytes, str | None]:
    """What bundle.gzstream hands out, and how it fails."""
    source = Decompressed(io.BytesIO(data), gzipped=True, budget=budget, ratio=ratio)
    pieces: list[bytes] = []
    try:
        while piece := source.read():
            pieces.append(piece)
    except Exception as exc:  # noqa: BLE001
        return b"".join(pieces), f"{type(exc).__name__}: {exc}"
    return b"".join(pieces), None
