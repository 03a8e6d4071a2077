"""Every file gpu-triage writes, written without ever following a link.

Reports land where bundles are unpacked: the current directory beside a customer's
tarball, or an ``--out-dir`` full of report names derived from bundle names. A symbolic
link planted at such a name would turn a plain ``open(path, "w")`` into a write to any
file the engineer can write (a ``.pth`` file in a site-packages directory runs code at
the next Python start). So :func:`write`:

- refuses a target that is a symbolic link (dangling or not) or anything but a regular
  file, with :class:`OutputError` naming the path: the CLI reports it as a usage error
  (exit 2) and the file the link points to is not touched;
- writes the bytes to a new temporary file in the target's directory, created with
  ``O_CREAT | O_EXCL | O_NOFOLLOW`` (never an existing file or link), and renames it onto
  the target. A rename replaces the directory entry itself and never follows it, so a
  link swapped in after the check is replaced, not written through; a reader never sees
  a half-written report; a regular file already there (a rerun) is replaced as expected.

The one exception is the null device (``-o /dev/null``, :data:`os.devnull`): a character
device at exactly that path is written to directly, so a run can be timed or checked for
its exit code alone. Any other device, pipe or link stays refused.

The directories on the way are the engineer's choice (the current directory, ``-o``,
``--out-dir``) and are used as given. :func:`safe_name` turns a bundle's name into a
file-name part that carries no control characters.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from pathlib import Path

_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
          | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_ATTEMPTS = 16
# Characters a file name should not carry: controls, DEL, separators of lines and
# paragraphs, bidi overrides and isolates, path separators, and lone surrogates.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                     r"\u2066-\u2069/\\\ud800-\udfff]")


class OutputError(Exception):
    """An output file that cannot or must not be written; ``str()`` names the path."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"cannot write {path}: {reason}")
        self.path = path
        self.reason = reason


def is_null_device(path: Path) -> bool:
    """``path`` is the null device itself: exactly :data:`os.devnull`, a character device
    (not a link to it, not a file of that name)."""
    if os.path.abspath(path) != os.devnull:
        return False
    try:
        return stat.S_ISCHR(os.lstat(path).st_mode)
    except OSError:
        return False


def check(path: Path) -> None:
    """Raise :class:`OutputError` unless ``path`` is absent, a regular file (not a link)
    or the null device."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(path, exc.strerror or type(exc).__name__) from None
    if stat.S_ISCHR(mode) and is_null_device(path):
        return
    if stat.S_ISLNK(mode):
        raise OutputError(path, "it is a symbolic link; gpu-triage never writes through a "
                                "link (remove it, or choose another file)")
    if not stat.S_ISREG(mode):
        raise OutputError(path, "it exists and is not a regular file")


def write(path: Path, data: str | bytes, mode: int = 0o666) -> None:
    """Write ``data`` (text is UTF-8) to ``path``: see the module docstring. ``mode`` is the
    new file's permission before the umask (0o600 for a redacted bundle: the owner's only)."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    check(path)
    if is_null_device(path):
        try:
            with open(os.devnull, "wb") as handle:
                handle.write(payload)
        except OSError as exc:
            raise OutputError(path, exc.strerror or type(exc).__name__) from None
        return
    temporary, fd = _create_beside(path, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        check(path)
        os.replace(temporary, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise OutputError(path, exc.strerror or type(exc).__name__) from None
        raise


def _create_beside(path: Path, mode: int = 0o666) -> tuple[Path, int]:
    """A new, empty temporary file in ``path``'s directory, opened for writing."""
    for _ in range(_ATTEMPTS):
        temporary = path.parent / f".gpu-triage-{secrets.token_hex(8)}.tmp"
        try:
            return temporary, os.open(temporary, _FLAGS, mode)
        except FileExistsError:
            continue
        except OSError as exc:
            raise OutputError(path, exc.strerror or type(exc).__name__) from None
    raise OutputError(path, "no free temporary name in its directory")


def safe_name(name: str) -> str:
    """``name`` (a bundle's file or directory name) fit to be part of a file name: control
    and bidi characters and path separators become ``_``; empty, ``.`` or ``..`` become
    ``bundle``."""
    cleaned = _UNSAFE.sub("_", name)
    return "bundle" if cleaned.strip(".") == "" else cleaned
