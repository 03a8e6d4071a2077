"""The contract documents in docs/ agree with the code.

docs/rule-catalog.md is generated from the rules (analyzers/engine/catalog.py) and must be what
the generator prints now; docs/findings-schema.md names every field the JSON documents
have, and its examples are valid documents.
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from analyzers.engine import catalog
from analyzers.engine.plugins import BUILTIN_ORIGIN, discover
from analyzers.results.batch_models import IndexRecord
from analyzers.results.diff_models import DiffReport
from analyzers.results.models import SCHEMA_VERSION, Report, RuleResult, RuleStatus, Severity
from analyzers.rule import Input, Rule

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "rule-catalog.md"
HINT = f"docs/rule-catalog.md is out of date; regenerate it with: .venv/bin/{catalog.REGENERATE}"


def test_committed_catalog_is_what_the_rules_say() -> None:
    assert DOC.is_file(), HINT
    assert DOC.read_text(encoding="utf-8") == catalog.render(), HINT


def test_catalog_lists_exactly_the_builtin_rules_once() -> None:
    builtin = sorted(loaded.rule.id for loaded in discover().rules
                     if loaded.origin == BUILTIN_ORIGIN)
    families = catalog.builtin_families()
    listed = [rule.id for family in families for rule in family.rules]
    assert sorted(listed) == builtin
    assert len(listed) == len(set(listed))
    text = catalog.render(families)
    for rule_id in builtin:
        assert text.count(f"\n### {rule_id}\n") == 1, rule_id
        assert text.count(f"| [{rule_id}](#{rule_id.lower()}) |") == 1, rule_id


def test_each_rule_names_the_file_that_defines_it() -> None:
    """From an id to its code without searching: the catalog's link is the defining file."""
    text = DOC.read_text(encoding="utf-8")
    for loaded in discover().rules:
        if loaded.origin != BUILTIN_ORIGIN:
            continue
        path = catalog.source_path(loaded.rule)
        assert (ROOT / path).is_file(), path
        assert f"class {loaded.rule.__name__}(" in (ROOT / path).read_text(encoding="utf-8")
        assert f"| [{loaded.rule.id}](#{loaded.rule.id.lower()}) |" in text
        assert f"[`{path}`](../{path})" in text
    start = text.index("\n### DRV009\n")
    assert "Defined in [`analyzers/rules/drv/DRV009.py`](../analyzers/rules/drv/DRV009.py)." in (
        text[start:text.index("\n### ", start + 1)])


def test_family_headings_come_from_the_registering_modules() -> None:
    headings = [family.heading for family in catalog.builtin_families()]
    assert headings[0] == ("BND: the bundle itself — what was not collected, and what could "
                           "not be read")
    assert [h.split(":")[0] for h in headings] == ["BND", "CFG", "CMP", "DRV", "HELM", "KI",
                                                   "OP", "RT", "SC"]
    for family in catalog.builtin_families():
        assert {rule.family() for rule in family.rules} == {family.heading.split(":")[0]}


def test_a_rule_section_carries_its_docstring_and_metadata() -> None:
    text = catalog.render()
    start = text.index("\n### RT002\n")
    section = text[start:text.index("\n### ", start + 1)]
    assert ("**A later containerd drop-in replaced the CRI plugin table and dropped the "
            "nvidia runtime**") in section
    assert ("Severity **critical** · confidence **confirmed** · slug `dropin-clobber` · "
            "inputs: `nodes/*/containerd/files/*`, `nodes/*/containerd/config-dump.toml` "
            "(optional), `nodes/*/containerd/version.txt` (optional)") in section
    assert "containerd 1.x merges ``imports`` in sorted order" in section
    assert "**Why it matters.**\n\n``cat 99-nvidia.toml`` looks right" in section
    assert "**Remediation.**\n\nReplace the two files with one drop-in" in section
    assert "Why it matters:" not in section and "Remediation:" not in section


class _Sample(Rule):
    """A sample rule for the catalog.

    It looks at one file.

    Why it matters:
    Because the file matters.

    Remediation:
    Look first, then change one node at a time:
      kubectl get nodes
      kubectl describe node <node>
    and check again.
    """

    id = "ZZ001"
    slug = "sample"
    severity = Severity.LOW
    inputs = (Input("x.json", per_node=True), Input("cluster/y.json", optional=True))


def test_a_made_up_family_renders_commands_as_code_and_marks_optional_inputs() -> None:
    text = catalog.render([catalog.Family("ZZ: samples", (_Sample,))])
    assert text.startswith("# Rule catalog\n")
    here = _Sample.__module__.replace(".", "/") + ".py"
    assert (f"| [ZZ001](#zz001) | low | A sample rule for the catalog | [`{here}`](../{here}) |"
            in text)
    assert text.endswith(
        "## ZZ: samples\n\n### ZZ001\n\n**A sample rule for the catalog**\n\n"
        "Severity **low** · confidence **confirmed** · slug `sample` · inputs: "
        "`nodes/*/x.json`, `cluster/y.json` "
        f"(optional)\n\nDefined in [`{here}`](../{here}).\n\n"
        "It looks at one file.\n\n**Why it matters.**\n\nBecause the file "
        "matters.\n\n**Remediation.**\n\nLook first, then change one node at a time:\n\n"
        "```\nkubectl get nodes\nkubectl describe node <node>\n```\n\nand check again.\n")


def test_check_mode_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    current = tmp_path / "current.md"
    current.write_text(catalog.render(), encoding="utf-8")
    assert catalog.main(["--check", str(current)]) == 0
    assert capsys.readouterr().err == ""

    stale = tmp_path / "stale.md"
    stale.write_text(catalog.render().replace("Severity **critical**", "Severity **low**", 1),
                     encoding="utf-8")
    assert catalog.main(["--check", str(stale)]) == 1
    assert capsys.readouterr().err == (f"{stale} is out of date; regenerate with: "
                                       f"{catalog.REGENERATE}\n")

    missing = tmp_path / "missing.md"
    assert catalog.main(["--check", str(missing)]) == 1
    assert capsys.readouterr().err.startswith(f"{missing}: cannot read: ")


def test_without_check_it_prints_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    assert catalog.main([]) == 0
    assert capsys.readouterr().out == catalog.render()


# ----------------------------------------------------------------- the findings schema

SCHEMA = DOC.parent / "findings-schema.md"


def _models(root: type[BaseModel]) -> Iterator[type[BaseModel]]:
    """``root`` and every model its fields hold, each once."""
    seen: list[type[BaseModel]] = []
    todo = [root]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.append(model)
        for field in model.model_fields.values():
            stack: list[object] = [field.annotation]
            while stack:
                hint = stack.pop()
                stack.extend(typing.get_args(hint))
                if isinstance(hint, type) and issubclass(hint, BaseModel):
                    todo.append(hint)
    return iter(seen)


@pytest.mark.parametrize("root", [Report, DiffReport, IndexRecord])
def test_findings_schema_names_every_field(root: type[BaseModel]) -> None:
    text = SCHEMA.read_text(encoding="utf-8")
    missing = [f"{model.__name__}.{name}" for model in _models(root)
               for name in model.model_fields if f"`{name}`" not in text]
    assert missing == [], "document these fields in docs/findings-schema.md"


def test_findings_schema_example_is_a_valid_report() -> None:
    text = SCHEMA.read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)```", text, flags=re.S)
    example = json.loads(blocks[0])
    report = Report.model_validate(example)
    assert report.schema_version == SCHEMA_VERSION
    assert list(example) == list(Report.model_fields)
    assert [r.status for r in report.rules] == [RuleStatus.PASSED, RuleStatus.FAILED,
                                                 RuleStatus.PASSED]
    statuses = [RuleResult.model_validate(json.loads(line.rstrip(",")))
                for line in blocks[1].splitlines()]
    assert [r.status for r in statuses] == [RuleStatus.FAILED, RuleStatus.PARTIAL]


# ------------------------------------------------------- nothing points outside the repo

ROOT = DOC.parents[1]
_OUTSIDE = re.compile(r"(\.\./)+" + "shared" + r"\b|\b" + "shared" +
                      r"/(reference|bundle-format|findings-format|rule-catalog|domain)\b")
_SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", "output"}
_TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".cfg", ".ini", ".yaml", ".yml", ".txt"}


def test_no_file_points_at_a_directory_beside_the_repository() -> None:
    """The contracts and references live in docs/; a clone of this repository alone
    has no sibling directory of shared notes to point at."""
    assert _OUTSIDE.search("layout: " + "../" + "shared" + "/bundle-format.md")
    assert _OUTSIDE.search("from " + "shared" + "/reference/xid.json")
    assert not _OUTSIDE.search("a shared GPU; shared/unshared; nvidia.com/gpu.shared")
    found = []
    stack = [ROOT]
    while stack:
        directory = stack.pop()
        for entry in sorted(directory.iterdir()):
            if entry.is_dir():
                if entry.name not in _SKIP_DIRS and not entry.name.endswith(".egg-info"):
                    stack.append(entry)
            elif entry.suffix in _TEXT_SUFFIXES or entry.name == "Makefile":
                text = entry.read_text(encoding="utf-8", errors="replace")
                found += [f"{entry.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
                          for m in _OUTSIDE.finditer(text)]
    assert found == []
