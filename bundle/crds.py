"""Parse ``cluster/crds.json``: the GPU stack's CustomResourceDefinitions (format 1.1).

The collector writes ``kubectl get crd clusterpolicies.nvidia.com nvidiadrivers.nvidia.com
--ignore-not-found -o json`` as a List. For each CRD this keeps its name, where it sits in
the file, and per version whether it is served and stored and which fields its schema
declares under ``spec``: the sections (``cdi``) and their fields (``cdi.enabled``). Pure
format parsing, lenient: an object of another kind is skipped, but a document that is no
List of objects, or an item that is no named object, makes the whole answer unknown
(``None``): a CRD that could not be read must not look absent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bundle import specs

CRDS = specs.CRDS
POLICY_CRD = "clusterpolicies.nvidia.com"


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
    # sections under spec whose schema keeps unknown fields
    # (x-kubernetes-preserve-unknown-fields): no field below them is pruned
    open_sections: frozenset[str] = frozenset()

    def prunes(self, field: str) -> bool:
        """Whether the API server drops ``field`` (``section`` or ``section.name`` under
        spec) from an object stored in this version: it is not in the schema and no
        enclosing level keeps unknown fields."""
        if self.open_schema or field in self.fields:
            return False
        section, dot, _ = field.partition(".")
        return not (dot and section in self.open_sections)


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
    open_sections = frozenset(
        str(section) for section, schema in _dict(spec.get("properties")).items()
        if _dict(schema).get("x-kubernetes-preserve-unknown-fields") is True)
    return CrdVersion(name=name, served=item.get("served") is not False,
                      storage=item.get("storage") is True, fields=_fields(spec),
                      open_schema=open_schema, pointer=pointer, open_sections=open_sections)


def parse_crds(data: Any) -> list[Crd] | None:
    """The CRDs of a ``kubectl get crd -o json`` List (or of a single CRD object); None
    when the document, or one of its items, is not readable as an object."""
    if not isinstance(data, dict):
        return None
    listed = "items" in data
    items = data["items"] if listed else [data]
    if not isinstance(items, list):
        return None
    found: list[Crd] = []
    for index, item in enumerate(items):
        name = _dict(item).get("metadata")
        name = name.get("name") if isinstance(name, dict) else None
        if not isinstance(name, str):
            return None
        if item.get("kind", "CustomResourceDefinition") != "CustomResourceDefinition":
            continue
        base = f"/items/{index}" if listed else ""
        versions = _dict(item.get("spec")).get("versions")
        parsed = [v for i, raw in enumerate(versions if isinstance(versions, list) else [])
                  if (v := _version(_dict(raw), i, base)) is not None]
        found.append(Crd(name=name, pointer=base, versions=tuple(parsed)))
    return found
