"""The import layering of the five packages, read from their source with :mod:`ast`.

Data flows one way: ``bundle`` -> ``analyzers`` -> ``reports`` -> ``gpu_triage`` (the
CLI, the composition root). A package never imports one to its right; ``reports`` reads
only the result models of ``analyzers`` (nothing of ``bundle``); ``collectors`` runs at
the customer with a bare ``python3``, so it imports none of the other packages, and only
the CLI imports it.
Inside and across packages, the module import graph has no cycle.

Inside ``analyzers`` the modules live in rooms, in the order the data flows:
``results`` (the models everything returns) -> ``knowledge`` (the packaged data and their
loaders) -> ``facts`` -> ``rules`` (the rule base ``analyzers/rule.py``, ``refs.py``,
``commands.py`` and ``analyzers/rules/``) -> ``engine`` (what runs the rules and assembles
the report). ``speed`` (the worker processes behind ``engine.analyze(..., preload=)``)
stands beside the rules: it reads facts, only the engine reads it. A room never imports
one above it, and no module of ``analyzers`` stands outside a room.

Every import statement counts, wherever it is: at the top of a module, inside a
function (a lazy import still ties the two modules together; hiding a cycle in a
function is what this test exists to stop), and under ``if TYPE_CHECKING:``. A type-only
import is counted too: it is still a dependency that mypy and the reader follow, and
none of the packages needs one that goes against the layering.

``make lint`` runs this file.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ORDER = ("bundle", "analyzers", "reports", "gpu_triage")
PACKAGES = (*ORDER, "collectors")
# What reports may import of analyzers: the result models, nothing that analyses.
RESULTS = "analyzers.results"

Graph = Mapping[str, frozenset[str]]


def modules() -> dict[str, Path]:
    """Every module of the five packages by dotted name (a package by its own name)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _targets(node: ast.Import | ast.ImportFrom, name: str, is_package: bool) -> Iterator[str]:
    """The dotted names an import statement asks for: ``from a import b`` asks for
    ``a.b``, which the caller shortens to the module ``a`` when ``b`` is a name in it."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # relative: from the module's package, one level up per extra dot
        package = name.split(".") if is_package else name.split(".")[:-1]
        package = package[:len(package) - node.level + 1]
        base = ".".join([*package, *([node.module] if node.module else [])])
    yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(known: Mapping[str, Path]) -> dict[str, frozenset[str]]:
    """Module -> the modules of the five packages it imports, from every import
    statement in it (module level, functions, ``if TYPE_CHECKING:`` blocks)."""
    graph = {}
    for name, path in known.items():
        edges = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _targets(node, name, path.name == "__init__.py"):
                while target and target not in known:  # a name inside a module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add(target)
        graph[name] = frozenset(edges)
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """One cycle (``a -> b -> ... -> a``) per strongly connected component that has
    one, found with Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1 or node in graph.get(node, ()):
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_path_around(graph, component) for component in components]


def _path_around(graph: Graph, component: list[str]) -> list[str]:
    """A cycle through the first module of ``component`` (breadth-first, so short)."""
    inside, start = set(component), component[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph.get(node, frozenset()) & inside):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a component always has one


def layer_violations(graph: Graph) -> list[str]:
    """Every import edge against the package order, as ``a -> b (why)``."""
    found = []
    for source, targets in sorted(graph.items()):
        here = source.partition(".")[0]
        for target in sorted(targets):
            there = target.partition(".")[0]
            why = None
            if here == "collectors" and there != "collectors":
                why = "collectors runs with a bare python3: it imports none of the analyzer"
            elif there == "collectors" and here != "collectors" and here != "gpu_triage":
                why = "only the CLI imports the collector"
            elif here in ORDER and there in ORDER and ORDER.index(there) > ORDER.index(here):
                why = f"{here} is below {there} ({' -> '.join(ORDER)})"
            elif (here == "reports" and there in ("bundle", "analyzers")
                  and target != RESULTS and not target.startswith(RESULTS + ".")):
                why = "reports read the result models only"
            if why:
                found.append(f"{source} -> {target} ({why})")
    return found


ROOMS = ("results", "knowledge", "facts", "rules", "speed", "engine")
# room -> the rooms it may import (its own included)
MAY_IMPORT: Mapping[str, frozenset[str]] = {
    "results": frozenset({"results"}),
    "knowledge": frozenset({"results", "knowledge"}),
    "facts": frozenset({"results", "knowledge", "facts"}),
    "rules": frozenset({"results", "knowledge", "facts", "rules"}),
    "speed": frozenset({"results", "knowledge", "facts", "speed"}),
    "engine": frozenset(ROOMS),
}
# The rule base and what every rule uses beside it, at the top of analyzers/.
RULE_BASE = frozenset({"analyzers.rule", "analyzers.refs", "analyzers.commands"})


def room(module: str) -> str | None:
    """The room of a module of ``analyzers`` (None for the package itself, which only
    names the version, and for a module outside every room)."""
    if module == "analyzers":
        return None
    if module in RULE_BASE:
        return "rules"
    second = module.split(".")[1]
    return second if second in ROOMS else None


def room_violations(graph: Graph) -> list[str]:
    """Every import inside ``analyzers`` against the order of its rooms, and every
    module that stands in no room, as ``a -> b (why)``."""
    found = []
    for source, targets in sorted(graph.items()):
        if not source.startswith("analyzers."):
            continue
        here = room(source)
        if here is None:
            found.append(f"{source} (in no room: put it in one of {', '.join(ROOMS)})")
            continue
        for target in sorted(targets):
            there = room(target) if target.startswith("analyzers.") else None
            if there is not None and there not in MAY_IMPORT[here]:
                found.append(f"{source} -> {target} ({here} may not import {there}: "
                             f"{' -> '.join(ROOMS)})")
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, frozenset[str]]:
    return import_graph(modules())


def test_no_package_imports_one_above_it(graph: Graph) -> None:
    assert layer_violations(graph) == []


def test_rooms_of_analyzers_import_only_below_them(graph: Graph) -> None:
    assert room_violations(graph) == []


def test_room_violations_name_the_edge() -> None:
    graph = {"analyzers.knowledge.xid": frozenset({"analyzers.facts.gpu"}),
             "analyzers.rules.drv.DRV001": frozenset({"analyzers.engine.selection",
                                                      "analyzers.speed", "analyzers.rule"}),
             "analyzers.facts.gpu": frozenset({"analyzers.knowledge.xid", "analyzers",
                                               "analyzers.results.models", "bundle.kube"}),
             "analyzers.speed.prefetch": frozenset({"analyzers.facts.gpu", "analyzers.rule"}),
             "analyzers.engine": frozenset({"analyzers.speed", "analyzers.rules.drv.DRV001"}),
             "analyzers.loose": frozenset()}
    assert room_violations(graph) == [
        "analyzers.knowledge.xid -> analyzers.facts.gpu (knowledge may not import facts: "
        "results -> knowledge -> facts -> rules -> speed -> engine)",
        "analyzers.loose (in no room: put it in one of results, knowledge, facts, rules, "
        "speed, engine)",
        "analyzers.rules.drv.DRV001 -> analyzers.engine.selection (rules may not import "
        "engine: results -> knowledge -> facts -> rules -> speed -> engine)",
        "analyzers.rules.drv.DRV001 -> analyzers.speed (rules may not import speed: "
        "results -> knowledge -> facts -> rules -> speed -> engine)",
        "analyzers.speed.prefetch -> analyzers.rule (speed may not import rules: "
        "results -> knowledge -> facts -> rules -> speed -> engine)",
    ]


def test_no_import_cycle(graph: Graph) -> None:
    assert [" -> ".join(cycle) for cycle in cycles(graph)] == []


def test_every_import_statement_is_read(graph: Graph) -> None:
    """Imports inside functions and under TYPE_CHECKING are edges too (known ones)."""
    assert {name.partition(".")[0] for name in graph} == set(PACKAGES)
    assert "collectors.collect" in graph["gpu_triage.cli"]  # inside collect()
    assert "analyzers.engine.plugins" in graph["gpu_triage.cli_common"]  # under TYPE_CHECKING
    assert "reports.text" in graph["reports"]  # from reports import text, inside _text()


def test_cycles_are_named_module_by_module() -> None:
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a", "d"}),
             "d": frozenset(), "e": frozenset({"e"})}
    assert cycles(graph) == [["a", "b", "c", "a"], ["e", "e"]]
    assert cycles({"a": frozenset({"b"}), "b": frozenset()}) == []


def test_violations_name_the_edge() -> None:
    graph = {"bundle.x": frozenset({"analyzers.y"}),
             "reports.r": frozenset({"analyzers.engine", "analyzers.results.models", "bundle.x"}),
             "collectors.collect": frozenset({"bundle.x"}),
             "analyzers.y": frozenset({"collectors.collect"}),
             "gpu_triage.cli": frozenset({"collectors.collect", "bundle.x"})}
    assert layer_violations(graph) == [
        "analyzers.y -> collectors.collect (only the CLI imports the collector)",
        "bundle.x -> analyzers.y (bundle is below analyzers (bundle -> analyzers -> reports "
        "-> gpu_triage))",
        "collectors.collect -> bundle.x (collectors runs with a bare python3: it imports none "
        "of the analyzer)",
        "reports.r -> analyzers.engine (reports read the result models only)",
        "reports.r -> bundle.x (reports read the result models only)",
    ]


def test_relative_imports_resolve_from_the_module(tmp_path: Path) -> None:
    package = tmp_path / "bundle"
    package.mkdir()
    (package / "__init__.py").write_text("from .a import x\n", encoding="utf-8")
    (package / "a.py").write_text("def f():\n    from . import b\n    from .b import y\n",
                                  encoding="utf-8")
    (package / "b.py").write_text("from bundle.a import f\n", encoding="utf-8")
    known = {"bundle": package / "__init__.py", "bundle.a": package / "a.py",
             "bundle.b": package / "b.py"}
    assert import_graph(known) == {"bundle": frozenset({"bundle.a"}),
                                   "bundle.a": frozenset({"bundle.b"}),
                                   "bundle.b": frozenset({"bundle.a"})}
    assert cycles(import_graph(known)) == [["bundle.a", "bundle.b", "bundle.a"]]


# Rules that stand alone (issue 26): a rule module asks facts, not other rules, and
# facts know nothing of rule ids. A judgement two rules need is a verdict of the facts
# (analyzers/facts/driver.py, ...); a link to another rule's finding names its id.
RULE_ID = re.compile(r"^(?:BND|CFG|CMP|DRV|HELM|OP|RT|SC)[0-9]{3}$")


def rule_to_rule_imports(graph: Graph) -> set[str]:
    """``a -> b`` where a module of the rule families imports a rule's own module
    (``analyzers/rules/<family>/<ID>.py``); its family's ``_`` helpers are allowed."""
    return {f"{name} -> {target}" for name, targets in graph.items()
            if name.startswith("analyzers.rules.") for target in targets
            if target.startswith("analyzers.rules.") and target.count(".") == 3
            and RULE_ID.match(target.rpartition(".")[2])}


def test_no_rule_imports_another_rule() -> None:
    found = rule_to_rule_imports(import_graph(modules()))
    assert sorted(found) == [], "a rule asks another rule: make the judgement a fact"


def test_the_rule_import_scan_finds_a_rule_asking_another() -> None:
    graph = {"analyzers.rules.op._causes": frozenset({"analyzers.rules.drv.DRV003",
                                                      "analyzers.rules.op._common"}),
             "analyzers.rules.drv.DRV009": frozenset({"analyzers.rules.drv._smi"}),
             "analyzers.facts.driver": frozenset({"analyzers.facts.smi"})}
    assert rule_to_rule_imports(graph) == {
        "analyzers.rules.op._causes -> analyzers.rules.drv.DRV003"}


def test_a_familys_helpers_are_its_own() -> None:
    """``analyzers/rules/<family>/_*.py`` is private to its family: nothing outside it
    imports one (shared evidence helpers belong below the facts)."""
    graph = import_graph(modules())
    crossing = sorted(f"{name} -> {target}" for name, targets in graph.items()
                      for target in targets
                      if target.startswith("analyzers.rules.") and target.count(".") == 3
                      and target.rpartition(".")[2].startswith("_")
                      and not name.startswith(target.rpartition(".")[0] + "."))
    assert crossing == [], "a helper two families share belongs in rules/common.py or below facts"


def rule_ids_named(name: str, source: str) -> set[str]:
    """``module: ID`` for each rule id a short string constant of ``source`` names (a
    key, a selector; long prose such as a docstring may mention a rule in passing)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found |= {f"{name}: {word}" for word in re.findall(r"\w+", node.value)
                      if RULE_ID.match(word) and len(node.value) < 40}
    return found


def test_no_fact_names_a_rule_id() -> None:
    found = set()
    for name, path in modules().items():
        if name.startswith("analyzers.facts"):
            found |= rule_ids_named(name, path.read_text(encoding="utf-8"))
    assert sorted(found) == [], "facts name no rule ids: select by signature id, not by rule"


def test_the_fact_scan_finds_a_rule_id() -> None:
    assert rule_ids_named("f", 'RULE = "OP010"\nx = m.matches("RT001")\n') == {
        "f: OP010", "f: RT001"}
    assert rule_ids_named("f", 'IDS = frozenset({"driver-install-failed"})\n') == set()


# Rules do not ask each other for verdicts by name: no rule class answers "does my
# judgement hold on this node" (``explains``), and the facts keep no verdict under a
# rule's id (``judged``). Those judgements are the facts' own.
ASKING = frozenset({"explains", "judged", "refused_gpus"})


def asking_defined(source: str) -> set[str]:
    """The functions, methods and attributes named in ``ASKING`` that ``source`` defines
    or calls."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in ASKING:
            found.add(f"def {node.name}")
        elif isinstance(node, ast.Attribute) and node.attr in ASKING:
            found.add(f".{node.attr}")
    return found


def test_no_rule_asks_another_for_its_verdict() -> None:
    found = sorted(f"{name}: {what}" for name, path in modules().items()
                   if name.startswith("analyzers")
                   for what in asking_defined(path.read_text(encoding="utf-8")))
    assert found == [], "a shared judgement is a verdict of the facts (analyzers/facts/)"


def test_the_asking_scan_finds_explains_and_judged() -> None:
    source = ("class R:\n    @classmethod\n    def explains(cls, ctx, n):\n        return 1\n"
              "x = ctx.facts.judged('DRV003', n, f)\n")
    assert asking_defined(source) == {"def explains", ".judged"}
    assert asking_defined("def explain(x):\n    return x.explanation\n") == set()
