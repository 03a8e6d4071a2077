"""Every built-in rule's cases: ``tests/rules/cases/<ID>.toml``, one test per case.

The cases run through the harness ``gpu-triage rules test`` uses (``load_cases`` and
``check`` of :mod:`analyzers.engine.ruletest`), each with its own rule alone; a test's id
starts with the rule id, so ``pytest -k OP010`` runs OP010's cases.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analyzers.engine.plugins import LoadedRule, discover
from analyzers.engine.ruletest import Case, check, load_cases, rules_of

CASES = Path(__file__).resolve().parent / "cases"
BUILTIN: dict[str, LoadedRule] = {lr.rule.id: lr for lr in discover().rules
                                  if lr.origin == "built-in"}


def _cases() -> list[Case]:
    return [case for path in sorted(CASES.glob("*.toml"))
            for case in load_cases(path, rules_of(path, sorted(BUILTIN)))]


def _id(case: Case) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", case.name.lower()).strip("-")[:48]
    return f"{case.source.stem}-{case.number}-{slug}".rstrip("-")


ALL = _cases()


@pytest.mark.parametrize("case", ALL, ids=_id)
def test_case(case: Case) -> None:
    result = check(case, list(BUILTIN.values()))
    assert result.passed, "\n".join([case.label, *result.failures])


def test_every_case_file_names_a_builtin_rule() -> None:
    strays = sorted(p.name for p in CASES.glob("*.toml") if p.stem not in BUILTIN)
    assert not strays, f"case files named after no built-in rule: {strays}"


def _fires(case: Case) -> bool:
    """Expects a finding of its rule."""
    return any(f.startswith(f"{case.source.stem}:") for f in case.expect)


def _quiet(case: Case) -> bool:
    """Expects no finding and the rule to have passed (judged, not skipped)."""
    return not case.expect and dict(case.status).get(case.source.stem) == "passed"


def test_every_builtin_rule_has_a_firing_and_a_quiet_case() -> None:
    by_rule: dict[str, list[Case]] = {}
    for case in ALL:
        by_rule.setdefault(case.source.stem, []).append(case)
    missing = {rule: [kind for kind, has in (("firing", _fires), ("quiet", _quiet))
                      if not any(has(c) for c in by_rule.get(rule, []))]
               for rule in sorted(BUILTIN)}
    assert not {rule: kinds for rule, kinds in missing.items() if kinds}
