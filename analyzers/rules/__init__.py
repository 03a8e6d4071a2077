"""The built-in rules: one rule per file, ``analyzers/rules/<family>/<ID>.py``.

A family is a package (``rt``, ``sc``, ``op``, ``drv``, ``cfg``, ``helm``, ``bnd``);
its modules whose name is a rule ID each hold that one rule, its modules starting with
``_`` are the family's private helpers. Each family registers its rules through the
``gpu_triage.rules`` entry point ``analyzers.rules.<family>:RULES``, exactly as a
third-party package would; ``RULES`` is found from the files, so adding a rule is
adding its file.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable
from functools import cache

from analyzers.rule import Rule

RULE_MODULE = re.compile(r"^[A-Z]+[0-9]+$")


def family_rules(package: str, path: Iterable[str]) -> list[type[Rule]]:
    """The rule of every ``<ID>.py`` module of a family package, in ID order; each such
    module holds exactly one rule, whose id is the module's name."""
    rules: list[type[Rule]] = []
    for info in sorted(pkgutil.iter_modules(list(path)), key=lambda info: info.name):
        if not RULE_MODULE.match(info.name):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        found = [value for value in vars(module).values()
                 if isinstance(value, type) and issubclass(value, Rule)
                 and value.__module__ == module.__name__]
        if len(found) != 1 or found[0].id != info.name:
            raise ImportError(f"{module.__name__} must define exactly one rule, with id "
                              f"{info.name!r}; it defines {[r.id for r in found]}")
        rules.append(found[0])
    return rules


def family_getattr(package: str, path: Iterable[str]) -> Callable[[str], list[type[Rule]]]:
    """A family package's module ``__getattr__``: ``RULES`` (its ``gpu_triage.rules``
    entry point ``<package>:RULES``) is found from the files when asked for."""
    paths = list(path)

    def getattr_(name: str) -> list[type[Rule]]:
        if name == "RULES":
            return family_rules(package, paths)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr_


@cache
def _families() -> dict[str, list[str]]:
    """Family package name -> the rule ids of its files."""
    found: dict[str, list[str]] = {}
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg:
            continue
        package = importlib.import_module(f"{__name__}.{info.name}")
        found[info.name] = [rule.name for rule in pkgutil.iter_modules(package.__path__)
                            if RULE_MODULE.match(rule.name)]
    return found


def builtin(rule_id: str) -> type[Rule] | None:
    """The built-in rule with this id, from its file ``<family>/<ID>.py``; None when
    there is none (the rule files are the one list of built-in ids)."""
    family = rule_id.rstrip("0123456789").lower()
    if rule_id not in _families().get(family, ()):
        return None
    module = importlib.import_module(f"{__name__}.{family}.{rule_id}")
    found = [value for value in vars(module).values()
             if isinstance(value, type) and issubclass(value, Rule)
             and value.__module__ == module.__name__]
    return found[0] if len(found) == 1 else None
