"""One way to register a built-in rule family (docs/writing-rules.md, "Registering"):
``pyproject.toml`` names ``analyzers.rules.<family>:RULES``, and that module's ``RULES``
is one list, written once after every import, that names each rule of the family in ID
order. Rule classes live in the family module or in a ``<family>_<theme>.py`` module;
no other module keeps a ``RULES`` list."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import tomllib
from pathlib import Path

import pytest

import analyzers.rules
from analyzers.plugins import GROUP
from analyzers.rule import Rule

ROOT = Path(__file__).resolve().parent.parent
REGISTERED = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
    "project"]["entry-points"][GROUP]
FAMILIES = {name.removeprefix("builtin-"): value for name, value in REGISTERED.items()}
RULE_MODULES = sorted(info.name for info in pkgutil.iter_modules(analyzers.rules.__path__))


def _family_module(family: str) -> Path:
    return ROOT / "analyzers" / "rules" / f"{family}.py"


def test_every_entry_point_names_its_family_module() -> None:
    assert {family: f"analyzers.rules.{family}:RULES" for family in FAMILIES} == FAMILIES


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_rules_is_one_list_after_the_imports(family: str) -> None:
    tree = ast.parse(_family_module(family).read_text(encoding="utf-8"))
    uses = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == "RULES"]
    assert len(uses) == 1, f"{family}.py: RULES is built in one statement, not appended to"
    (statement,) = [node for node in tree.body if any(n is uses[0] for n in ast.walk(node))]
    assert isinstance(statement, ast.Assign | ast.AnnAssign)
    assert isinstance(statement.value, ast.List), f"{family}.py: RULES is a list literal"
    late = [node.lineno for node in tree.body
            if isinstance(node, ast.Import | ast.ImportFrom) and node.lineno > statement.lineno]
    assert late == [], f"{family}.py: imports after RULES"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_rules_are_the_family_in_id_order(family: str) -> None:
    rules = importlib.import_module(f"analyzers.rules.{family}").RULES
    ids = [rule.id for rule in rules]
    assert ids == sorted(ids)
    assert all(rule_id.removeprefix(family.upper()).isdigit() for rule_id in ids), ids
    assert all(rule.__module__ == f"analyzers.rules.{family}"
               or rule.__module__.startswith(f"analyzers.rules.{family}_") for rule in rules)


def test_only_family_modules_keep_a_rules_list() -> None:
    keeping = [name for name in RULE_MODULES
               if hasattr(importlib.import_module(f"analyzers.rules.{name}"), "RULES")]
    assert keeping == sorted(FAMILIES)


def test_every_rule_class_is_registered_once() -> None:
    defined = set()
    for name in RULE_MODULES:
        module = importlib.import_module(f"analyzers.rules.{name}")
        defined |= {cls for _, cls in inspect.getmembers(module, inspect.isclass)
                    if issubclass(cls, Rule) and cls is not Rule
                    and cls.__module__ == module.__name__ and "id" in vars(cls)}
    registered = [rule for family in FAMILIES
                  for rule in importlib.import_module(f"analyzers.rules.{family}").RULES]
    assert len(registered) == len(set(registered))
    assert sorted(rule.id for rule in defined) == sorted(rule.id for rule in registered)
