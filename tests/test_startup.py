"""Startup: each command imports what it needs. On a small bundle the imports are most
of ``analyze``'s time (docs/performance.md), so what ``analyze -f json`` must not load
is checked here, in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INCIDENT = ROOT / "samples" / "incident-toolkit-disabled"
# The probes run in another directory: this tree goes first on their path, so that what
# they import is this checkout's code whatever the environment has installed.
_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}

# Modules a single-bundle JSON report has no use for, and what each one is for.
UNNEEDED = {
    "yaml": "YAML inside bundles (ConfigMap values, foreign layouts)",
    "tomlkit": "the corrected drop-in of RT002",
    "jinja2": "the HTML report",
    "reports.html": "the HTML report",
    "reports.text": "the terminal report",
    "reports.diff": "gpu-triage diff",
    "analyzers.engine.diff": "gpu-triage diff",
    "analyzers.results.diff_models": "gpu-triage diff",
    "analyzers.engine.ruletest": "gpu-triage rules test",
    "gpu_triage.batch": "several bundles",
    "gpu_triage.cli_batch": "several bundles",
    "analyzers.results.batch_models": "several bundles",
    "concurrent.futures": "several bundles",
    "bundle.layouts.base": "foreign bundle layouts",
    "bundle.layouts.mustgather": "foreign bundle layouts",
    "bundle.layouts.troubleshoot": "foreign bundle layouts",
}

_PROBE = """
import json, sys
from gpu_triage.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _imported(args: list[str], cwd: Path) -> tuple[int, set[str]]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=cwd, capture_output=True,
                          text=True, check=True, timeout=120, env=_ENV)
    result = json.loads(done.stdout.splitlines()[-1])
    return result["code"], set(result["modules"])


def test_analyze_json_of_a_small_bundle_imports_only_what_it_needs(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code, modules = _imported(["analyze", str(INCIDENT), "-f", "json", "-o", str(out)],
                              tmp_path)
    assert code == 1
    assert json.loads(out.read_text(encoding="utf-8"))["summary"] == {
        "critical": 5, "high": 14, "medium": 2, "low": 6, "info": 5}
    assert {name: UNNEEDED[name] for name in sorted(modules & UNNEEDED.keys())} == {}


def test_help_imports_no_analysis(tmp_path: Path) -> None:
    code, modules = _imported(["--help"], tmp_path)
    assert code == 0
    assert not {m for m in modules if m.split(".")[0] in ("analyzers", "bundle", "reports")
                and m != "analyzers"}
    assert "pydantic" not in modules


def test_listing_the_rules_imports_no_analysis(tmp_path: Path) -> None:
    # importing analyzers.engine.plugins runs the engine package's __init__: it must not
    # bring the analysis, what is built around a run, or the speed wing with it
    code, modules = _imported(["rules"], tmp_path)
    assert code == 0
    assert {"analyzers.engine.plugins", "analyzers.rules.drv.DRV001"} <= modules
    assert not {m for m in modules if m in ("analyzers.engine.analysis",
                                            "analyzers.engine.coverage",
                                            "analyzers.engine.overview",
                                            "analyzers.engine.timeline")
                or m.split(".")[:2] == ["analyzers", "speed"]}


_FREEZE_PROBE = """
import gc, sys
from gpu_triage.cli import main
if sys.argv[1] == "program":
    sys.argv[1:] = sys.argv[2:]
    code = main()
else:
    code = main(sys.argv[2:])
print(code, gc.get_freeze_count())
"""


def _frozen_after(mode: str, args: list[str], cwd: Path) -> tuple[int, int]:
    done = subprocess.run([sys.executable, "-c", _FREEZE_PROBE, mode, *args], cwd=cwd,
                          capture_output=True, text=True, check=True, timeout=120, env=_ENV)
    code, frozen = done.stdout.split()[-2:]
    return int(code), int(frozen)


def test_the_program_freezes_its_objects_before_exit_and_a_caller_keeps_them(
        tmp_path: Path) -> None:
    # Run as the program (argv from sys.argv), the objects of the run are frozen so that
    # the interpreter's exit does not collect over every one of them; a caller passing
    # argv (tests, an embedding program) goes on living, so nothing of its is frozen.
    out = tmp_path / "report.json"
    args = ["analyze", str(INCIDENT), "-f", "json", "-o", str(out)]
    code, frozen = _frozen_after("program", args, tmp_path)
    assert code == 1 and frozen > 10_000
    code, frozen = _frozen_after("library", args, tmp_path)
    assert code == 1 and frozen == 0
