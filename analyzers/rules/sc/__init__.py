"""SC: the number gate — scheduling and admission of GPU pods.

Each rule lives alone in ``SC<nnn>.py``; ``_*.py`` modules are the family's private
helpers. ``RULES`` (the ``gpu_triage.rules`` entry point) is found from the files, in ID
order.
"""

from __future__ import annotations

from analyzers.rule import Rule
from analyzers.rules import family_rules


def __getattr__(name: str) -> list[type[Rule]]:
    """``RULES`` (the entry point ``analyzers.rules.sc:RULES``), found from the files."""
    if name == "RULES":
        return family_rules(__name__, __path__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
