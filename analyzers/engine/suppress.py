"""Suppressions with a recorded reason (``--suppress FILE``).

The file is TOML::

    [[suppress]]
    id = "RT004:gpu-a"              # one finding, by its stable id
    reason = "containerd restarts are scheduled on gpu-a (CHG-1234)"
    until = 2027-01-01              # optional: ignored from this date on

    [[suppress]]
    rule = "CFG002"                 # every finding of a rule
    reason = "host driver by design on this cluster"

A suppressed finding leaves ``findings`` (and the summary, and ``--fail-on``) and is
listed in the report's ``suppressed`` array with its reason, so nothing disappears
silently. Links to it from the remaining findings are dropped, and the groups
(analyzers.engine.grouping) are formed again from what remains: suppressing ``RT004:gpu-a``
takes gpu-a out of its RT004 group and leaves the other nodes grouped. An expired suppression
no longer applies; both it and a suppression that matched nothing are reported back to
the caller to mention.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from pydantic import BaseModel, ConfigDict, Field

from analyzers.engine import grouping, link
from analyzers.results.models import Finding, Report, Severity, Summary, SuppressedFinding
from analyzers.rule import RULE_ID

_FINDING_ID = re.compile(r"^[A-Z]{2,5}[0-9]{3}:.+$")
_KEYS = frozenset({"id", "rule", "reason", "until"})


class SuppressionEntry(BaseModel):
    """One ``[[suppress]]`` table, as docs/schemas/suppressions.schema.json describes it
    (the schema only: :func:`parse` reads the file and gives the error messages)."""

    # defer_build: the model is only ever asked for its JSON schema, so its validator
    # is not built on every analysis (1.5 ms of start-up with SuppressionFile)
    model_config = ConfigDict(extra="forbid", title="[[suppress]]", defer_build=True,
                              json_schema_extra={
                                  "oneOf": [{"required": ["id"]}, {"required": ["rule"]}]})
    id: str | None = Field(None, pattern=_FINDING_ID.pattern,
                           description="One finding, by its stable id: its rule, a colon "
                                       "and its subject, as the report prints it.")
    rule: str | None = Field(None, pattern=RULE_ID.pattern,
                             description="Every finding of a rule (RT004).")
    reason: str = Field(pattern=r"\S", description="Why, recorded in the report.")
    until: date | None = Field(None, description="Ignored from this date on.")


class SuppressionFile(BaseModel):
    """A ``--suppress`` file (TOML): an array of ``[[suppress]]`` tables."""

    model_config = ConfigDict(extra="forbid", title="gpu-triage suppressions",
                              defer_build=True)
    suppress: list[SuppressionEntry] = Field(default_factory=list)


class SuppressionError(ValueError):
    """The suppression file is not valid; the message names the entry."""


@dataclass(frozen=True, slots=True)
class Suppression:
    reason: str
    source: str
    id: str | None = None
    rule: str | None = None
    until: date | None = None

    @property
    def describe(self) -> str:
        return f"id {self.id}" if self.id is not None else f"rule {self.rule}"

    def matches(self, finding: Finding) -> bool:
        return finding.id == self.id if self.id is not None else finding.rule_id == self.rule

    def active(self, today: date) -> bool:
        return self.until is None or today < self.until


@dataclass(slots=True)
class Outcome:
    report: Report
    expired: list[Suppression] = field(default_factory=list)
    unmatched: list[Suppression] = field(default_factory=list)


def parse(text: str, source: str) -> list[Suppression]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SuppressionError(f"{source}: invalid TOML: {exc}") from None
    extra = set(data) - {"suppress"}
    if extra:
        raise SuppressionError(f"{source}: unknown top-level key(s) {', '.join(sorted(extra))};"
                               " expected [[suppress]] tables")
    entries = data.get("suppress", [])
    if not isinstance(entries, list):
        raise SuppressionError(f"{source}: 'suppress' must be an array of tables "
                               "([[suppress]])")
    return [_entry(entry, f"{source}: [[suppress]] #{number}", source)
            for number, entry in enumerate(entries, start=1)]


def _entry(entry: object, where: str, source: str) -> Suppression:
    if not isinstance(entry, dict):
        raise SuppressionError(f"{where} is not a table")
    unknown = set(entry) - _KEYS
    if unknown:
        raise SuppressionError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    reason = entry.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise SuppressionError(f"{where}: a non-empty 'reason' is required")
    finding_id, rule = entry.get("id"), entry.get("rule")
    if (finding_id is None) == (rule is None):
        raise SuppressionError(f"{where}: give exactly one of 'id' or 'rule'")
    if finding_id is not None and not (isinstance(finding_id, str)
                                       and _FINDING_ID.match(finding_id)):
        raise SuppressionError(f"{where}: 'id' must be a finding id such as RT004:gpu-a")
    if rule is not None and not (isinstance(rule, str) and RULE_ID.match(rule)):
        raise SuppressionError(f"{where}: 'rule' must be a rule id such as RT004")
    return Suppression(reason=" ".join(reason.split()), source=source, id=finding_id,
                       rule=rule, until=_until(entry.get("until"), where))


def _until(value: object, where: str) -> date | None:
    if value is None:
        return None
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise SuppressionError(f"{where}: 'until' must be a date such as 2027-01-01")


def apply(report: Report, suppressions: Sequence[Suppression], today: date) -> Outcome:
    """Move matching findings to ``report.suppressed``; an id match wins over a rule."""
    active = [s for s in suppressions if s.active(today)]
    ordered = sorted(active, key=lambda s: s.id is None)
    kept: list[Finding] = []
    removed: list[SuppressedFinding] = []
    used: set[int] = set()
    for finding in report.findings:
        match = next((s for s in ordered if s.matches(finding)), None)
        if match is None:
            kept.append(finding)
            continue
        used.add(id(match))
        removed.append(SuppressedFinding(finding=finding, reason=match.reason,
                                         matched=match.describe, source=match.source,
                                         until=match.until.isoformat() if match.until else None))
    outcome = Outcome(report=report,
                      expired=[s for s in suppressions if not s.active(today)],
                      unmatched=[s for s in active if id(s) not in used])
    if not removed:
        return outcome
    kept = link(kept)
    counts = {severity.value: 0 for severity in Severity}
    for finding in kept:
        counts[finding.severity.value] += 1
    update: dict[str, object] = {"findings": kept, "summary": Summary(**counts),
                                 "suppressed": [*report.suppressed, *removed],
                                 "groups": grouping.group(kept)}
    if report.overview is not None:
        ids = {f.id for f in kept}
        update["overview"] = report.overview.model_copy(
            update={"marks": [m for m in report.overview.marks if m.finding in ids]})
    outcome.report = report.model_copy(update=update)
    return outcome
