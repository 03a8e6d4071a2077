"""The bundle manifest: what the collector tried, and how each step ended."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SUPPORTED_FORMAT_VERSIONS = (1,)


def fresh_list() -> list[Any]:
    """The default of list fields. ``default_factory=list`` means the same, but pydantic
    reads the factory's signature while it builds a model, and the builtin ``list`` has its
    signature parsed from text: 1.7 ms for the first models a run builds, 4 ms over the
    report models (which use this too)."""
    return []


class _View(BaseModel):
    model_config = ConfigDict(extra="allow")


class ManifestItem(_View):
    path: str = ""
    command: list[str] | str | None = None
    node: str | None = None
    exit_code: int | None = None
    started_at: str | None = None
    duration_ms: int | None = None
    bytes: int | None = None
    truncated: bool = False
    error: str | None = None


class ClusterInfo(_View):
    context: str | None = None
    server_version: str | None = None


class Manifest(_View):
    format: str = "gpu-triage-bundle"
    format_version: int = 1
    collector: dict[str, Any] = Field(default_factory=dict)
    created_at: str | None = None
    cluster: ClusterInfo = Field(default_factory=ClusterInfo)
    operator_namespace: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    redaction: dict[str, Any] = Field(default_factory=dict)
    items: list[ManifestItem] = Field(default_factory=fresh_list)

    def item(self, path: str) -> ManifestItem | None:
        for entry in self.items:
            if entry.path == path:
                return entry
        return None

    @property
    def failed_items(self) -> list[ManifestItem]:
        return [entry for entry in self.items if entry.error]
