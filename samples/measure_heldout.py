"""Measure the analyzer on the held-out known-issue threads (issues 28 and 25).

Builds one bundle per thread (``samples/heldout.py``), analyses each in-process, prints
the root-cause findings, and the verdict recorded in
``tests/fixtures/known_issues_heldout/judgements.toml`` for that thread:

- ``named``: a root or standalone finding states the thread's established cause;
- ``symptom``: only a stage/symptom finding, without the cause;
- ``nothing``: no finding about it;
- ``wrong``: a finding at medium or above asserts a different cause as root.

A verdict is reused only while the report's root rule IDs are the ones it was judged on;
otherwise the thread says "needs re-judging" and is left out of the totals. The verdicts
are a measurement, never a target: do not tune rules or known-issue entries to them.

    python samples/measure_heldout.py [--out DIR] [--only ORDER ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analyzers.engine import analyze  # noqa: E402
from analyzers.engine.plugins import discover  # noqa: E402
from analyzers.results.models import Finding, Report, Severity  # noqa: E402
from bundle import open_bundle  # noqa: E402
from samples import heldout  # noqa: E402

JUDGEMENTS = heldout.THREADS.parent / "judgements.toml"
VERDICTS = ("named", "symptom", "nothing", "wrong")


@dataclass(frozen=True)
class Judgement:
    verdict: str
    roots: tuple[str, ...]
    why: str


def load_judgements(path: Path = JUDGEMENTS) -> dict[int, Judgement]:
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text())
    return {j["order"]: Judgement(j["verdict"], tuple(j["roots"]), j.get("why", ""))
            for j in data.get("judgement", [])}


def roots(report: Report) -> list[Finding]:
    """Findings nothing else explains (no ``caused_by``), above info."""
    return [f for f in report.findings if not f.caused_by and f.severity != Severity.INFO]


def root_ids(report: Report) -> tuple[str, ...]:
    return tuple(sorted({f.rule_id for f in roots(report)}))


def analyse(root: Path) -> Report:
    with open_bundle(root) as bundle:
        return analyze(bundle, discover().rules)


def _where(finding: Finding) -> str:
    objects = [f"{o.kind}/{o.name}" for o in finding.objects]
    return ",".join([*finding.nodes, *objects][:3]) or "-"


def verdict_of(order: int, report: Report, judgements: dict[int, Judgement]) -> str | None:
    """The recorded verdict, or None where the report's roots changed since."""
    judged = judgements.get(order)
    if judged is None or judged.roots != root_ids(report):
        return None
    return judged.verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="keep the bundles in this directory")
    parser.add_argument("--only", type=int, nargs="*", help="thread orders to measure")
    args = parser.parse_args(argv)
    judgements = load_judgements()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        counts: Counter[str] = Counter()
        stale: list[int] = []
        for thread in heldout.load_threads():
            if args.only and thread.order not in args.only:
                continue
            root, _ = heldout.build(thread, out)
            report = analyse(root)
            verdict = verdict_of(thread.order, report, judgements)
            print(f"#{thread.order} {thread.component} ({thread.source}) {thread.url}")
            for f in roots(report):
                print(f"    {f.rule_id:8} {_where(f):40} {f.severity.value:8} "
                      f"{f.confidence.value:9} {f.summary[:120]}")
            errors = [r.rule_id for r in report.rules if r.status.value == "error"]
            if errors:
                print(f"    rules in error: {', '.join(errors)}")
            if verdict is None:
                stale.append(thread.order)
                print(f"    verdict: needs re-judging (roots now {list(root_ids(report))})")
            else:
                counts[verdict] += 1
                print(f"    verdict: {verdict}")
    judged = sum(counts.values())
    print()
    print(f"judged {judged} of {judged + len(stale)}")
    for verdict in VERDICTS:
        share = counts[verdict] / judged if judged else 0.0
        print(f"  {verdict:8} {counts[verdict]:3d}  {share:6.1%}")
    if stale:
        print(f"needs re-judging: {' '.join(map(str, stale))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
