"""HELM: the operator's Helm release history."""

from __future__ import annotations

from analyzers.rule import Rule

RULES: list[type[Rule]] = []
