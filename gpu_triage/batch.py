"""``gpu-triage analyze`` over many bundles: parallel processes, one report per bundle,
and an ``index.jsonl`` a spreadsheet or a notebook can read.

Each bundle is analysed in its own worker process (``ProcessPoolExecutor``, at most
``--jobs`` and never more than the CPUs); each worker loads the rules once. A bundle
that cannot be read gets an index line with its error and exit code 3, and the others
go on. Lines are written in the order the bundles were given, whatever order the
workers finish in. Nothing here prints: the CLI reports what :func:`run` returns.

Each bundle's reports are named after it (:func:`jobs_for`: two bundles never share a
name) and written through :mod:`gpu_triage.outputs`, never through a link: a report
refused that way gets an index line with the reason and exit code 2.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from analyzers.engine.plugins import LoadedRule
from analyzers.engine.selection import Selection
from analyzers.engine.suppress import Suppression
from analyzers.results.batch_models import IndexRecord
from analyzers.results.models import Report, RuleStatus
from bundle import BundleError, Limits
from gpu_triage import outputs
from gpu_triage.bundle_paths import report_stem
from gpu_triage.cpus import usable_cpus
from gpu_triage.exitcodes import Exit, errored_rules, exit_code
from gpu_triage.termination import unwind_on_termination

SUFFIXES = {"html": ".report.html", "json": ".report.json", "md": ".report.md",
            "text": ".report.txt", "jira": ".report.jira.txt", "zendesk": ".report.zendesk.md"}
INDEX = "index.jsonl"


@dataclass(frozen=True, slots=True)
class Options:
    """Everything a worker needs; plain data, so it crosses process boundaries."""

    out_dir: Path
    formats: tuple[str, ...]
    fail_on: str
    limits: Limits
    rule_dirs: tuple[Path, ...] = ()
    selection: Selection = Selection()
    suppressions: tuple[Suppression, ...] = ()
    today: date = date(1970, 1, 1)
    generated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Job:
    path: Path
    stem: str


@dataclass(frozen=True, slots=True)
class Outcome:
    record: IndexRecord
    notes: tuple[str, ...] = ()


@dataclass(slots=True)
class Result:
    outcomes: list[Outcome] = field(default_factory=list)
    index: Path | None = None

    @property
    def exit_code(self) -> int:
        return max((o.record.exit_code for o in self.outcomes), default=int(Exit.OK))


# -- jobs ------------------------------------------------------------------------------


def jobs_for(bundles: Sequence[Path]) -> list[Job]:
    """One job per bundle, each with its own report stem. A bundle keeps its own name
    when no bundle before it took that name; a later one with the same name gets the
    first ``-2``, ``-3`` ... that is no bundle's name at all, so a bundle that is really
    called ``x-2`` keeps ``x-2`` and never has its reports replaced. Names are compared
    case-insensitively, for file systems that do."""
    natural = [report_stem(path) for path in bundles]
    reserved = {name.casefold() for name in natural}
    taken: set[str] = set()
    jobs = []
    for path, base in zip(bundles, natural, strict=True):
        name, number = base, 1
        while name.casefold() in taken or (number > 1 and name.casefold() in reserved):
            number += 1
            name = f"{base}-{number}"
        taken.add(name.casefold())
        jobs.append(Job(path=path, stem=name))
    return jobs


# -- one bundle ------------------------------------------------------------------------

_RULES: list[LoadedRule] = []


def _load(rule_dirs: Sequence[Path]) -> list[LoadedRule]:
    from analyzers.engine.local_rules import discover_all

    return discover_all(rule_dirs).rules


def _stop(pool: ProcessPoolExecutor) -> None:
    """Ctrl-C or ``SIGTERM`` in this process: drop the queued bundles and stop the
    workers now (each unwinds and removes its spool) instead of finishing every job."""
    running = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in running:
        process.terminate()


def _init_worker(rule_dirs: tuple[Path, ...]) -> None:
    unwind_on_termination()  # stopped by the parent: remove this analysis's spool first
    _RULES[:] = _load(rule_dirs)


def _record(job: Job, report: Report, code: int, written: list[str]) -> IndexRecord:
    by_rule = Counter(f.rule_id for f in report.findings)
    worst = report.worst()
    info = report.bundle
    return IndexRecord(
        bundle=str(job.path), exit_code=code, layout=info.layout,
        cluster_context=info.cluster.context, server_version=info.cluster.server_version,
        created_at=info.created_at, nodes=info.nodes, gpu_nodes=info.gpu_nodes,
        worst=worst.value if worst is not None else None,
        **report.summary.model_dump(),
        suppressed=len(report.suppressed),
        findings_by_rule=dict(sorted(by_rule.items())),
        finding_ids=[f.id for f in report.findings],
        rules_skipped=[r.rule_id for r in report.rules if r.status is RuleStatus.SKIPPED],
        rules_partial=[r.rule_id for r in report.rules if r.status is RuleStatus.PARTIAL],
        rules_error=[r.rule_id for r in report.rules if r.status is RuleStatus.ERROR],
        reports=written,
    )


def analyse(job: Job, options: Options, rules: Sequence[LoadedRule]) -> Outcome:
    """Analyse one bundle and write its reports; never raises."""
    from analyzers.engine import analyze
    from analyzers.engine.suppress import apply
    from bundle import open_bundle
    from reports import render

    try:
        with open_bundle(job.path, options.limits) as opened:
            report = analyze(opened, rules, selection=options.selection or None)
        applied = apply(report, options.suppressions, options.today)
        moment = options.generated_at or datetime.now(UTC)
        report = applied.report.model_copy(
            update={"generated_at": moment.isoformat(timespec="seconds")})
        written = []
        for fmt in options.formats:
            target = options.out_dir / f"{job.stem}{SUFFIXES[fmt]}"
            outputs.write(target, render(report, fmt, html_name=f"{job.stem}.report.html",
                                         generated_at=options.generated_at))
            written.append(str(target))
        code = int(exit_code(report.findings, options.fail_on, errored=errored_rules(report)))
        notes = tuple(f"suppression {s.describe} expired on {s.until}" for s in applied.expired)
        return Outcome(_record(job, report, code, written), notes)
    except BundleError as exc:
        return Outcome(IndexRecord(bundle=str(job.path), exit_code=int(Exit.UNREADABLE),
                                   error=f"cannot read bundle: {exc.problem}"))
    except outputs.OutputError as exc:  # a link at the report's name: refused, not followed
        return Outcome(IndexRecord(bundle=str(job.path), exit_code=int(Exit.USAGE),
                                   error=str(exc)))
    except Exception as exc:  # noqa: BLE001 - one bundle's failure must not stop the others
        summary = " ".join(str(exc).split())[:200]
        return Outcome(IndexRecord(bundle=str(job.path), exit_code=int(Exit.INTERNAL),
                                   error=f"internal error: {type(exc).__name__}: {summary}"))


def _analyse_in_worker(job: Job, options: Options) -> Outcome:
    return analyse(job, options, _RULES)


# -- many bundles ----------------------------------------------------------------------

Progress = Callable[[int, int, Outcome], None]


def workers(requested: int | None, bundles: int) -> int:
    cpus = usable_cpus()
    return max(1, min(requested or cpus, cpus, bundles))


def run(jobs: Sequence[Job], options: Options, *, jobs_limit: int | None = None,
        rules: Sequence[LoadedRule] | None = None, progress: Progress | None = None) -> Result:
    """Analyse every job; ``index.jsonl`` in ``options.out_dir`` lists them in order.
    Raises :class:`gpu_triage.outputs.OutputError` before any analysis when the index
    cannot be written there (a link at its name, say)."""
    options.out_dir.mkdir(parents=True, exist_ok=True)
    index_path = options.out_dir / INDEX
    outputs.check(index_path)
    count = workers(jobs_limit, len(jobs))
    outcomes: list[Outcome | None] = [None] * len(jobs)
    done = 0
    if count == 1:
        loaded = list(rules) if rules is not None else _load(options.rule_dirs)
        for index, job in enumerate(jobs):
            outcome = analyse(job, options, loaded)
            outcomes[index] = outcome
            done += 1
            if progress is not None:
                progress(done, len(jobs), outcome)
    else:
        with ProcessPoolExecutor(max_workers=count, initializer=_init_worker,
                                 initargs=(options.rule_dirs,)) as pool:
            futures = {pool.submit(_analyse_in_worker, job, options): index
                       for index, job in enumerate(jobs)}
            try:
                for future in as_completed(futures):
                    index = futures[future]
                    try:
                        outcome = future.result()
                    except Exception as exc:  # noqa: BLE001 - a worker that died (BrokenProcessPool)
                        outcome = Outcome(IndexRecord(
                            bundle=str(jobs[index].path), exit_code=int(Exit.INTERNAL),
                            error=f"worker failed: {type(exc).__name__}: {exc}"))
                    outcomes[index] = outcome
                    done += 1
                    if progress is not None:
                        progress(done, len(jobs), outcome)
            except BaseException:
                _stop(pool)
                raise
    result = Result(outcomes=[o for o in outcomes if o is not None], index=index_path)
    outputs.write(index_path, "".join(o.record.model_dump_json() + "\n" for o in result.outcomes))
    return result
