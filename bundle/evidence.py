"""Evidence locators: where in the bundle a fact was read.

Two forms: a line in a text file (1-based line number plus the line as excerpt),
or a JSON pointer into a JSON file (RFC 6901) plus a short excerpt of the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

EXCERPT_LIMIT = 400


@dataclass(frozen=True, slots=True)
class Locator:
    path: str
    excerpt: str
    line: int | None = None
    pointer: str | None = None


def clip(text: str, limit: int = EXCERPT_LIMIT) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def pointer(*parts: str | int) -> str:
    """Build a JSON pointer, escaping ``~`` and ``/`` in keys."""
    escaped = (str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return "".join("/" + p for p in escaped)


def join_pointer(base: str, *parts: str | int) -> str:
    return base + pointer(*parts)


def at_pointer(path: str, base: str, value: Any, *parts: str | int) -> Locator:
    """A locator for a value found at ``base`` + parts inside a JSON file."""
    shown = value if isinstance(value, str) else orjson.dumps(value).decode()
    return Locator(path=path, pointer=join_pointer(base, *parts), excerpt=clip(str(shown)))


def lines_matching(path: str, text: str, pattern: re.Pattern[str] | str,
                   limit: int | None = None) -> Iterator[Locator]:
    """Yield a locator for each line of ``text`` that matches (regex or substring)."""
    found = 0
    for number, line in enumerate(text.splitlines(), start=1):
        hit = pattern.search(line) if isinstance(pattern, re.Pattern) else pattern in line
        if hit:
            yield Locator(path=path, line=number, excerpt=clip(line))
            found += 1
            if limit is not None and found >= limit:
                return


def first_line(path: str, text: str, pattern: re.Pattern[str] | str) -> Locator | None:
    return next(lines_matching(path, text, pattern, limit=1), None)
