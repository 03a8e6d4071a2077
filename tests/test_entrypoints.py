"""Rule discovery through the ``gpu_triage.rules`` entry points, read by
:mod:`importlib.metadata` from the installed metadata, built-in families and third-party
plugins alike (:mod:`analyzers.engine.plugins`)."""

from __future__ import annotations

import importlib
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from analyzers.engine import plugins
from analyzers.engine.plugins import BUILTIN_ORIGIN, GROUP, discover, entry_points

ROOT = Path(__file__).resolve().parent.parent
OWN_METADATA = "Metadata-Version: 2.1\nName: gpu-triage\nVersion: 0.1.0\n\nlong description\n"
REGISTERED = sorted(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
                    ["project"]["entry-points"][GROUP].items())


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
    for _, value in REGISTERED:
        assert importlib.import_module(value.partition(":")[0]).RULES
    directory = tmp_path / "site-packages"
    _dist(directory, "gpu_triage-0.1.0.dist-info", entry_points=_entry_points_txt(REGISTERED))
    stdlib = sysconfig.get_paths()["stdlib"]
    monkeypatch.setattr(sys, "path", [str(directory), stdlib, f"{stdlib}/lib-dynload",
                                      str(tmp_path / "absent")])
    return directory


def _pairs(discovery: plugins.Discovery) -> tuple[list[tuple[str, str]], list[str]]:
    return [(lr.rule.id, lr.origin) for lr in discovery.rules], discovery.errors


def test_the_installed_builtin_entry_points_are_what_pyproject_registers() -> None:
    """A family added to pyproject.toml is found only after pip install -e . again."""
    installed = sorted((p.name, p.value) for p in entry_points() if p.origin == BUILTIN_ORIGIN)
    assert installed == REGISTERED


def test_the_builtin_rules_load_as_installed(site: Path) -> None:
    fast = _pairs(discover())
    assert len(fast[0]) == 70 and fast[1] == []  # every built-in family's rules
    assert {origin for _, origin in fast[0]} == {"built-in"}


def test_a_third_party_plugin_comes_after_the_builtin_families(site: Path) -> None:
    _dist(site, "acme_rules-1.0.dist-info", metadata="Name: acme-rules\n",
          entry_points=f"[{GROUP}]\nacme = acme_rules:RULES\n")
    points = [(p.origin, p.name) for p in entry_points()]
    assert points == [*((BUILTIN_ORIGIN, name) for name, _ in REGISTERED),
                      ("acme-rules (acme)", "acme")]
    assert _pairs(discover())[1] == [
        "acme-rules (acme): cannot load acme_rules:RULES: ModuleNotFoundError: "
        "No module named 'acme_rules'"]


def test_a_builtin_family_that_fails_to_load_is_reported(site: Path) -> None:
    (site / "gpu_triage-0.1.0.dist-info" / "entry_points.txt").write_text(
        _entry_points_txt([("builtin-zz", "analyzers.rules.zz:RULES")]), encoding="utf-8")
    assert _pairs(discover()) == ([], [
        "built-in: cannot load analyzers.rules.zz:RULES: ModuleNotFoundError: "
        "No module named 'analyzers.rules.zz'"])
