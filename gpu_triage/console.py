"""Standard output and error that never fail on a character their encoding lacks.

Reports use ``→``, ``·``, ``×`` and ``…``, and bundle text can hold anything. Under a
legacy locale (Windows' ``cp1252``, ``PYTHONIOENCODING=cp1252``) printing such a
character raised ``UnicodeEncodeError`` and ended the run with exit 4, losing the
reports not yet written. :func:`prepare` therefore sets each stream up once, at start:

- a stream that is not a terminal (redirected to a file or a pipe) is written in UTF-8,
  as every output file is (:mod:`gpu_triage.outputs`), so ``> report.txt`` holds the
  same bytes as ``-o report.txt``;
- a terminal keeps its encoding, and what it cannot show degrades to ASCII: the
  report's own symbols to their ASCII spellings (``->``, ``*``, ``x``, ``...``),
  anything else to ``?``.
"""

from __future__ import annotations

import codecs
import io
import sys
from typing import TextIO

HANDLER = "gpu-triage-ascii"
# The report's own symbols, spelled in ASCII.
ASCII = {"→": "->", "←": "<-", "·": "*", "×": "x", "…": "...", "—": "-", "–": "-",
         "≥": ">=", "≤": "<=", "✓": "ok", "✗": "x", "“": '"', "”": '"', "‘": "'", "’": "'",
         "•": "*", "\u00a0": " "}


def _degrade(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start:error.end]
    return "".join(ASCII.get(char, "?") for char in text), error.end


def _register() -> None:
    try:
        codecs.lookup_error(HANDLER)
    except LookupError:
        codecs.register_error(HANDLER, _degrade)


def prepare(*streams: TextIO) -> None:
    """Set up ``streams`` (default: stdout and stderr) as the module docstring says."""
    _register()
    for stream in streams or (sys.stdout, sys.stderr):
        if not isinstance(stream, io.TextIOWrapper):
            continue  # a test's capture, or already replaced: left as it is
        encoding = codecs.lookup(stream.encoding or "ascii").name
        try:
            terminal = stream.isatty()
        except ValueError:  # closed
            continue
        if not terminal and not encoding.startswith("utf-"):
            stream.reconfigure(encoding="utf-8")
        elif terminal and not encoding.startswith("utf-"):
            stream.reconfigure(errors=HANDLER)
