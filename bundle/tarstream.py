"""Tar members read in one pass from a decompressed stream, as tarfile's stream mode
reads them, without its copies.

``tarfile.open(mode="r|")`` moves every byte through two Python buffers and parses each
header in Python. :class:`TarStream` keeps the decompressed pieces as they come, hands
member data out as slices of them (to memory) or as memoryviews (to the spool file),
parses the common headers with :mod:`bundle.tarheaders`, and lets tarfile's own
``TarInfo.fromtarfile`` read every other header from the same stream. Where the
stream ends, breaks or turns corrupt, it raises what ``TarFile.next`` and
``TarFile.extractfile`` raise there, or returns None with :attr:`TarStream.end`
saying why, so the archive reader records every problem as before.
"""

from __future__ import annotations

import tarfile
import zlib
from collections.abc import Callable
from typing import NamedTuple, NoReturn, cast

from bundle.gzstream import Decompressed, Overrun
from bundle.tarheaders import (
    BLOCK,
    ENCODING,
    PLAIN_TYPES,
    Header,
    apply_pax,
    block_size,
    is_regular,
    long_name,
    pax_records,
    plain_header,
)

HEADER_CAP = 1 << 20  # pax / GNU long-name headers are read whole by tarfile
_FAST_EXTENDED = 64 << 10  # larger extended headers are left to tarfile
_ZEROS = bytes(BLOCK)
_SOURCE_ERRORS = (OSError, EOFError, zlib.error, Overrun)
UNREADABLE = "an unreadable member header"
NO_MARKER = "no end-of-archive marker"

Sink = Callable[[memoryview], object]


class Member(NamedTuple):
    """A member header as the reader needs it."""

    name: str
    type: bytes
    size: int
    linkname: str = ""
    sparse: bool = False
    refusal: str = ""  # why a member that is a regular file is not read (a zip's)


class TarStream:
    """The members of the tar archive in ``source``, read once, front to back."""

    def __init__(self, source: Decompressed) -> None:
        self._source = source
        self._buf = b""  # the current piece; bytes before _pos are used
        self._pos = 0
        self._start = 0  # stream offset of _buf[0]
        self._error: BaseException | None = None  # the source's; raised where it matters
        self._ended = False
        self._next = 0  # offset of the next header (TarFile.offset)
        self.offset = 0  # where the header that next() read last begins
        self.end: str | None = None  # why next() found no member; None: the end marker
        self._view = _TarFileView(self)

    def tell(self) -> int:
        return self._start + self._pos

    # -- members ---------------------------------------------------------------------

    def next(self) -> Member | None:
        """The next member (``TarFile.next``): skips the data of the previous one if
        it was not read, then reads a header. None at the end of the archive, with
        :attr:`end` saying why; at the first header, a header tarfile cannot read
        raises ``ReadError``, as ``tarfile.open`` does."""
        if self._next != self.tell():
            if self._next == 0:  # tarfile ends here (a negative size pointed back)
                self.offset, self.end = 0, UNREADABLE
                return None
            self._skip_to(self._next)
        self.offset = self.tell()
        whole = self._fill(BLOCK)
        if whole and self._buf.startswith(_ZEROS, self._pos):
            self.end = None
            return None
        try:
            member = self._fast_member() if whole else None
            return member if member is not None else self._tarfile_member()
        except zlib.error as exc:
            raise tarfile.ReadError(f"zlib error: {exc}") from None
        except tarfile.HeaderError as exc:
            if isinstance(exc, _SUBSEQUENT):
                raise tarfile.ReadError(str(exc)) from None
            empty = isinstance(exc, _EMPTY)
            if self.offset == 0:
                raise tarfile.ReadError("empty file" if empty else str(exc)) from None
            self.end = NO_MARKER if empty else UNREADABLE
            return None

    def _fast_member(self) -> Member | None:
        """The member at a whole header block, when :mod:`bundle.tarheaders` reads it."""
        if self._view.pax_headers:  # global pax headers: tarfile applies them
            return None
        pos = self._pos
        header = plain_header(self._buf[pos : pos + BLOCK])
        if header is None:
            return None
        if header.type in PLAIN_TYPES:
            self._pos = pos + BLOCK
            return self._member(header, "")
        return self._extended(header)

    def _extended(self, extension: Header) -> Member | None:
        """A pax ``x`` or GNU ``L`` header and the plain header it extends."""
        span = block_size(extension.size)
        if extension.size > _FAST_EXTENDED or not self._fill(2 * BLOCK + span):
            return None
        pos = self._pos
        data = self._buf[pos + BLOCK : pos + BLOCK + span]
        header = plain_header(self._buf[pos + BLOCK + span : pos + 2 * BLOCK + span])
        if header is None or header.type not in PLAIN_TYPES:
            return None
        linkname = ""
        if extension.type == tarfile.XHDTYPE:
            records = pax_records(data)
            if records is None:
                return None
            header, linkname = apply_pax(header, records)
            if header.size < 0:
                return None
        else:
            name = long_name(data)
            header = header._replace(
                name=name.removesuffix("/") if header.type == tarfile.DIRTYPE else name)
        self._pos = pos + 2 * BLOCK + span
        return self._member(header, linkname)

    def _member(self, header: Header, linkname: str) -> Member:
        data = self.tell()
        self._next = data + (block_size(header.size) if is_regular(header.type) else 0)
        return Member(header.name, header.type, header.size, linkname)

    def _tarfile_member(self) -> Member:
        info = _GuardedInfo.fromtarfile(cast(tarfile.TarFile, self._view))
        self._next = self._view.offset
        return Member(info.name, info.type, info.size, info.linkname, info.sparse is not None)

    # -- data --------------------------------------------------------------------------

    def read_data(self, size: int) -> bytes:
        """The next ``size`` bytes: the current member's data."""
        if size <= 0:
            return b""
        end = self._pos + size
        if end <= len(self._buf):
            data = self._buf[self._pos : end]
            self._pos = end
            return data
        pieces: list[memoryview] = []
        self._exactly(size, pieces.append)
        return b"".join(pieces)

    def copy_data(self, size: int, sink: Sink) -> None:
        """Hand the next ``size`` bytes to ``sink``, piece by piece, without copying."""
        self._exactly(size, sink)

    def read(self, size: int) -> bytes:
        """Up to ``size`` bytes, fewer only at the end (tarfile's ``_Stream.read``)."""
        pieces: list[memoryview] = []
        if self._move(size, pieces.append) < size and self._error is not None:
            raise self._error
        return b"".join(pieces)

    def rest(self, limit: int) -> tuple[bytes, BaseException | None]:
        """Up to ``limit`` bytes from here on, and the error that cut them short."""
        pieces: list[memoryview] = []
        short = self._move(limit, pieces.append) < limit
        return b"".join(pieces), self._error if short else None

    def _skip_to(self, offset: int) -> None:
        here = self.tell()
        if offset < here:
            raise tarfile.StreamError("seeking backwards is not allowed")
        self._exactly(offset - here, None)

    def _exactly(self, size: int, sink: Sink | None) -> None:
        if self._move(size, sink) < size:
            self._fail()

    def _fail(self) -> NoReturn:
        if self._error is not None:
            raise self._error
        raise tarfile.ReadError("unexpected end of data")

    # -- the buffer ------------------------------------------------------------------

    def _move(self, size: int, sink: Sink | None) -> int:
        """Move ``size`` bytes on, handing each piece to ``sink``; returns how many
        bytes there were."""
        left = size
        while left > 0:
            available = len(self._buf) - self._pos
            if available <= 0:
                piece = self._piece()
                if not piece:
                    break
                self._start += len(self._buf)
                self._buf, self._pos = piece, 0
                continue
            take = min(available, left)
            if sink is not None:
                sink(memoryview(self._buf)[self._pos : self._pos + take])
            self._pos += take
            left -= take
        return size - left

    def _fill(self, size: int) -> bool:
        """Have ``size`` bytes in one piece from here (headers only: this copies)."""
        while len(self._buf) - self._pos < size:
            piece = self._piece()
            if not piece:
                return False
            self._start += self._pos
            self._buf, self._pos = self._buf[self._pos :] + piece, 0
        return True

    def _piece(self) -> bytes:
        """The source's next piece; b"" at its end or once it failed (the failure is
        raised by whichever read needs the bytes that are missing)."""
        if self._error is not None or self._ended:
            return b""
        try:
            piece = self._source.read()
        except _SOURCE_ERRORS as exc:
            self._error = exc
            return b""
        self._ended = not piece
        return piece


class _TarFileView:
    """What ``TarInfo.fromtarfile`` uses of a TarFile: the stream, how names are
    decoded, the global pax headers, and the offset of the next header it sets."""

    def __init__(self, stream: TarStream) -> None:
        self.fileobj = stream
        self.encoding = ENCODING
        self.errors = "surrogateescape"
        self.pax_headers: dict[str, str] = {}
        self.offset = 0


class _GuardedInfo(tarfile.TarInfo):
    """Refuses headers that tarfile would otherwise read whole into memory.

    tarfile reads a pax or GNU long-name header in one piece, whatever size it
    declares, and follows a GNU sparse map for as long as it goes on.
    """

    def _proc_member(self, archive: tarfile.TarFile) -> tarfile.TarInfo | None:
        if self.type in _EXTENDED and self.size > HEADER_CAP:
            raise tarfile.ReadError(
                f"an extended header of {self.size} bytes (more than {HEADER_CAP})")
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise tarfile.ReadError("a GNU sparse member, which bundles never hold")
        process: Callable[[tarfile.TarFile], tarfile.TarInfo | None]
        process = super()._proc_member  # type: ignore[misc]
        return process(archive)

    def _proc_gnusparse_10(self, _next: tarfile.TarInfo, _pax: dict[str, str],
                           _archive: tarfile.TarFile) -> None:
        raise tarfile.ReadError("a pax sparse member, which bundles never hold")


def _header_error(name: str) -> type[tarfile.HeaderError]:
    """One of tarfile's header errors, which its type stubs do not declare."""
    error: type[tarfile.HeaderError] = getattr(tarfile, name)
    return error


_EXTENDED = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE,
             tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)
_EMPTY = _header_error("EmptyHeaderError")
_SUBSEQUENT = _header_error("SubsequentHeaderError")
