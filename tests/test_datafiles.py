"""The generated JSON twins of the packaged TOML data files (analyzers/knowledge/packaged.py) and
the command that regenerates them (analyzers/datafiles.py)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import orjson
import pytest

from analyzers import datafiles
from analyzers.knowledge import packaged


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the data directory that the loaders read instead of the packaged one."""
    copy = tmp_path / "data"
    shutil.copytree(packaged.DATA, copy)
    monkeypatch.setattr(packaged, "DATA", copy)
    return copy


@pytest.mark.parametrize("name", packaged.TWINNED)
def test_twin_is_current(name: str) -> None:
    written = (packaged.DATA / f"{name}.toml.json").read_bytes()
    assert written == packaged.render_twin(name), f"stale twin: run {packaged.REGENERATE}"
    assert packaged.twin(name) == tomllib.loads(packaged.read_toml(name))


@pytest.mark.parametrize("name", packaged.TWINNED)
def test_twin_of_an_edited_toml_is_ignored(data: Path, name: str) -> None:
    toml = data / f"{name}.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert packaged.twin(name) is None


@pytest.mark.parametrize(
    "content",
    [
        None,  # missing
        b"{not json",
        b"[]",
        b'{"sha256": "0"}',
    ],
    ids=["missing", "not JSON", "not an object", "no document"],
)
def test_broken_twin_is_ignored(data: Path, content: bytes | None) -> None:
    path = data / "xid.toml.json"
    if content is None:
        path.unlink()
    else:
        path.write_bytes(content)
    assert packaged.twin("xid") is None


def test_twin_with_the_right_hash_but_no_table_is_ignored(data: Path) -> None:
    made = orjson.loads((data / "xid.toml.json").read_bytes())
    made["document"] = ["not", "a", "table"]
    (data / "xid.toml.json").write_bytes(orjson.dumps(made))
    assert packaged.twin("xid") is None


def test_regeneration_writes_current_twins(data: Path) -> None:
    toml = data / "xid.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(
        'name = "FIFO method error (legacy)"', 'name = "renamed"', 1), encoding="utf-8")
    assert datafiles.main() == 0
    for name in packaged.TWINNED:
        assert packaged.twin(name) == tomllib.loads(packaged.read_toml(name))
    twin = packaged.twin("xid")
    assert twin is not None
    assert twin["xid"]["1"]["name"] == "renamed"


def test_regeneration_refuses_a_signature_file_that_fails_its_checks(data: Path) -> None:
    toml = data / "signatures.toml"
    before = {path.name: path.read_bytes() for path in data.glob("*.json")}
    toml.write_text(toml.read_text(encoding="utf-8").replace(
        'needle = "no runtime for"', 'needle = "never in the examples"', 1), encoding="utf-8")
    with pytest.raises(ValueError, match="not matched by its own pattern/needle"):
        datafiles.main()
    assert {path.name: path.read_bytes() for path in data.glob("*.json")} == before
