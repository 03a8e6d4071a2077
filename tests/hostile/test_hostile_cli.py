"""No traceback reaches the user: a failing rule is ``error``; any other unexpected failure
is exit 4 with one sanitised line and a hint to rerun with ``--verbose``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import orjson
import pytest
from hostile_kit import valid_files
from kit.bundles import write_dir

import analyzers.engine
import analyzers.engine.plugins
import bundle
import gpu_triage.cli
import reports
from analyzers.engine.plugins import LoadedRule
from analyzers.results.models import Finding, Severity
from analyzers.rule import Context, Rule
from bundle.archive import NOT_AN_ARCHIVE
from gpu_triage.cli import main

HOSTILE = "bad \x1b[2J\x1b]0;pwned\x07 value\nsecond line"


class Raises(Rule):
    """A rule that raises.

    Why it matters:
    Isolation.

    Remediation:
    None.
    """

    id = "TST901"
    slug = "raises"
    severity = Severity.LOW

    def check(self, ctx: Context) -> Iterable[Finding]:
        raise KeyError(HOSTILE)


def _bundle(tmp_path: Path) -> Path:
    return write_dir(tmp_path / "b", valid_files())


def _boom(*_: object, **__: object) -> None:
    raise RuntimeError(HOSTILE)


def _own_lines(err: str) -> list[str]:
    """stderr without warnings about other engineers' plugins failing to load."""
    return [line for line in err.splitlines() if not line.startswith("warning: rule plugin")]


@pytest.mark.parametrize("target", [
    (analyzers.engine, "analyze"),
    (bundle, "open_bundle"),
    (reports, "render"),
    (gpu_triage.cli, "load_rules"),
])
def test_unexpected_failure_is_one_line_and_exit_4(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        target: tuple[object, str]) -> None:
    module, name = target
    monkeypatch.setattr(module, name, _boom)
    code = main(["analyze", str(_bundle(tmp_path)), "-f", "json", "-o", str(tmp_path / "r")])
    out, err = capsys.readouterr()
    assert code == 4
    assert out == ""
    assert _own_lines(err) == [
        "gpu-triage: internal error: RuntimeError: bad value second line "
        "(rerun with --verbose for details)"]


def test_verbose_logs_the_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    caplog: pytest.LogCaptureFixture,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(analyzers.engine, "analyze", _boom)
    code = main(["--verbose", "analyze", str(_bundle(tmp_path)), "-f", "json"])
    assert code == 4
    (logged,) = [r for r in caplog.records if r.getMessage() == "unexpected error"]
    assert logged.exc_info is not None and logged.exc_info[0] is RuntimeError
    assert capsys.readouterr().err.rstrip().endswith("(rerun with --verbose for details)")


def test_without_verbose_nothing_is_logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(analyzers.engine, "analyze", _boom)
    assert main(["analyze", str(_bundle(tmp_path)), "-f", "json"]) == 4
    assert [r for r in caplog.records if r.exc_info] == []


def test_interrupt_is_exit_130(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    def interrupt(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(analyzers.engine, "analyze", interrupt)
    assert main(["analyze", str(_bundle(tmp_path)), "-f", "json"]) == 130
    assert _own_lines(capsys.readouterr().err) == ["", "aborted"]  # click's Abort


def test_a_raising_rule_is_an_error_status_and_the_run_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    real = analyzers.engine.plugins.discover()

    def with_raiser(*_: object, **__: object) -> list[LoadedRule]:
        return [*real.rules, LoadedRule(Raises, "test")]

    monkeypatch.setattr(gpu_triage.cli, "load_rules", with_raiser)
    out = tmp_path / "r.json"
    code = main(["analyze", str(_bundle(tmp_path)), "-o", str(out), "--fail-on", "critical"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    report = orjson.loads(out.read_bytes())
    statuses = {r["rule_id"]: (r["status"], r["reason"]) for r in report["rules"]}
    assert statuses["TST901"][0] == "error"
    assert statuses["TST901"][1].startswith("KeyError: ")
    assert statuses["BND001"][0] == "passed"
    assert len(statuses) == len(real.rules) + 1
    # the run was not cut short, and an analysis with a rule in error is incomplete
    assert code == 5
    assert "analysis incomplete: TST901 ended in error" in err


def test_unreadable_bundle_is_exit_3_with_one_clean_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x\x1b[31m.tgz"
    path.write_bytes(b"\x1b[2J not an archive" * 50)
    assert main(["analyze", str(path), "-f", "json"]) == 3
    assert _own_lines(capsys.readouterr().err) == [
        f"Error: cannot read bundle {tmp_path}/x?[31m.tgz: {NOT_AN_ARCHIVE} "
        "(invalid header)"]
