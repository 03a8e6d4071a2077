"""Small parsers for line-oriented node artifacts: journal JSON lines, systemd show."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

_PID = re.compile(r"[0-9]{1,10}")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EXACT = 1 << 52  # below this, micros / 1e6 as a float rounds back to the same microsecond


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One ``journalctl -o json`` record; ``line`` is its 1-based line in the file."""

    line: int
    message: str
    time: datetime | None
    pid: int | None
    fields: Mapping[str, Any] = field(repr=False)


def journal_message(value: object) -> str:
    """journald writes MESSAGE as a string, or as a list of byte values when not UTF-8."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, int) and 0 <= b < 256 for b in value):
        return bytes(value).decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def journal_time(value: object) -> datetime | None:
    """``__REALTIME_TIMESTAMP`` is microseconds since the epoch, as a string."""
    try:
        micros = int(str(value))
        if 0 <= micros < _EXACT:  # the same instant, without fromtimestamp's float detour
            return _EPOCH + timedelta(microseconds=micros)
        return datetime.fromtimestamp(micros / 1_000_000, tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def journal_pid(value: object) -> int | None:
    """``_PID`` is a decimal string; anything else is no PID."""
    return int(value) if isinstance(value, str) and _PID.fullmatch(value) else None


def journal_entry(number: int, record: Mapping[str, Any]) -> JournalEntry:
    """The entry of one parsed line (``number`` is its 1-based line in the file)."""
    return JournalEntry(
        line=number,
        message=journal_message(record.get("MESSAGE")),
        time=journal_time(record.get("__REALTIME_TIMESTAMP")),
        pid=journal_pid(record.get("_PID")),
        fields=record,
    )


def _parse_line(raw: str) -> dict[str, Any] | str | None:
    """The object on one line, else what is wrong with it; None for a blank line."""
    if not raw or raw.isspace():
        return None
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return f"not JSON ({exc})"
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, expected an object"
    return record


def parse_journal(text: str) -> Iterator[tuple[JournalEntry | None, int, str]]:
    """Yield (entry, line, error); entry is None with an error for a bad line."""
    for number, raw in enumerate(text.splitlines(), start=1):
        parsed = _parse_line(raw)
        if isinstance(parsed, str):
            yield None, number, parsed
        elif parsed is not None:
            yield journal_entry(number, parsed), number, ""


JOURNAL_LISTED = 20
"""Bad lines of one journal reported one by one at most; ``journalctl -o json`` writes
none (a cut last line at worst). The others are counted in one closing problem, so a
journal of millions of bad lines costs one cheap test per line, not a problem each."""
_NOTHING: dict[str, Any] = {}  # what a blank or bad line reads as (shared: never written)


# Line boundaries that str.splitlines() honours besides "\n" (and "\r\n"), ASCII first.
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")
_OTHER_BREAKS_WIDE = (*_OTHER_BREAKS, "\x85", "\u2028", "\u2029")


def split_lines(text: str) -> list[str]:
    """Exactly ``text.splitlines()``, at the speed of ``split("\n")`` where a newline is
    the only line boundary in ``text`` (what ``journalctl`` writes): the test for the
    other boundaries is a few character searches, the split then copies no more than
    ``splitlines`` does but skips its per-character classification."""
    if any(mark in text for mark in (_OTHER_BREAKS if text.isascii() else _OTHER_BREAKS_WIDE)):
        return text.splitlines()
    lines = text.split("\n")
    if lines[-1] == "":  # a final newline (or no text) starts no line
        lines.pop()
    return lines


def journal_records(text: str) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """Every line of a journal as its object, in file order (index ``i`` is line
    ``i + 1``), and the (line, error) of each line that is not a JSON object; a blank or
    bad line is an empty dict there, which holds nothing a reader looks for.

    The same lines and errors as :func:`parse_journal`, at the cost of one ``orjson``
    call per line and nothing else in Python per line: no entry, timestamp or PID is
    built, so a reader picks the few lines it needs by column (``map(dict.get, ...)``)
    and makes entries of those alone (:func:`journal_entry`). Every line is parsed,
    because that is the only exact test of which lines are bad. Past the first
    :data:`JOURNAL_LISTED` bad lines, the others are only counted: the last pair is then
    (the first of them, how many there are).
    """
    lines = split_lines(text)
    try:
        records: list[Any] = list(map(orjson.loads, lines))
        if set(map(type, records)) <= {dict}:
            return records, []
    except orjson.JSONDecodeError:
        pass  # a blank or bad line: walk them one by one
    records = []
    problems: list[tuple[int, str]] = []
    unlisted, first = 0, 0
    for number, raw in enumerate(lines, start=1):
        if len(problems) < JOURNAL_LISTED:
            parsed = _parse_line(raw)
            if isinstance(parsed, dict):
                records.append(parsed)
                continue
            records.append(_NOTHING)
            if parsed is not None:
                problems.append((number, parsed))
            continue
        record = _object_or_none(raw)
        records.append(_NOTHING if record is None else record)
        if record is None and raw and not raw.isspace():
            unlisted += 1
            first = first or number
    if unlisted:
        problems.append((first, f"{unlisted:,} more line(s) are not JSON objects (only the "
                                f"first {JOURNAL_LISTED} of a journal are listed)"))
    return records, problems


def _object_or_none(raw: str) -> dict[str, Any] | None:
    """The object on a line, else None; no message is made for a bad line, and a line
    that cannot be an object is not handed to the parser."""
    if raw.lstrip()[:1] != "{":
        return None
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


def parse_key_values(text: str) -> dict[str, str]:
    """``systemctl show`` output: KEY=VALUE lines; other lines are ignored."""
    result: dict[str, str] = {}
    for raw in text.splitlines():
        key, sep, value = raw.partition("=")
        if sep and key.strip() and " " not in key.strip():
            result[key.strip()] = value.strip()
    return result
