"""Parse ``cluster/crds.json``: the GPU stack's CustomResourceDefinitions (format 1.1).

The collector writes ``kubectl get crd clusterpolicies.nvidia.com nvidiadrivers.nvidia.com
--ignore-not-found -o json`` as a List. For each CRD this keeps its name, where it sits in
the file, and per version whether it is served and stored and which fields its schema
declares under ``spec``: the sections (``cdi``) and their fields (``cdi.enabled``). Pure
format parsing, lenient: anything that is not shaped like a CRD is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CrdVersion:
    """One entry of ``spec.versions``; ``pointer`` is the JSON pointer of its ``spec``
    schema (or of the version when it has none)."""

    name: str
    served: bool
    storage: bool
    fields: frozenset[str]
    open_schema: bool   # spec keeps unknown fields: nothing is pruned or refused
    pointer: str


@dataclass(frozen=True, slots=True)
class Crd:
    name: str
    pointer: str
    versions: tuple[CrdVersion, ...]

    @property
    def stored(self) -> CrdVersion | None:
        """The version objects are stored in (else the first served one)."""
        for version in self.versions:
            if version.storage:
                return version
        return next((v for v in self.versions if v.served), None)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _fields(spec: dict[str, Any]) -> frozenset[str]:
    found: set[str] = set()
    for section, schema in _dict(spec.get("properties")).items():
        found.add(str(section))
        for name in _dict(_dict(schema).get("properties")):
            found.add(f"{section}.{name}")
    return frozenset(found)


def _version(item: dict[str, Any], index: int, base: str) -> CrdVersion | None:
    name = item.get("name")
    if not isinstance(name, str):
        return None
    pointer = f"{base}/spec/versions/{index}"
    schema = _dict(_dict(item.get("schema")).get("openAPIV3Schema"))
    spec = _dict(_dict(schema.get("properties")).get("spec"))
    if spec:
        pointer += "/schema/openAPIV3Schema/properties/spec"
    open_schema = not spec or spec.get("x-kubernetes-preserve-unknown-fields") is True
    return CrdVersion(name=name, served=item.get("served") is not False,
                      storage=item.get("storage") is True, fields=_fields(spec),
                      open_schema=open_schema, pointer=pointer)


def parse_crds(data: Any) -> list[Crd]:
    """The CRDs of a ``kubectl get crd -o json`` List (or of a single CRD object)."""
    document = _dict(data)
    items = document.get("items") if "items" in document else [document]
    found: list[Crd] = []
    for index, item in enumerate(items if isinstance(items, list) else []):
        obj = _dict(item)
        name = _dict(obj.get("metadata")).get("name")
        if not isinstance(name, str) or obj.get("kind", "CustomResourceDefinition") != \
                "CustomResourceDefinition":
            continue
        base = f"/items/{index}" if "items" in document else ""
        listed = _dict(obj.get("spec")).get("versions")
        versions = [v for i, raw in enumerate(listed if isinstance(listed, list) else [])
                    if (v := _version(_dict(raw), i, base)) is not None]
        found.append(Crd(name=name, pointer=base, versions=tuple(versions)))
    return found
