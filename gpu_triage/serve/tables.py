"""Server-side printing: a list answered as a ``meta.k8s.io`` ``Table`` when the client
asks for one (``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``, as ``kubectl
get`` does), each row carrying the object's metadata (``includeObject=Metadata``, the
default), the whole object (``Object``) or nothing (``None``), as the API server does."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gpu_triage.serve.catalog import Kind
from gpu_triage.serve.printers import TABLES, Column, Row, custom_columns

Obj = dict[str, Any]
_DESCRIPTION = {"Name": "Name must be unique within a namespace.",
                "Age": "CreationTimestamp is a timestamp representing the server time when "
                       "this object was created."}


def table_version(accept: str) -> str | None:
    """``v1`` or ``v1beta1`` when the Accept header asks for a Table first, else None."""
    for entry in accept.split(","):
        params = _params(entry)
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return params.get("v") if params.get("v") in ("v1", "v1beta1") else None
        if entry.split(";")[0].strip() in ("application/json", "*/*", "application/*"):
            return None
    return None


def _params(entry: str) -> dict[str, str]:
    found = {}
    for part in entry.split(";")[1:]:
        key, _, value = part.partition("=")
        found[key.strip()] = value.strip()
    return found


def _metadata(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def columns_of(kind: Kind, crds: list[Obj]) -> tuple[tuple[Column, ...], Row]:
    if kind.kind in TABLES:
        return TABLES[kind.kind]
    crd = next((c for c in crds if _metadata(c).get("name") ==
                f"{kind.resource}.{kind.group}"), None)
    return custom_columns(crd, kind.version)


def table(kind: Kind, objects: list[Obj], crds: list[Obj], now: datetime, version: str,
          include: str) -> Obj:
    columns, row = columns_of(kind, crds)
    definitions = [{"name": name, "type": kind_, "format": "name" if name == "Name" else "",
                    "description": _DESCRIPTION.get(name, name), "priority": priority}
                   for name, kind_, priority in columns]
    rows = []
    for obj in objects:
        entry: Obj = {"cells": row(obj, now)}
        if include == "Object":
            entry["object"] = obj
        elif include != "None":
            entry["object"] = {"kind": "PartialObjectMetadata",
                               "apiVersion": f"meta.k8s.io/{version}",
                               "metadata": _metadata(obj)}
        rows.append(entry)
    return {"kind": "Table", "apiVersion": f"meta.k8s.io/{version}",
            "metadata": {"resourceVersion": "1"}, "columnDefinitions": definitions,
            "rows": rows}
