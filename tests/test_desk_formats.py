"""One analysis rendered many ways: several formats from one run, ``render`` from the
JSON byte for byte, the ticket formats (Jira, Zendesk) with hostile bundle text, and
progress on stderr."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from kit.bundles import pack_dir
from markdown_it import MarkdownIt

from analyzers.results.models import Evidence, Report
from gpu_triage.cli import cli, main
from gpu_triage.progress import Progress
from reports import render
from reports.ticket_dialects import Jira

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
INCIDENT = SAMPLES / "incident-toolkit-disabled"
NAMES = {"html": "html", "json": "json", "md": "md", "text": "txt", "jira": "jira.txt",
         "zendesk": "zendesk.md"}
HOSTILE = ("*bold* _it_ [link](http://evil.example) [x|http://evil.example] ![img](http://i) "
           "<script>alert(1)</script> {noformat} {color:red}x{color} `tick` # not a heading "
           "&amp; | cell | ~~gone~~ h1. title")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _invoke(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_one_analysis_writes_every_format_and_render_remakes_each(tmp_path: Path) -> None:
    code, out, err = _invoke(["analyze", str(INCIDENT), "-f", "html,json,md", "-f",
                              "text", "-f", "jira,zendesk,json"])
    assert (code, out) == (1, "")
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(f"incident-toolkit-disabled.report.{n}" for n in NAMES.values())
    assert err.count(" report: ") == 6 and "analysed in" not in err
    report = tmp_path / "incident-toolkit-disabled.report.json"
    assert json.loads(report.read_text())["generated_at"]
    for fmt, suffix in NAMES.items():
        code, again, _ = _invoke(["render", str(report), "-f", fmt])
        assert code == 0
        expected = (tmp_path / f"incident-toolkit-disabled.report.{suffix}").read_text()
        assert again == expected, fmt


def test_several_formats_refuse_one_output_file() -> None:
    code, _, err = _invoke(["analyze", str(INCIDENT), "-f", "html,md", "-o", "x.md"])
    assert code == 2 and "-o/--output takes one format" in err
    code, _, err = _invoke(["analyze", str(INCIDENT), "-f", "html,pdf"])
    assert code == 2 and "'pdf' is not one of text, json, md, html, jira, zendesk" in err


def test_render_refuses_a_file_that_is_no_report(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"schema_version": 1}')
    code, _, err = _invoke(["render", "x.json", "-f", "md"])
    assert code == 2 and "x.json is not a gpu-triage findings JSON (tool: Field required)" in err


def _hostile_report() -> Report:
    from analyzers.engine import analyze
    from analyzers.engine.local_rules import discover_all
    from bundle import open_bundle

    with open_bundle(INCIDENT) as opened:
        report = analyze(opened, discover_all(()).rules)
    first = report.findings[0]
    hostile = first.model_copy(update={
        "title": HOSTILE, "summary": HOSTILE,
        "evidence": [Evidence(path="nodes/x/[a](b).txt", line=1, excerpt=HOSTILE)],
        "remediation": f"echo '{HOSTILE}'\n{{noformat}}\nrm -rf /"})
    groups = [g.model_copy(update={"title": HOSTILE, "summary": HOSTILE})
              if first.id in g.findings else g for g in report.groups]
    return report.model_copy(update={"findings": [hostile, *report.findings[1:]],
                                     "groups": groups})


def test_zendesk_makes_no_markup_of_bundle_text() -> None:
    text = render(_hostile_report(), "zendesk")
    tokens = MarkdownIt("commonmark").parse(text)
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in t.children or []}
    assert not kinds & {"link_open", "image", "html_inline", "html_block", "em_open"}
    html = MarkdownIt("commonmark").render(text)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "*bold* _it_ [link](http://evil.example)" in html  # shown as the text it is
    assert "<h1>" not in html and "<h2>" not in html  # only the renderer's own h3/h4
    assert "<strong>Verdict: CRITICAL CFG004</strong>" in html


def test_jira_escapes_every_markup_character_of_bundle_text() -> None:
    text = render(_hostile_report(), "jira")
    outside = re.sub(r"\{noformat\}\n.*?\n\{noformat\}", "", text, flags=re.S)
    assert HOSTILE not in outside and Jira().text(HOSTILE) in outside
    unescaped = re.compile(r"(?<!\\)[*_\[\]{}|!]")
    for line in outside.splitlines():
        if "evil" in line:
            body = re.sub(r"^(h[23]\. |\*+ |\*Verdict: [A-Z]+ [A-Z0-9]+\* )", "", line)
            body = body.replace("{{", "").replace("}}", "")
            assert not unescaped.search(body), line
    # a remediation that would close the block is not put in one
    assert "(a command that holds Jira markup is shown in the HTML report only)" in text \
        .replace("\\", "")
    assert "rm -rf /" not in text


@pytest.mark.parametrize("kind", ["jira", "zendesk"])
def test_ticket_formats_name_what_did_not_fit(kind: str) -> None:
    report = _hostile_report()
    text = render(report, kind, html_name="b.report.html")
    assert len(text) < 32_000
    assert "more" in text or len(report.groups) <= 8
    assert "b.report.html" in text


def test_progress_reads_the_archive_and_says_how_long(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    archive = pack_dir(INCIDENT, tmp_path / "incident.tgz")
    assert main(["analyze", str(archive), "-f", "json", "-o", "r.json", "--progress"]) == 1
    err = capsys.readouterr().err
    assert "reading the bundle: 100% (0 of 0 MiB)" in err
    assert "analysing the files of 4 node(s)" in err
    assert re.search(r"^analysed in \d+\.\d s$", err, re.M)
    assert main(["analyze", str(archive), "-f", "json", "-o", "r.json", "--progress",
                 "-q"]) == 1
    assert "reading" not in capsys.readouterr().err
    assert main(["analyze", str(archive), "-f", "json", "-o", "r.json"]) == 1
    assert "analysed in" not in capsys.readouterr().err  # stderr is no terminal here


def test_progress_estimates_the_time_left() -> None:
    now = [100.0]
    out = io.StringIO()
    progress = Progress(out, terminal=False, clock=lambda: now[0])
    progress.reading(1 << 20, 4 << 20)  # at once: no estimate yet
    now[0] += 3.0
    progress.reading(2 << 20, 4 << 20)
    now[0] += 0.5
    progress.reading(3 << 20, 4 << 20)  # under a second since the last line: not shown
    now[0] += 1.5
    progress.done()
    assert out.getvalue().splitlines() == [
        "reading the bundle:  25% (1 of 4 MiB)",
        "reading the bundle:  50% (2 of 4 MiB, about 3.0 s left)",
        "analysed in 5.0 s"]
    terminal = io.StringIO()
    shown = Progress(terminal, terminal=True, clock=lambda: now[0])
    shown.step("[1/56] BND001")
    shown.done()
    assert terminal.getvalue().startswith("\ranalysing [1/56] BND001")
    assert terminal.getvalue().endswith("\r\x1b[Kanalysed in 0.0 s\n")
