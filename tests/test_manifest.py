"""The manifest model's defaults (bundle/manifest.py)."""

from __future__ import annotations

from bundle.manifest import Manifest, ManifestItem, fresh_list


def test_defaults_are_empty_and_not_shared() -> None:
    first, second = Manifest(), Manifest.model_validate({})
    assert first.model_dump() == {
        "format": "gpu-triage-bundle", "format_version": 1, "collector": {}, "created_at": None,
        "cluster": {"context": None, "server_version": None}, "operator_namespace": None,
        "options": {}, "redaction": {}, "items": []}
    first.items.append(ManifestItem(path="x"))
    assert second.items == []
    assert Manifest().items == []


def test_list_default_does_not_make_pydantic_parse_list_signature() -> None:
    assert Manifest.model_fields["items"].default_factory is fresh_list
