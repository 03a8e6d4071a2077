"""SC: the number gate — scheduling and admission of GPU pods."""

from __future__ import annotations

from analyzers.rule import Rule

RULES: list[type[Rule]] = []
