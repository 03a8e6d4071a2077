"""Every module, file and name of the code that the documentation quotes exists: the
docs name the rooms of ``analyzers/`` (results, knowledge, facts, rules, engine, speed)
and the helpers a rule writer uses, and a move or a rename must carry the docs with it.

Quoted paths (```analyzers/facts/node.py```) must exist in the checkout; quoted dotted
names (```analyzers.facts.evidence.field```) must import, the part after the module
being an attribute of it. A quote with a placeholder (``<ID>``, ``*``) is a pattern,
not a name, and is left alone."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
PACKAGES = ("analyzers", "bundle", "reports", "gpu_triage", "collectors")
# Named as gone: a doc's record of what was tried and removed.
REMOVED = {("performance.md", "analyzers/entrypoints.py")}
GENERATED = ("tests/output",)  # written by a test run (the browser test's screenshots)
_QUOTED = re.compile(r"(`+)(.+?)\1")  # inline code, on one line
_TOPS = "|".join(PACKAGES)
_PATH = re.compile(rf"(?:{_TOPS}|tests|samples|docs)/[\w./-]*")
_DOTTED = re.compile(rf"(?:{_TOPS})(?:\.\w+)+")


def _quoted(text: str) -> list[str]:
    return [q for line in text.splitlines() for _, q in _QUOTED.findall(line)
            if not any(c in q for c in "<>*{}$")]


def _head(quote: str) -> str:
    return re.split(r"[(\s]", quote.strip(), maxsplit=1)[0].rstrip(".,:;")


def paths_named(text: str) -> set[str]:
    return {_head(q) for q in _quoted(text) if _PATH.fullmatch(_head(q))}


def names_named(text: str) -> set[str]:
    found = set()
    for quote in _quoted(text):
        head = _head(quote)
        if _DOTTED.fullmatch(head):
            found.add(head)
    return found


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` names a module or an attribute of one. Outside ``analyzers``
    a name whose module is a top-level package only (``bundle.layout``: a field of the
    report's ``bundle`` object, ``gpu_triage.rules``: the entry-point group) is not a
    name of the code and passes."""
    parts = dotted.split(".")
    least = 1 if parts[0] == "analyzers" else 2
    for cut in range(len(parts), least - 1, -1):
        module = ".".join(parts[:cut])
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            continue
        value: object = importlib.import_module(module)
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return parts[0] != "analyzers"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_the_paths_a_doc_names_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    base = doc.parent
    missing = sorted(p for p in paths_named(text) if not p.startswith(GENERATED)
                     and (doc.name, p) not in REMOVED
                     and not (ROOT / p).exists() and not (base / p).exists())
    assert missing == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_the_names_a_doc_quotes_import(doc: Path) -> None:
    missing = sorted(n for n in names_named(doc.read_text(encoding="utf-8"))
                     if not resolves(n))
    assert missing == []


def test_the_scan_sees_paths_and_names_and_refuses_the_wrong_ones() -> None:
    text = ("see `analyzers/facts/node.py`, `analyzers/nowhere.py`, `analyzers/rules/<family>/`"
            " and `analyzers.facts.evidence.field(obj, ...)`, `analyzers.facts.nope`.")
    assert paths_named(text) == {"analyzers/facts/node.py", "analyzers/nowhere.py"}
    assert names_named(text) == {"analyzers.facts.evidence.field", "analyzers.facts.nope"}
    assert resolves("analyzers.facts.evidence.field")
    assert resolves("analyzers.engine.analyze")
    assert not resolves("analyzers.facts.nope")
    assert not resolves("analyzers.facts.evidence.nope")
    assert not resolves("bundle.versions.nope")
    assert resolves("bundle.layout")  # the report's bundle.layout field, no code
