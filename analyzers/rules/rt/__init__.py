"""RT: the runtime gate — the ``nvidia`` handler in containerd's loaded configuration.

Each rule lives alone in ``RT<nnn>.py``; ``_*.py`` modules are the family's private
helpers. ``RULES`` (the ``gpu_triage.rules`` entry point) is found from the files, in ID
order.
"""

from __future__ import annotations

from analyzers.rule import Rule
from analyzers.rules import family_rules


def __getattr__(name: str) -> list[type[Rule]]:
    """``RULES`` (the entry point ``analyzers.rules.rt:RULES``), found from the files."""
    if name == "RULES":
        return family_rules(__name__, __path__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
