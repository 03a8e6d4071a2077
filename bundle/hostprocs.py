"""Parse ``host/gpu-processes.txt``: ``<pid>\\t<comm>\\t<command line>`` per line.

The collector lists host processes named ``nvidia-persistenced``, ``nv-hostengine``,
``nv-fabricmanager`` or ``dcgm*`` (``comm`` as the kernel keeps it, at most 15
characters). Pure format parsing: lines that do not have a numeric pid are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_PROCESSES = 256


@dataclass(frozen=True, slots=True)
class HostProcess:
    pid: int
    comm: str
    cmdline: str
    line: int
    text: str


def parse_gpu_processes(text: str) -> list[HostProcess]:
    found: list[HostProcess] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split("\t", 2)
        if len(fields) < 2 or not fields[0].strip().isdigit():
            continue
        comm = fields[1].strip()
        if not comm:
            continue
        cmdline = fields[2].strip() if len(fields) > 2 else ""
        found.append(HostProcess(int(fields[0]), comm, cmdline, number, raw.rstrip()))
        if len(found) >= MAX_PROCESSES:
            break
    return found
