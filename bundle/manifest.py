"""The bundle manifest: what the collector tried, and how each step ended."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

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
    _by_path: dict[str, tuple[int, ManifestItem]] | None = PrivateAttr(default=None)

    def item(self, path: str) -> ManifestItem | None:
        found = self.located(path)
        return found[1] if found is not None else None

    def located(self, path: str) -> tuple[int, ManifestItem] | None:
        """The first item for ``path`` and its index in ``items`` (for a JSON pointer).
        Indexed once: rules ask about every node of bundles with tens of thousands of
        items."""
        if self._by_path is None:
            index: dict[str, tuple[int, ManifestItem]] = {}
            for position, entry in enumerate(self.items):
                index.setdefault(entry.path, (position, entry))
            self._by_path = index
        return self._by_path.get(path)

    @property
    def failed_items(self) -> list[ManifestItem]:
        return [entry for entry in self.items if entry.error]
