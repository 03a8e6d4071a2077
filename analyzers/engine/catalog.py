"""The rule catalog (``docs/rule-catalog.md``), written from the built-in rules themselves.

Each rule's title, description, "Why it matters" and "Remediation" come from its
docstring (:meth:`analyzers.rule.Rule.docs`), its id, slug, severity and inputs from its
class attributes, and each family's heading from the first line of the module that
registers the family (the built-in entry points of ``pyproject.toml``). Nothing is
written by hand, so the document cannot drift from the code;
``tests/test_rule_catalog_doc.py`` fails when the committed file differs from what this
module prints. Third-party rules installed in the same environment are not part of the
project's catalog and are left out.

    python -m analyzers.engine.catalog > docs/rule-catalog.md     # regenerate
    python -m analyzers.engine.catalog --check docs/rule-catalog.md   # exit 1 when stale
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
import textwrap
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from analyzers.engine.plugins import BUILTIN_ORIGIN, check_rule, entry_points
from analyzers.rule import SECTIONS, Rule

REGENERATE = "python -m analyzers.engine.catalog > docs/rule-catalog.md"

_INTRO = """\
# Rule catalog

<!-- Generated from the rules' docstrings and class attributes; do not edit by hand.
Change the rule, then regenerate: {regenerate} -->

Every diagnosis gpu-triage makes, by rule family. A rule id (`RT001`) is stable: it is
never renamed or given to another diagnosis, so tickets, suppression files and
automation can quote it. A finding's id is the rule id and its subject
(`RT001:gpu-a`). The table names the module that defines each rule.

For each rule: its default severity (a finding may be raised or lowered from it), its
default confidence (`confirmed`: the bundle quotes the cause; `likely`: inferred from an
absence or a pattern, and never opening with a step that changes the cluster), the
bundle paths it reads ([bundle-format.md](bundle-format.md); `nodes/*/` means every
node directory), what it checks, why it matters and what to do. A rule whose required
input is absent or unusable is reported `skipped`, and one whose input was damaged in
part is `partial`, never silently `passed` ([findings-schema.md](findings-schema.md#rules)).
An *optional* input only corroborates: without it the rule still runs (a rule whose
inputs are all optional needs at least one of them). A rule's *needs* are what its claim
rests on (the GPU Operator running, a node whose CRI is containerd, CRI-O or Docker),
derived once from the bundle (`analyzers/facts/preconditions.py`): where a need does not
hold, the rule is `skipped` with the reason, never run on a world it was not written for.

`gpu-triage rules` lists the rules installed in your environment (plugins included) and
`gpu-triage explain ID` prints one rule's documentation.
"""


@dataclass(frozen=True, slots=True)
class Family:
    """The rules one built-in entry point registers, under its module's heading."""

    heading: str
    rules: tuple[type[Rule], ...]


def builtin_families() -> list[Family]:
    """The built-in families in entry-point order, each rule checked as discovery would."""
    families = []
    for point in entry_points():
        if point.origin != BUILTIN_ORIGIN:
            continue
        value = point.value
        module_name, _, attribute = value.partition(":")
        module = importlib.import_module(module_name)
        provided = getattr(module, attribute)
        rules = []
        for candidate in provided:
            problem = check_rule(candidate)
            if problem is not None:
                raise ValueError(f"{value}: {problem}")
            rules.append(candidate)
        heading = (inspect.getdoc(module) or module_name).splitlines()[0].rstrip(".")
        families.append(Family(heading, tuple(sorted(rules, key=lambda r: r.id))))
    return sorted(families, key=lambda f: f.rules[0].id if f.rules else f.heading)


def description(rule: type[Rule]) -> str:
    """The docstring between the title and the first section (``Why it matters:``)."""
    lines = rule.docs().body.splitlines()
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped.endswith(":") and stripped.rstrip(":") in SECTIONS:
            return "\n".join(lines[:index]).strip()
    return "\n".join(lines).strip()


def markdown(text: str) -> str:
    """Docstring prose as Markdown: paragraphs stay as written (their ````code````
    spans are Markdown too); a run of indented lines (commands) becomes a code block."""
    blocks: list[str] = []
    prose: list[str] = []
    code: list[str] = []

    def flush() -> None:
        if prose:
            blocks.append("\n".join(prose))
            prose.clear()
        if code:
            blocks.append("```\n" + textwrap.dedent("\n".join(code)) + "\n```")
            code.clear()

    for line in text.splitlines():
        if not line.strip():
            flush()
        elif line[0].isspace():
            if prose:
                flush()
            code.append(line.rstrip())
        else:
            if code:
                flush()
            prose.append(line.rstrip())
    flush()
    return "\n\n".join(blocks)


def _anchor(rule: type[Rule]) -> str:
    return rule.id.lower()


def source_path(rule: type[Rule]) -> str:
    """The file that defines ``rule``, relative to the repository root."""
    return rule.__module__.replace(".", "/") + ".py"


def _source_link(rule: type[Rule]) -> str:
    return f"[`{source_path(rule)}`](../{source_path(rule)})"  # from docs/


def _inputs(rule: type[Rule]) -> str:
    if not rule.inputs:
        return "none (it reads what the other rules recorded while reading the bundle)"
    return ", ".join(f"`{needed.describe()}`" + (" (optional)" if needed.optional else "")
                     for needed in rule.inputs)


def _rule_section(rule: type[Rule]) -> Iterator[str]:
    docs = rule.docs()
    yield f"### {rule.id}"  # a bare id: its anchor is #rt001 on every renderer
    yield ""
    yield f"**{rule.title()}**"
    yield ""
    yield (f"Severity **{rule.severity.value}** · confidence **{rule.confidence.value}** · "
           f"slug `{rule.slug}` · inputs: {_inputs(rule)}")
    yield ""
    if rule.needs:
        # preconditions: where one does not hold the rule is skipped with the reason
        yield "Needs (skipped where it does not hold): " + "; ".join(
            need.value for need in rule.needs) + "."
        yield ""
    yield f"Defined in {_source_link(rule)}."
    about = description(rule)
    if about:
        yield ""
        yield markdown(about)
    for label, text in (("Why it matters", docs.why), ("Remediation", docs.remediation)):
        if text:
            yield ""
            yield f"**{label}.**"
            yield ""
            yield markdown(text)
    yield ""


def _index(families: Sequence[Family]) -> Iterator[str]:
    yield "| rule | severity | title | defined in |"
    yield "|---|---|---|---|"
    for family in families:
        for rule in family.rules:
            title = rule.title().replace("|", "\\|")
            yield (f"| [{rule.id}](#{_anchor(rule)}) | {rule.severity.value} | {title} | "
                   f"{_source_link(rule)} |")
    yield ""


def render(families: Iterable[Family] | None = None) -> str:
    """The whole catalog as Markdown."""
    chosen = list(builtin_families() if families is None else families)
    out = [_INTRO.format(regenerate=REGENERATE)]
    out.extend(_index(chosen))
    for family in chosen:
        out.append(f"## {family.heading}")
        out.append("")
        for rule in family.rules:
            out.extend(_rule_section(rule))
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analyzers.engine.catalog",
        description="Print the rule catalog (Markdown) of the built-in rules.")
    parser.add_argument("--check", metavar="FILE", type=Path,
                        help="compare FILE with the catalog instead: exit 0 when equal, "
                             "1 when it differs or is missing")
    args = parser.parse_args(argv)
    text = render()
    if args.check is None:
        sys.stdout.write(text)
        return 0
    try:
        current = args.check.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"{args.check}: cannot read: {exc.strerror}; regenerate with: {REGENERATE}",
              file=sys.stderr)
        return 1
    if current != text:
        print(f"{args.check} is out of date; regenerate with: {REGENERATE}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
