"""A standalone ``nvidia-bug-report.log.gz`` (or ``.log``) opened as a bundle of one file.

NVIDIA's ``nvidia-bug-report.sh`` writes one gzip member per section, so the file is a
gzip stream that holds no tar archive; a support desk also gets the uncompressed
``.log``. :func:`bug_report_name` recognises either by its prologue, not by its name, and
:class:`SingleFileSource` presents it under a name :mod:`bundle.layouts.nodefiles` maps
to a node's files. The file is read whole once, under the member cap; its expansion is
bounded when the layout decompresses it (:meth:`bundle.layouts.base.VirtualSource.gunzip`).
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

from bundle.container import Limits
from bundle.layouts.bugreport import START
from bundle.problems import BundleError

_HEAD = 64 << 10
_PROLOGUE = 4096  # the prologue is the report's first few hundred bytes
_OWN_NAME = re.compile(r"^nvidia-bug-report(_[a-z0-9][a-z0-9.-]{0,251})?\.log(\.gz)?$")


def bug_report_name(path: Path, head: bytes) -> str | None:
    """The name to present ``path`` under when it is an NVIDIA bug report (``head``: its
    first bytes), else None: its own name when that is a report's name of the right
    kind (``nvidia-bug-report_<node>.log.gz`` names the node), else the default one."""
    gzipped = head[:2] == b"\x1f\x8b"
    if gzipped:
        try:
            text = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head[:_HEAD], _PROLOGUE)
        except zlib.error:
            return None
    else:
        text = head[:_PROLOGUE]
    if START.encode() not in text:
        return None
    suffix = ".log.gz" if gzipped else ".log"
    own = path.name
    return own if _OWN_NAME.match(own) and own.endswith(suffix) else f"nvidia-bug-report{suffix}"


class SingleFileSource:
    """One file as a Source with one path."""

    def __init__(self, path: Path, name: str, limits: Limits) -> None:
        self.display = str(path)
        self._name = name
        try:
            with path.open("rb") as handle:
                data = handle.read(limits.max_member_bytes + 1)
        except OSError as exc:
            raise BundleError(self.display, f"cannot open: {exc.strerror}") from None
        if len(data) > limits.max_member_bytes:
            raise BundleError(self.display, f"a bug report larger than the "
                              f"{limits.max_member_bytes} byte member cap; not read")
        self._data: bytes | None = data

    def paths(self) -> list[str]:
        return [self._name]

    def size(self, path: str) -> int | None:
        return len(self._data) if path == self._name and self._data is not None else None

    def read(self, path: str) -> bytes | None:
        return self._data if path == self._name else None

    def close(self) -> None:
        self._data = None


def head_of(path: Path) -> bytes:
    """The first bytes of ``path`` (empty when it cannot be read: the archive reader
    then says why)."""
    try:
        with path.open("rb") as handle:
            return handle.read(_HEAD)
    except OSError:
        return b""
