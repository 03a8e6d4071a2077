"""A standalone ``nvidia-bug-report.log.gz`` (and its plain ``.log``, and several of them
in a directory or a zip) analysed as node evidence, recognised by the report's prologue
rather than its name (``bundle.singlefile``, ``bundle.layouts.nodefiles``)."""

from __future__ import annotations

import gzip
import zipfile
from pathlib import Path

import pytest
from layouts_kit import XID, bug_report

from bundle import BundleError, open_bundle


def _ids(path: Path) -> list[str]:
    from analyzers.engine import analyze
    from analyzers.engine.local_rules import discover_all

    with open_bundle(path) as opened:
        report = analyze(opened, discover_all(()).rules)
    return sorted(f.id for f in report.findings if f.rule_id.startswith("DRV"))


@pytest.mark.parametrize("name", ["nvidia-bug-report.log.gz", "upload-1234.bin"])
def test_gzip_report_alone_names_its_node_from_uname(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(bug_report())
    with open_bundle(path) as opened:
        assert opened.layout == "node files (nvidia-bug-report.sh)"
        assert opened.paths == ["nodes/gpu-a/dmesg.txt", "nodes/gpu-a/host/cmdline",
                                "nodes/gpu-a/host/modules.txt", "nodes/gpu-a/host/uname.txt"]
        assert opened.read_bytes("nodes/gpu-a/dmesg.txt") == (XID + "\n").encode()
    assert _ids(path) == ["DRV001:gpu-a/0000:3b:00.0", "DRV002:gpu-a/0000:3b:00.0"]


def test_plain_log_and_node_named_by_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nvidia-bug-report_gpu-z.log"
    path.write_bytes(gzip.decompress(bug_report()))
    with open_bundle(path) as opened:
        assert {p.split("/")[1] for p in opened.paths} == {"gpu-z"}
    assert _ids(path) == ["DRV001:gpu-z/0000:3b:00.0", "DRV002:gpu-z/0000:3b:00.0"]


def test_several_reports_in_a_directory_and_in_a_zip(tmp_path: Path) -> None:
    other = XID.replace("3b:00", "5e:00")
    reports = {"nvidia-bug-report_gpu-a.log.gz": bug_report(),
               "nvidia-bug-report_gpu-b.log.gz": bug_report(other)}
    directory = tmp_path / "reports"
    directory.mkdir()
    for name, data in reports.items():
        (directory / name).write_bytes(data)
    archive = tmp_path / "reports.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for name, data in reports.items():
            out.writestr(f"reports/{name}", data)
    expected = ["DRV001:gpu-a/0000:3b:00.0", "DRV001:gpu-b/0000:5e:00.0",
                "DRV002:gpu-a/0000:3b:00.0", "DRV002:gpu-b/0000:5e:00.0"]
    assert _ids(directory) == expected
    assert _ids(archive) == expected


def test_gzip_of_other_text_is_still_no_bundle(tmp_path: Path) -> None:
    path = tmp_path / "nvidia-bug-report.log.gz"  # the name alone does not make a report
    path.write_bytes(gzip.compress(b"just some text\n" * 100))
    with pytest.raises(BundleError) as caught:
        open_bundle(path)
    assert caught.value.problem.startswith("not a tar, gzip, xz, bzip2, zstd or zip archive")
