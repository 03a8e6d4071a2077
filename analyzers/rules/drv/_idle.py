"""DRV007: GPUs allocated to pods that sit idle while holding framebuffer memory."""

from __future__ import annotations


def _gib(mib: int) -> str:
    return f"{mib / 1024:.1f} GiB"
