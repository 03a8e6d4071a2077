"""The packaged data files (``analyzers/data``): each TOML file there is the one edited
source, and what a run reads.

Loading them costs a run some milliseconds of ``tomllib`` (pure Python) and, for the
signatures and the known-issue base, of the checks each entry passes against its
examples. Those two are kept parsed between runs in the user's cache
(:mod:`analyzers.knowledge.cache`); the JSON twins that once saved that time in the
repository are gone (docs/performance.md, "Optimisations weighed against their code").
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["DATA", "read_toml"]

#: The packaged data directory.
DATA: Final = Path(__file__).parent.parent / "data"


def read_toml(name: str) -> str:
    """The text of ``data/<name>.toml``."""
    return (DATA / f"{name}.toml").read_text(encoding="utf-8")
