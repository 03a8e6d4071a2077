"""An analysis in which rules end in ``error`` is incomplete: it says so first in every
format and exits 5, whatever the findings, so it can never look clean."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzers.engine.local_rules import discover_all
from gpu_triage.cli import cli

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
HEALTHY = SAMPLES / "healthy-toolkit-enabled"
NOTICE = "INCOMPLETE ANALYSIS: 2 rule(s) ended in error (RT001, RT004)"


@pytest.fixture
def broken(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)

    def raising(self: object, ctx: object) -> list[object]:
        raise RuntimeError("simulated failure")

    for loaded in discover_all(()).rules:
        if loaded.rule.id in ("RT001", "RT004"):
            monkeypatch.setattr(loaded.rule, "check", raising)
    yield


def _analyze(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["analyze", str(HEALTHY), *args],
                                catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_healthy_sample_exits_0_when_complete(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = _analyze("-f", "text")
    assert code == 0 and "INCOMPLETE" not in out and "incomplete" not in err


def test_rules_in_error_exit_5_and_say_so_first(broken: None) -> None:
    code, out, err = _analyze("-f", "text")
    assert code == 5
    assert out.splitlines()[2].startswith(NOTICE)
    assert out.index(NOTICE) < out.index("CFG001")  # before any finding
    assert "analysis incomplete: RT001, RT004 ended in error (exit 5" in err


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_every_format_says_it_first(broken: None, fmt: str) -> None:
    code, out, _ = _analyze("-f", fmt)
    assert code == 5
    assert NOTICE in out
    assert out.index(NOTICE) < out.index("CFG001")  # before the verdict and findings


def test_json_keeps_the_statuses_and_fail_on_does_not_hide_it(broken: None) -> None:
    code, out, _ = _analyze("-f", "json", "--fail-on", "info")
    assert code == 5
    statuses = {r["rule_id"]: r["status"] for r in json.loads(out)["rules"]}
    assert statuses["RT001"] == statuses["RT004"] == "error"
