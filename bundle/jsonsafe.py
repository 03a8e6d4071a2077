"""The work budget of JSON parsing, checked before orjson sees the bytes.

A file over :data:`DENSE_FLOOR` bytes with more than one object or array per
:data:`MIN_BYTES_PER_CONTAINER` bytes is not parsed: Kubernetes output has one per 50
bytes or more, and a list of ``{}`` costs about 25 times its size in memory once parsed.
The native reader and the foreign layouts ask the same question.
"""

from __future__ import annotations

DENSE_FLOOR = 1 << 20
MIN_BYTES_PER_CONTAINER = 16


def json_too_dense(data: bytes) -> str | None:
    """Why ``data`` is not parsed as JSON (too many objects and arrays for its size), or
    None. Counts brackets, also inside strings: an upper bound, checked in C."""
    if len(data) <= DENSE_FLOOR:
        return None
    containers = data.count(b"{") + data.count(b"[")
    if containers * MIN_BYTES_PER_CONTAINER <= len(data):
        return None
    return (f"up to {containers:,} JSON objects and arrays in {len(data):,} bytes, over the "
            f"limit of one per {MIN_BYTES_PER_CONTAINER} bytes for a file over "
            f"{DENSE_FLOOR >> 20} MiB; not parsed")
