"""The engine room: loading rules (``plugins``, ``local_rules``), choosing them
(``selection``), running them over a bundle (``analysis``: :func:`analyze`,
:func:`run_rule`, :func:`link`, :func:`facts_of`), and what is built around a run
(``coverage``, ``grouping``, ``overview``, ``timeline``, ``suppress``, ``diff``,
``ruletest``, ``casebundle``, ``catalog``, ``schemas``).

The names of ``analysis`` are reached here but loaded on first use: a command that
only lists or loads rules (``gpu-triage rules``, ``explain``) imports ``plugins``, and
importing a module of this package runs this file, which must not pull in the
analysis, its report models and the speed wing with it (``tests/test_startup.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analyzers.engine.analysis import Outcome, Progress, analyze, facts_of, link, run_rule

__all__ = ["Outcome", "Progress", "analyze", "facts_of", "link", "run_rule"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from analyzers.engine import analysis

    value = getattr(analysis, name)
    globals()[name] = value  # asked once: later reads find it here
    return value
