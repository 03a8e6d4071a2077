"""Output files never follow a link, and batch report names never collide.

A customer's tarball unpacked next to its bundle can plant a symbolic link at the name a
report is about to be written to; gpu-triage refuses such a target (exit 2, the file it
points to untouched) and otherwise writes a temporary file beside the target and renames
it into place. In batch mode, two bundles never share a report name.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hostile_kit import valid_files
from kit.bundles import pack_dir, write_dir
from kit.cli import invoke as _run

from analyzers.results.batch_models import IndexRecord
from collectors.collect import main as collect_main
from collectors.collect import write_new
from gpu_triage import batch, outputs

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
INCIDENT = SAMPLES / "incident-toolkit-disabled"
HEALTHY = SAMPLES / "healthy-toolkit-enabled"
VICTIM = "import os  # a .pth file: runs at every Python start\n"
LINK = "it is a symbolic link; gpu-triage never writes through a link (remove it, or choose " \
       "another file)"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture()
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "site-packages" / "evil.pth"
    path.parent.mkdir()
    path.write_text(VICTIM, encoding="utf-8")
    return path


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".gpu-triage-"))


# -- analyze: the default report and -o ------------------------------------------------


def test_a_link_at_the_default_report_name_is_refused(tmp_path: Path, victim: Path) -> None:
    (tmp_path / "incident-toolkit-disabled.report.html").symlink_to(victim)
    code, out, err = _run(["analyze", str(INCIDENT)])
    assert (code, out) == (2, "")  # refused before the analysis: no summary either
    assert err.splitlines() == [
        f"Error: cannot write incident-toolkit-disabled.report.html: {LINK}"]
    assert victim.read_text(encoding="utf-8") == VICTIM
    assert (tmp_path / "incident-toolkit-disabled.report.html").is_symlink()
    assert _leftovers(tmp_path) == []


def test_a_dangling_link_is_refused_and_its_target_not_created(tmp_path: Path) -> None:
    target = tmp_path / "site-packages" / "new.pth"
    (tmp_path / "incident-toolkit-disabled.report.html").symlink_to(target)
    code, _, err = _run(["analyze", str(INCIDENT)])
    assert code == 2
    assert err.splitlines() == [
        f"Error: cannot write incident-toolkit-disabled.report.html: {LINK}"]
    assert not os.path.lexists(target) and not target.parent.exists()


def test_a_link_given_with_o_is_refused(tmp_path: Path, victim: Path) -> None:
    (tmp_path / "r.json").symlink_to(victim)
    code, out, err = _run(["analyze", str(INCIDENT), "-o", "r.json"])
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"Error: cannot write r.json: {LINK}"]
    assert victim.read_text(encoding="utf-8") == VICTIM


def test_a_directory_given_with_o_is_refused(tmp_path: Path) -> None:
    (tmp_path / "r.json").mkdir()
    code, _, err = _run(["analyze", str(INCIDENT), "-o", "r.json"])
    assert code == 2
    assert err.splitlines() == [
        "Error: cannot write r.json: it exists and is not a regular file"]


def test_a_missing_directory_is_a_one_line_usage_error(tmp_path: Path) -> None:
    code, _, err = _run(["analyze", str(INCIDENT), "-o", "nowhere/r.json"])
    assert code == 2
    assert err.splitlines() == ["Error: cannot write nowhere/r.json: No such file or directory"]


def test_a_regular_file_is_replaced_on_a_rerun(tmp_path: Path) -> None:
    report = tmp_path / "incident-toolkit-disabled.report.html"
    report.write_text("old report", encoding="utf-8")
    hard = tmp_path / "hard-link"
    os.link(report, hard)
    code, _, err = _run(["analyze", str(INCIDENT)])
    assert code == 1
    assert err.splitlines()[-1] == "HTML report: incident-toolkit-disabled.report.html"
    assert report.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert hard.read_text(encoding="utf-8") == "old report"  # replaced, not written through
    assert _leftovers(tmp_path) == []


def test_a_link_swapped_in_after_the_check_is_replaced_not_followed(
        tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "r.txt"
    target.symlink_to(victim)
    monkeypatch.setattr(outputs, "check", lambda path: None)  # the race: the check missed it
    outputs.write(target, "report\n")
    assert victim.read_text(encoding="utf-8") == VICTIM
    assert not target.is_symlink() and target.read_text(encoding="utf-8") == "report\n"
    assert _leftovers(tmp_path) == []


def test_safe_name_keeps_names_readable_and_inert() -> None:
    assert outputs.safe_name("prod-cluster_2026.11") == "prod-cluster_2026.11"
    assert outputs.safe_name("x\x1b[2J\ny\u202ez") == "x_[2J_y_z"
    assert outputs.safe_name("..") == "bundle" and outputs.safe_name("") == "bundle"


# -- diff -o ----------------------------------------------------------------------------


def test_diff_output_through_a_link_is_refused(tmp_path: Path, victim: Path) -> None:
    (tmp_path / "d.md").symlink_to(victim)
    code, out, err = _run(["diff", str(INCIDENT), str(HEALTHY), "-o", "d.md"])
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"Error: cannot write d.md: {LINK}"]
    assert victim.read_text(encoding="utf-8") == VICTIM


# -- batch: names that cannot collide ------------------------------------------------------


def _index(path: Path) -> list[IndexRecord]:
    return [IndexRecord.model_validate_json(line)
            for line in path.read_text(encoding="utf-8").splitlines()]


def test_bundles_named_x_and_x_2_and_x_again_keep_their_own_reports(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    pack_dir(INCIDENT, tmp_path / "a" / "x.tgz")
    shutil.copytree(HEALTHY, tmp_path / "b" / "x")
    write_dir(tmp_path / "a" / "x-2", valid_files())
    given = [tmp_path / "a" / "x.tgz", tmp_path / "b" / "x", tmp_path / "a" / "x-2"]
    code, _, _ = _run(["analyze", *map(str, given), "--out-dir", "out", "-f", "json",
                       "--jobs", "1"])
    assert code == 1
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "index.jsonl", "x-2.report.json", "x-3.report.json", "x.report.json"]
    records = _index(out / "index.jsonl")
    assert [(r.bundle, r.reports) for r in records] == [
        (str(given[0]), ["out/x.report.json"]),
        (str(given[1]), ["out/x-3.report.json"]),  # the second "x": x-2 is a bundle's own
        (str(given[2]), ["out/x-2.report.json"]),
    ]
    for record in records:  # each report is its own bundle's
        report = json.loads((tmp_path / record.reports[0]).read_text(encoding="utf-8"))
        assert report["bundle"]["path"] == record.bundle


def test_names_are_unique_whatever_the_order_and_case() -> None:
    paths = [Path("a/x-2.tgz"), Path("b/x.tar.gz"), Path("c/x"), Path("d/X"), Path("e/x-3"),
             Path("f/x\x1b[2J.tgz"), Path("g/x_[2J")]
    stems = [job.stem for job in batch.jobs_for(paths)]
    assert stems == ["x-2", "x", "x-4", "X-5", "x-3", "x_[2J", "x_[2J-2"]
    assert len({s.casefold() for s in stems}) == len(stems)


def test_a_link_in_the_out_dir_refuses_that_report_only(tmp_path: Path, victim: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "incident-toolkit-disabled.report.json").symlink_to(victim)
    code, stdout, _ = _run(["analyze", str(INCIDENT), str(HEALTHY), "--out-dir", "out",
                            "-f", "json", "--jobs", "1"])
    assert code == 2
    assert victim.read_text(encoding="utf-8") == VICTIM
    incident, healthy = _index(out / "index.jsonl")
    assert (incident.exit_code, incident.error, incident.reports) == (
        2, f"cannot write out/incident-toolkit-disabled.report.json: {LINK}", [])
    assert (healthy.exit_code, healthy.reports) == (
        0, ["out/healthy-toolkit-enabled.report.json"])
    assert stdout.splitlines()[1].split()[-1] == "2"
    assert _leftovers(out) == []


def test_a_link_at_the_index_is_refused_before_any_analysis(tmp_path: Path,
                                                            victim: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.jsonl").symlink_to(victim)
    code, stdout, err = _run(["analyze", str(INCIDENT), str(HEALTHY), "--out-dir", "out"])
    assert (code, stdout) == (2, "")
    assert err.splitlines()[-1] == f"Error: cannot write out/index.jsonl: {LINK}"
    assert victim.read_text(encoding="utf-8") == VICTIM
    assert sorted(p.name for p in out.iterdir()) == ["index.jsonl"]


# -- collect ------------------------------------------------------------------------------


def test_collect_refuses_a_link_given_with_o(tmp_path: Path, victim: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bundle.tgz").symlink_to(victim)
    assert collect_main(["-o", "bundle.tgz"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "gpu-triage collect: cannot write 'bundle.tgz': it is a symbolic link; the collector "
        "never writes through a link"]
    assert victim.read_text(encoding="utf-8") == VICTIM


def test_collect_replaces_a_link_at_its_output_instead_of_following_it(
        tmp_path: Path, victim: Path) -> None:
    target = tmp_path / "gpu-triage-x.tgz"
    target.symlink_to(victim)
    write_new(str(target), lambda out: out.write(b"bundle"))
    assert victim.read_text(encoding="utf-8") == VICTIM
    assert not target.is_symlink() and target.read_bytes() == b"bundle"
    assert _leftovers(tmp_path) == []
