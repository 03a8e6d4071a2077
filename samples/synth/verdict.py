"""Whether an analysis of a generated bundle found exactly what was planted.

One judgement for ``tests/test_synth.py`` and ``samples/bench.py``: every rule of
``expected`` reports exactly its planted ids; any other finding must be one of the
``chained`` ids, or KI001 context at ``info`` (a known issue beside the planted cause,
which a rule with evidence of its own explains). A known issue above ``info`` would be
a second cause, so it counts as unexpected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

CONTEXT_RULE = "KI001"
CONTEXT_SEVERITY = "info"


class Found(NamedTuple):
    rule_id: str
    id: str
    severity: str


class Verdict(NamedTuple):
    differing: list[str]   # rules of ``expected`` whose ids are not the planted ones
    unexpected: list[str]  # findings neither expected, chained nor context

    @property
    def as_planted(self) -> bool:
        return not self.differing and not self.unexpected


def judge(findings: Iterable[Found], planted: Mapping[str, Any]) -> Verdict:
    found: dict[str, list[str]] = {}
    context: set[str] = set()
    for finding in findings:
        found.setdefault(finding.rule_id, []).append(finding.id)
        if finding.rule_id == CONTEXT_RULE and finding.severity == CONTEXT_SEVERITY:
            context.add(finding.id)
    expected: Mapping[str, list[str]] = planted["expected"]
    differing = [rule for rule, ids in expected.items() if sorted(found.get(rule, [])) != ids]
    allowed = {finding for ids in planted["chained"].values() for finding in ids}
    unexpected = sorted(f for rule, ids in found.items() if rule not in expected
                        for f in ids if f not in allowed and f not in context)
    return Verdict(differing, unexpected)
