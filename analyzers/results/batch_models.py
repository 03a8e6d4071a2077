"""One line of ``index.jsonl``, written by ``gpu-triage analyze`` over many bundles.

Flat on purpose: a spreadsheet or ``pandas.read_json(path, lines=True)`` reads each key
as a column. Strict like every output contract of gpu-triage.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

INDEX_SCHEMA_VERSION = 1


class IndexRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = INDEX_SCHEMA_VERSION
    bundle: str                      # the path as given
    error: str | None = None         # why the bundle could not be analysed
    exit_code: int
    layout: str | None = None
    cluster_context: str | None = None
    server_version: str | None = None
    created_at: str | None = None
    nodes: int | None = None
    gpu_nodes: int | None = None
    worst: str | None = None         # the most severe finding's severity
    critical: int = 0
    high: int = 0
    medium: int = 0
    low: int = 0
    info: int = 0
    suppressed: int = 0
    findings_by_rule: dict[str, int] = Field(default_factory=dict)
    finding_ids: list[str] = Field(default_factory=list)
    rules_skipped: list[str] = Field(default_factory=list)
    rules_partial: list[str] = Field(default_factory=list)
    rules_error: list[str] = Field(default_factory=list)
    reports: list[str] = Field(default_factory=list)  # files written for this bundle
