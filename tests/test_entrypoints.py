"""Rule discovery without importlib.metadata when only the built-in rules are installed
(:mod:`analyzers.entrypoints`): it must answer exactly as importlib.metadata would, or
step aside."""

from __future__ import annotations

import importlib.metadata
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from analyzers import entrypoints, plugins
from analyzers.plugins import BUILTIN, GROUP, discover

ROOT = Path(__file__).resolve().parent.parent
OWN_METADATA = "Metadata-Version: 2.1\nName: gpu-triage\nVersion: 0.1.0\n\nlong description\n"


def _entry_points_txt(pairs: list[tuple[str, str]], group: str = GROUP) -> str:
    lines = ["[console_scripts]", "gpu-triage = gpu_triage.cli:main", "", f"[{group}]"]
    return "\n".join(lines + [f"{name} = {value}" for name, value in pairs]) + "\n"


def _dist(site: Path, dirname: str, *, metadata: str | None = OWN_METADATA,
          entry_points: str | None = None) -> Path:
    info = site / dirname
    info.mkdir(parents=True)
    if metadata is not None:
        (info / "METADATA").write_text(metadata, encoding="utf-8")
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return info


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site directory holding gpu-triage's metadata as pip installs it, on a sys.path
    of only the standard library (the rule modules are imported beforehand)."""
    for _, value in BUILTIN:
        importlib.import_module(value.partition(":")[0])
    directory = tmp_path / "site-packages"
    _dist(directory, "gpu_triage-0.1.0.dist-info", entry_points=_entry_points_txt(
        list(BUILTIN)))
    stdlib = sysconfig.get_paths()["stdlib"]
    monkeypatch.setattr(sys, "path", [str(directory), stdlib, f"{stdlib}/lib-dynload",
                                      str(tmp_path / "absent")])
    return directory


def _pairs(discovery: plugins.Discovery) -> tuple[list[tuple[str, str]], list[str]]:
    return [(lr.rule.id, lr.origin) for lr in discovery.rules], discovery.errors


def test_the_builtin_list_is_what_pyproject_registers() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    registered = project["project"]["entry-points"][GROUP]
    assert sorted(registered.items()) == list(BUILTIN)


def test_builtin_only_answers_as_importlib_metadata(site: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    assert entrypoints.builtin_only(GROUP, BUILTIN)
    fast = _pairs(discover())
    monkeypatch.setattr(entrypoints, "builtin_only", lambda *_: False)
    slow = _pairs(discover())
    assert fast == slow
    assert len(fast[0]) == 56 and fast[1] == []  # 38 + issue-15 and runtime rules + RT011-RT014
    assert {origin for _, origin in fast[0]} == {"built-in"}


@pytest.mark.parametrize("extra", [
    "unrelated distribution",
    "egg-info file",
    "dist-info without entry points",
    "comments and blank lines",
])
def test_what_importlib_metadata_ignores_keeps_the_fast_path(site: Path, extra: str) -> None:
    if extra == "unrelated distribution":
        _dist(site, "requests-2.0.dist-info", metadata="Name: requests\n",
              entry_points="[console_scripts]\nr = requests:main\n")
    elif extra == "egg-info file":
        (site / "legacy-1.0.egg-info").write_text("Name: legacy\n", encoding="utf-8")
    elif extra == "dist-info without entry points":
        _dist(site, "bare-1.0.dist-info", metadata="Name: bare\n")
    else:
        text = _entry_points_txt(list(BUILTIN)).replace(
            f"[{GROUP}]\n", f"\n  # the rules\n[{GROUP}]\n\n# built-in families\n")
        (site / "gpu_triage-0.1.0.dist-info" / "entry_points.txt").write_text(
            "# generated\n" + text, encoding="utf-8")
    assert entrypoints.builtin_only(GROUP, BUILTIN)


def test_a_third_party_plugin_is_left_to_importlib_metadata(site: Path) -> None:
    _dist(site, "acme_rules-1.0.dist-info", metadata="Name: acme-rules\n",
          entry_points=f"[{GROUP}]\nacme = acme_rules:RULES\n")
    assert not entrypoints.builtin_only(GROUP, BUILTIN)


@pytest.mark.parametrize("case", [
    "second gpu-triage", "extra entry point", "changed value", "missing entry point",
    "other name in METADATA", "folded name header", "no METADATA", "malformed line elsewhere",
    "upper-case suffix", "egg on sys.path", "zip on sys.path", "not a string on sys.path",
    "undecodable entry points", "no gpu-triage at all",
])
def test_anything_unusual_is_left_to_importlib_metadata(site: Path, case: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    own = site / "gpu_triage-0.1.0.dist-info"
    if case == "second gpu-triage":
        _dist(site, "gpu_triage-0.0.9.dist-info", entry_points=_entry_points_txt(list(BUILTIN)))
    elif case == "extra entry point":
        pairs = [*BUILTIN, ("builtin-xx", "analyzers.rules.xx:RULES")]
        (own / "entry_points.txt").write_text(_entry_points_txt(pairs), encoding="utf-8")
    elif case == "changed value":
        pairs = [(BUILTIN[0][0], "analyzers.rules.rt:RULES"), *BUILTIN[1:]]
        (own / "entry_points.txt").write_text(_entry_points_txt(pairs), encoding="utf-8")
    elif case == "missing entry point":
        (own / "entry_points.txt").write_text(_entry_points_txt(list(BUILTIN[1:])),
                                              encoding="utf-8")
    elif case == "other name in METADATA":
        (own / "METADATA").write_text("Metadata-Version: 2.1\nName: GPU_Triage\n",
                                      encoding="utf-8")
    elif case == "folded name header":
        (own / "METADATA").write_text("Name: gpu-triage\n  more\n", encoding="utf-8")
    elif case == "no METADATA":
        (own / "METADATA").unlink()
    elif case == "malformed line elsewhere":
        _dist(site, "odd-1.0.dist-info", metadata="Name: odd\n",
              entry_points="[console_scripts]\nno equals sign\n")
    elif case == "upper-case suffix":
        _dist(site, "Other-1.0.DIST-INFO", metadata="Name: other\n")
    elif case == "egg on sys.path":
        egg = site.parent / "thing-1.0.egg"
        (egg / "EGG-INFO").mkdir(parents=True)
        sys.path.append(str(egg))
    elif case == "zip on sys.path":
        archive = site.parent / "bundled.zip"
        with zipfile.ZipFile(archive, "w") as handle:
            handle.writestr("thing-1.0.dist-info/METADATA", "Name: thing\n")
        sys.path.append(str(archive))
    elif case == "not a string on sys.path":
        sys.path.append(site.parent)  # type: ignore[arg-type]
    elif case == "undecodable entry points":
        (site / "odd-1.0.dist-info").mkdir()
        (site / "odd-1.0.dist-info" / "entry_points.txt").write_bytes(b"[x]\na = \xff\n")
    else:
        monkeypatch.setattr(sys, "path", [str(site.parent / "absent")])
    assert not entrypoints.builtin_only(GROUP, BUILTIN)


def test_another_distribution_finder_is_left_to_importlib_metadata(
        site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Finder:
        @staticmethod
        def find_distributions(*_: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])
    assert not entrypoints.builtin_only(GROUP, BUILTIN)


def test_a_builtin_family_that_fails_to_load_is_reported_the_same_way(
        site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "BUILTIN", (("builtin-zz", "analyzers.rules.zz:RULES"),))
    (site / "gpu_triage-0.1.0.dist-info" / "entry_points.txt").write_text(
        _entry_points_txt([("builtin-zz", "analyzers.rules.zz:RULES")]), encoding="utf-8")
    fast = _pairs(discover())
    monkeypatch.setattr(entrypoints, "builtin_only", lambda *_: False)
    assert _pairs(discover()) == fast == ([], [
        "built-in: cannot load analyzers.rules.zz:RULES: ModuleNotFoundError: "
        "No module named 'analyzers.rules.zz'"])
