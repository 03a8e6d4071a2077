"""Which paths given to ``gpu-triage analyze`` are bundles: an archive, a bundle root
(format v1 or a known foreign layout), or a directory of those (a batch).

Apart from :mod:`gpu_triage.batch` so that analysing one bundle imports no batch
machinery (process pools, the index model).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

# Longest first: the suffix taken off a bundle's name for its reports' names.
ARCHIVES = (".tar.gz", ".tar.xz", ".tar.bz2", ".tar.zst", ".tgz", ".txz", ".tbz2", ".tzst",
            ".tar", ".zip")


def report_stem(path: Path) -> str:
    """The readable part of a bundle's report names: its file or directory name without
    the archive suffix, made fit for a file name (:func:`gpu_triage.outputs.safe_name`)."""
    from gpu_triage.outputs import safe_name

    name = path.resolve().name if path.name in ("", ".", "..") else path.name
    for suffix in ARCHIVES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return safe_name(name)


def _names(directory: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(directory))
    except OSError:
        return []


def holds_bundle(directory: Path) -> bool:
    """True when ``directory`` itself is a bundle root (v1 or a known foreign layout).
    Only its entries are listed; a subdirectory shows as ``name/``."""
    from bundle.layouts import find_root

    names = [name + "/" if _is_dir(directory / name) else name for name in _names(directory)]
    return find_root(names) == ""


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _bundles_in(directory: Path) -> list[Path]:
    """Archives, and directories that are bundle roots, directly inside ``directory``."""
    found = []
    for name in _names(directory):
        child = directory / name
        archive = name.endswith(ARCHIVES) and child.is_file() and not child.is_symlink()
        if archive or (_is_dir(child) and holds_bundle(child)):
            found.append(child)
    return found


def expand(paths: Sequence[Path]) -> tuple[list[Path], bool]:
    """The bundles to analyse, and whether this is a batch (more than one bundle given, or
    a directory of bundles). A directory holding exactly one unpacked bundle one level
    down is that bundle, as it always was."""
    bundles: list[Path] = []
    batch = len(paths) > 1
    for path in paths:
        if _is_dir(path) and not holds_bundle(path):
            inside = _bundles_in(path)
            archives = [p for p in inside if not _is_dir(p)]
            if len(inside) > 1 or archives:
                bundles.extend(inside)
                batch = True
                continue
        bundles.append(path)
    return bundles, batch
