"""One door to the bundle: rules read it only through facts, paths are named once.

Read from the source with :mod:`ast`:

- no rule module of a family in ``THROUGH_FACTS`` imports a bundle parser: of
  ``bundle`` a rule imports only what ``ALLOWED`` lists (view types, evidence types
  and the helpers that build evidence, the path names of ``bundle.specs``), and it never
  touches ``ctx.bundle``;
- no module of the analyzer spells a bundle path (``'host/lspci.txt'``,
  ``f'nodes/{n}/...'``): ``bundle/specs.py`` names each once;
- a rule's declared ``inputs`` cover the files behind the facts it reads
  (``analyzers.facts.reads``), so the two cannot drift apart.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from analyzers.engine.plugins import discover
from analyzers.facts import Facts
from analyzers.facts import reads as fact_reads
from analyzers.facts.node import NodeFacts
from analyzers.rule import Rule
from bundle import specs

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "analyzers" / "rules"
THROUGH_FACTS = ("rt", "sc", "cfg", "helm", "bnd", "drv", "op")
# What a rule may import of ``bundle``: module -> names (None: every name).
ALLOWED: dict[str, frozenset[str] | None] = {
    "bundle": frozenset({"specs"}),
    "bundle.specs": None,
    "bundle.evidence": frozenset({"Locator", "at_pointer", "clip", "first_line",
                                  "join_pointer"}),
    "bundle.kube": frozenset({"ClusterPolicy", "Container", "DaemonSet", "Deployment",
                              "Event", "HelmRevision", "KubeObject", "Node", "Pod",
                              "RuntimeClass", "Taint"}),
    "bundle.manifest": frozenset({"ManifestItem"}),
    # the records the facts hand the drv and op rules, and a CRD's name
    "bundle.kernel": frozenset({"KernelLine", "KernelSignal", "SXidEvent", "XidEvent"}),
    "bundle.nvsmi_health": frozenset({"Reading"}),
    "bundle.crds": frozenset({"Crd", "POLICY_CRD"}),
    "bundle.textfiles": frozenset({"JournalEntry"}),
}
# A quoted bundle path: a top folder of the bundle or of a node folder, or a node file.
PATH = re.compile(r"^(cluster|nodes|logs|host|containerd|crio|docker|systemd|journal|cdi)/"
                  r"|^(manifest\.json|dmesg\.txt|nvidia-smi\.xml|runtime\.json|links\.txt)$")
SCANNED = ("bundle", "analyzers", "reports", "gpu_triage")


def _family_modules(families: tuple[str, ...]) -> Iterator[Path]:
    for family in families:
        yield from sorted((RULES / family).glob("*.py"))
    if families == THROUGH_FACTS:
        yield RULES / "common.py"


def _bundle_imports(path: Path) -> Iterator[tuple[str, str]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level and \
                node.module.partition(".")[0] == "bundle":
            yield from ((node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from ((alias.name, "*") for alias in node.names
                        if alias.name.partition(".")[0] == "bundle")


def _not_allowed(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for module, name in _bundle_imports(path):
        allowed = ALLOWED.get(module, frozenset())
        if allowed is not None and name not in allowed:
            found.append(f"{path.relative_to(root)}: from {module} import {name}")
    return found


def test_rules_import_no_bundle_parser() -> None:
    found = [bad for path in _family_modules(THROUGH_FACTS) for bad in _not_allowed(path)]
    assert found == []


def test_the_import_check_catches_a_parser(tmp_path: Path) -> None:
    rule = tmp_path / "RT999.py"
    rule.write_text("from bundle.lspci import parse_lspci\nfrom bundle.kube import Pod\n"
                    "import bundle.tomlsafe\nfrom bundle import specs, Bundle\n")
    named = sorted(line.split(": ", 1)[1] for line in _not_allowed(rule, tmp_path))
    assert named == ["from bundle import Bundle", "from bundle.lspci import parse_lspci",
                     "from bundle.tomlsafe import *"]


def _bundle_accesses(path: Path) -> list[str]:
    """``<x>.bundle`` anywhere in the module (``ctx.bundle``, ``facts.bundle``)."""
    return [f"{path.relative_to(ROOT)}:{node.lineno}"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute) and node.attr == "bundle"]


def test_rules_do_not_open_the_bundle() -> None:
    assert [hit for path in _family_modules(THROUGH_FACTS)
            for hit in _bundle_accesses(path)] == []


# -- path literals ---------------------------------------------------------------------

def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def path_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string in ``source`` that spells a bundle path: a whole
    constant, or the text an f-string starts with. Docstrings are prose, not paths."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skip.update(id(part) for part in node.values)
            head = node.values[0] if node.values else None
            if isinstance(head, ast.Constant) and isinstance(head.value, str) \
                    and PATH.search(head.value):
                found.append((node.lineno, head.value + "{...}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in skip and " " not in node.value and PATH.search(node.value):
            found.append((node.lineno, node.value))
    return sorted(found)


def test_no_bundle_path_is_spelled_outside_specs() -> None:
    found = []
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "bundle" / "specs.py":
                continue
            found += [f"{path.relative_to(ROOT)}:{line}: {text!r}"
                      for line, text in path_literals(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_literal_check_catches_paths() -> None:
    source = ('"""Reads ``host/lspci.txt``."""\n'
              'A = "host/lspci.txt"\n'
              'B = f"nodes/{name}/dmesg.txt"\n'
              'C = "nvidia-smi.xml"\n'
              'D = "see host/lspci.txt for the devices"\n'
              'E = "config.toml"\n'
              'F = f"no node collected {name}"\n')
    assert path_literals(source) == [(2, "host/lspci.txt"), (3, "nodes/{...}"),
                                     (4, "nvidia-smi.xml")]


# -- inputs against the facts a rule reads ---------------------------------------------

def _module_tree(name: str) -> ast.Module:
    module = importlib.import_module(name)
    return ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))


def _definitions(name: str) -> tuple[dict[str, ast.AST], dict[str, tuple[str, str]]]:
    """A module's top-level functions and classes, and the names it imports from the
    rules' own helper modules (name -> (module, name there))."""
    defs: dict[str, ast.AST] = {}
    imported: dict[str, tuple[str, str]] = {}
    for node in _module_tree(name).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defs[node.name] = node
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith("analyzers.rules."):
            for alias in node.names:
                imported[alias.asname or alias.name] = (node.module, alias.name)
    return defs, imported


def reachable(rule: type[Rule]) -> list[ast.AST]:
    """The rule's class and every helper (of its module and the rules' helper modules)
    its code names, followed through the helpers they name in turn."""
    found: list[ast.AST] = []
    seen: set[tuple[str, str]] = set()
    todo = [(rule.__module__, rule.__name__)]
    while todo:
        module, name = todo.pop()
        if (module, name) in seen:
            continue
        seen.add((module, name))
        defs, imported = _definitions(module)
        if name not in defs:
            if name in imported:
                todo.append(imported[name])
            continue
        node = defs[name]
        found.append(node)
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and child.id != name:
                if child.id in defs:
                    todo.append((module, child.id))
                elif child.id in imported:
                    todo.append(imported[child.id])
    return found


def _spec_value(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "specs":
        value = getattr(specs, node.attr, None)
        return value if isinstance(value, str) else None
    return None


# Attributes of other records a rule reads that share a fact's name (an Xid group's
# ``events``, the driver pod's ``kernel`` version): not reads of the bundle.
HOMONYMS: dict[str, frozenset[str]] = {"DRV001": frozenset({"events"}),
                                       "OP010": frozenset({"kernel"})}


def _where(path: str) -> tuple[bool, str]:
    """(per node, path) of a bundle path or ``nodes/*/<path>`` pattern."""
    each = specs.any_node("")
    return (True, path[len(each):]) if path.startswith(each) else (False, path)


def facts_read(rule: type[Rule]) -> set[tuple[bool, str]]:
    """(per node, path) of the files behind the facts the rule's code reads."""
    found: set[tuple[bool, str]] = set()
    ignored = HOMONYMS.get(getattr(rule, "id", ""), frozenset())
    for code in reachable(rule):
        for node in ast.walk(code):
            if isinstance(node, ast.Attribute) and node.attr not in ignored:
                found.update((True, p) for p in fact_reads.NODE.get(node.attr, ()))
                found.update(_where(p) for p in fact_reads.FACTS.get(node.attr, ()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("text", "has") and node.args:
                value = _spec_value(node.args[0])
                if value is not None:
                    per_node = not value.startswith((specs.CLUSTER_DIR, specs.LOGS_DIR))
                    found.add((per_node, value))
    return found


def _covered(rule: type[Rule], per_node: bool, path: str) -> bool:
    return any(needed.per_node == per_node and (fnmatch.fnmatchcase(needed.path, path)
                                                or fnmatch.fnmatchcase(path, needed.path))
               for needed in rule.inputs)


def _rules(families: tuple[str, ...]) -> list[type[Rule]]:
    return [loaded.rule for loaded in discover().rules
            if loaded.rule.__module__.split(".")[2:3] and
            loaded.rule.__module__.split(".")[2] in families]


@pytest.mark.parametrize("rule", _rules(THROUGH_FACTS), ids=lambda rule: rule.id)
def test_inputs_cover_the_facts_the_rule_reads(rule: type[Rule]) -> None:
    missing = sorted(("nodes/*/" if per_node else "") + path
                     for per_node, path in facts_read(rule) if not _covered(rule, per_node, path))
    assert missing == []


def test_the_input_check_follows_helpers() -> None:
    """RT014 reads the cgroup files through NodeFacts.device_access, RT015 daemon.json
    through a helper of rt/_docker.py; SC004 the quotas through Facts.gpu_quotas."""
    by_id = {rule.id: rule for rule in _rules(THROUGH_FACTS)}
    assert {(True, specs.CGROUP), (True, specs.DEV_NVIDIA)} <= facts_read(by_id["RT014"])
    assert (True, specs.DOCKER_DAEMON_JSON) in facts_read(by_id["RT015"])
    assert (False, specs.RESOURCEQUOTAS) in facts_read(by_id["SC004"])
    assert (False, specs.EVENTS) in facts_read(by_id["SC004"])   # ctx.facts.events_for
    assert (True, specs.DOCKER_DAEMON_JSON) not in facts_read(by_id["SC004"])


def test_an_undeclared_fact_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "door_probe.py").write_text(
        "from analyzers.rule import Rule, node\n"
        "from bundle import specs\n\n\n"
        "def _access(ctx, name):\n"
        "    return ctx.facts.node(name).device_access\n\n\n"
        "class Reader(Rule):\n"
        "    inputs = (node(specs.CGROUP),)\n\n"
        "    def check(self, ctx):\n"
        "        return [_access(ctx, 'n'), ctx.facts.node('n').text(specs.LSPCI)]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reader = importlib.import_module("door_probe").Reader
    assert facts_read(reader) == {(True, specs.CGROUP), (True, specs.DEV_NVIDIA),
                                  (True, specs.LSPCI)}
    assert _covered(reader, True, specs.CGROUP)
    assert not _covered(reader, True, specs.DEV_NVIDIA)
    assert not _covered(reader, False, specs.CGROUP)


def test_the_reads_tables_name_real_facts() -> None:
    assert [name for name in fact_reads.NODE if not hasattr(NodeFacts, name)] == []
    assert [name for name in fact_reads.FACTS if not hasattr(Facts, name)] == []
