"""RT013: CDI device names that containers asked for and no spec on the node defines."""

from __future__ import annotations

from analyzers.facts.cdi import CdiSpec, is_uuid
from analyzers.rules.common import names

_SIGNATURE = "cdi-unresolvable-devices"


_EXPLAINED = 4  # requested names the summary explains


def _why(kind: str, name: str, specs: list[CdiSpec], uuids: set[str]) -> str:
    """Why ``kind=name`` does not resolve against the node's readable specs."""
    kinds = {s.kind for s in specs}
    if kind not in kinds:
        return f"no spec has kind {kind} (the node's specs have {', '.join(sorted(kinds))})"
    defined = sorted({d for s in specs if s.kind == kind for d in s.devices})
    if is_uuid(name) and uuids and name not in uuids:
        return (f"{name} is not a GPU of this node (nvidia-smi lists {names(uuids, 2)}): a "
                "stale UUID, from before a GPU swap or from another node")
    if is_uuid(name) and name in uuids:
        return (f"the GPU is on the node but the {kind} spec does not list it (defines "
                f"{names(defined, 3) or 'nothing'}): the spec is older than the GPU")
    return f"the {kind} spec defines only {names(defined, 3) or 'no device'}"
