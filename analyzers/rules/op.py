"""OP: the GPU Operator and its operands."""

from __future__ import annotations

from analyzers.rule import Rule

RULES: list[type[Rule]] = []
