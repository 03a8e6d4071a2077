"""A verdict several rules need is judged once per run and kept in the facts: the driver
"not usable" (DRV003's) and the module "refused" (DRV004's), which OP001, DRV009 and
others link to, are not judged again by each of them; nor how nvidia-smi failed (DRV009,
DRV003)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.facts import driver, secureboot
from analyzers.facts import smi as facts_smi
from bundle import open_bundle

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.mark.parametrize("sample", ["secureboot-dkms-refused", "nouveau-loaded"])
def test_driver_verdicts_are_judged_once_per_node(monkeypatch: pytest.MonkeyPatch,
                                                  sample: str) -> None:
    calls: Counter[tuple[str, str]] = Counter()
    # judge_unusable reads the mismatch evidence once for each node it judges
    problems = driver._mismatch_evidence
    refusal = secureboot.judge_refusal
    smi = facts_smi.read_failure

    def count_problems(facts: object, name: str, kernel: object) -> object:
        calls[("DRV003", name)] += 1
        return problems(facts, name, kernel)  # type: ignore[arg-type]

    def count_refusal(ctx: object, name: str) -> object:
        calls[("DRV004", name)] += 1
        return refusal(ctx, name)  # type: ignore[arg-type]

    monkeypatch.setattr(driver, "_mismatch_evidence", count_problems)
    def count_smi(bundle: object, name: str) -> object:
        calls[("nvidia-smi", name)] += 1
        return smi(bundle, name)  # type: ignore[arg-type]

    monkeypatch.setattr(secureboot, "judge_refusal", count_refusal)
    monkeypatch.setattr(facts_smi, "read_failure", count_smi)
    with open_bundle(SAMPLES / sample) as opened:
        report = analyze(opened, discover().rules)
    found = {f.rule_id for f in report.findings}
    assert {"DRV003", "OP001"} <= found or {"DRV004", "OP001"} <= found
    assert calls and set(calls.values()) == {1}, calls
    assert {rule for rule, _ in calls} == {"DRV003", "DRV004", "nvidia-smi"}
