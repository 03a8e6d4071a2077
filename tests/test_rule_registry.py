"""One way to register a built-in rule family (docs/writing-rules.md, "Registering"):
``pyproject.toml`` names ``analyzers.rules.<family>:RULES``; the family is a package in
which each rule lives alone in ``<ID>.py`` (the module's name is the rule's id), helpers
in ``_*.py`` modules, and ``RULES`` is found from those files in ID order. No module
keeps a ``RULES`` list by hand, and a rule's id never changes with a move."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import tomllib
from pathlib import Path

import pytest

import analyzers.rules
from analyzers.engine.plugins import GROUP
from analyzers.rule import Rule
from analyzers.rules import RULE_MODULE, family_rules

ROOT = Path(__file__).resolve().parent.parent
REGISTERED = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
    "project"]["entry-points"][GROUP]
FAMILIES = {name.removeprefix("builtin-"): value for name, value in REGISTERED.items()}
PACKAGES = sorted(info.name for info in pkgutil.iter_modules(analyzers.rules.__path__)
                  if info.ispkg)


def _modules(family: str) -> list[str]:
    path = importlib.import_module(f"analyzers.rules.{family}").__path__
    return sorted(info.name for info in pkgutil.iter_modules(path))


def test_every_entry_point_names_its_family_package() -> None:
    assert {family: f"analyzers.rules.{family}:RULES" for family in FAMILIES} == FAMILIES
    assert sorted(FAMILIES) == PACKAGES == ["bnd", "cfg", "cmp", "drv", "helm", "ki", "op", "rt",
                                            "sc"]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_family_holds_rule_files_and_private_helpers_only(family: str) -> None:
    modules = _modules(family)
    assert modules, family
    strays = [m for m in modules if not m.startswith("_") and not RULE_MODULE.match(m)]
    assert strays == [], f"{family}: neither <ID>.py nor _helper.py: {strays}"
    assert all(m.startswith(family.upper()) for m in modules if RULE_MODULE.match(m))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_rules_are_the_family_in_id_order_one_per_file(family: str) -> None:
    rules = importlib.import_module(f"analyzers.rules.{family}").RULES
    ids = [rule.id for rule in rules]
    assert ids == sorted(ids) == [m for m in _modules(family) if RULE_MODULE.match(m)]
    assert all(rule.id.removeprefix(family.upper()).isdigit() for rule in rules), ids
    assert all(rule.__module__ == f"analyzers.rules.{family}.{rule.id}" for rule in rules)


def test_no_helper_defines_a_rule() -> None:
    for family in FAMILIES:
        for name in _modules(family):
            if RULE_MODULE.match(name):
                continue
            module = importlib.import_module(f"analyzers.rules.{family}.{name}")
            defined = [cls.__name__ for _, cls in inspect.getmembers(module, inspect.isclass)
                       if issubclass(cls, Rule) and cls.__module__ == module.__name__]
            assert defined == [], f"{module.__name__} defines rules {defined}"


def test_a_rule_file_must_hold_the_rule_its_name_says(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "famzz"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "ZZ001.py").write_text(
        "from analyzers.rule import Rule\n\nclass Wrong(Rule):\n    id = 'ZZ002'\n",
        encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match=r"famzz\.ZZ001 must define exactly one rule, "
                                          r"with id 'ZZ001'; it defines \['ZZ002'\]"):
        family_rules("famzz", [str(package)])
