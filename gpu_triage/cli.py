"""The ``gpu-triage`` command: option parsing, wiring, and errors mapped to exit codes.

This is the only module that imports every package. Environment variables are read
here, once; library code never prints or exits.
"""

from __future__ import annotations

import gc
import io
import logging
import sys
from pathlib import Path

import click

from analyzers import __version__
from gpu_triage import outputs
from gpu_triage.cli_common import (
    FORMATS,
    SEVERITIES,
    SUFFIXES,
    Failure,
    check_output,
    colour,
    load_rules,
    one_line,
    parse_formats,
    shown,
    stderr,
    text_width,
    timestamp,
    unreadable,
    write_output,
)
from gpu_triage.cli_diff import diff as diff_command
from gpu_triage.cli_known import ISSUE_PATH, explain_issue, is_known_issue, list_issues
from gpu_triage.cli_redact import redact as redact_command
from gpu_triage.cli_render import render as render_command
from gpu_triage.cli_rules import resolve, rules_dir_option, rules_test, selection_options
from gpu_triage.cli_serve import serve as serve_command
from gpu_triage.exitcodes import Exit, errored_rules, exit_code
from gpu_triage.termination import Terminated, unwind_on_termination

EPILOG = "\b\nExit codes:\n" + Exit.help_text()


class _SafeFormatter(logging.Formatter):
    """Log records (``--verbose``) with every line made inert: a logged bundle value
    cannot carry an escape sequence or forge a line of its own."""

    def format(self, record: logging.LogRecord) -> str:
        from reports.terminal import lines

        return lines(super().format(record))


_GLOBAL_FLAGS = ("-v", "--verbose")


class _Group(click.Group):
    """A group whose global flags (``-v/--verbose``) may also follow the subcommand:
    ``gpu-triage analyze X --verbose`` is ``gpu-triage --verbose analyze X``. Arguments
    after ``--`` and those of ``collect`` (handed to the collector as given) stay put."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        command = next((i for i, arg in enumerate(args) if not arg.startswith("-")), None)
        if command is not None and args[command] != "collect":
            end = args.index("--") if "--" in args else len(args)
            moved = [arg for arg in args[command + 1:end] if arg in _GLOBAL_FLAGS]
            if moved:
                rest = [arg for arg in args[command + 1:end] if arg not in _GLOBAL_FLAGS]
                args = [*moved, *args[:command + 1], *rest, *args[end:]]
        return super().parse_args(ctx, args)


@click.group(cls=_Group, epilog=EPILOG,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gpu-triage")
@click.option("-v", "--verbose", is_flag=True, help="Log details (and tracebacks) to stderr.")
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """Offline triage of GPU Operator support bundles.

    Collect a bundle at the customer with `gpu-triage collect`, then analyse it
    anywhere with `gpu-triage analyze BUNDLE`.
    """
    ctx.ensure_object(dict)["verbose"] = verbose
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_SafeFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        handlers=[handler])


@cli.command(epilog=EPILOG)
@click.argument("bundle_paths", metavar="BUNDLE...", nargs=-1, required=True,
                type=click.Path(path_type=Path))
@click.option("-f", "--format", "formats", multiple=True, callback=parse_formats,
              metavar="FORMAT[,FORMAT...]",
              help=f"Output format, one of {', '.join(FORMATS)}. Default: a terminal summary "
                   "on stdout plus <bundle>.report.html in the current directory. Several "
                   "(-f html,json,md or -f repeated): each written to <bundle>.report.<ext> "
                   "(in --out-dir if given) from one analysis.")
@click.option("-o", "--output", type=str, help="Write the report to FILE ('-' for stdout).")
@click.option("--progress/--no-progress", "show_progress", default=None,
              help="Progress on stderr (default: only when stderr is a terminal).")
@click.option("-q", "--quiet", is_flag=True, help="No progress on stderr.")
@click.option("--fail-on", type=click.Choice(SEVERITIES), default="high", show_default=True,
              help="Exit 1 when a finding is at or above this severity.")
@click.option("--max-member-mib", type=click.IntRange(1), default=512, show_default=True,
              help="Refuse archive members larger than this.")
@click.option("--max-total-gib", type=click.IntRange(1), default=16, show_default=True,
              help="Stop reading an archive that expands beyond this.")
@click.option("--max-members", type=click.IntRange(1), default=500_000, show_default=True,
              help="Stop reading an archive with more members than this.")
@click.option("--max-nodes", type=click.IntRange(1), default=10_000, show_default=True,
              help="Read the files of at most this many node directories.")
@click.option("--max-ratio", type=click.IntRange(1), default=200, show_default=True,
              help="Stop reading a compressed archive that expands more than this many times "
                   "its size (a decompression bomb).")
@click.option("--max-yaml-nodes", type=click.IntRange(1), default=1_000_000, show_default=True,
              help="Refuse a YAML file of a must-gather or troubleshoot bundle with more "
                   "nodes (scalars, lists, mappings) than this.")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Several bundles (or a directory of bundles): write one report per "
                   "bundle and index.jsonl here (default: the current directory).")
@click.option("-j", "--jobs", type=click.IntRange(1),
              help="Processes to use. Several bundles: one bundle each (default and cap: "
                   "the CPUs). One bundle of many nodes: processes that parse node files "
                   "(default: the CPUs, at most 4; cap: the CPUs; 1 parses everything in "
                   "one process).")
@click.option("--inspect", is_flag=True,
              help="Text and HTML: add to each finding the kubectl command that shows its "
                   "object against `gpu-triage serve BUNDLE`.")
@selection_options
@click.pass_context
def analyze(ctx: click.Context, bundle_paths: tuple[Path, ...], formats: tuple[str, ...],
            output: str | None, show_progress: bool | None, quiet: bool, fail_on: str,
            max_member_mib: int, max_total_gib: int, max_members: int, max_nodes: int,
            max_ratio: int, max_yaml_nodes: int, out_dir: Path | None,
            jobs: int | None, inspect: bool,
            rule_dirs: tuple[Path, ...], only: tuple[str, ...], skip: tuple[str, ...],
            suppress_files: tuple[Path, ...]) -> None:
    """Analyse support bundles and report root causes.

    BUNDLE is a directory or an archive (.tgz, .tar, .zip, .tar.xz, .tar.bz2,
    .tar.zst, told by content): a gpu-triage bundle, node.sh's own tar, one or more
    nvidia-bug-report.log.gz, the output of the GPU Operator's must-gather.sh, or a
    Replicated troubleshoot support bundle. Several
    BUNDLEs, or a directory of bundles, are analysed in parallel (see --out-dir).
    """
    # Analysis builds millions of long-lived objects (pods, events, parsed node files)
    # and almost no reference cycles: collect the young generation less often, so that
    # full collections, each a walk over every live object, stay rare
    # (docs/performance.md: a quarter of the CPU time on a 500-node bundle).
    gc.set_threshold(50_000, 20, 100)
    from analyzers.engine import analyze as run
    from analyzers.engine.suppress import apply
    from analyzers.speed import Preload
    from bundle import BundleError, Limits, open_bundle
    from bundle.spooldir import remove_stale
    from gpu_triage.bundle_paths import expand, report_stem
    from gpu_triage.cli_rules import notes, today
    from gpu_triage.cpus import usable_cpus
    from gpu_triage.progress import Progress
    from reports import render

    if ctx.obj.get("program"):
        # What the imports made lives until the process ends (see main): frozen, the
        # collections of the run need not walk it again (11 ms of 14 ms of collection on
        # a small bundle).
        gc.freeze()
    remove_stale()  # what runs killed outright left behind (provably dead ones only)
    choice = resolve(load_rules(rule_dirs), only, skip, suppress_files)
    limits = Limits(max_member_bytes=max_member_mib << 20, max_total_bytes=max_total_gib << 30,
                    max_members=max_members, max_nodes=max_nodes, max_ratio=max_ratio,
                    max_yaml_nodes=max_yaml_nodes)
    bundles, many = expand(bundle_paths)
    if many or out_dir is not None:
        from gpu_triage.cli_batch import analyze_many

        if output is not None:
            raise Failure("-o/--output takes one bundle; several bundles are written to "
                          "--out-dir", Exit.USAGE)
        ctx.exit(analyze_many(bundles, formats=formats, fail_on=fail_on, limits=limits,
                              rule_dirs=rule_dirs, selection=choice.selection,
                              suppressions=choice.suppressions, today=today(),
                              out_dir=out_dir, jobs=jobs))
    bundle_path = bundles[0]
    stem = report_stem(bundle_path)
    html_name = f"{stem}.report.html"
    files = _planned_files(formats, output, stem, html_name)
    for target in files.values():  # refuse a link before the analysis, not after it
        check_output(target)
    progress = None
    if not quiet and (show_progress or (show_progress is None
                                        and (sys.stderr.isatty() or ctx.obj["verbose"]))):
        progress = Progress(sys.stderr, terminal=sys.stderr.isatty())
    try:
        jobs = min(jobs or 4, usable_cpus())
        with Preload(jobs) as preload, open_bundle(
                bundle_path, limits, watcher=preload.watcher,
                reading=progress.reading if progress else None) as opened:
            report = run(opened, choice.rules, progress=progress.step if progress else None,
                         selection=choice.selection or None, preload=preload)
    except BundleError as exc:
        if progress is not None:
            progress.clear()
        raise unreadable(exc) from None
    if progress is not None:
        progress.done()
    suppressed = apply(report, choice.suppressions, today())
    report = suppressed.report.model_copy(update={"generated_at": timestamp()})
    for line in notes(suppressed):
        stderr(one_line(line, None))
    to_stdout = output in (None, "-") and len(formats) <= 1
    if to_stdout and formats in ((), ("text",)):
        click.echo(render(report, "text", color=colour(), width=text_width(),
                          inspect=inspect), nl=False)
    elif to_stdout:
        click.echo(render(report, formats[0], html_name=html_name, inspect=inspect), nl=False)
    for fmt, target in files.items():  # one analysis, each format to its own file
        write_output(target, render(report, fmt, html_name=html_name, inspect=inspect))
        stderr(f"{'HTML' if fmt == 'html' and not formats else fmt} report: {shown(target)}")
    errored = errored_rules(report)
    code = exit_code(report.findings, fail_on, errored=errored)
    if code is Exit.INCOMPLETE:
        stderr(f"analysis incomplete: {one_line(', '.join(errored), None)} "
               f"ended in error (exit {int(code)}; rerun with --verbose for the tracebacks)")
    if code is not Exit.OK:
        ctx.exit(int(code))


def _planned_files(formats: tuple[str, ...], output: str | None, stem: str,
                   html_name: str) -> dict[str, Path]:
    """Format → the file it is written to: none for one format on stdout; ``-o``'s
    suffix picks the format when -f is not given; several formats each get their own
    ``<stem>.report.<ext>``; nothing asked for: the terminal summary and the HTML file."""
    if not formats:
        if output in (None, "-"):
            return {"html": Path(html_name)}
        return {SUFFIXES.get(Path(output).suffix.lower(), "text"): Path(output)}
    if len(formats) == 1:
        return {} if output in (None, "-") else {formats[0]: Path(output)}
    if output is not None:
        raise Failure("-o/--output takes one format; several formats are written to "
                      "<bundle>.report.<ext> here (or in --out-dir)", Exit.USAGE)
    from gpu_triage.batch import SUFFIXES as NAMED  # only here: batch loads much more

    return {fmt: Path(f"{stem}{NAMED[fmt]}") for fmt in formats}


@cli.group("rules", invoke_without_command=True)
@rules_dir_option
@click.option("--known-issues", "known_issues", is_flag=True,
              help="List the known-issue entries instead (KI001 matches them): ID, primary "
                   "component, title and where the line appears.")
@click.option("--component", "components", multiple=True, metavar="NAME",
              help="With --known-issues: only entries naming this component (repeatable).")
@click.option("--prefix", "prefixes", multiple=True, metavar="ID-PREFIX",
              help="With --known-issues: only IDs starting so (KI-TOOLKIT or TOOLKIT; "
                   "repeatable).")
@click.pass_context
def list_rules(ctx: click.Context, rule_dirs: tuple[Path, ...], known_issues: bool,
               components: tuple[str, ...], prefixes: tuple[str, ...]) -> None:
    """List the installed rules: ID, severity, title and origin (`rules test DIR`: run the
    cases of local rules; `rules --known-issues`: list the known-issue entries)."""
    if ctx.invoked_subcommand is not None:
        return
    if known_issues:
        list_issues(components, prefixes)
        return
    if components or prefixes:
        raise Failure("--component and --prefix filter the known-issue entries: add "
                      "--known-issues", Exit.USAGE)
    for loaded in load_rules(rule_dirs):
        rule = loaded.rule
        click.echo(f"{one_line(rule.id):<8} {rule.severity.value:<9} {one_line(rule.title())}  "
                   f"[{one_line(loaded.origin)}]")


list_rules.add_command(rules_test)
cli.add_command(diff_command)
cli.add_command(serve_command)
cli.add_command(render_command)
cli.add_command(redact_command)


@cli.command()
@click.argument("rule_id", metavar="ID")
@rules_dir_option
@click.option("--known-issues", "issue_paths", multiple=True, type=ISSUE_PATH, metavar="PATH",
              help="Also look up KI- IDs in these known-issue files (a TOML file or a "
                   "directory of them), before the packaged base.")
def explain(rule_id: str, rule_dirs: tuple[Path, ...], issue_paths: tuple[Path, ...]) -> None:
    """Print a rule's documentation, or a known-issue entry (ID KI-...)."""
    if is_known_issue(rule_id):
        explain_issue(rule_id, issue_paths)
        return
    by_id = {loaded.rule.id: loaded for loaded in load_rules(rule_dirs)}
    loaded = by_id.get(rule_id.upper())
    if loaded is None:
        known = ", ".join(sorted(by_id))
        raise Failure(f"unknown rule {rule_id!r}; installed rules: {known}", Exit.USAGE)
    rule = loaded.rule
    docs = rule.docs()
    inputs = ", ".join(i.describe() + (" (optional)" if i.optional else "") for i in rule.inputs)
    from reports.terminal import lines

    click.echo(f"{one_line(rule.id)} ({one_line(rule.slug)}) · default severity "
               f"{rule.severity.value} · {one_line(loaded.origin)}\n\n{one_line(docs.title)}"
               f"\n\n{lines(docs.body)}\n\nInputs: {one_line(inputs or 'none', None)}")


@cli.command()
@click.argument("bundle_path", metavar="BUNDLE", type=click.Path(path_type=Path))
@click.option("--all", "show_all", is_flag=True, help="Also list the paths that are fine.")
def verify(bundle_path: Path, show_all: bool) -> None:
    """Check a bundle against format v1: missing, failed or malformed spec paths.

    Exit 0 when every spec path is present and parses (or its failure was recorded
    by the collector), 1 when something is missing or malformed, 3 when the bundle
    cannot be read at all.
    """
    from bundle import BundleError, open_bundle
    from bundle.verify import verify as run

    try:
        with open_bundle(bundle_path) as opened:
            checks = list(run(opened))
            problems = list(opened.problems)
    except BundleError as exc:
        raise unreadable(exc) from None
    counts: dict[str, int] = {}
    for check in checks:  # paths, details and problems come from the bundle: one line each
        counts[check.status] = counts.get(check.status, 0) + 1
        if show_all or check.status != "ok":
            detail = f"  {one_line(check.detail, None)}" if check.detail else ""
            click.echo(f"{check.status:<9} {one_line(check.path, None)}{detail}")
    for problem in problems:
        click.echo(f"{problem.kind:<9} {one_line(problem.describe(), None)}")
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    click.echo(f"{len(checks)} spec paths: {summary}; {len(problems)} reader problem(s)")
    if counts.get("missing") or counts.get("malformed") or problems:
        raise SystemExit(int(Exit.FINDINGS))


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                               "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def collect(args: tuple[str, ...]) -> None:
    """Collect a support bundle from the current cluster (read-only; see --help).

    `--write-pyz PATH` writes the one-file collector (gpu-triage-collect.pyz) for a customer
    instead, byte for byte what `make collector` builds."""
    if args[:1] == ("--write-pyz",):
        _write_pyz(args[1:])
        return
    from collectors.collect import main as collect_main

    code = collect_main(list(args))
    if code:
        raise SystemExit(code)


def _write_pyz(rest: tuple[str, ...]) -> None:
    from collectors.pyz import build

    if len(rest) != 1:
        raise click.UsageError("--write-pyz takes one PATH: gpu-triage collect --write-pyz PATH")
    path = Path(rest[0])
    data = build()
    try:
        outputs.write(path, data, 0o755)
    except outputs.OutputError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{path}: {len(data)} bytes; hand it over and run: python3 {path.name} "
               "--preflight, then python3 " + path.name, err=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI and turn every outcome into an exit code.

    Called as the program (no ``argv``), the process ends as soon as this returns: the
    objects of the run are then frozen (``gc.freeze``), which spares the interpreter's
    exit its full garbage collections over every one of them (70 ms of a 450 ms
    analysis of a small bundle; docs/performance.md). Exit still runs the ``atexit``
    handlers and ``weakref.finalize`` callbacks, and closes every module as before."""
    code = _run(argv)
    if argv is None:
        gc.freeze()
    return code


def _run(argv: list[str] | None) -> int:
    verbose = "-v" in (argv or sys.argv[1:]) or "--verbose" in (argv or sys.argv[1:])
    from gpu_triage.console import prepare

    prepare()  # UTF-8 when redirected, ASCII fallbacks on a terminal that lacks a character
    unwind_on_termination()
    try:
        result = cli.main(args=argv, prog_name="gpu-triage", standalone_mode=False,
                          obj={"program": argv is None})
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        from reports.terminal import lines

        shown = io.StringIO()  # click's own messages quote the command line: made inert too
        exc.show(file=shown)
        click.echo(lines(shown.getvalue()), err=True, nl=False)
        return exc.exit_code
    except click.Abort:
        stderr("aborted")
        return 130
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    except KeyboardInterrupt:
        stderr("interrupted")
        return 130
    except Terminated as exc:
        stderr("terminated")
        return 128 + exc.signum
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - last line of defence: no traceback to users
        if verbose:
            logging.getLogger("gpu_triage").exception("unexpected error")
        stderr(f"gpu-triage: internal error: {type(exc).__name__}: {one_line(exc, 200)} "
                "(rerun with --verbose for details)")
        return int(Exit.INTERNAL)
    return result if isinstance(result, int) else 0
