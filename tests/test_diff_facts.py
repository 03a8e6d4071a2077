"""``diff`` compares the facts its analyses built: one Facts per bundle, not two."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzers.engine import analyze, facts_of
from analyzers.engine.plugins import discover
from analyzers.facts import Facts
from bundle import open_bundle
from gpu_triage.cli import cli

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
INCIDENT = SAMPLES / "incident-toolkit-disabled"
HEALTHY = SAMPLES / "healthy-toolkit-enabled"


def test_diff_builds_the_facts_of_each_bundle_once(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    built: list[str] = []
    original = Facts.__init__

    def counting(self: Facts, bundle: object) -> None:
        built.append(getattr(bundle, "display", "?"))
        original(self, bundle)  # type: ignore[arg-type]

    monkeypatch.setattr(Facts, "__init__", counting)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["diff", str(INCIDENT), str(HEALTHY), "-f", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(built) == 2
    facts = {(f["subject"], f["fact"]) for f in json.loads(result.stdout)["facts"]}
    assert ("gpu-a", "nvidia runtime loaded") in facts  # the compared facts are there


def test_the_facts_of_an_analysis_stay_with_its_bundle() -> None:
    with open_bundle(INCIDENT) as opened, open_bundle(HEALTHY) as other:
        unanalysed = facts_of(opened)
        assert "gpu_nodes" not in vars(unanalysed)
        report = analyze(opened, discover().rules)
        built = facts_of(opened)
        assert built is not unanalysed and built is facts_of(opened)
        assert "gpu_nodes" in vars(built)  # filled by the analysis, ready for diff
        assert report.bundle.gpu_nodes == len(built.gpu_nodes)
        assert "gpu_nodes" not in vars(facts_of(other))  # another bundle's are its own
