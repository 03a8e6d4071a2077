"""Rules from a local directory (``--rules DIR``), without packaging them.

Every ``*.py`` file directly in DIR (names starting with ``_`` excepted) is loaded in
its own try block under a unique module name, so two directories may both hold a
``site.py``. A file provides rules through a ``RULES`` list, or else every
:class:`~analyzers.rule.Rule` subclass it defines. A file that fails to import, or
provides something that is not a valid rule, is reported and the others still load;
each rule is checked exactly like an entry-point plugin's (see
:func:`analyzers.engine.plugins.add_rules`). Loading a file runs its code: point ``--rules``
only at rules you trust.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from analyzers.engine import plugins
from analyzers.engine.plugins import Discovery, add_rules
from analyzers.rule import Rule

PACKAGE = "gpu_triage_local_rules"


def rule_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.py") if not p.name.startswith("_")
                  and p.is_file())


def module_name(path: Path) -> str:
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"{PACKAGE}_{stem}_{digest}"


def load_file(path: Path) -> ModuleType:
    """Import one rule file under its unique name (exceptions propagate)."""
    name = module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def provided(module: ModuleType) -> list[object]:
    """``RULES`` when the file defines it, else the Rule subclasses defined in it."""
    rules = getattr(module, "RULES", None)
    if rules is not None:
        if inspect.isclass(rules) or isinstance(rules, str | bytes):
            return [rules]
        try:
            return list(rules)
        except TypeError:
            return [rules]
    return [obj for _, obj in sorted(vars(module).items())
            if inspect.isclass(obj) and issubclass(obj, Rule) and obj is not Rule
            and obj.__module__ == module.__name__ and getattr(obj, "id", None)]


def load_dir(discovery: Discovery, directory: Path) -> dict[Path, list[str]]:
    """Add the rules of ``directory`` to ``discovery``; the rule ids each file provided."""
    loaded: dict[Path, list[str]] = {}
    if not directory.is_dir():
        discovery.errors.append(f"{directory}: not a directory of rule files")
        return loaded
    files = rule_files(directory)
    if not files:
        discovery.errors.append(f"{directory}: no *.py rule files")
    for path in files:
        origin = f"local {path}"
        before = len(discovery.rules)
        try:
            module = load_file(path)
        except Exception as exc:  # noqa: BLE001 - a rule file may fail in any way
            discovery.errors.append(f"{origin}: cannot load: {type(exc).__name__}: {exc}")
            continue
        add_rules(discovery, provided(module), origin)
        loaded[path] = [lr.rule.id for lr in discovery.rules[before:]]
    discovery.rules.sort(key=lambda lr: lr.rule.id)
    return loaded


def discover_all(directories: Sequence[Path] = ()) -> Discovery:
    """Entry-point rules, then the rules of each ``--rules`` directory."""
    discovery = plugins.discover()
    for directory in directories:
        load_dir(discovery, directory)
    return discovery
