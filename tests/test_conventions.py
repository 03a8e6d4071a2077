"""Command-line conventions shared by the commands: ``-o -`` is stdout, ``-o /dev/null``
discards, ``-v/--verbose`` goes before or after the subcommand, and ``diff`` warns when
its two bundles look swapped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kit.cli import invoke as _run

from gpu_triage import outputs

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
INCIDENT = SAMPLES / "incident-toolkit-disabled"   # created 2026-11-20T09:30:00Z
HEALTHY = SAMPLES / "healthy-toolkit-enabled"      # created 2026-11-20T11:05:00Z
NULL_DEVICE = os.path.exists(os.devnull) and os.devnull == "/dev/null"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def report_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "r.json"
    code, _, err = _run(["analyze", str(INCIDENT), "-f", "json", "-o", str(path), "-q"])
    assert code == 1, err
    return path


@pytest.mark.parametrize("command", ["analyze", "diff", "render"])
def test_dash_is_stdout(command: str, report_json: Path, tmp_path: Path) -> None:
    args = {"analyze": ["analyze", str(INCIDENT), "-f", "json", "-q"],
            "diff": ["diff", str(INCIDENT), str(HEALTHY), "-f", "json"],
            "render": ["render", str(report_json), "-f", "json"]}[command]
    code, out, err = _run([*args, "-o", "-"])
    assert code in (0, 1), err
    json.loads(out)  # the whole document, on stdout
    assert list(tmp_path.iterdir()) == []  # and no file named "-"


@pytest.mark.skipif(not NULL_DEVICE, reason="no /dev/null on this platform")
@pytest.mark.parametrize("command", ["analyze", "diff", "render"])
def test_dev_null_is_written(command: str, report_json: Path, tmp_path: Path) -> None:
    args = {"analyze": ["analyze", str(INCIDENT), "-f", "json", "-q"],
            "diff": ["diff", str(INCIDENT), str(HEALTHY), "-f", "json"],
            "render": ["render", str(report_json), "-f", "json"]}[command]
    code, out, err = _run([*args, "-o", "/dev/null"])
    assert code in (0, 1), err
    assert "cannot write" not in err
    assert out == ""
    assert list(tmp_path.iterdir()) == []
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")  # still the device


@pytest.mark.skipif(not NULL_DEVICE, reason="no /dev/null on this platform")
def test_only_the_null_device_itself(tmp_path: Path) -> None:
    assert outputs.is_null_device(Path("/dev/null"))
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    assert not outputs.is_null_device(link)
    with pytest.raises(outputs.OutputError, match="symbolic link"):
        outputs.write(link, "x")
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
    plain = tmp_path / "dev-null-named-file"
    plain.write_text("kept")
    assert not outputs.is_null_device(plain)
    with pytest.raises(outputs.OutputError, match="not a regular file"):
        outputs.write(Path("/dev/zero"), "x")  # another character device: still refused
    with pytest.raises(outputs.OutputError, match="not a regular file"):
        outputs.write(tmp_path, "x")            # a directory: refused


def test_analyze_to_dev_zero_is_refused(tmp_path: Path) -> None:
    code, _, err = _run(["analyze", str(INCIDENT), "-f", "json", "-q", "-o", "/dev/zero"])
    assert code == 2
    assert "cannot write /dev/zero" in err


@pytest.mark.parametrize("args", [
    ["--verbose", "analyze", str(INCIDENT)], ["-v", "analyze", str(INCIDENT)],
    ["analyze", str(INCIDENT), "--verbose"], ["analyze", "-v", str(INCIDENT)]])
def test_verbose_before_or_after_the_subcommand(args: list[str]) -> None:
    # --verbose shows progress on stderr even when it is not a terminal
    code, out, err = _run([*args, "-f", "json", "-o", "-"])
    assert code == 1, err
    assert json.loads(out)["bundle"]["layout"] == "gpu-triage v1"
    assert "analysing the files of 4 node(s)" in err


def test_without_verbose_no_progress() -> None:
    code, _, err = _run(["analyze", str(INCIDENT), "-f", "json", "-o", "-"])
    assert code == 1, err
    assert "analysing" not in err


def test_verbose_after_double_dash_is_an_argument() -> None:
    code, _, err = _run(["analyze", "-q", "--", "--verbose"])
    assert code == 3, err  # "--verbose" is a bundle path here, and there is none
    assert "--verbose" in err


def test_diff_warns_when_before_is_newer() -> None:
    code, _, err = _run(["diff", str(HEALTHY), str(INCIDENT), "-o", "-"])
    assert code == 1, err  # the "new" findings are really the ones fixed
    assert ("warning: BEFORE was collected after AFTER (2026-11-20T11:05:00Z > "
            "2026-11-20T09:30:00Z)") in err


def test_diff_in_order_does_not_warn() -> None:
    code, _, err = _run(["diff", str(INCIDENT), str(HEALTHY), "-o", "-"])
    assert code == 0, err
    assert "warning: BEFORE" not in err


def test_reversed_check_ignores_missing_or_bad_times(capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_triage.cli_diff import warn_if_reversed

    warn_if_reversed(None, "2026-11-20T09:30:00Z")
    warn_if_reversed("2026-11-20T11:05:00Z", "not a time")
    warn_if_reversed("2026-11-20T09:30:00Z", "2026-11-20T09:30:00Z")
    assert capsys.readouterr().err == ""
    warn_if_reversed("2026-11-20T10:00:00+00:00", "2026-11-20T10:30:00+01:00")
    assert "are the two bundles swapped?" in capsys.readouterr().err
