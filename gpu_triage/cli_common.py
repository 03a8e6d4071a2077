"""What every command of the CLI shares: the failure that carries an exit code,
terminal-safe printing, output files, loading the rules, the option choices.

The command modules (:mod:`gpu_triage.cli`, ``cli_diff``, ``cli_rules``, ``cli_batch``)
import from here and never from each other's private names. Like the rest of the CLI
it imports the analysis only inside the functions that use it, so ``--help`` loads
none of it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gpu_triage.exitcodes import Exit

if TYPE_CHECKING:
    from analyzers.engine.plugins import LoadedRule
    from bundle import BundleError
    from gpu_triage.outputs import OutputError

SEVERITIES = ("critical", "high", "medium", "low", "info")
FORMATS = ("text", "json", "md", "html", "jira", "zendesk")
# The format an output file's suffix asks for, when -f is not given.
SUFFIXES = {".json": "json", ".html": "html", ".htm": "html", ".md": "md", ".txt": "text"}


def one_line(text: object, limit: int | None = 300) -> str:
    """Text that may come from a bundle or the file system as one terminal-safe line
    (:func:`reports.terminal.line`, the one sanitiser every command prints through;
    imported here only when something is printed, so ``--help`` loads no analysis)."""
    from reports.terminal import line

    return line(text, limit)


class Failure(click.ClickException):
    """A handled failure with its own exit code and a one-line message."""

    def __init__(self, message: str, code: Exit) -> None:
        super().__init__(one_line(message, 1000))
        self.exit_code = int(code)  # type: ignore[misc]  # click types it as a ClassVar


def shown(path: object) -> str:
    """A file name as the terminal shows it (:func:`reports.terminal.name`, ``ls -q``
    style: odd characters become ``?``)."""
    from reports.terminal import name

    return name(path)


def unreadable(exc: BundleError) -> Failure:
    """The one-line failure (exit 3) of a bundle that cannot be read at all."""
    return Failure(f"cannot read bundle {shown(exc.path)}: {exc.problem}", Exit.UNREADABLE)


def output_failure(exc: OutputError) -> Failure:
    """The one-line failure (exit 2) of an output file refused or not writable."""
    return Failure(f"cannot write {shown(exc.path)}: {exc.reason}", Exit.USAGE)


def stderr(message: str) -> None:
    click.echo(message, err=True)


def write_output(path: Path, text: str) -> None:
    """Write an output file through :mod:`gpu_triage.outputs` (never through a link);
    a refusal or a failure is a usage error naming the file."""
    from gpu_triage.outputs import OutputError, write

    try:
        write(path, text)
    except OutputError as exc:
        raise output_failure(exc) from None


def check_output(path: Path) -> None:
    from gpu_triage.outputs import OutputError, check

    try:
        check(path)
    except OutputError as exc:
        raise output_failure(exc) from None


def colour() -> bool:
    """Colour on stdout: only on a terminal, and never with ``NO_COLOR`` set."""
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def load_rules(rule_dirs: tuple[Path, ...] = ()) -> list[LoadedRule]:
    """The installed rules plus those in ``rule_dirs``; a plugin that cannot be loaded is
    a warning, no rule at all an internal error."""
    from analyzers.engine.local_rules import discover_all

    discovery = discover_all(rule_dirs)
    for error in discovery.errors:
        stderr(f"warning: rule plugin skipped: {one_line(error, None)}")
    if not discovery.rules:
        raise Failure("no rules are installed (is gpu-triage installed with pip install -e .?)",
                      Exit.INTERNAL)
    return discovery.rules


def parse_formats(_ctx: click.Context, _param: click.Parameter,
                  values: tuple[str, ...]) -> tuple[str, ...]:
    """``-f html,json -f md``: the formats asked for, in order, each once."""
    chosen: list[str] = []
    for value in values:
        for name in (part.strip().lower() for part in value.split(",")):
            if name not in FORMATS:
                raise click.BadParameter(f"{name!r} is not one of {', '.join(FORMATS)}")
            if name not in chosen:
                chosen.append(name)
    return tuple(chosen)


def timestamp() -> str:
    """Now, as a report records when it was made (``Report.generated_at``)."""
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def text_width() -> int:
    """The terminal summary's width: the terminal's on a terminal, else 80."""
    import shutil

    return shutil.get_terminal_size((80, 24)).columns if sys.stdout.isatty() else 80
