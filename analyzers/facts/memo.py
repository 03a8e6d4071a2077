"""A per-node judgement of the facts, made once per run: the rule that reports it and
every rule whose findings hang under it read the same answer.

The cache is kept beside the run's ``Facts`` (weakly: it goes with them), keyed by the
judgement itself, never by the name of a rule.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TypeVar
from weakref import WeakKeyDictionary

F = TypeVar("F")
T = TypeVar("T")


def per_node(judge: Callable[[F, str], T]) -> Callable[[F, str], T]:
    """``judge(facts, node)``, asked once per run and node."""
    kept: WeakKeyDictionary[F, dict[str, T]] = WeakKeyDictionary()

    @wraps(judge)
    def once(facts: F, node: str) -> T:
        answers = kept.setdefault(facts, {})
        if node not in answers:
            answers[node] = judge(facts, node)
        return answers[node]
    return once


def per_run(judge: Callable[[F], T]) -> Callable[[F], T]:
    """``judge(facts)``, asked once per run."""
    kept: WeakKeyDictionary[F, T] = WeakKeyDictionary()

    @wraps(judge)
    def once(facts: F) -> T:
        if facts not in kept:
            kept[facts] = judge(facts)
        return kept[facts]
    return once
