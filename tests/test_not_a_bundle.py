"""A file set that is no bundle of any layout says so, and shows what it holds."""

from __future__ import annotations

import tarfile
from io import BytesIO
from pathlib import Path

import pytest

from bundle import open_bundle
from bundle.problems import BundleError

WHY = ("no manifest.json at the top or one directory down, and none of the other layouts "
       "gpu-triage reads (troubleshoot's cluster-resources/, must-gather's "
       "gpu_operand_pods.yaml); ")


def _tar(path: Path, names: list[str]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = 2
            archive.addfile(info, BytesIO(b"{}"))
    return path


def test_an_analysis_only_troubleshoot_archive(tmp_path: Path) -> None:
    # the shape of replicatedhq/troubleshoot testdata/supportbundle/missing-version.tar.gz
    path = _tar(tmp_path / "sb.tar.gz", ["support-bundle/analysis.json"])
    with pytest.raises(BundleError) as caught:
        open_bundle(path)
    assert str(caught.value) == (f"{path}: {WHY}it holds 1 file(s): "
                                 "support-bundle/analysis.json")


def test_many_files_are_counted_and_long_names_cut(tmp_path: Path) -> None:
    names = ["a/" + "x" * 200, "b.txt", "c.txt", "d.txt", "e.txt"]
    path = _tar(tmp_path / "many.tgz", names)
    with pytest.raises(BundleError) as caught:
        open_bundle(path)
    assert str(caught.value).endswith(f"it holds 5 file(s): a/{'x' * 115}..., b.txt, c.txt "
                                      "and 2 more")


def test_an_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(BundleError) as caught:
        open_bundle(tmp_path / "empty")
    assert str(caught.value).endswith(f"{WHY}it holds no file")
