"""Deterministic, streaming bundle writer.

The manifest is the tar's first member and lists every file's size, so members are
first streamed into one anonymous spool file (never held in memory together), then the
manifest and the spooled members are written into the ``.tgz`` in collection order.
Tar headers carry a fixed mtime, owner 0/0 and mode 0644; the gzip header carries no
name and mtime 0. Same content, same bytes.
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from samples.synth.plan import digest, iso, plus


@dataclass(frozen=True, slots=True)
class Member:
    path: str
    offset: int
    size: int


class Spool:
    """Collects a bundle's files and its manifest items, one file at a time."""

    def __init__(self, head: dict[str, Any], created: dt.datetime,
                 directory: str | None = None) -> None:
        self.head = head
        self.items: list[dict[str, Any]] = []
        self.members: list[Member] = []
        self._file: IO[bytes] = tempfile.TemporaryFile(  # noqa: SIM115
            prefix="synth-", dir=directory)
        self._clock = plus(created, 1)

    def _duration(self, path: str, node: str | None) -> int:
        spread = digest("duration", path)[0]
        return 120 + spread if node is None and path.startswith("cluster/") else 15 + spread % 60

    def _record(self, path: str, command: list[str], node: str | None, exit_code: int,
                size: int, error: str | None) -> None:
        duration = self._duration(path, node)
        self.items.append({
            "path": path, "command": command, "node": node, "exit_code": exit_code,
            "started_at": iso(self._clock), "duration_ms": duration, "bytes": size,
            "truncated": False, "error": error,
        })
        self._clock = plus(self._clock, (duration + 5) / 1000)

    def add(self, path: str, data: str | bytes, command: list[str],
            node: str | None = None) -> None:
        self.add_chunks(path, (data,), command, node)

    def add_chunks(self, path: str, chunks: Iterable[str | bytes], command: list[str],
                   node: str | None = None) -> None:
        offset = self._file.tell()
        for chunk in chunks:
            self._file.write(chunk.encode() if isinstance(chunk, str) else chunk)
        size = self._file.tell() - offset
        self.members.append(Member(path, offset, size))
        self._record(path, command, node, 0, size, None)

    def fail(self, path: str, command: list[str], error: str, *, exit_code: int = 1,
             node: str | None = None) -> None:
        """A step that produced no file; the manifest keeps the reason."""
        self._record(path, command, node, exit_code, 0, error)

    def manifest(self) -> bytes:
        """Header fields indented, then one item per line (as the samples are)."""
        head = json.dumps(self.head, indent=2, ensure_ascii=False)
        items = ",\n".join("    " + json.dumps(i, ensure_ascii=False) for i in self.items)
        return (head[:-2] + ',\n  "items": [\n' + items + "\n  ]\n}\n").encode()

    def write_tgz(self, out: Path, top: str, mtime: int, level: int) -> int:
        """Write ``<top>/manifest.json`` and every member; returns the archive size."""
        manifest = self.manifest()
        partial = out.with_name(out.name + ".partial")
        with partial.open("wb") as raw, \
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=level,
                              mtime=0) as packed, \
                tarfile.open(fileobj=packed, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            tar.addfile(_info(f"{top}/manifest.json", len(manifest), mtime),
                        io.BytesIO(manifest))
            for member in self.members:
                self._file.seek(member.offset)
                tar.addfile(_info(f"{top}/{member.path}", member.size, mtime), self._file)
        partial.replace(out)
        return out.stat().st_size

    def close(self) -> None:
        self._file.close()


def _info(name: str, size: int, mtime: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = mtime
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info
