"""The synthetic S bundle: the analyzer finds exactly what was planted, and generating
it twice gives the same bytes.

``samples/synth`` plants failures on known nodes and writes ``planted.json`` with the
finding ids they must produce (``expected``) and the ids other rules may add because
of them (``chained``, documented in the manifest's ``notes``). The journals are
generated at 256 KiB per node instead of S's 1 MiB to keep the test short; journal
filler changes no finding.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from bundle import open_bundle
from samples.samplekit.containerd import ContainerdUnavailable
from samples.synth import configs
from samples.synth.__main__ import generate
from samples.synth.plan import SIZES, Plan, Role
from samples.synth.verdict import Found, judge

JOURNAL_KIB = 256


@pytest.fixture(scope="module")
def variants() -> dict[str, configs.Variant]:
    try:
        return configs.load_variants()
    except ContainerdUnavailable as exc:
        pytest.skip(f"containerd 1.6.20 is needed for real config dumps: {exc}")


def _plan(seed: int = 0) -> Plan:
    return Plan(replace(SIZES["S"], journal_kib=JOURNAL_KIB), seed)


@pytest.fixture(scope="module")
def bundle_s(tmp_path_factory: pytest.TempPathFactory,
             variants: dict[str, configs.Variant]) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("synth") / "S.tgz"
    planted = generate(_plan(), out, variants=variants)
    return out, planted


def test_every_failure_is_planted_on_s() -> None:
    roles = {role for role in Plan(SIZES["S"], 0).roles}
    assert roles == set(Role)


def test_findings_are_exactly_the_planted_ones(bundle_s: tuple[Path, dict[str, Any]]) -> None:
    path, planted = bundle_s
    discovery = discover()
    with open_bundle(path) as opened:
        report = analyze(opened, discovery.rules)
    errors = [(r.rule_id, r.reason) for r in report.rules if r.status.value == "error"]
    assert errors == []
    verdict = judge((Found(f.rule_id, f.id, f.severity.value) for f in report.findings),
                    planted)
    assert verdict.differing == []
    assert verdict.unexpected == []
    assert report.problems == []


def test_generation_is_deterministic(bundle_s: tuple[Path, dict[str, Any]],
                                     tmp_path: Path,
                                     variants: dict[str, configs.Variant]) -> None:
    first, planted = bundle_s
    again = tmp_path / "S.tgz"
    generate(_plan(), again, variants=variants)
    assert again.read_bytes() == first.read_bytes()
    assert planted["stats"]["members"] > 1000


def test_the_seed_moves_the_failures() -> None:
    assert Plan(SIZES["S"], 0).roles != Plan(SIZES["S"], 1).roles
    assert Plan(SIZES["S"], 1).planted()["expected"]["RT002"]


_PLANTED = {"expected": {"RT001": ["RT001:gpu-0002"]},
            "chained": {"OP008": ["OP008:gpu-0002"]}}


@pytest.mark.parametrize(("findings", "differing", "unexpected"), [
    ([Found("RT001", "RT001:gpu-0002", "high")], [], []),
    ([Found("RT001", "RT001:gpu-0002", "high"), Found("OP008", "OP008:gpu-0002", "high"),
      Found("KI001", "KI001:KI-KERNEL-005/gpu-0006", "info")], [], []),
    # a known issue above info would be a second cause
    ([Found("RT001", "RT001:gpu-0002", "high"),
      Found("KI001", "KI001:KI-KERNEL-005/gpu-0006", "high")],
     [], ["KI001:KI-KERNEL-005/gpu-0006"]),
    ([Found("RT001", "RT001:gpu-0003", "high"), Found("OP008", "OP008:gpu-0003", "high")],
     ["RT001"], ["OP008:gpu-0003"]),
    ([], ["RT001"], []),
])
def test_verdict(findings: list[Found], differing: list[str], unexpected: list[str]) -> None:
    verdict = judge(findings, _PLANTED)
    assert (verdict.differing, verdict.unexpected) == (differing, unexpected)
    assert verdict.as_planted is (not differing and not unexpected)
