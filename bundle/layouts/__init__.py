"""Bundles the customer already made, presented through the format v1 interface.

A layout adapter maps the files of a foreign bundle onto format v1 paths
(``cluster/*.json``, ``logs/<ns>/<pod>/<container>.log``, ``nodes/<node>/...``),
converting YAML to the JSON shapes, so every rule reads them unchanged. What a layout
does not hold stays absent: the rules that need it are reported ``skipped``.

Two steps, both called by :func:`bundle.open_bundle`: :func:`find_root` locates the
bundle root inside a directory or archive (a ``manifest.json`` first, then each
layout's marker files), and :func:`adapt` wraps the opened Source when it is not
format v1.
"""

from __future__ import annotations

from collections.abc import Callable

from bundle.archive import MANIFEST, Limits, RootFinder, Source, _find_root
from bundle.layouts import mustgather, troubleshoot
from bundle.layouts.base import Adapted
from bundle.problems import ProblemLog

V1 = "gpu-triage v1"
NAMES = (V1, mustgather.NAME, troubleshoot.NAME)
Detect = Callable[[list[str]], bool]
Adapt = Callable[[Source, ProblemLog, Limits], Adapted]
# (root finder, detector, adapter) of each foreign layout, in the order they are tried
LAYOUTS: tuple[tuple[RootFinder, Detect, Adapt], ...] = (
    (mustgather.root, mustgather.detect, mustgather.adapt),
    (troubleshoot.root, troubleshoot.detect, troubleshoot.adapt),
)


def find_root(names: list[str]) -> str | None:
    """The bundle root: the directory of ``manifest.json``, else of a known layout."""
    found = _find_root(names)
    if found is not None:
        return found
    for root, _, _ in LAYOUTS:
        found = root(names)
        if found is not None:
            return found
    return None


def adapt(source: Source, problems: ProblemLog, limits: Limits) -> Adapted | None:
    """The foreign layout of ``source`` presented as format v1; None for format v1."""
    paths = source.paths()
    if MANIFEST in paths:
        return None
    for _, detect, adapt_layout in LAYOUTS:
        if detect(paths):
            return adapt_layout(source, problems, limits)
    return None


__all__ = ["LAYOUTS", "NAMES", "V1", "Adapted", "adapt", "find_root"]
