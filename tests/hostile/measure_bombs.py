"""Measure ``gpu-triage analyze`` on every bundle of the work-budget corpus.

    .venv/bin/python tests/hostile/measure_bombs.py [--only NAME,NAME] [--timeout S]
        [--baseline CHECKOUT]

Each bomb is built in a temporary directory, then analysed (``-f json``) in a fresh
interpreter whose address space is capped (``--max-memory-gib``, default 10) and which
is killed after ``--timeout`` seconds (default 120), so that a bomb that still works
cannot take the machine with it. Printed per bomb: compressed size, wall and CPU
seconds, peak RSS (the child's own, from ``wait4``), exit code, and the first problem
the report recorded. With ``--baseline`` (another checkout of the project, e.g. a
``git worktree`` of an older commit), each bomb is built once and analysed by both, the
baseline first, so that before and after are measured in one run. The figures are for
the record (docs/security.md), not a test.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(HERE)]

from bombs import BOMBS, Bomb  # noqa: E402


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


def _run(bomb: Bomb, built: Path, work: Path, code: Path, timeout: float,
         max_memory: int) -> str:
    out = work / f"{bomb.name}-{abs(hash(code))}.json"
    argv = [sys.executable, "-m", "gpu_triage", "analyze", str(built), "-f", "json",
            "-o", str(out), "--fail-on", "critical"]

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (max_memory, max_memory))
        os.setsid()

    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=work, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, preexec_fn=cap,
                             env={**os.environ, "PYTHONPATH": str(code)})
    timer = threading.Timer(timeout, lambda: os.killpg(child.pid, signal.SIGKILL))
    timer.start()
    stderr = child.stderr.read() if child.stderr else b""
    _, status, usage = os.wait4(child.pid, 0)
    timer.cancel()
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode == -signal.SIGKILL and wall >= timeout:
        outcome = f"killed after {timeout:.0f} s"
    elif child.returncode < 0:
        outcome = f"signal {-child.returncode}"
    else:
        outcome = f"exit {child.returncode}"
    first = ""
    if out.exists():
        import orjson

        report = orjson.loads(out.read_bytes())
        problems = report.get("problems") or []
        errors = [r for r in report.get("rules", []) if r.get("status") == "error"]
        if problems:
            first = f"{problems[0]['path']}: {problems[0]['message']}"[:110]
        if errors:
            first += f" [{len(errors)} rule error(s)]"
    elif stderr:
        first = stderr.decode("utf-8", "replace").strip().splitlines()[-1][:110]
    cpu = usage.ru_utime + usage.ru_stime
    return (f"{wall:8.1f} s {cpu:8.1f} s {usage.ru_maxrss / 1024:8.0f} MiB  {outcome:18} "
            f"{first}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1].strip())
    parser.add_argument("--only", default="", help="comma-separated bomb names")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--max-memory-gib", type=float, default=10.0)
    parser.add_argument("--baseline", type=Path, help="another checkout to measure first")
    args = parser.parse_args()
    wanted = {n for n in args.only.split(",") if n}
    unknown = wanted - {b.name for b in BOMBS}
    if unknown:
        parser.error(f"unknown bomb(s): {', '.join(sorted(unknown))}")
    checkouts = [("before", args.baseline.resolve())] if args.baseline else []
    checkouts.append(("after" if args.baseline else "", ROOT))
    print(f"{'bomb':22} {'size':>13} {'':6} {'wall':>10} {'cpu':>10} {'peak RSS':>12}  "
          f"{'outcome':18} first problem")
    for bomb in BOMBS:
        if wanted and bomb.name not in wanted:
            continue
        with tempfile.TemporaryDirectory(prefix=f"bomb-{bomb.name}-") as work:
            built = bomb.build(Path(work))
            head = f"{bomb.name:22} {_size(built) / 1024:9.1f} KiB"
            for label, code in checkouts:
                figures = _run(bomb, built, Path(work), code, args.timeout,
                               int(args.max_memory_gib * (1 << 30)))
                print(f"{head} {label:6} {figures}", flush=True)
                head = " " * len(head)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
