"""Bundles the customer already made, presented through the format v1 interface.

A layout adapter maps the files of a foreign bundle onto format v1 paths
(``cluster/*.json``, ``logs/<ns>/<pod>/<container>.log``, ``nodes/<node>/...``),
converting YAML to the JSON shapes, so every rule reads them unchanged. What a layout
does not hold stays absent: the rules that need it are reported ``skipped``.

Two steps, both called by :func:`bundle.open_bundle`: :func:`find_root` locates the
bundle root inside a directory or archive (a ``manifest.json`` first, then each
layout's marker files), and :func:`adapt` wraps the opened Source when it is not
format v1. The layout modules (and PyYAML, which they use) are imported only for a
bundle without ``manifest.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bundle.container import MANIFEST, Limits, RootFinder, Source, manifest_root
from bundle.problems import ProblemLog

if TYPE_CHECKING:
    from bundle.layouts.base import Adapted

V1 = "gpu-triage v1"
Detect = Callable[[list[str]], bool]
Adapt = Callable[[Source, ProblemLog, Limits], "Adapted"]


def layouts() -> tuple[tuple[RootFinder, Detect, Adapt], ...]:
    """(root finder, detector, adapter) of each foreign layout, in the order they are
    tried."""
    from bundle.layouts import mustgather, nodefiles, troubleshoot

    return ((mustgather.root, mustgather.detect, mustgather.adapt),
            (troubleshoot.root, troubleshoot.detect, troubleshoot.adapt),
            (nodefiles.root, nodefiles.detect, nodefiles.adapt))


def find_root(names: list[str]) -> str | None:
    """The bundle root: the directory of ``manifest.json``, else of a known layout."""
    found = manifest_root(names)
    if found is not None:
        return found
    for root, _, _ in layouts():
        found = root(names)
        if found is not None:
            return found
    return None


def adapt(source: Source, problems: ProblemLog, limits: Limits) -> Adapted | None:
    """The foreign layout of ``source`` presented as format v1; None for format v1."""
    paths = source.paths()
    if MANIFEST in paths:
        return None
    for _, detect, adapt_layout in layouts():
        if detect(paths):
            return adapt_layout(source, problems, limits)
    return None


__all__ = ["V1", "adapt", "find_root", "layouts"]
