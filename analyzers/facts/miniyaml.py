"""A small YAML subset reader for configuration files kept in ConfigMaps.

Enough for mig-parted configs and similar hand-written files: block mappings and
sequences by indentation, ``- key: value`` items, flow ``[a, b]`` and ``{k: v}``
collections, quoted and plain scalars, integers, booleans, null and comments.
Anchors, tags, multi-document streams and block scalars (``|``, ``>``) are refused
with :class:`ValueError`, as is anything else it does not understand; callers treat
that as "could not read the file", never as an empty configuration.
"""

from __future__ import annotations

import re
from typing import Any

_INT = re.compile(r"^[-+]?\d+$")
_FLOAT = re.compile(r"^[-+]?(\d+\.\d*|\.\d+)([eE][-+]?\d+)?$")


def _strip_comment(line: str) -> str:
    quote: str | None = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index].rstrip()
    return line.rstrip()


def _lines(text: str) -> list[tuple[int, int, str]]:
    """(line number, indent, content) of meaningful lines."""
    found: list[tuple[int, int, str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise ValueError(f"line {number}: tab in indentation")
        line = _strip_comment(raw)
        if not line.strip() or line.strip() in ("---", "..."):
            if line.strip() == "---" and found:
                raise ValueError(f"line {number}: more than one document")
            continue
        found.append((number, len(line) - len(line.lstrip(" ")), line.strip()))
    return found


def scalar(token: str) -> Any:
    text = token.strip()
    if not text:
        return None
    if text[0] in "&*!|>@`":
        raise ValueError(f"unsupported YAML construct: {text[:20]!r}")
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        body = text[1:-1]
        return body.replace("''", "'") if text[0] == "'" else _unescape(body)
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered in ("null", "~"):
        return None
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    return text


def _unescape(body: str) -> str:
    return body.replace('\\"', '"').replace("\\\\", "\\").replace("\\n", "\n")


def _split_flow(body: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    current = ""
    for char in body:
        if quote:
            current += char
            if char == quote:
                quote = None
            continue
        if char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if quote or depth:
        raise ValueError(f"unbalanced flow collection: {body[:40]!r}")
    if current.strip():
        parts.append(current)
    return [p.strip() for p in parts]


def _key_value(text: str) -> tuple[str, str] | None:
    """Split ``key: value`` at the first colon outside quotes that a space or end follows."""
    quote: str | None = None
    for index, char in enumerate(text):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == ":" and (index + 1 == len(text) or text[index + 1] == " "):
            return text[:index].strip(), text[index + 1:].strip()
    return None


def value(token: str) -> Any:
    text = token.strip()
    if text.startswith("["):
        if not text.endswith("]"):
            raise ValueError(f"unterminated flow sequence: {text[:40]!r}")
        return [value(part) for part in _split_flow(text[1:-1])]
    if text.startswith("{"):
        if not text.endswith("}"):
            raise ValueError(f"unterminated flow mapping: {text[:40]!r}")
        mapping: dict[str, Any] = {}
        for part in _split_flow(text[1:-1]):
            pair = _key_value(part)
            if pair is None:
                raise ValueError(f"flow mapping entry without a key: {part[:40]!r}")
            mapping[str(scalar(pair[0]))] = value(pair[1])
        return mapping
    return scalar(text)


class _Parser:
    def __init__(self, lines: list[tuple[int, int, str]]) -> None:
        self.lines = lines
        self.pos = 0

    def block(self, indent: int) -> Any:
        number, current, text = self.lines[self.pos]
        if current != indent:
            raise ValueError(f"line {number}: unexpected indentation")
        if text == "-" or text.startswith("- "):
            return self.sequence(indent)
        return self.mapping(indent)

    def nested(self, parent: int) -> Any:
        """The block under a ``key:`` or ``-`` with nothing after it."""
        if self.pos >= len(self.lines):
            return None
        _, indent, text = self.lines[self.pos]
        if indent > parent:
            return self.block(indent)
        if indent == parent and (text == "-" or text.startswith("- ")):
            return self.sequence(indent)
        return None

    def sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while self.pos < len(self.lines):
            number, current, text = self.lines[self.pos]
            if current != indent or not (text == "-" or text.startswith("- ")):
                break
            rest = text[1:].strip()
            if not rest:
                self.pos += 1
                items.append(self.nested(indent))
                continue
            column = indent + len(text) - len(text[1:].lstrip())
            if rest == "-" or rest.startswith("- "):
                self.lines[self.pos] = (number, column, rest)
                items.append(self.sequence(column))
            elif _key_value(rest) is not None and rest[0] not in "[{'\"":
                self.lines[self.pos] = (number, column, rest)
                items.append(self.mapping(column))
            else:
                self.pos += 1
                items.append(value(rest))
        return items

    def mapping(self, indent: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while self.pos < len(self.lines):
            number, current, text = self.lines[self.pos]
            if current < indent:
                break
            if current > indent:
                raise ValueError(f"line {number}: unexpected indentation")
            if text == "-" or text.startswith("- "):
                break
            pair = _key_value(text)
            if pair is None:
                raise ValueError(f"line {number}: expected 'key: value'")
            key, rest = pair
            name = str(scalar(key))
            self.pos += 1
            result[name] = value(rest) if rest else self.nested(indent)
        return result


def loads(text: str) -> Any:
    """Parse a YAML document of the supported subset; None for an empty one."""
    lines = _lines(text)
    if not lines:
        return None
    parser = _Parser(lines)
    result = parser.block(lines[0][1])
    if parser.pos != len(lines):
        number = lines[parser.pos][0]
        raise ValueError(f"line {number}: unexpected content")
    return result
