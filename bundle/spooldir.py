"""Private temporary directories of one analysis, and the removal of those a killed run left.

Node-file workers hand their results (the customer's journals, kernel lines and
nvidia-smi data, pickled) back through files in a directory of their own. Such a
directory is created ``0700`` under the system's temporary directory, named
``gpu-triage-spool-<pid>-<random>``, and holds ``.lock``, a file that its run keeps
locked (``flock``) for as long as it lives; forked workers inherit the lock.

A run that ends normally, by Ctrl-C or by ``SIGTERM``/``SIGHUP`` (see
:mod:`gpu_triage.cli`) removes its directory itself. A run killed outright
(``SIGKILL``, a power cut) cannot: the next run removes it, but only what it can
prove is stale — a directory of this exact name shape, not a link, owned by this user,
mode ``0700``, untouched for :data:`STALE_AFTER_S` seconds, whose lock file it can
lock. The kernel drops a dead process's locks, so a lock that can be taken proves that
no process of that run is left, even one in another PID namespace sharing ``/tmp``.
Where ``flock`` does not exist (Windows, which starts no workers) nothing is removed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PREFIX = "gpu-triage-spool-"
LOCK = ".lock"
STALE_AFTER_S = 60.0
_NAME = re.compile(re.escape(PREFIX) + r"[0-9]{1,10}-[A-Za-z0-9_]{1,32}")

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def spool_dir() -> Iterator[Path]:
    """A new private directory, locked for this process and its forked children, removed
    when the block ends (however it ends: an exception, Ctrl-C, a handled ``SIGTERM``)."""
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    lock = -1
    try:
        lock = os.open(path / LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        if lock >= 0:
            os.close(lock)


def remove_stale(root: Path | None = None, now: float | None = None) -> list[Path]:
    """Remove the spool directories that killed runs left under ``root`` (the system's
    temporary directory); returns those removed. Never raises: a directory it cannot
    judge or remove is left where it is."""
    if fcntl is None:
        return []
    root = Path(tempfile.gettempdir()) if root is None else root
    now = time.time() if now is None else now
    removed = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for entry in entries:
        if not _NAME.fullmatch(entry.name):
            continue
        path = root / entry.name
        with contextlib.suppress(OSError):
            if _stale(path, now):
                removed.append(path)
    return removed


def _stale(path: Path, now: float) -> bool:
    """Whether ``path`` is provably a dead run's spool; removes it while its lock is held."""
    info = os.lstat(path)
    if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid()
            or stat.S_IMODE(info.st_mode) != 0o700 or now - info.st_mtime < STALE_AFTER_S):
        return False
    lock = os.open(path / LOCK, os.O_RDWR | os.O_NOFOLLOW)
    try:
        lock_info = os.fstat(lock)
        if not stat.S_ISREG(lock_info.st_mode) or lock_info.st_uid != os.getuid():
            return False
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its run, or one of its workers, is still alive
        shutil.rmtree(path)
        return True
    finally:
        os.close(lock)
