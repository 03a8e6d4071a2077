"""What a container used when the kernel killed it for memory, from the node's dmesg.

The kubelet records only ``OOMKilled`` and exit code 137; the kernel's OOM killer says
what the process held when it was killed (its ``anon-rss``), in the node's kernel log:
``Memory cgroup out of memory: Killed process 3833171 (dcgm-exporter)
total-vm:4478432kB, anon-rss:517656kB, file-rss:47148kB, shmem-rss:0kB, UID:0
pgtables:1636kB oom_score_adj:-997`` (https://github.com/NVIDIA/dcgm-exporter/issues/702).
The process name is the kernel's ``comm``, cut to 15 characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bundle import Bundle, specs
from bundle.evidence import Locator, clip

_KILLED = re.compile(r"Memory cgroup out of memory: Killed process \d+ \((?P<comm>[^)]{1,15})\)"
                     r" total-vm:\d+kB, anon-rss:(?P<rss>\d+)kB")
COMM_LENGTH = 15


@dataclass(frozen=True, slots=True)
class OomKill:
    """One kill of the memory cgroup OOM killer: the process and what it held."""

    comm: str
    anon_rss_kib: int
    where: Locator

    @property
    def usage(self) -> str:
        return f"{self.anon_rss_kib // 1024}Mi"


def kills(bundle: Bundle, node: str) -> list[OomKill]:
    """The node's memory-cgroup OOM kills in its kernel log (``specs.DMESG``), in log
    order."""
    if node not in bundle.node_names:
        return []
    artifacts = bundle.node(node)
    if not artifacts.has(specs.DMESG):
        return []
    path = artifacts.path(specs.DMESG)
    text = bundle.read_text(path) or ""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _KILLED.search(line)
        if match:
            found.append(OomKill(match.group("comm"), int(match.group("rss")),
                                 Locator(path=path, line=number, excerpt=clip(line.strip()))))
    return found


def of_process(found: list[OomKill], names: list[str]) -> OomKill | None:
    """The last kill whose process is one of ``names`` (a container's name, its image's
    name), compared as the kernel cuts them."""
    wanted = {name[:COMM_LENGTH] for name in names if name}
    matching = [kill for kill in found if kill.comm in wanted]
    return matching[-1] if matching else None
