"""The command line end to end: exit codes, stdout/stderr separation, the samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from kit.bundles import pack_dir, write_tar

from gpu_triage.cli import cli, main

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
INCIDENT = SAMPLES / "incident-toolkit-disabled"
HEALTHY = SAMPLES / "healthy-toolkit-enabled"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _run(args: list[str], cwd: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_incident_sample_json_names_rt001_on_each_gpu_node(tmp_path: Path) -> None:
    code, out, _ = _run(["analyze", str(INCIDENT), "-f", "json"], tmp_path)
    assert code == 1
    report = json.loads(out)
    assert report["schema_version"] == 1
    findings = {f["id"]: f for f in report["findings"]}
    rt001 = sorted(i for i in findings if i.startswith("RT001:"))
    assert rt001 == ["RT001:gpu-a", "RT001:gpu-b", "RT001:gpu-c", "RT001:gpu-d"]
    for finding_id in rt001:
        assert findings[finding_id]["caused_by"] == ["CFG004:cluster-policy"]
    root = findings["CFG004:cluster-policy"]
    assert root["caused_by"] == []
    assert set(rt001) <= set(root["causes"])
    statuses = {r["rule_id"]: r["status"] for r in report["rules"]}
    assert statuses["RT001"] == "failed" and statuses["CFG004"] == "failed"
    assert all(s in ("passed", "failed", "skipped", "error") for s in statuses.values())


def test_healthy_sample_has_nothing_high_and_exits_zero(tmp_path: Path) -> None:
    code, out, _ = _run(["analyze", str(HEALTHY), "-f", "json"], tmp_path)
    report = json.loads(out)
    severe = [f["id"] for f in report["findings"] if f["severity"] in ("critical", "high")]
    assert severe == []
    assert code == 0


def test_default_output_is_text_plus_html_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["analyze", str(INCIDENT)])
    assert result.exit_code == 1
    assert "ROOT CAUSES" in result.stdout and "CFG004" in result.stdout
    assert "\x1b[" not in result.stdout
    html = tmp_path / "incident-toolkit-disabled.report.html"
    assert html.exists() and "Content-Security-Policy" in html.read_text()
    assert "HTML report: incident-toolkit-disabled.report.html" in result.stderr


def test_tgz_of_a_sample_reads_like_the_directory(tmp_path: Path) -> None:
    archive = pack_dir(INCIDENT, tmp_path / "incident.tgz")
    _, from_dir, _ = _run(["analyze", str(INCIDENT), "-f", "json"], tmp_path)
    _, from_tgz, _ = _run(["analyze", str(archive), "-f", "json"], tmp_path)
    ids = [f["id"] for f in json.loads(from_dir)["findings"]]
    assert [f["id"] for f in json.loads(from_tgz)["findings"]] == ids


@pytest.mark.parametrize("fmt", ["text", "json", "md", "html"])
def test_every_format_writes_to_a_file(tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"out.{fmt}"
    code, out, err = _run(["analyze", str(INCIDENT), "-f", fmt, "-o", str(target)], tmp_path)
    assert code == 1 and out == ""
    assert target.read_text().strip()
    assert f"{fmt} report: {target}" in err


def test_fail_on_critical_still_fails_and_info_threshold_semantics(tmp_path: Path) -> None:
    code, _, _ = _run(["analyze", str(HEALTHY), "-f", "json", "--fail-on", "low"], tmp_path)
    report_code, out, _ = _run(["analyze", str(HEALTHY), "-f", "json"], tmp_path)
    has_low = any(f["severity"] == "low" for f in json.loads(out)["findings"])
    assert code == (1 if has_low else 0)
    assert report_code == 0


def _garbage(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"bad-{kind}.tgz"
    if kind == "text":
        path.write_text("this is not a bundle\n")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        full = write_tar(tmp_path / "full.tgz", {"cluster/nodes.json": {"kind": "List",
                                                                        "items": []}})
        path.write_bytes(full.read_bytes()[:30])
    elif kind == "no-manifest":
        import io
        import tarfile
        with tarfile.open(path, "w:gz") as archive:
            info = tarfile.TarInfo("top/cluster/nodes.json")
            info.size = 2
            archive.addfile(info, io.BytesIO(b"{}"))
    return path


@pytest.mark.parametrize("kind", ["text", "empty", "truncated", "no-manifest"])
def test_garbage_exits_3_with_one_line(tmp_path: Path, kind: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = _garbage(tmp_path, kind)
    assert main(["analyze", str(path), "-f", "json"]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: cannot read bundle {path}")
    assert "Traceback" not in captured.err


def test_missing_path_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(tmp_path / "nope.tgz")]) == 3
    assert "cannot open" in capsys.readouterr().err


def test_rules_and_explain(tmp_path: Path) -> None:
    code, out, _ = _run(["rules"], tmp_path)
    assert code == 0
    assert any(line.startswith("RT001") and "built-in" in line for line in out.splitlines())
    code, out, _ = _run(["explain", "rt001"], tmp_path)
    assert code == 0
    assert "Why it matters:" in out and "Inputs: nodes/*/containerd/config-dump.toml" in out
    assert main(["explain", "NOPE999"]) == 2


def test_usage_error_exits_2() -> None:
    assert main(["analyze"]) == 2
    assert main(["analyze", "x", "--format", "pdf"]) == 2
