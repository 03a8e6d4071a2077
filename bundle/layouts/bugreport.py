"""Sections of an ``nvidia-bug-report.log`` that have a place in format v1.

``nvidia-bug-report.sh`` writes one section per file or command, each opened by a line
of 44 underscores: a copied file is headed ``*** <path>`` (then an ``*** ls:`` line),
the kernel log is headed ``dmesg:``, and the prologue carries ``uname: <uname -a>``.
Only sections whose source is the node itself are mapped: the kernel log, the kernel
command line and module list (kernel-global, so the same inside the driver container),
and the kernel identity. Files under ``/etc`` are the driver container's, not the
host's, and are not mapped.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from bundle import specs

if TYPE_CHECKING:
    from bundle.layouts.base import Maker, VirtualSource

SEPARATOR = "_" * 44
# The prologue's first words: nvidia-bug-report.sh has opened every report with them
# since its first versions ("Start of NVIDIA bug report log file.  Please include
# this file, along with a detailed description of your problem, ...").
START = "Start of NVIDIA bug report log file"
# The node files a report provides (see :func:`sections`).
NODE_FILES = (specs.DMESG, specs.CMDLINE, specs.MODULES, specs.UNAME)
_MODULES = ("nvidia", "nouveau")


def sections(text: str) -> dict[str, str]:
    """Node-relative v1 path → content, for the sections this report holds."""
    found: dict[str, str] = {}
    for chunk in text.split("\n" + SEPARATOR + "\n"):
        lines = _trimmed(chunk.split("\n"))
        if not lines:
            continue
        header = lines[0].rstrip()
        if "Start of NVIDIA bug report log file" in chunk:
            for line in lines:
                if line.startswith("uname: ") and line[7:].strip():
                    found.setdefault(specs.UNAME, line[7:].strip() + "\n")
        elif header == "dmesg:":
            body = _body(lines[1:])
            if body.strip():
                found.setdefault(specs.DMESG, body)
        elif header.startswith("*** ") and not header.startswith("*** ls:"):
            name = header[4:].strip()
            body_lines = lines[1:]
            if body_lines and body_lines[0].startswith("*** ls:"):
                body_lines = body_lines[1:]
            body = _body(body_lines)
            if name == "/proc/cmdline" and body.strip():
                found.setdefault(specs.CMDLINE, body)
            elif name == "/proc/modules":
                kept = [line for line in body.splitlines() if line.startswith(_MODULES)]
                found.setdefault(specs.MODULES, "".join(f"{line}\n" for line in kept))
    return found


def _trimmed(lines: list[str], *, tail: bool = False) -> list[str]:
    """``lines`` without its leading blank lines (and trailing ones with ``tail``), cut
    once: dropping them one by one would copy the list once per blank line."""
    start = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    end = len(lines)
    if tail:
        while end > start and not lines[end - 1].strip():
            end -= 1
    return lines[start:end]


def _body(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in _trimmed(lines, tail=True))


def hostname(sections_found: dict[str, str]) -> str | None:
    """The host name ``uname -a`` printed in the prologue (its second word)."""
    words = sections_found.get(specs.UNAME, "").split()
    return words[1] if len(words) > 1 else None


class BugReport:
    """One ``nvidia-bug-report.log.gz`` (or plain ``.log``) of a layout, decompressed and
    split once, presented as a node's files."""

    def __init__(self, source: VirtualSource, name: str) -> None:
        self._source = source
        self._name = name

    @cached_property
    def sections(self) -> dict[str, str]:
        if self._name.endswith(".gz"):
            data = self._source.gunzip(self._name)
        else:
            data = self._source.original(self._name)
        return sections(data.decode("utf-8", "replace")) if data is not None else {}

    def present(self, node: str) -> None:
        """Present the report's sections as ``nodes/<node>/...``."""
        for relative in NODE_FILES:
            self._source.derived(specs.node_file(node, relative), [self._name],
                                 self._maker(relative))

    def _maker(self, relative: str) -> Maker:
        def make() -> bytes | None:
            text = self.sections.get(relative)
            return None if text is None else text.encode()
        return make
