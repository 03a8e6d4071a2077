"""Packaged data kept parsed between runs (analyzers/knowledge/cache.py): read back
instead of built, built again whenever an input changes or the file cannot be used, and
never read from a directory someone else can write."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzers.knowledge import cache

ROOT = Path(__file__).resolve().parents[1]


class Builder:
    def __init__(self, value: object) -> None:
        self.value = value
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        return self.value


def _inputs(tmp_path: Path, text: str = "a = 1\n") -> list[Path]:
    source = tmp_path / "in.toml"
    source.write_text(text)
    return [source]


def test_a_value_is_built_once_then_read_back(tmp_path: Path) -> None:
    inputs, where = _inputs(tmp_path), tmp_path / "cache"
    build = Builder({"entries": ("x", 1)})
    assert cache.remembered("d", inputs, build, directory=where) == {"entries": ("x", 1)}
    assert cache.remembered("d", inputs, build, directory=where) == {"entries": ("x", 1)}
    assert build.calls == 1
    assert [p.name.partition("-")[0] for p in where.iterdir()] == ["d"]
    assert oct(where.stat().st_mode & 0o777) == "0o700"


def test_a_changed_input_or_salt_builds_again_and_replaces_the_old_file(tmp_path: Path) -> None:
    where = tmp_path / "cache"
    build = Builder("v")
    cache.remembered("d", _inputs(tmp_path, "a = 1\n"), build, directory=where)
    first = sorted(where.iterdir())
    cache.remembered("d", _inputs(tmp_path, "a = 2\n"), build, directory=where)
    assert build.calls == 2
    second = sorted(where.iterdir())
    assert len(second) == 1 and second != first
    cache.remembered("d", _inputs(tmp_path, "a = 2\n"), build, directory=where, salt="2.0")
    assert build.calls == 3


def test_a_damaged_file_is_built_again_and_rewritten(tmp_path: Path) -> None:
    inputs, where = _inputs(tmp_path), tmp_path / "cache"
    build = Builder([1, 2, 3])
    cache.remembered("d", inputs, build, directory=where)
    kept = next(where.iterdir())
    kept.write_bytes(kept.read_bytes()[:5])
    assert cache.remembered("d", inputs, build, directory=where) == [1, 2, 3]
    assert build.calls == 2
    assert cache.remembered("d", inputs, build, directory=where) == [1, 2, 3]
    assert build.calls == 2


def test_a_failed_build_keeps_nothing(tmp_path: Path) -> None:
    where = tmp_path / "cache"

    def broken() -> object:
        raise ValueError("signatures.toml: example #1 is not matched")

    with pytest.raises(ValueError, match="example #1"):
        cache.remembered("d", _inputs(tmp_path), broken, directory=where)
    assert list(where.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="no owner to check")
def test_a_directory_others_can_write_or_a_link_is_not_used(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    build = Builder("v")
    cache.remembered("d", inputs, build, directory=shared)
    cache.remembered("d", inputs, build, directory=shared)
    assert build.calls == 2
    assert list(shared.iterdir()) == []
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    cache.remembered("d", inputs, build, directory=tmp_path / "link")
    assert list((tmp_path / "real").iterdir()) == []


def test_an_unreadable_input_or_the_switch_builds_without_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = tmp_path / "cache"
    build = Builder("v")
    cache.remembered("d", [tmp_path / "missing.toml"], build, directory=where)
    assert list(where.iterdir()) == []
    monkeypatch.setenv(cache.NO_CACHE, "1")
    cache.remembered("d", _inputs(tmp_path), build, directory=where)
    assert build.calls == 2
    assert list(where.iterdir()) == []


_SNAPSHOT = """
import hashlib, json, os
from analyzers.knowledge import known_issues, signatures
if os.environ.get("MUST_READ_BACK"):  # building would fail: the values come from the cache
    known_issues.load_dir = signatures._parse_text = None
issues = [i.model_dump(mode="json") for i in known_issues.load()]
sigs = [repr(s) for s in signatures.load()]
print(hashlib.sha256(json.dumps([issues, sigs], sort_keys=True).encode()).hexdigest())
"""


def test_the_packaged_data_read_back_is_what_the_files_give(tmp_path: Path) -> None:
    """Three fresh processes: built with no cache, built and kept, read back."""
    def run(**env: str) -> str:
        done = subprocess.run([sys.executable, "-c", _SNAPSHOT], cwd=ROOT, check=True,
                              capture_output=True, text=True,
                              env={**os.environ, "XDG_CACHE_HOME": str(tmp_path), **env})
        return done.stdout.strip()

    fresh = run(**{cache.NO_CACHE: "1"})
    assert not (tmp_path / "gpu-triage").exists()
    assert run() == fresh
    kept = sorted(p.name.partition("-")[0] for p in (tmp_path / "gpu-triage" / "data").iterdir())
    assert kept == ["known", "signatures"]
    assert run(MUST_READ_BACK="1") == fresh


@pytest.mark.parametrize("value", ["", "relative/cache"])
def test_an_unset_or_relative_xdg_cache_home_means_the_home_cache(
        value: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from reports.template_cache import cache_dir as template_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", value)
    assert cache.cache_dir() == tmp_path / ".cache" / "gpu-triage" / "data"
    assert template_dir() == tmp_path / ".cache" / "gpu-triage" / "templates"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "gpu-triage" / "data"
    assert template_dir() == tmp_path / "xdg" / "gpu-triage" / "templates"


def test_without_a_home_directory_nothing_is_cached(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from reports.template_cache import template_cache

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    build = Builder("v")
    assert cache.remembered("d", _inputs(tmp_path), build) == "v"
    assert cache.remembered("d", _inputs(tmp_path), build) == "v"
    assert build.calls == 2
    assert template_cache() is None
