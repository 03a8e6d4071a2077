"""The common tar headers, parsed exactly as :mod:`tarfile` parses them, only faster.

Opening a large bundle parses 60,000 headers or more, one per member plus one per pax
or GNU long-name header, and ``tarfile.TarInfo.frombuf`` costs about 14 µs each. The
functions here read the headers that bundle writers produce: ustar and GNU headers of
regular files and directories whose numbers are plain octal, pax ``x`` headers with
ordinary records, and GNU ``L`` long names. For anything else (links, devices, sparse
files, base-256 numbers, global pax headers, ``hdrcharset``, a signed checksum, a
malformed record) they return None, and the caller lets tarfile read the header, so
that every accepted, refused or corrupt header is still read exactly as tarfile reads
it. ``tests/test_tarstream.py`` checks them against tarfile on generated, mutated and
hostile headers.
"""

from __future__ import annotations

import re
import struct
import tarfile
from typing import NamedTuple

BLOCK = 512
ENCODING = tarfile.ENCODING  # what tarfile decodes names with; errors="surrogateescape"
PLAIN_TYPES = (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE)
# name, mode, uid, gid, size, mtime, chksum, type, linkname, magic, version, uname, gname,
# devmajor, devminor, prefix
_FIELDS = struct.Struct("100s8s8s8s12s12s8sc100s6s2s32s32s8s8s155s")
_OCTAL = re.compile(rb" *([0-7]*) *(?:\0.*)?", re.DOTALL)
_PAX_RECORD = re.compile(rb"(\d+) ([^=]+)=")  # tarfile's own record pattern
_MAX_DIGITS = 18  # longer record lengths go to tarfile, which may refuse them
_NUMBERS: dict[bytes, int] = {}  # number fields repeat (mode, owner, mtime): parse once
_NUMBERS_CAP = 4096


class Header(NamedTuple):
    """What the reader needs of a member header."""

    name: str
    type: bytes
    size: int


def block_size(size: int) -> int:
    """The bytes ``size`` bytes of member data occupy: whole 512-byte blocks."""
    return -(-size // BLOCK) * BLOCK


def is_regular(kind: bytes) -> bool:
    return kind in tarfile.REGULAR_TYPES


def plain_header(block: bytes) -> Header | None:
    """The header in ``block`` (512 bytes) when tarfile would read it plainly, else None.

    Plainly means: a regular file, a directory, a pax ``x`` header or a GNU ``L``
    header, every number field plain octal (what ``tarfile.nti`` reads with ``int(s, 8)``
    and no sign), and the checksum the unsigned sum that tar writers store. The name is
    built as ``TarInfo.frombuf`` and ``_proc_builtin`` build it."""
    (name, mode, uid, gid, size, mtime, chksum, kind, _link, _magic, _version, _uname,
     _gname, devmajor, devminor, prefix) = _FIELDS.unpack_from(block)
    if kind not in PLAIN_TYPES and kind not in (tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME):
        return None
    checksum = _number(chksum)
    if checksum is None or checksum != 256 + sum(block) - sum(chksum):
        return None
    length = _number(size)
    if (length is None or _number(mode) is None or _number(uid) is None
            or _number(gid) is None or _number(mtime) is None or _number(devmajor) is None
            or _number(devminor) is None):
        return None  # tarfile refuses the header, or reads a base-256 or signed number
    text = _text(name)
    if kind == tarfile.AREGTYPE and text.endswith("/"):
        kind = tarfile.DIRTYPE  # old V7 tar: a directory is a file whose name ends in "/"
    if kind == tarfile.DIRTYPE:
        text = text.rstrip("/")
    if prefix[0] and kind != tarfile.GNUTYPE_LONGNAME:
        text = _text(prefix) + "/" + text  # the ustar prefix
        if kind == tarfile.DIRTYPE:
            text = text.rstrip("/")
    return Header(text, kind, length)


def pax_records(data: bytes) -> dict[str, str] | None:
    """The records of a pax ``x`` header (its data blocks, padding included), decoded as
    ``TarInfo._proc_pax`` decodes them; None when tarfile must read them itself: a
    ``hdrcharset`` (it changes decoding), GNU sparse records, or a record it refuses."""
    if b"hdrcharset" in data:
        return None
    records: dict[str, str] = {}
    pos = 0
    while (match := _PAX_RECORD.match(data, pos)) is not None:
        digits = match[1]
        length = int(digits) if len(digits) <= _MAX_DIGITS else 0
        if length == 0:
            return None
        keyword = _pax_text(match[2], "utf-8")
        if keyword.startswith("GNU.sparse."):
            return None
        value = data[match.end(2) + 1 : match.start(1) + length - 1]
        records[keyword] = _pax_text(value, ENCODING if keyword in tarfile.PAX_NAME_FIELDS
                                     else "utf-8")
        pos += length
    return records


def apply_pax(header: Header, records: dict[str, str]) -> tuple[Header, str]:
    """The member ``header`` describes once pax ``records`` patch it, and its link name,
    as ``TarInfo._apply_pax_info`` patches them (a size that is not a number is 0)."""
    name, size, linkname = header.name, header.size, ""
    for keyword, value in records.items():
        if keyword == "path":
            name = value.rstrip("/")
        elif keyword == "linkpath":
            linkname = value
        elif keyword == "size":
            try:
                size = int(value)
            except ValueError:
                size = 0
    return Header(name, header.type, size), linkname


def long_name(data: bytes) -> str:
    """The name a GNU ``L`` header's data blocks carry."""
    return _text(data)


def _number(field: bytes) -> int | None:
    value = _NUMBERS.get(field)
    if value is None:
        match = _OCTAL.fullmatch(field)
        if match is None:
            return None
        value = int(match[1] or b"0", 8)
        if len(_NUMBERS) < _NUMBERS_CAP:
            _NUMBERS[field] = value
    return value


def _text(field: bytes) -> str:
    end = field.find(b"\0")
    return (field if end < 0 else field[:end]).decode(ENCODING, "surrogateescape")


def _pax_text(raw: bytes, fallback: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode(fallback, "surrogateescape")
