"""The command line run in-process, as the CLI tests call it."""

from __future__ import annotations

from click.testing import CliRunner

from gpu_triage.cli import cli


def invoke(args: list[str]) -> tuple[int, str, str]:
    """``gpu-triage ARGS`` through click's runner: (exit code, stdout, stderr); an
    exception the command does not handle propagates."""
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr
