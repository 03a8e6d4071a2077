"""The packaged data files (``analyzers/data``) and the generated JSON twins of large ones.

Each TOML file there is the one edited source. ``tomllib`` is pure Python: loading the
signatures (parsed, and each checked against its examples) and the Xid catalog from their
TOML takes about 14 times as long as from ``orjson`` documents, 40-50 ms of CPU on each
run (docs/performance.md, "Optimisations weighed against their code"). So each file in
:data:`TWINNED` has a twin ``<name>.toml.json`` beside it, holding the document the TOML
parses to and the SHA-256 of the TOML it was made from. :func:`twin` gives that document only
while the hash matches the TOML as it is now, and the caller parses the TOML otherwise. A
run thus always reads what the TOML says: a forgotten regeneration costs time, never a
wrong answer, and ``tests/test_datafiles.py`` fails until the twins are regenerated with
``python -m analyzers.datafiles`` (:mod:`analyzers.datafiles`, which checks the signatures
before it writes their twin).

The small files (under 6 KB, 0.2 ms each) are read from the TOML directly.
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Any, Final

import orjson

__all__ = ["DATA", "REGENERATE", "TWINNED", "read_toml", "render_twin", "twin", "twin_path"]

#: The packaged data directory.
DATA: Final = Path(__file__).parent.parent / "data"

#: Data files (stem names) that have a JSON twin.
TWINNED: Final = ("signatures", "xid")

REGENERATE: Final = "python -m analyzers.datafiles"


def read_toml(name: str) -> str:
    """The text of ``data/<name>.toml``."""
    return (DATA / f"{name}.toml").read_text(encoding="utf-8")


def twin_path(name: str) -> Path:
    return DATA / f"{name}.toml.json"


def _digest(name: str) -> str:
    return hashlib.sha256((DATA / f"{name}.toml").read_bytes()).hexdigest()


def twin(name: str) -> dict[str, Any] | None:
    """What ``tomllib.loads(read_toml(name))`` gives, read from ``data/<name>.toml.json``; None
    when that twin is missing, unreadable, or was made from another text of the TOML."""
    try:
        made = orjson.loads(twin_path(name).read_bytes())
        current = _digest(name)
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(made, dict) or made.get("sha256") != current:
        return None
    document = made.get("document")
    return document if isinstance(document, dict) else None


def render_twin(name: str) -> bytes:
    """The twin of ``data/<name>.toml`` as it is now (indented, so that diffs show)."""
    made = {
        "generated": f"from {name}.toml by `{REGENERATE}`; edit the TOML, not this file",
        "sha256": _digest(name),
        "document": tomllib.loads(read_toml(name)),
    }
    return orjson.dumps(made, option=orjson.OPT_INDENT_2) + b"\n"
