"""Compiled HTML templates kept between runs, so that a report does not compile its
template again (about 0.07 to 0.12 s a run; the page itself renders in less).

jinja2 turns a template into Python source and that into a code object. This cache
keeps the code object (marshalled, as Python keeps byte code) in the user's cache
directory, ``$XDG_CACHE_HOME/gpu-triage/templates`` (``~/.cache/...`` by default). Each
file is named by two SHA-256 digests: one of the template's name with everything that
shapes the generated code (jinja2's version, the interpreter's byte-code tag, the
environment's syntax and whitespace options, its filters and tests), one of the
template's source. A changed template, or a different jinja2, Python or option,
therefore looks for another file; and the file's own header repeats the source's
digest, which jinja2 checks before it uses the code. A wheel and a fresh checkout work
alike: the first run compiles and writes, every later run reads.

The directory is used only when it is this user's own (not a link, owned by the
effective user, writable by nobody else), since its files are run as code; where it
is not, or cannot be made, or a file cannot be written, templates are compiled as if
there were no cache. Writes go to a temporary file renamed into place, so a reader
never sees half a file, and a write replaces the earlier versions of that template.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket, BytecodeCache

from analyzers.results.usercache import own_directory, user_cache_dir

# The Environment attributes that shape the code a template compiles to.
_CODEGEN = ("block_start_string", "block_end_string", "variable_start_string",
            "variable_end_string", "comment_start_string", "comment_end_string",
            "line_statement_prefix", "line_comment_prefix", "trim_blocks", "lstrip_blocks",
            "newline_sequence", "keep_trailing_newline", "optimized", "autoescape",
            "is_async")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def shape(environment: jinja2.Environment) -> str:
    """Everything of ``environment`` and this interpreter that the compiled code of a
    template depends on, besides the template's own source."""
    options = [(attr, repr(getattr(environment, attr))) for attr in _CODEGEN]
    callables = [(kind, name, getattr(value, "__module__", ""),
                  getattr(value, "__qualname__", repr(value)))
                 for kind, table in (("filter", environment.filters),
                                     ("test", environment.tests))
                 for name, value in sorted(table.items())]
    return repr((jinja2.__version__, sys.implementation.cache_tag, options,
                 sorted(environment.extensions), callables))


class TemplateCache(BytecodeCache):
    """jinja2's byte-code cache, on disk, keyed as the module docstring says."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def get_bucket(self, environment: jinja2.Environment, name: str,
                   filename: str | None, source: str) -> Bucket:
        bucket = Bucket(environment, _sha256(shape(environment) + "\0" + name), _sha256(source))
        self.load_bytecode(bucket)
        return bucket

    def _file(self, bucket: Bucket) -> Path:
        return self.directory / f"{bucket.key[:32]}-{bucket.checksum}.bin"

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            with self._file(bucket).open("rb") as handle:
                bucket.load_bytecode(handle)  # checks jinja2's header and the digest
        except Exception:  # absent, unreadable, cut short: compiled again
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        target = self._file(bucket)
        try:
            handle, partial = tempfile.mkstemp(dir=self.directory, suffix=".partial")
        except OSError:
            return
        try:
            with os.fdopen(handle, "wb") as out:
                bucket.write_bytecode(out)
            os.replace(partial, target)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            return
        for older in self.directory.glob(f"{bucket.key[:32]}-*.bin"):
            if older != target:
                with contextlib.suppress(OSError):
                    older.unlink()

    def clear(self) -> None:
        for kept in self.directory.glob("*.bin"):
            with contextlib.suppress(OSError):
                kept.unlink()


def cache_dir() -> Path | None:
    """Where compiled templates are kept (see the module docstring); None without a
    home."""
    return user_cache_dir("templates")


def template_cache(directory: Path | None = None) -> TemplateCache | None:
    """The cache in ``directory`` (default :func:`cache_dir`), made if missing; None
    where it cannot be made or is not this user's own."""
    found = own_directory(cache_dir() if directory is None else directory)
    return TemplateCache(found) if found is not None else None
