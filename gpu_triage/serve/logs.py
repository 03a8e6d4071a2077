"""``pods/log`` from the collected logs, with the options kubectl sends.

The collector saved ``kubectl logs --timestamps`` (docs/bundle-format.md): the leading
RFC 3339 time of each line is dropped unless the client asks for ``timestamps=true``,
and used for ``sinceTime`` and ``sinceSeconds`` (counted back from the bundle's
collection time). ``tailLines`` and ``limitBytes`` apply as the kubelet applies them: the
last lines first, then the byte cap. ``follow`` returns what was collected and ends, as
for a container that has stopped.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from gpu_triage.serve.store import parse_time

_STAMP = re.compile(rb"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) ")


class LogOptionError(ValueError):
    """An option value the API server would refuse (a 400)."""


def _number(query: dict[str, str], name: str) -> int | None:
    text = query.get(name)
    if text is None or text == "":
        return None
    if not re.fullmatch(r"-?\d{1,12}", text):
        raise LogOptionError(f"{name}: invalid value {text!r}: must be an integer")
    return int(text)


def select(data: bytes, query: dict[str, str], collected: datetime) -> bytes:
    lines = data.splitlines(keepends=True)
    since = None
    if query.get("sinceTime"):
        since = parse_time(query["sinceTime"])
        if since is None:
            raise LogOptionError(f"sinceTime: invalid value {query['sinceTime']!r}: must be "
                                 "an RFC 3339 time")
    seconds = _number(query, "sinceSeconds")
    if seconds is not None:
        since = collected - timedelta(seconds=seconds)
    if since is not None:
        lines = [line for line in lines if _after(line, since)]
    tail = _number(query, "tailLines")
    if tail is not None and tail >= 0:
        lines = lines[len(lines) - tail:] if tail else []
    if query.get("timestamps") != "true":
        lines = [_STAMP.sub(b"", line, count=1) for line in lines]
    body = b"".join(lines)
    limit = _number(query, "limitBytes")
    return body[:limit] if limit is not None and limit > 0 else body


def _after(line: bytes, since: datetime) -> bool:
    found = _STAMP.match(line)
    when = parse_time(found[1].decode()) if found else None
    return when is None or when >= since
