"""The one sanitiser for text that reaches a terminal, and the base of every report's.

Anything that comes from a bundle or from the file system (a finding's title, a node
name, a manifest's error text, a member or file name) may carry bytes a terminal obeys:
escape sequences that set the clipboard (OSC 52), plant links (OSC 8), clear the screen
or move the cursor (CSI), C0/C1 control characters, and bidirectional overrides that
show text in another order than it is. Every command prints such text only through
:func:`line` (one field on one line: a value cannot start a line of its own, so it
cannot forge a finding, a section or a summary) or :func:`lines` (text whose own line
breaks are kept, each line inert). :func:`inert` is the shared core that the file
formats use too (:func:`reports.view.plain`).

Escape sequences are removed whole, payload included, so a link's target or a clipboard
payload never shows; other control and bidi characters are removed; line and paragraph
breaks of any kind become spaces in :func:`line`. Lone surrogates (undecodable bytes of a
file name), which no terminal encoding can show, become ``?``.

A file or path name is shown by :func:`name` instead, as ``ls -q`` shows it: every
character a terminal would not show as itself becomes ``?``, nothing is removed, so the
name on the screen is the real one with wildcards where the odd bytes are (and still
selects the file in a shell).
"""

from __future__ import annotations

import re

# ESC or its 8-bit C1 form, then: CSI parameters and a final byte; OSC/DCS/SOS/PM/APC
# strings up to BEL or ST (or the end of the text); or any other two-character sequence.
_ESCAPE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -~]?"
)
# Line breaks a terminal or a pager honours: folded to a space by line().
_BREAKS = re.compile(r"[\t\n\v\f\r\x1c-\x1e\x85\u2028\u2029]")
# Everything else that is not shown as itself: C0/C1 controls (tab and newline aside),
# DEL, line and paragraph separators, bidi marks, embeddings, overrides and isolates.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                      r"\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NOT_SHOWN = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                        r"\u2066-\u2069\ud800-\udfff]")


def inert(text: str) -> str:
    """``text`` with escape sequences and control characters removed; tabs and newlines
    kept (the file formats escape or fold them themselves)."""
    return _CONTROL.sub("", _ESCAPE.sub("", _SURROGATE.sub("?", text)))


def line(text: object, limit: int | None = None) -> str:
    """Bundle or file-system text as one terminal-safe line: every kind of line break
    (and tab) becomes a space, then :func:`inert`, then runs of spaces fold into one."""
    folded = " ".join(inert(_BREAKS.sub(" ", str(text))).split())
    return folded if limit is None else folded[:limit]


def lines(text: str) -> str:
    """Text whose newlines are its own (a rule's documentation, a log record with its
    traceback): each line made inert, indentation kept; other breaks (a carriage
    return that would overwrite the start of a line) become spaces."""
    return "\n".join(inert(_BREAKS.sub(" ", part)).rstrip()
                     for part in text.replace("\r\n", "\n").split("\n"))


def name(path: object) -> str:
    """A file or path name as one terminal-safe line, ``ls -q`` style: each control,
    line-break, bidi or undecodable character becomes ``?``."""
    return _NOT_SHOWN.sub("?", str(path))
