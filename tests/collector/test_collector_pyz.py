"""The one-file collector, gpu-triage-collect.pyz: built reproducibly by `make collector` (that
is `python3 -m collectors.pyz`) and by `gpu-triage collect --write-pyz`, standard library only,
node.sh read from inside the archive, and run through a real kubectl against the loopback API
server on the oldest Python it promises (3.8) and a newer one (3.11). The planted-secret corpus
also runs through it (test_planted_corpus.py)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from apiserver import ApiServer
from click.testing import CliRunner
from collector_support import COLLECTORS, REPO, secrets_list
from pyz_kit import WANTED, python, write_pyz
from test_collector_real_kubectl import NEEDS, NEWEST, bundle_files, run_collector

from collectors.pyz import SOURCES, build
from gpu_triage.cli import cli

PYTHONS = [pytest.param(v, id=f"python{v}") for v in WANTED]


def _members(data: bytes) -> list[zipfile.ZipInfo]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return archive.infolist()


def test_the_same_sources_give_the_same_bytes(tmp_path: Path) -> None:
    first, second = build(), build()
    assert first == second
    assert first.startswith(b"#!/usr/bin/env python3\n")
    infos = _members(first)
    assert [i.filename for i in infos] == ["__main__.py", *(f"collectors/{n}" for n in SOURCES)]
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {i.external_attr >> 16 for i in infos} == {0o644}
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        for name in SOURCES:  # every module and node.sh, byte for byte
            assert archive.read(f"collectors/{name}") == (COLLECTORS / name).read_bytes(), name
    # `make collector` writes exactly these bytes, executable, twice the same
    for attempt in range(2):
        out = tmp_path / f"make-{attempt}" / "gpu-triage-collect.pyz"
        done = subprocess.run([sys.executable, "-m", "collectors.pyz", str(out)], cwd=REPO,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert out.read_bytes() == first and os.access(out, os.X_OK)
    # ... and so does an installed analyzer, through its safe writer
    written = tmp_path / "from-analyzer.pyz"
    result = CliRunner().invoke(cli, ["collect", "--write-pyz", str(written)])
    assert result.exit_code == 0, result.output
    assert written.read_bytes() == first


def test_write_pyz_never_writes_through_a_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me\n")
    link = tmp_path / "collector.pyz"
    link.symlink_to(target)
    result = CliRunner().invoke(cli, ["collect", "--write-pyz", str(link)])
    assert result.exit_code != 0 and "symbolic link" in result.output
    assert target.read_text() == "keep me\n"


def test_a_changed_source_changes_the_archive(tmp_path: Path, monkeypatch) -> None:
    """Reproducible, not constant: the archive follows its sources."""
    import collectors.pyz as pyz

    before = build()
    copy = tmp_path / "collectors"
    shutil.copytree(COLLECTORS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "node.sh").write_bytes((copy / "node.sh").read_bytes() + b"# changed\n")
    monkeypatch.setattr(pyz, "__file__", str(copy / "pyz.py"))
    assert pyz.build() != before


@pytest.mark.parametrize("version", PYTHONS)
def test_it_runs_alone_on_the_promised_pythons(version: str, tmp_path: Path) -> None:
    interpreter = python(version)
    if interpreter is None:
        pytest.skip(f"no python{version} on this machine (pyenv or PATH)")
    pyz = write_pyz(tmp_path / "only-the-pyz")  # nothing of collectors/ beside it
    for args in (["--version"], ["--help"], ["--dry-run"]):
        done = subprocess.run([interpreter, "-I", str(pyz), *args], capture_output=True,
                              text=True, timeout=60, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stderr)
    plan = subprocess.run([interpreter, "-I", str(pyz), "--dry-run"], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path).stdout
    assert "kubectl debug 'node/<node>'" in plan and "nodes/<node>/dmesg.txt" in plan


@NEEDS
@pytest.mark.parametrize("version", PYTHONS)
def test_the_pyz_collects_through_real_kubectl(version: str, tmp_path: Path) -> None:
    interpreter = python(version)
    if interpreter is None:
        pytest.skip(f"no python{version} on this machine (pyenv or PATH)")
    assert NEWEST is not None
    pyz = write_pyz(tmp_path / "handed-over")
    with ApiServer(secrets=secrets_list()["items"]) as api:
        api.denied = {"list secrets"}
        code, stderr, path = run_collector(NEWEST, tmp_path, api,
                                           program=[interpreter, "-I", str(pyz)])
        methods = {(method, p) for method, p, _q in api.requests if method != "GET"}
    assert code == 0 and path is not None, stderr
    # only questions were posted: SelfSubjectAccessReviews (kubectl auth can-i)
    assert methods == {("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")}
    files, manifest, items = bundle_files(path)
    assert manifest["cluster"]["server_version"] == "v1.31.4"
    assert json.loads(files["cluster/nodes.json"])["items"][0]["metadata"]["name"]
    assert "  no   list secrets in all namespaces" in stderr  # optional: lower-case no
    assert items["cluster/helm"]["error"] is None  # can-i said no; RBAC here still let it read
