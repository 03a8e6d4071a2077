"""Parse TOML from a bundle within a work budget; every TOML text of a bundle goes here.

:mod:`tomllib` is pure Python and trusts its input: a dotted key of 60,000 parts costs
it time and memory quadratic in the parts (gigabytes from a 120 KB line), an array
nested 100,000 deep ends in ``RecursionError``, and an integer of 5,000 digits in a
bare ``ValueError``. :func:`loads` first scans the text in one linear pass, without
building anything, and refuses it (:class:`TomlRefused`, which names the limit) when

- it is longer than ``MAX_TOML_BYTES``, 1 MiB (containerd's files are a few KiB), or
- anything in it sits deeper than ``MAX_TOML_DEPTH`` levels, counting the parts of
  the table header, the parts of the dotted key and the arrays and inline tables
  around a value together (``[a.b]`` then ``c.d = [1]`` puts ``1`` at depth 5).

A decimal integer longer than Python converts (``sys.get_int_max_str_digits()``,
4300 by default) is refused as well. What passes is parsed by :mod:`tomllib`, and the
result is remembered by content: on a large cluster nearly every node holds the same
``containerd config dump``, and unpickling a kept result is some 50 times faster than
parsing again. Every caller gets its own copy. A text that does not parse, or is
refused, raises the same error again each time, so that every caller records it.
"""

from __future__ import annotations

import contextlib
import pickle
import re
import sys
import tomllib
from collections import OrderedDict
from typing import Any

MAX_TOML_BYTES = 1 << 20
MAX_TOML_DEPTH = 64


class TomlRefused(tomllib.TOMLDecodeError):
    """A TOML text over a parsing budget; not parsed. A ``TOMLDecodeError``, so that code
    which only needs "parsed or not" handles it like invalid TOML."""

    def __init__(self, message: str, line: int | None = None) -> None:
        ValueError.__init__(self, message)  # (TOMLDecodeError's own arguments vary by release)
        self.line = line


# Between tokens: blanks, then a comment up to the end of the line.
_SKIP = re.compile(r"[ \t\r]*(?:#[^\n]*)?")
# A bare key part, or in a value: a number, date, boolean (dots split keys, not values).
_KEY_WORD = re.compile(r"[^\s#\[\]{}=,.\"']+")
_VALUE_WORD = re.compile(r"[^\s#\[\]{}=,\"']+")
# Inside an array: scalars and commas up to the next bracket, string, comment or line end.
_ARRAY_RUN = re.compile(r"[^\[\]{}\"'#\n]+")
_BASIC = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL = re.compile(r"'[^'\n]*'")
_ML_BASIC = re.compile(r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""(?:""?)?')
_ML_LITERAL = re.compile(r"'''(?:[^']|'(?!''))*'''(?:''?)?")

_KEY, _HEADER, _VALUE, _AFTER = range(4)


def _string(text: str, pos: int) -> int | None:
    """End of the string that starts at ``pos``; None when it is not closed (TOML that
    :mod:`tomllib` refuses at that very place, so the scan may stop there)."""
    if text.startswith('"""', pos):
        found = _ML_BASIC.match(text, pos)
    elif text.startswith("'''", pos):
        found = _ML_LITERAL.match(text, pos)
    else:
        found = (_BASIC if text[pos] == '"' else _LITERAL).match(text, pos)
    return found.end() if found else None


def over_budget(text: str, *, max_bytes: int = MAX_TOML_BYTES,
                max_depth: int = MAX_TOML_DEPTH) -> TomlRefused | None:
    """Why ``text`` must not be parsed, or None. Linear in the text; never raises.

    The scan follows TOML's statements far enough to know, for every value, how deep
    it sits; it does not check that the text is valid TOML (:mod:`tomllib` does, and
    it stops at the first place this scan could misread)."""
    if len(text) > max_bytes:
        return TomlRefused(f"TOML text of {len(text):,} characters is over the limit of "
                           f"{max_bytes:,}; not parsed")
    stack: list[tuple[bool, int]] = []  # open arrays (True) / inline tables: their depth
    table = 0      # parts of the current [table] header
    base = 0       # depth of the table the key being read belongs to
    parts = 0      # parts of that key so far
    depth = 0      # depth of the value being read
    mode = _KEY
    pos, end = 0, len(text)

    def refused(at: int) -> TomlRefused:
        line = text.count("\n", 0, at) + 1
        return TomlRefused(f"TOML nested deeper than {max_depth} levels (tables, dotted key "
                           "parts, arrays and inline tables together); not parsed", line)

    while True:
        pos = _SKIP.match(text, pos).end()  # type: ignore[union-attr]  # always matches
        if pos >= end:
            return None
        if stack and stack[-1][0] and mode != _KEY:
            run = _ARRAY_RUN.match(text, pos)
            if run is not None:  # (then a value may follow: a "[" after it nests)
                pos, mode, depth = run.end(), _VALUE, stack[-1][1] + 1
                continue
        char = text[pos]
        if char == "\n":
            pos += 1
            if not stack:
                mode, base, parts = _KEY, table, 0
            continue
        if char in "\"'":
            closed = _string(text, pos)
            if closed is None:
                return None
            pos = closed
            if mode in (_KEY, _HEADER):
                parts += 1
                if base + parts > max_depth:
                    return refused(pos)
            else:
                mode = _AFTER
            continue
        pos += 1
        if mode in (_KEY, _HEADER):
            if char == "[" and mode == _KEY and not stack and parts == 0:
                mode, base = _HEADER, 0
                if text.startswith("[", pos):
                    pos += 1
            elif char == "]" and mode == _HEADER:
                table, mode = parts, _AFTER
                if text.startswith("]", pos):
                    pos += 1
            elif char == "=":
                depth, mode = base + parts, _VALUE
            elif char == "}" and stack:
                stack.pop()
                mode = _AFTER
            elif char != ".":
                word = _KEY_WORD.match(text, pos - 1)
                if word is not None:
                    pos = word.end()
                    parts += 1
                    if base + parts > max_depth:
                        return refused(pos)
        elif char in "[{":
            if mode == _AFTER:
                continue  # not TOML; tomllib says where
            stack.append((char == "[", depth))
            if char == "[":
                depth += 1
                if depth > max_depth:
                    return refused(pos)
            else:
                mode, base, parts = _KEY, depth, 0
        elif char in "]}":
            if stack:
                depth = stack.pop()[1]
            mode = _AFTER
        elif char == ",":
            if stack and stack[-1][0]:
                mode, depth = _VALUE, stack[-1][1] + 1
            elif stack:
                mode, base, parts = _KEY, stack[-1][1], 0
        else:  # a number, date or boolean; after a value, text tomllib refuses
            word = _VALUE_WORD.match(text, pos - 1)
            if word is not None:
                pos = word.end()
            mode = _AFTER


def parse(text: str) -> dict[str, Any]:
    """``tomllib.loads(text)`` within the budget: raises ``tomllib.TOMLDecodeError`` for
    text that is not TOML and :class:`TomlRefused` for text over the budget, nothing else."""
    problem = over_budget(text)
    if problem is not None:
        raise problem
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise
    except ValueError as exc:  # int(): more digits than Python converts
        raise TomlRefused(f"an integer has more than {sys.get_int_max_str_digits()} digits, "
                          "the most Python converts; not parsed") from exc
    except RecursionError as exc:  # not expected under the depth limit; never a crash
        raise TomlRefused("TOML nested too deeply to parse; not parsed") from exc


class TomlInvalid(tomllib.TOMLDecodeError):
    """Not TOML: what :mod:`tomllib` said, raised again for a remembered text."""

    def __init__(self, message: str) -> None:
        ValueError.__init__(self, message)


_MEMO_SIZE = 64
# text -> the pickled result, or why it was refused (message, line), or why it is not TOML
_MEMO: OrderedDict[str, bytes | tuple[str, int | None] | str] = OrderedDict()


def loads(text: str) -> dict[str, Any]:
    """:func:`parse`, from the memo when the same text was parsed recently: the same
    result (a fresh copy) or the same exception, so that each caller can record it."""
    kept = _MEMO.get(text)
    if kept is not None:
        _MEMO.move_to_end(text)
        if isinstance(kept, tuple):
            raise TomlRefused(*kept)
        if isinstance(kept, str):
            raise TomlInvalid(kept)
        value: dict[str, Any] = pickle.loads(kept)
        return value
    try:
        parsed = parse(text)
    except TomlRefused as exc:
        _remember(text, (str(exc), exc.line))
        raise
    except tomllib.TOMLDecodeError as exc:
        _remember(text, str(exc))
        raise
    with contextlib.suppress(RecursionError, pickle.PicklingError):
        _remember(text, pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL))
    return parsed


def _remember(text: str, kept: bytes | tuple[str, int | None] | str) -> None:
    _MEMO[text] = kept
    if len(_MEMO) > _MEMO_SIZE:
        _MEMO.popitem(last=False)
