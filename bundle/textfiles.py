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


def parse_journal(text: str) -> Iterator[tuple[JournalEntry | None, int, str]]:
    """Yield (entry, line, error); entry is None with an error for a bad line."""
    loads = orjson.loads
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw or raw.isspace():
            continue
        try:
            record = loads(raw)
        except orjson.JSONDecodeError as exc:
            yield None, number, f"not JSON ({exc})"
            continue
        if not isinstance(record, dict):
            yield None, number, f"a JSON {type(record).__name__}, expected an object"
            continue
        pid_text = record.get("_PID")
        pid = int(pid_text) if isinstance(pid_text, str) and _PID.fullmatch(pid_text) else None
        yield JournalEntry(
            line=number,
            message=journal_message(record.get("MESSAGE")),
            time=journal_time(record.get("__REALTIME_TIMESTAMP")),
            pid=pid,
            fields=record,
        ), number, ""


def parse_key_values(text: str) -> dict[str, str]:
    """``systemctl show`` output: KEY=VALUE lines; other lines are ignored."""
    result: dict[str, str] = {}
    for raw in text.splitlines():
        key, sep, value = raw.partition("=")
        if sep and key.strip() and " " not in key.strip():
            result[key.strip()] = value.strip()
    return result
