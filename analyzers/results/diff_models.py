"""The result of ``gpu-triage diff BEFORE AFTER``: findings and facts compared.

Two bundles of one cluster are compared at the level of findings (their ids are
``<rule>:<subject>``, stable across bundles), not files, plus the facts that moved
(versions, operand states, per-node GPU numbers, the Helm revision). Strict like the
findings contract; ``kind`` tells this document from a findings report. They build on
:mod:`analyzers.results.models`, which knows nothing of them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from analyzers.results.models import BundleInfo, Finding, RuleStatus, ToolInfo

DIFF_SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FindingChange(_Strict):
    """One way a finding present in both bundles differs.

    ``field`` is ``severity``, ``numbers`` (the numbers its summary states, in order),
    ``nodes`` or ``evidence`` (how many evidence items it quotes)."""

    field: str
    before: str
    after: str


class ChangedFinding(_Strict):
    id: str
    rule_id: str
    title: str
    before: Finding
    after: Finding
    changes: list[FindingChange]


class UnverifiedFinding(_Strict):
    """A BEFORE finding absent from AFTER whose rule did not run there: not resolved,
    just not checked (its input was not collected, or the rule raised)."""

    finding: Finding
    reason: str


class FactChange(_Strict):
    """A fact about the cluster or a node whose value differs. ``None``: the bundle does
    not state it (the node is absent, or the file was not collected)."""

    subject: str                     # "cluster", a node name
    fact: str                        # "containerd", "nvidia.com/gpu allocatable", ...
    before: str | None
    after: str | None


class RuleChange(_Strict):
    """A rule whose coverage differs: e.g. skipped in BEFORE, run in AFTER."""

    rule_id: str
    before: RuleStatus | None
    after: RuleStatus | None
    reason: str | None = None        # AFTER's reason, else BEFORE's


class DiffSummary(_Strict):
    resolved: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    unverified: int = 0
    facts: int = 0


class DiffReport(_Strict):
    schema_version: int = DIFF_SCHEMA_VERSION
    kind: Literal["gpu-triage-diff"] = "gpu-triage-diff"
    tool: ToolInfo
    before: BundleInfo
    after: BundleInfo
    same_cluster: bool | None = None  # None: a context is unknown in one of them
    summary: DiffSummary
    resolved: list[Finding] = Field(default_factory=list)
    new: list[Finding] = Field(default_factory=list)
    changed: list[ChangedFinding] = Field(default_factory=list)
    unchanged: list[Finding] = Field(default_factory=list)
    unverified: list[UnverifiedFinding] = Field(default_factory=list)
    facts: list[FactChange] = Field(default_factory=list)
    coverage: list[RuleChange] = Field(default_factory=list)
