"""The user's cache directory, where runs keep what a later run may reuse: the compiled
HTML templates (``reports/template_cache.py``) and the parsed packaged data
(``analyzers/knowledge/cache.py``). Here, below both, because both reports and
analyzers keep files there, and what they keep is read back as code or pickles: a
directory is used only when it is this user's own.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["own_directory", "user_cache_dir"]


def user_cache_dir(name: str) -> Path | None:
    """``$XDG_CACHE_HOME/gpu-triage/<name>``; ``~/.cache`` where that variable is unset,
    empty or relative (the XDG spec: a relative path there is invalid and ignored).
    None where there is no home directory to be found."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(base):
        return Path(base) / "gpu-triage" / name
    try:
        return Path.home() / ".cache" / "gpu-triage" / name
    except RuntimeError:
        return None


def own_directory(directory: Path | None) -> Path | None:
    """``directory``, made (``0700``) if missing, when it is this user's own: not a link,
    owned by the effective user, writable by nobody else. None where it is not, cannot
    be made, there is none (no home directory) or no owner to check (Windows)."""
    if directory is None:
        return None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        found = os.lstat(directory)
    except OSError:
        return None
    user = getattr(os, "geteuid", None)
    if user is None or not stat.S_ISDIR(found.st_mode) or found.st_uid != user() \
            or found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    return directory
