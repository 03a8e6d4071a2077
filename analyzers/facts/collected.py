"""Whether the bundle holds a file at a path or glob pattern: what decides whether a
rule runs (its inputs) and whether a verdict of the facts can be judged at all."""

from __future__ import annotations

import fnmatch
import re

from bundle import Bundle, specs


def holds(bundle: Bundle, pattern: str) -> bool:
    """Whether ``bundle`` has a file at ``pattern`` (``fnmatch`` globs allowed)."""
    if not any(ch in pattern for ch in "*?["):
        return bundle.has(pattern)
    # Only the paths under the pattern's literal head: checking every path for every
    # node is quadratic in a bundle with many nodes and files.
    head = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
    return any(fnmatch.fnmatchcase(p, pattern) for p in bundle.paths_under(head))


def on_a_node(bundle: Bundle, path: str) -> bool:
    """Whether any node's directory holds ``path`` (relative to ``nodes/<name>/``)."""
    return any(holds(bundle, specs.node_file(node, path)) for node in bundle.node_names)
