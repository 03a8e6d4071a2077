"""YAML documents found inside the bundle (ConfigMap values, foreign bundle layouts).

Always the safe loader (C-accelerated when libyaml is present): no Python objects
are ever constructed from tags. Hostile documents are refused before they are
built: oversized text, more than one document, a flood of aliases (the YAML
variant of the billion-laughs attack, which would explode when walked), or more
nodes than any real document of this kind has (PyYAML builds about 450 bytes and
10 µs per node: 8 MiB of ``[1,1,…]`` held 4 million of them, 1.4 GB and 40 s).

PyYAML is imported on the first document: it takes longer to import than analysing a
small bundle, and most bundles hold no YAML that is read.
"""

from __future__ import annotations

from typing import Any

MAX_BYTES = 8 << 20
MAX_ALIASES = 64
MAX_NODES = 100_000
"""Scalars, sequences, mappings and aliases of one document: a CDI spec of a node with
eight GPUs in MIG mode, or the operator's default mig-parted config, has a few
thousand."""


class YamlOverBudget(ValueError):
    """The document is over one of the caps above: refused, not malformed."""


def load_yaml(text: str, *, max_bytes: int = MAX_BYTES) -> Any:
    """Parse one YAML (or JSON) document; ValueError naming the line when refused."""
    import yaml

    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    if len(text.encode("utf-8", "replace")) > max_bytes:
        raise YamlOverBudget(f"YAML document larger than {max_bytes} bytes")
    aliases = 0
    documents = 0
    nodes = 0
    counted = (yaml.ScalarEvent, yaml.CollectionStartEvent, yaml.AliasEvent)
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, counted):
                nodes += 1
                if nodes > MAX_NODES:
                    raise YamlOverBudget(f"more than {MAX_NODES:,} YAML nodes, over the cap "
                                         "on one document; not read")
            if isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise YamlOverBudget(f"more than {MAX_ALIASES} YAML aliases (alias bomb?)")
            elif isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise ValueError("more than one YAML document")
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ValueError(f"{where}{problem}") from None
