"""Result models: the findings JSON contract (schema version 1).

These are strict (frozen, ``extra="forbid"``): they are our own output, read by
automation. Fields may gain siblings but never change meaning or shape without a
new ``schema_version``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from analyzers.results.overview_models import (
    EvidenceMark,
    Glance,
    GpuTotals,
    Inventory,
    InventoryEntry,
    InventoryFile,
    NodeRow,
    OperandCell,
    OperatorRelease,
    Overview,
    ResourceTotal,
    Timeline,
    TimelinePoint,
    ValueSpread,
)
from bundle.manifest import fresh_list

__all__ = [
    "SCHEMA_VERSION", "BundleInfo", "ClusterRef", "CollectionGap", "Confidence", "Evidence",
    "EvidenceMark",
    "Finding", "FindingGroup", "Glance", "GpuTotals", "Inventory", "InventoryEntry",
    "InventoryFile", "LayoutNote", "NodeRow",
    "ObjectRef", "OperandCell", "OperatorRelease", "Overview", "ParseProblem", "Report",
    "ResourceTotal", "RuleDoc", "RuleResult", "RuleStatus", "Severity", "Summary", "Timeline",
    "TimelinePoint", "ToolInfo", "ValueSpread", "SuppressedFinding",
]

SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Severity(StrEnum):
    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is more severe: critical 4 … info 0."""
        return _RANK[self]

    def at_least(self, other: Severity) -> bool:
        return self.rank >= other.rank


_RANK = {Severity.CRITICAL: 4, Severity.HIGH: 3, Severity.MEDIUM: 2, Severity.LOW: 1,
         Severity.INFO: 0}


class Confidence(StrEnum):
    """How a finding knows its cause. ``confirmed``: the bundle quotes it directly (a
    kernel line, an event, a log line, a configuration value naming it). ``likely``:
    inferred from an absence or a pattern (a missing file, counts that do not add up, a
    known shape of failure); a likely cause never opens its remediation with a step
    that changes the cluster."""

    CONFIRMED = "confirmed"
    LIKELY = "likely"


class RuleStatus(StrEnum):
    """``passed``: checked, nothing found. ``failed``: findings. ``partial``: nothing
    found in what could be read, but some of the rule's inputs were damaged (the reason
    names them). ``skipped``: not judged (an input missing or unusable, or deselected).
    ``error``: the rule raised."""

    PASSED = "passed"
    FAILED = "failed"
    PARTIAL = "partial"
    SKIPPED = "skipped"
    ERROR = "error"


class Evidence(_Strict):
    """A quote from the bundle: path, 1-based line (or null), excerpt; JSON pointer
    for values inside JSON files."""

    path: str
    line: int | None = None
    excerpt: str
    pointer: str | None = None


class ObjectRef(_Strict):
    kind: str
    namespace: str | None = None
    name: str


class Finding(_Strict):
    id: str
    rule_id: str
    title: str
    severity: Severity
    summary: str
    nodes: list[str] = Field(default_factory=fresh_list)
    objects: list[ObjectRef] = Field(default_factory=fresh_list)
    evidence: list[Evidence] = Field(default_factory=fresh_list)
    remediation: str = ""
    caused_by: list[str] = Field(default_factory=fresh_list)
    causes: list[str] = Field(default_factory=fresh_list)
    # Added within schema 1: reports written before it read as "confirmed".
    confidence: Confidence = Confidence.CONFIRMED
    # Added within schema 1: public pages (https) where this failure was seen before and
    # its cause established (KI001: the known-issue entry's threads).
    references: list[Annotated[str, Field(pattern=r"^https://[^\s\"'<>]+$")]] = Field(
        default_factory=fresh_list)


class FindingGroup(_Strict):
    """Findings of one rule with the same cause on several nodes (analyzers.engine.grouping
    says what "same cause" means). Every finding is in exactly one group; ``findings``
    are member ids (each still in ``Report.findings``), ``summary`` is the first
    member's summary with node and pod names, times and other identities abstracted
    (``<node>``, ``<pod>``, ``<time>`` …), ``caused_by`` / ``causes`` are group ids."""

    id: str
    rule_id: str
    title: str
    severity: Severity
    summary: str
    findings: list[str]
    nodes: list[str] = Field(default_factory=fresh_list)
    caused_by: list[str] = Field(default_factory=fresh_list)
    causes: list[str] = Field(default_factory=fresh_list)


class RuleResult(_Strict):
    rule_id: str
    status: RuleStatus
    reason: str | None = None
    title: str = ""
    origin: str = ""


class CollectionGap(_Strict):
    path: str
    node: str | None = None
    error: str


class ParseProblem(_Strict):
    path: str
    kind: str
    message: str
    where: str | None = None


class ToolInfo(_Strict):
    name: str = "gpu-triage"
    version: str


class ClusterRef(_Strict):
    context: str | None = None
    server_version: str | None = None


class LayoutNote(_Strict):
    """A file of a foreign layout read otherwise than its name says, or not read on
    purpose (information, not a problem)."""

    path: str
    note: str


class BundleInfo(_Strict):
    path: str
    format_version: int
    created_at: str | None = None
    cluster: ClusterRef
    nodes: int
    gpu_nodes: int
    # Which layout was read: "gpu-triage v1", or a foreign one (bundle.layouts) such as
    # "nvidia must-gather" or "replicated troubleshoot" presented as format v1 paths.
    layout: str = "gpu-triage v1"
    # A foreign layout only (empty for gpu-triage v1): the format v1 paths it had no
    # equivalent for (node paths as "nodes/*/<path>"; a trailing "/" stands for the files
    # under it), and notes on its files (bundle.layouts.base.LayoutReport).
    layout_missing: list[str] = Field(default_factory=fresh_list)
    layout_notes: list[LayoutNote] = Field(default_factory=fresh_list)
    # Format v1 paths a foreign layout provides only in part, and what is left out.
    layout_partial: list[LayoutNote] = Field(default_factory=fresh_list)
    # JSON lists the collector shortened to fit --max-file-bytes (whole items dropped):
    # the counts taken from them (nodes, GPU nodes, pods) are lower bounds.
    shortened: list[LayoutNote] = Field(default_factory=fresh_list)


class Summary(_Strict):
    critical: int = 0
    high: int = 0
    medium: int = 0
    low: int = 0
    info: int = 0


class RuleDoc(_Strict):
    """A rule's user documentation, carried so reports can show it offline."""

    rule_id: str
    title: str
    severity: Severity
    why: str
    remediation: str


class SuppressedFinding(_Strict):
    """A finding a suppression file removed from the report, and why."""

    finding: Finding
    reason: str
    matched: str                     # "id RT004:gpu-a" or "rule RT004"
    until: str | None = None         # ISO date the suppression expires on
    source: str | None = None        # the suppression file


class Report(_Strict):
    schema_version: int = SCHEMA_VERSION
    tool: ToolInfo
    bundle: BundleInfo
    summary: Summary
    findings: list[Finding]
    rules: list[RuleResult]
    collection_gaps: list[CollectionGap]
    problems: list[ParseProblem] = Field(default_factory=fresh_list)
    rule_docs: list[RuleDoc] = Field(default_factory=fresh_list)
    overview: Overview | None = None
    # Findings removed with --suppress, each with the recorded reason (not in findings,
    # not in summary, not counted for --fail-on).
    suppressed: list[SuppressedFinding] = Field(default_factory=fresh_list)
    # The findings partitioned by cause (analyzers.engine.grouping): an additive view of
    # ``findings``, which still holds every finding. Empty in reports written before it.
    groups: list[FindingGroup] = Field(default_factory=fresh_list)
    # When the analysis ran (ISO 8601, UTC), as the HTML report shows it: carried so that
    # `gpu-triage render` remakes any format byte for byte. Absent in older reports.
    generated_at: str | None = None

    def worst(self) -> Severity | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=lambda s: s.rank)

    def by_id(self) -> dict[str, Finding]:
        return {f.id: f for f in self.findings}
