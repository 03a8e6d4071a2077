"""DRV: the node, the kernel and the GPU hardware."""

from __future__ import annotations

from analyzers.rule import Rule

RULES: list[type[Rule]] = []
