"""One import root for the sample generators: ``samples.<module>`` from the repository
root, never a module of samples/ by its bare name (``samplekit``, ``scenarios_node``),
which would load a second copy of it under another name."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
# The importable names directly in samples/: its modules and packages.
INSIDE = frozenset({path.stem for path in SAMPLES.glob("*.py") if path.stem != "__init__"}
                   | {path.parent.name for path in SAMPLES.glob("*/__init__.py")})


def _bare_imports(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [f"{path.relative_to(root)}:{node.lineno} imports {name}" for name in names
                  if name.partition(".")[0] in INSIDE]
    return found


def test_samples_is_one_package() -> None:
    assert (SAMPLES / "__init__.py").is_file()
    assert {"samplekit", "synth", "build_samples", "scenarios_node"} <= INSIDE


def test_nothing_imports_a_sample_module_by_its_bare_name() -> None:
    files = sorted([*SAMPLES.rglob("*.py"), *(ROOT / "tests").rglob("*.py")])
    assert [line for path in files for line in _bare_imports(path)] == []


def test_a_bare_import_is_caught(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text("from samplekit.core import at\nimport samples.synth\n"
                      "def f():\n    import scenarios_node\n", encoding="utf-8")
    assert _bare_imports(source, tmp_path) == ["x.py:1 imports samplekit.core",
                                               "x.py:4 imports scenarios_node"]
