"""Whether gpu-triage's own rule entry points are the only ones installed, answered
without asking :mod:`importlib.metadata`.

Asking importlib.metadata for the group costs about 8 ms a run: it builds entry point
objects for every distribution, and parses each built-in entry point's METADATA with
the email package to learn the distribution's name (the import itself is paid anyway:
pydantic's plugin loader imports importlib.metadata). What it reads is simple: it lists
each directory on ``sys.path`` and reads the ``entry_points.txt`` of every
``*.dist-info`` / ``*.egg-info`` entry found there. :func:`builtin_only` makes the same
scan, in about 1 ms, and answers True only when the answer of importlib.metadata is
certain: exactly one gpu-triage distribution, named ``gpu-triage`` in its METADATA,
declares exactly the expected entry points of the group, and no other distribution
declares any. Whatever it does not read the way
importlib.metadata would (a zip archive or an egg on ``sys.path``, another distribution
finder on ``sys.meta_path``, a metadata directory with an unusual name, an unreadable
or malformed file) answers False: the caller then asks importlib.metadata, so a
third-party plugin is always found.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator
from importlib.machinery import PathFinder

OWN = "gpu_triage"        # the distribution's name as importlib.metadata normalises it
OWN_NAME = "gpu-triage"   # ... and as its METADATA spells it
_SUFFIXES = (".dist-info", ".egg-info")
_HEADER = re.compile(r"^[\x21-\x39\x3b-\x7e]+:")
_ABSENT = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


class _Unsure(Exception):
    """importlib.metadata might read this differently: ask it."""


def builtin_only(group: str, expected: Iterable[tuple[str, str]]) -> bool:
    """True when the entry points of ``group`` that importlib.metadata would return are
    exactly ``expected`` (name, value) pairs, all of the gpu-triage distribution."""
    if any(finder is not PathFinder and getattr(finder, "find_distributions", None)
           for finder in sys.meta_path):
        return False
    own: list[str] = []
    try:
        for info in _metadata_dirs(sys.path):
            if _stem_name(info) == OWN:
                own.append(info)
            elif _group_pairs(_read(info, "entry_points.txt"), group):
                return False
        return (len(own) == 1 and _dist_name(own[0]) == OWN_NAME
                and sorted(_group_pairs(_read(own[0], "entry_points.txt"), group))
                == sorted(expected))
    except _Unsure:
        return False


def _group_pairs(text: str, group: str) -> list[tuple[str, str]]:
    """The (name, value) pairs of ``group`` in an ``entry_points.txt``, parsed as
    importlib.metadata parses it (``Sectioned``: stripped lines, ``#`` comments,
    ``[section]`` headers, ``name = value``). A line it would fail on, in any section,
    makes the answer unsure."""
    pairs = []
    section = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section is not None:
            name, sep, value = line.partition("=")
            if not sep:
                raise _Unsure  # importlib.metadata raises ValueError on it
            if section == group:
                pairs.append((name.strip(), value.strip()))
    return pairs


def _metadata_dirs(paths: Iterable[object]) -> Iterator[str]:
    """The metadata entries of ``paths`` that importlib.metadata's ``FastPath`` finds."""
    for entry in paths:
        if not isinstance(entry, str):
            raise _Unsure
        root = entry or "."
        try:
            children = os.listdir(root)
        except (OSError, ValueError):
            if os.path.isfile(root):
                raise _Unsure from None  # a zip archive: importlib.metadata looks inside
            continue
        egg = os.path.basename(root).lower().endswith(".egg")
        for child in children:
            low = child.lower()
            if low.endswith(_SUFFIXES):
                yield os.path.join(root, child)
            elif egg and low == "egg-info":
                raise _Unsure


def _stem_name(info: str) -> str:
    """The normalised distribution name of a metadata directory, from its name alone."""
    stem, suffix = os.path.splitext(os.path.basename(info))
    if suffix not in _SUFFIXES:
        raise _Unsure  # e.g. .DIST-INFO: importlib.metadata reads the name from METADATA
    return re.sub(r"[-_.]+", "_", stem.partition("-")[0]).lower()


def _dist_name(info: str) -> str | None:
    """The ``Name`` header of METADATA when it is plainly written; None otherwise."""
    lines = _read(info, "METADATA").splitlines()
    for index, line in enumerate(lines):
        if not line or not _HEADER.match(line):
            return None
        key, _, value = line.partition(":")
        if key.lower() == "name":
            following = lines[index + 1] if index + 1 < len(lines) else ""
            return None if following[:1] in (" ", "\t") else value.lstrip(" \t")
    return None


def _read(info: str, name: str) -> str:
    """A metadata file's text, "" when absent (as importlib.metadata reads it)."""
    try:
        with open(os.path.join(info, name), encoding="utf-8") as handle:
            return handle.read()
    except _ABSENT:
        return ""
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise _Unsure from exc
