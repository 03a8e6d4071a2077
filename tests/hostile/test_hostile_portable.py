"""The readers on a platform without ``os.pread`` and directory descriptors (Windows).

An autouse fixture takes ``os.pread``, every ``dir_fd`` call and ``scandir(fd)`` away,
as Windows lacks them; the directory reader's whole hostile suite then runs again on
the portable path (:class:`bundle.portable.PathAccess`) and must record exactly the same
refusals, and a whole analysis of an archive and a directory must equal the one made
with the POSIX calls, with no rule in ``error``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hostile_kit import analyze_path
from kit.bundles import pack_dir
from test_hostile_archives import (  # noqa: F401 - collected again here, without POSIX calls
    test_directory_bundle_refusals,
    test_directory_file_swapped_for_a_fifo_does_not_block,
)
from test_hostile_directory import (  # noqa: F401 - collected again here, without POSIX calls
    test_cap_met_before_the_manifest_is_named,
    test_deep_tree_stops_at_the_depth_cap,
    test_directory_swapped_for_a_link_is_not_followed,
    test_file_changed_after_listing_is_not_read,
    test_file_over_the_member_cap_same_as_archive,
    test_member_cap_counts_every_entry,
    test_member_cap_counts_while_listing,
    test_sparse_directory_bomb,
    test_sparse_means_holes_make_up_half,
    test_total_cap_reads_the_manifest_first,
    test_total_cap_same_as_archive,
    test_valid_bundle_reads_the_same_as_its_archive,
)

from bundle import open_bundle
from bundle.portable import FdAccess, PathAccess, directory_access, read_at
from gpu_triage.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
INCIDENT = SAMPLES / "incident-toolkit-disabled"


def _reference(tmp_path: Path) -> tuple[Path, bytes, bytes]:
    """The sample as a .tgz, and the findings JSON of both forms made with the POSIX
    calls (before the fixture below takes them away)."""
    archive = pack_dir(INCIDENT, tmp_path / "incident.tgz")
    return (archive, _json(INCIDENT), _json(archive))


def _json(path: Path) -> bytes:
    report = analyze_path(path)
    return orjson.dumps([(f.id, f.severity, f.summary) for f in report.findings]
                        + [(r.rule_id, r.status) for r in report.rules])


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, bytes]:
    return _reference(tmp_path_factory.mktemp("reference"))


@pytest.fixture(autouse=True)
def _no_posix_calls(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    if "reference" in request.fixturenames:
        request.getfixturevalue("reference")  # made with the POSIX calls, first
    monkeypatch.delattr(os, "pread", raising=False)
    monkeypatch.setattr(os, "supports_dir_fd", set())
    monkeypatch.setattr(os, "supports_fd", set())
    # and the calls themselves refuse what Windows refuses, so a reader that used them
    # anyway would fail here as it does there
    for call in ("open", "stat"):
        monkeypatch.setattr(os, call, _without_dir_fd(getattr(os, call)))
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if isinstance(path, int):
            raise TypeError("scandir: path should be string, bytes or os.PathLike, not int")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)


def _without_dir_fd(call: Callable[..., Any]) -> Callable[..., Any]:
    def refusing(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("dir_fd") is not None:
            raise NotImplementedError("dir_fd unavailable on this platform")
        return call(*args, **kwargs)

    return refusing


def test_the_portable_path_is_the_one_taken() -> None:
    assert not hasattr(os, "pread")
    assert isinstance(directory_access(), PathAccess)


def test_read_at_without_pread_reads_the_given_range(tmp_path: Path) -> None:
    path = tmp_path / "spool"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_at(fd, 4, 3) == b"3456"
        assert read_at(fd, 100, 8) == b"89"
        assert read_at(fd, 4, 20) == b""
    finally:
        os.close(fd)


def test_archive_and_directory_analyse_as_with_posix_calls(
        reference: tuple[Path, bytes, bytes]) -> None:
    """The issue's case: a .tgz analysed without os.pread had 38 rules in error and 6 of
    27 findings. Now both forms equal the POSIX analysis, with no rule in error."""
    archive, from_dir, from_tgz = reference
    assert _json(archive) == from_tgz
    assert _json(INCIDENT) == from_dir
    statuses = dict(orjson.loads(from_tgz)[-1:])  # sanity: the reference has rules
    assert statuses
    report = analyze_path(archive)
    assert [r.rule_id for r in report.rules if r.status.value == "error"] == []
    assert any(f.rule_id == "RT001" for f in report.findings)


def test_cli_exit_code_without_posix_calls(reference: tuple[Path, bytes, bytes],
                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    archive = reference[0]
    assert main(["analyze", str(archive), "-f", "json", "-o", "r.json"]) == 1
    assert "incomplete" not in capsys.readouterr().err
    assert main(["analyze", str(INCIDENT), "-f", "text", "-o", "r.txt"]) == 1


def test_a_link_at_the_last_component_is_refused_on_read(tmp_path: Path) -> None:
    """A file swapped for a link after the listing is not read through it."""
    from kit.bundles import write_dir

    outside = tmp_path / "secret"
    outside.write_bytes(b"do not read")
    root = write_dir(tmp_path / "b", {"cluster/nodes.json": b"[]"})
    with open_bundle(root) as opened:
        target = root / "cluster/nodes.json"
        target.unlink()
        target.symlink_to(outside)
        assert opened.read_bytes("cluster/nodes.json") is None
        assert [(p.path, p.message) for p in opened.problems] == [
            ("cluster/nodes.json", "changed since the directory was listed "
             "(Too many levels of symbolic links); not read")]


def test_fd_access_is_chosen_with_the_posix_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()
    if not (os.open in os.supports_dir_fd and os.scandir in os.supports_fd):
        pytest.skip("this platform has no directory descriptors")
    assert isinstance(directory_access(), FdAccess)


def test_every_format_from_one_run_without_posix_calls(
        reference: tuple[Path, bytes, bytes], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    archive = reference[0]
    assert main(["analyze", str(archive), "-f", "html,json,md,text,jira,zendesk"]) == 1
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == [f"incident.report.{s}" for s in
                       ("html", "jira.txt", "json", "md", "txt", "zendesk.md")]
    report = orjson.loads((tmp_path / "incident.report.json").read_bytes())
    assert [r["rule_id"] for r in report["rules"] if r["status"] == "error"] == []
    assert (tmp_path / "incident.report.html").read_text(encoding="utf-8").count("RT001") > 4
