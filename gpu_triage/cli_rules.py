"""Rule options shared by ``analyze``, ``diff``, ``rules`` and ``explain`` (``--rules``,
``--only``, ``--skip``, ``--suppress``), and ``gpu-triage rules test [DIR]
[--known-issues PATH]``.

Part of the CLI: it reads files and environment only through its arguments, and
turns bad input into :class:`gpu_triage.cli_common.Failure`. The options are declared
when the CLI is built, for every command line, so the analysis modules are imported
only where used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gpu_triage.cli_common import Failure, one_line
from gpu_triage.exitcodes import Exit

if TYPE_CHECKING:
    from analyzers.engine.plugins import LoadedRule
    from analyzers.engine.selection import Selection
    from analyzers.engine.suppress import Outcome, Suppression

F = TypeVar("F", bound=Callable[..., Any])
RULE_DIR = click.Path(exists=True, file_okay=False, dir_okay=True, path_type=Path)


def _usage(message: str) -> click.ClickException:
    return Failure(message, Exit.USAGE)


def rules_dir_option(function: F) -> F:
    return click.option(
        "--rules", "rule_dirs", multiple=True, type=RULE_DIR, metavar="DIR",
        help="Also load the rules in DIR/*.py (repeatable). Runs their code: only "
             "directories you trust.")(function)


def only_skip_options(function: F) -> F:
    """``--rules``, ``--only`` and ``--skip``."""
    function = click.option(
        "--skip", multiple=True, metavar="ID,...",
        help="Do not run these rules or families (reported skipped: 'deselected with "
             "--skip').")(function)
    function = click.option(
        "--only", multiple=True, metavar="ID,...",
        help="Run only these rules or families (e.g. RT,CFG004).")(function)
    return rules_dir_option(function)


def selection_options(function: F) -> F:
    """``--rules``, ``--only``, ``--skip`` and ``--suppress``."""
    function = click.option(
        "--suppress", "suppress_files", multiple=True,
        type=click.Path(exists=True, dir_okay=False, path_type=Path), metavar="FILE",
        help="TOML file of [[suppress]] entries (id or rule, reason, optional until); "
             "suppressed findings move to the report's 'suppressed' list.")(function)
    return only_skip_options(function)


@dataclass(frozen=True, slots=True)
class Choice:
    """What the rule options resolved to."""

    rules: list[LoadedRule]
    selection: Selection
    suppressions: tuple[Suppression, ...]


def resolve(rules: list[LoadedRule], only: Sequence[str], skip: Sequence[str],
            suppress_files: Sequence[Path] = ()) -> Choice:
    from analyzers.engine.selection import Selection, SelectionError
    from analyzers.engine.suppress import SuppressionError, parse

    try:
        selection = Selection.parse(only, skip)
        selection.check(lr.rule.id for lr in rules)
    except SelectionError as exc:
        raise _usage(str(exc)) from None
    suppressions: list[Suppression] = []
    for path in suppress_files:
        try:
            suppressions.extend(parse(path.read_text(encoding="utf-8"), str(path)))
        except (OSError, UnicodeDecodeError) as exc:
            raise _usage(f"cannot read {path}: {exc}") from None
        except SuppressionError as exc:
            raise _usage(str(exc)) from None
    return Choice(rules, selection, tuple(suppressions))


def today() -> date:
    """The date suppressions expire against; read once, here, in the CLI."""
    return date.today()


def notes(outcome: Outcome) -> list[str]:
    """What to say on stderr about applied suppressions."""
    lines = []
    count = len(outcome.report.suppressed)
    if count:
        lines.append(f"suppressed {count} finding(s); listed with their reasons in the "
                     "report's 'suppressed' section")
    lines += [f"suppression {s.describe} ({s.source}) expired on {s.until}; not applied"
              for s in outcome.expired]
    lines += [f"suppression {s.describe} ({s.source}) matched no finding"
              for s in outcome.unmatched]
    return lines


@click.command("test", epilog="\b\nExit codes:\n  0  every case and entry passed\n"
               "  1  a case or entry failed\n"
               "  2  no cases, or a case file, rule file or known-issue file that cannot be read")
@click.argument("directory", metavar="[DIR]", type=RULE_DIR, required=False)
@click.option("--known-issues", "issue_paths", multiple=True,
              type=click.Path(exists=True, path_type=Path), metavar="PATH",
              help="Test known-issue entries: a TOML file, or a directory of them (or of "
                   "known_issues/*.toml). Repeatable.")
def rules_test(directory: Path | None, issue_paths: tuple[Path, ...]) -> None:
    """Run the TOML cases of the local rules in DIR and print pass/fail.

    Cases live in DIR/<rule file>.cases.toml or DIR/cases/*.toml (DIR/cases/<ID>.toml:
    rule ID alone); a case names a bundle or writes one inline on a base. See
    docs/writing-rules.md.

    With --known-issues PATH: load the entries in PATH strictly (each example must
    match, the negative must not), then check that each ID is new to the packaged base
    and that no packaged entry takes a new entry's negative, nor a new entry a packaged
    one's. See docs/known-issues.md.
    """
    if directory is None and not issue_paths:
        raise _usage("give DIR (rule cases), --known-issues PATH (entries), or both")
    passed = failed = 0
    if directory is not None:
        passed, failed = _rule_cases(directory)
    if issue_paths:
        from gpu_triage.cli_known import test_issues

        more_passed, more_failed = test_issues(issue_paths)
        passed, failed = passed + more_passed, failed + more_failed
    click.echo(f"{passed} passed, {failed} failed")
    if failed:
        raise click.exceptions.Exit(int(Exit.FINDINGS))


def _rule_cases(directory: Path) -> tuple[int, int]:
    """Run the cases of the local rules in ``directory``: print PASS/FAIL per case and
    return (passed, failed)."""
    from analyzers.engine.local_rules import load_dir
    from analyzers.engine.plugins import Discovery
    from analyzers.engine.ruletest import CaseFileError, case_files, load_cases, run

    discovery = Discovery()
    by_file = load_dir(discovery, directory)
    for error in discovery.errors:
        click.echo(f"error: {one_line(error, None)}", err=True)
    if discovery.errors:
        raise Failure(f"rule files in {directory} could not all be loaded", Exit.USAGE)
    try:
        cases = [case for path, ids in case_files(directory, by_file)
                 for case in load_cases(path, ids)]
    except CaseFileError as exc:
        raise Failure(str(exc), Exit.USAGE) from None
    if not cases:
        raise Failure(f"no cases in {directory}: add <rule file>.cases.toml beside a rule "
                      "file, or cases/*.toml", Exit.USAGE)
    results = run(cases, discovery.rules)
    for result in results:
        click.echo(f"{'PASS' if result.passed else 'FAIL'}  {one_line(result.case.label, None)}")
        for failure in result.failures:
            click.echo(f"      {one_line(failure, None)}")
    failed = sum(not r.passed for r in results)
    return len(results) - failed, failed
