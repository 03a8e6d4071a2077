"""The import layering of the five packages, read from their source with :mod:`ast`.

Data flows one way: ``bundle`` -> ``analyzers`` -> ``reports`` -> ``gpu_triage`` (the
CLI, the composition root). A package never imports one to its right; ``reports`` reads
only the result models of ``analyzers`` (nothing of ``bundle``); ``collectors`` runs at
the customer with a bare ``python3``, so it imports none of the other packages, and only
the CLI imports it.
Inside and across packages, the module import graph has no cycle.

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
RESULT_MODELS = frozenset({"analyzers.models", "analyzers.overview_models",
                           "analyzers.diff_models", "analyzers.batch_models"})

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
                  and target not in RESULT_MODELS):
                why = "reports read the result models only"
            if why:
                found.append(f"{source} -> {target} ({why})")
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, frozenset[str]]:
    return import_graph(modules())


def test_no_package_imports_one_above_it(graph: Graph) -> None:
    assert layer_violations(graph) == []


def test_no_import_cycle(graph: Graph) -> None:
    assert [" -> ".join(cycle) for cycle in cycles(graph)] == []


def test_every_import_statement_is_read(graph: Graph) -> None:
    """Imports inside functions and under TYPE_CHECKING are edges too (known ones)."""
    assert {name.partition(".")[0] for name in graph} == set(PACKAGES)
    assert "collectors.collect" in graph["gpu_triage.cli"]  # inside collect()
    assert "analyzers.plugins" in graph["gpu_triage.cli_common"]  # under TYPE_CHECKING
    assert "reports.text" in graph["reports"]  # from reports import text, inside _text()


def test_cycles_are_named_module_by_module() -> None:
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a", "d"}),
             "d": frozenset(), "e": frozenset({"e"})}
    assert cycles(graph) == [["a", "b", "c", "a"], ["e", "e"]]
    assert cycles({"a": frozenset({"b"}), "b": frozenset()}) == []


def test_violations_name_the_edge() -> None:
    graph = {"bundle.x": frozenset({"analyzers.y"}),
             "reports.r": frozenset({"analyzers.engine", "analyzers.models", "bundle.x"}),
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
# facts know nothing of rule ids. What still breaks that is listed here, edge by edge,
# to be removed as each judgement moves into the facts; nothing may be added.
RULE_ID = re.compile(r"^(?:BND|CFG|CMP|DRV|HELM|OP|RT|SC)[0-9]{3}$")
RULE_TO_RULE_LEFT = frozenset({
    "analyzers.rules.drv.DRV002 -> analyzers.rules.drv.DRV008",
    "analyzers.rules.drv.DRV008 -> analyzers.rules.drv.DRV003",
    "analyzers.rules.drv.DRV010 -> analyzers.rules.drv.DRV003",
    "analyzers.rules.drv._lost -> analyzers.rules.drv.DRV008",
    "analyzers.rules.drv._smi -> analyzers.rules.drv.DRV003",
    # CMP's one link point: a CMP finding on a pod at a node's first failing stage is
    # caused by what OP001 names for that stage (issue 27: never two roots for one pod)
    "analyzers.rules.cmp._links -> analyzers.rules.op.OP001",
    "analyzers.rules.op.OP015 -> analyzers.rules.drv.DRV003",
    "analyzers.rules.op._causes -> analyzers.rules.drv.DRV003",
    "analyzers.rules.op._causes -> analyzers.rules.drv.DRV008",
    "analyzers.rules.op._causes -> analyzers.rules.drv.DRV009",
    "analyzers.rules.op._causes -> analyzers.rules.drv.DRV010",
    "analyzers.rules.op._causes -> analyzers.rules.op.OP012",
    "analyzers.rules.op._causes -> analyzers.rules.op.OP015",
    "analyzers.rules.op._components -> analyzers.rules.drv.DRV003",
    "analyzers.rules.op._components -> analyzers.rules.drv.DRV008",
    "analyzers.rules.op._hostdriver -> analyzers.rules.drv.DRV003",
})
FACTS_NAMING_RULES_LEFT = frozenset({
    "analyzers.facts.driverkernel: OP010",
    "analyzers.facts.fabric: OP005",
    "analyzers.facts.stages: RT001",
})


def rule_to_rule_imports(graph: Graph) -> set[str]:
    """``a -> b`` where a module of the rule families imports a rule's own module
    (``analyzers/rules/<family>/<ID>.py``); its family's ``_`` helpers are allowed."""
    return {f"{name} -> {target}" for name, targets in graph.items()
            if name.startswith("analyzers.rules.") for target in targets
            if target.startswith("analyzers.rules.") and target.count(".") == 3
            and RULE_ID.match(target.rpartition(".")[2])}


def test_no_new_rule_imports_another_rule() -> None:
    found = rule_to_rule_imports(import_graph(modules()))
    assert sorted(found - RULE_TO_RULE_LEFT) == [], "a rule asks another rule: make it a fact"
    assert sorted(RULE_TO_RULE_LEFT - found) == [], "gone: drop it from RULE_TO_RULE_LEFT"


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


def test_no_new_fact_names_a_rule_id() -> None:
    found = set()
    for name, path in modules().items():
        if not name.startswith("analyzers.facts"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found |= {f"{name}: {word}" for word in re.findall(r"\w+", node.value)
                          if RULE_ID.match(word) and len(node.value) < 40}
    assert sorted(found - FACTS_NAMING_RULES_LEFT) == [], "facts name no rule ids"
    assert sorted(FACTS_NAMING_RULES_LEFT - found) == [], "gone: drop it from the list"
