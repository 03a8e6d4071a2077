"""Packaged data kept parsed between runs, so that a run does not parse and check the
same TOML again.

Every analysis reads the known-issue base (26 files) and the signatures with
``tomllib``, which is pure Python, and checks each entry against its examples: about
60 ms of a small bundle's 0.4 s (docs/performance.md). What that builds depends only on
the files' bytes and on the code that reads them, so :func:`remembered` keeps it,
pickled, in the user's cache directory, ``$XDG_CACHE_HOME/gpu-triage/data``
(``~/.cache/...`` by default). Each file is named by the SHA-256 of everything the
value depends on: the interpreter's version, the caller's ``salt`` (the version of a
library whose classes are kept), and the name and bytes of every input, the reading
module's own source among them. Changed data, code, Python or library look for another
file, which is built and checked as if there were no cache; a value is only kept after
its checks passed.

Unpickling runs code, so the directory is used only when it is this user's own (not a
link, owned by the effective user, writable by nobody else), as the compiled templates'
is (``reports/template_cache.py``). Where it is not, or a file cannot be read or
written, the data is built as if there were no cache. Writes go to a temporary file
renamed into place, and a write removes the earlier files of the same name.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from analyzers.results.usercache import own_directory, user_cache_dir

__all__ = ["cache_dir", "remembered"]

T = TypeVar("T")

#: Set (to anything) to read and check the packaged data on every run.
NO_CACHE = "GPU_TRIAGE_NO_DATA_CACHE"


def cache_dir() -> Path | None:
    """Where parsed data is kept (see the module docstring); None without a home."""
    return user_cache_dir("data")


def _key(inputs: Iterable[Path], salt: str) -> str | None:
    digest = hashlib.sha256(f"{sys.version}\0{salt}\0".encode())
    try:
        for path in inputs:
            data = path.read_bytes()
            digest.update(f"{path.name}\0{len(data)}\0".encode())
            digest.update(data)
    except OSError:
        return None  # built from the files, which says what cannot be read
    return digest.hexdigest()


def remembered(name: str, inputs: Iterable[Path], build: Callable[[], T], *,
               salt: str = "", directory: Path | None = None) -> T:
    """What ``build()`` returns for these ``inputs``: read from the cache when an earlier
    run kept it, else built (raising what ``build`` raises) and kept."""
    if os.environ.get(NO_CACHE):
        return build()
    where = own_directory(cache_dir() if directory is None else directory)
    key = _key(inputs, salt) if where is not None else None
    if where is None or key is None:
        return build()
    target = where / f"{name}-{key}.pickle"
    with contextlib.suppress(Exception):  # absent, cut short, another version: built again
        return pickle.loads(target.read_bytes())  # type: ignore[no-any-return]  # noqa: S301 - our own
    value = build()
    _keep(where, target, name, value)
    return value


def _keep(where: Path, target: Path, name: str, value: object) -> None:
    try:
        handle, partial = tempfile.mkstemp(dir=where, suffix=".partial")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(partial, target)
    except Exception:  # noqa: BLE001 - a full disk, a value that does not pickle
        with contextlib.suppress(OSError):
            os.unlink(partial)
        return
    for older in where.glob(f"{name}-*.pickle"):
        if older != target:
            with contextlib.suppress(OSError):
                older.unlink()
