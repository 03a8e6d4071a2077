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

SEPARATOR = "_" * 44
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
                    found.setdefault("host/uname.txt", line[7:].strip() + "\n")
        elif header == "dmesg:":
            body = _body(lines[1:])
            if body.strip():
                found.setdefault("dmesg.txt", body)
        elif header.startswith("*** ") and not header.startswith("*** ls:"):
            name = header[4:].strip()
            body_lines = lines[1:]
            if body_lines and body_lines[0].startswith("*** ls:"):
                body_lines = body_lines[1:]
            body = _body(body_lines)
            if name == "/proc/cmdline" and body.strip():
                found.setdefault("host/cmdline", body)
            elif name == "/proc/modules":
                kept = [line for line in body.splitlines() if line.startswith(_MODULES)]
                found.setdefault("host/modules.txt", "".join(f"{line}\n" for line in kept))
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
