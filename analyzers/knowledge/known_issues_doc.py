"""Write (or check) the generated part of ``docs/known-issues.md`` from the knowledge base.

Run from the project root::

    .venv/bin/python -m analyzers.knowledge.known_issues_doc           # rewrite the table
    .venv/bin/python -m analyzers.knowledge.known_issues_doc --check   # exit 1 when it is stale

Only the text between the two marker lines is generated (one table row per entry, and a
count per component); the prose around it is written by hand.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from analyzers.knowledge.known_issues import Issue, KnownIssueError, load_dir

__all__ = ["BEGIN", "DOC", "END", "main", "render", "splice"]

DOC: Final = Path(__file__).resolve().parents[2] / "docs" / "known-issues.md"
BEGIN: Final = "<!-- BEGIN GENERATED: python -m analyzers.knowledge.known_issues_doc -->"
END: Final = "<!-- END GENERATED -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _link(url: str) -> str:
    """``owner/repo#N`` for a GitHub thread, the host and path otherwise."""
    parts = url.removeprefix("https://").split("/")
    thread = len(parts) >= 5 and parts[3] in ("issues", "pull", "discussions")
    if parts[0] == "github.com" and thread:
        return f"[{parts[1]}/{parts[2]}#{parts[4]}]({url})"
    return f"[{'/'.join(parts[:2])}]({url})"


def render(issues: Sequence[Issue]) -> str:
    """The generated block: totals, then one row per entry in ID order."""
    per_component = Counter(issue.components[0] for issue in issues)
    lines = [
        BEGIN,
        "",
        f"{len(issues)} entries from "
        f"{len({url for issue in issues for url in issue.sources})} public threads. "
        "Entries per primary component: "
        + ", ".join(f"{name} {count}" for name, count in sorted(per_component.items()))
        + ".",
        "",
        "| ID | Title | Components | Source | Threads |",
        "| --- | --- | --- | --- | --- |",
    ]
    for issue in sorted(issues, key=lambda item: item.id):
        lines.append(
            f"| {issue.id} | {_cell(issue.title)} | {', '.join(issue.components)} "
            f"| {issue.source.value} | {'<br>'.join(_link(url) for url in issue.sources)} |"
        )
    lines += ["", END]
    return "\n".join(lines)


def splice(document: str, block: str) -> str:
    """``document`` with the text from BEGIN to END replaced by ``block``."""
    start, end = document.find(BEGIN), document.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the markers {BEGIN!r} and {END!r} are missing or out of order")
    return document[:start] + block + document[end + len(END):]


def main(argv: Sequence[str] | None = None, *, doc: Path = DOC, data: Path | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the doc is stale")
    args = parser.parse_args(argv)
    try:
        issues = load_dir(data) if data is not None else load_dir(
            Path(__file__).resolve().parent.parent / "data" / "known_issues")
        current = doc.read_text(encoding="utf-8")
        wanted = splice(current, render(issues))
    except (KnownIssueError, OSError, ValueError) as exc:
        print(f"known_issues_doc: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if wanted != current:
            print(f"{doc.name} is stale: run python -m analyzers.knowledge.known_issues_doc",
                  file=sys.stderr)
            return 1
        return 0
    doc.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
