"""The CLI writes the ticket report formats: HTML file, Markdown and JSON on stdout."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gpu_triage.cli import cli


def test_html_report_is_written_to_the_file(bundle_dirs: dict[str, Path],
                                            tmp_path: Path) -> None:
    target = tmp_path / "ticket.report.html"
    result = CliRunner().invoke(cli, ["analyze", str(bundle_dirs["incident"]), "-f", "html",
                                      "-o", str(target)])
    assert result.exit_code == 1, result.output          # critical findings
    assert result.stdout == ""
    assert f"html report: {target}" in result.stderr
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    for section in ('id="verdict"', 'id="glance"', 'id="findings"', 'id="nodes"',
                    'id="timeline"', 'id="coverage"', 'id="inventory"'):
        assert section in page


def test_markdown_and_json_go_to_stdout(bundle_dirs: dict[str, Path]) -> None:
    md = CliRunner().invoke(cli, ["analyze", str(bundle_dirs["incident"]), "-f", "md"])
    assert md.stdout.startswith("### gpu-triage: prod-east (Kubernetes v1.37.1)")
    assert "attached `incident.report.html`" in md.stdout
    raw = CliRunner().invoke(cli, ["analyze", str(bundle_dirs["incident"]), "-f", "json"])
    data = json.loads(raw.stdout)
    assert data["schema_version"] == 1
    assert data["overview"]["glance"]["operator"]["version"] == "26.3.1"
    assert [n["name"] for n in data["overview"]["nodes"]] == ["gpu-a", "gpu-b", "gpu-c",
                                                               "gpu-d"]
