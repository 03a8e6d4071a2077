#!/usr/bin/env python3
"""Benchmark ``gpu-triage analyze`` against the cost of just reading the bundle.

    .venv/bin/python samples/bench.py                      # S, M, L and M/dir, 3 runs each
    .venv/bin/python samples/bench.py --sizes S,M,M:256,L  # + M with 256 KiB journals
    .venv/bin/python samples/bench.py --sizes L --profile  # + cProfile of one analyze

Bundles come from ``samples.synth`` (generated into ``--dir`` when missing, reused
after). For each bundle, one run measures, in this order:

- ``gzip``: wall time of ``gzip -dc BUNDLE > /dev/null`` (C-speed decompression);
- ``floor``: in a fresh Python, reading every tar member (``tarfile`` stream mode over
  the standard library's gzip) plus ``orjson.loads`` of every ``cluster/*.json``
  member; ``floor`` is the sum, the least any analysis of the bundle in Python can cost
  with the standard library's zlib;
- ``floor ng`` (archives only): the same reader over zlib-ng's gzip (``gzip_ng``), the
  best-decompressor floor: what the analyzer, which inflates with zlib-ng, could reach;
- ``json`` / ``html``: wall time and peak RSS of ``gpu-triage analyze BUNDLE -f json``
  (then ``-f html``) as a subprocess (``os.wait4`` gives that child's own peak RSS);
- ``pods_rss``: peak RSS of a fresh Python that only ``orjson.loads`` ``cluster/pods.json``.

Once per invocation: the import floor (``python -c "import click, pydantic, jinja2,
orjson, tomlkit"``) against ``analyze`` of ``samples/incident-toolkit-disabled``, wall
and CPU. A second table gives every floor and analysis in CPU seconds and their ratios.
Every figure is the median of ``--runs`` runs; ratios are taken between medians of
the same invocation, so a noisy machine shifts both sides alike. CPU seconds (user +
system of the child and its workers) are recorded beside wall seconds: on a shared
machine they move less. Before each run, one spinning process per core measures how
many cores are free at that moment (``cores free``): on a machine whose other tenants
take cores, the analysis's workers have none to run on, and its ratios then show its
CPU time more than its parallel design. A size ``M:256`` is M generated with 256 KiB
of journal per node instead of 1 MiB; comparing its peak RSS with M's shows whether
memory follows journal size.
A size ``M/dir`` is the M archive unpacked into a directory (``--dir``/``M.d``, kept
like the archives): its floor reads every file of the directory instead of the tar,
there is no ``gzip`` figure, and the report also gives its time against the archive's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
GPU_TRIAGE = str(VENV_BIN / "gpu-triage")
SMALL = ROOT / "samples" / "incident-toolkit-disabled"
NODES = {"S": 50, "M": 500, "L": 2000}
DIR = "/dir"  # a size with this suffix: its archive, unpacked
PACKAGES = ("bundle", "analyzers", "reports", "gpu_triage")

_FLOOR = """
import sys, tarfile, time, orjson
start = time.perf_counter()
members = 0
data_bytes = 0
cluster = []
if sys.argv[2:] == ["zlib-ng"]:  # the same tar reader over zlib-ng's gzip
    from zlib_ng import gzip_ng
    opened = tarfile.open(fileobj=gzip_ng.open(sys.argv[1], "rb"), mode="r|")
else:
    opened = tarfile.open(sys.argv[1], "r|gz")
with opened as archive:
    for member in archive:
        if not member.isfile():
            continue
        data = archive.extractfile(member).read()
        members += 1
        data_bytes += len(data)
        parts = member.name.split("/")
        if len(parts) == 3 and parts[1] == "cluster" and parts[2].endswith(".json"):
            cluster.append(data)
"""

_DIR_FLOOR = """
import os, sys, time, orjson
start = time.perf_counter()
members = 0
data_bytes = 0
cluster = []
for top, dirs, files in os.walk(sys.argv[1]):
    dirs.sort()
    for name in sorted(files):
        path = os.path.join(top, name)
        with open(path, "rb") as handle:
            data = handle.read()
        members += 1
        data_bytes += len(data)
        if os.path.basename(top) == "cluster" and name.endswith(".json"):
            cluster.append(data)
"""

# Both floors end alike: the cluster JSON read above is parsed, and the figures printed.
_PARSE = """
read = time.perf_counter() - start
start = time.perf_counter()
for data in cluster:
    orjson.loads(data)
parse = time.perf_counter() - start
print(orjson.dumps({"read": read, "parse": parse, "members": members,
                    "bytes": data_bytes}).decode())
"""

_PODS_ONLY = """
import sys, orjson
with open(sys.argv[1], "rb") as handle:
    pods = orjson.loads(handle.read())
print(len(pods["items"]))
"""


@dataclass
class Run:
    """One child process: wall seconds, CPU seconds (user + system), its own peak RSS
    (MiB), exit code, stdout."""

    seconds: float
    cpu: float
    rss_mib: float
    code: int
    stdout: str


def measure(command: list[str], *, devnull_stdout: bool = False,
            env: dict[str, str] | None = None) -> Run:
    """Run ``command``; wall time and the child's own peak RSS from ``os.wait4``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        target = subprocess.DEVNULL if devnull_stdout else out
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=target, stderr=err, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode(errors="replace")
        if proc.returncode not in (0, 1):
            message = err.read().decode(errors="replace")[-2000:]
            raise SystemExit(f"{' '.join(command)} exited {proc.returncode}:\n{message}")
    rss = usage.ru_maxrss / 1024  # KiB on Linux
    return Run(seconds, usage.ru_utime + usage.ru_stime, rss, proc.returncode, text)


_SPIN = "import time\nend = time.monotonic() + 0.5\nwhile time.monotonic() < end: pass"


def free_cores() -> float:
    """CPU seconds per second that one spinning process per core gets now: the cores
    an analysis could use at this moment (a shared or oversubscribed machine gives fewer
    than it has, and then parallel work gains less)."""
    count = os.cpu_count() or 1
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", _SPIN]) for _ in range(count)]
    cpu = 0.0
    for proc in procs:
        _, _, usage = os.wait4(proc.pid, 0)
        cpu += usage.ru_utime + usage.ru_stime
    return cpu / (time.perf_counter() - start)


@dataclass
class Figures:
    size: str
    nodes: int
    samples: dict[str, list[float]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    def add(self, key: str, value: float) -> None:
        self.samples.setdefault(key, []).append(value)

    def median(self, key: str) -> float:
        return statistics.median(self.samples[key])


def ensure_bundle(spec: str, directory: Path, seed: int) -> Path:
    """``S``, ``M``, ``L``, or ``M:256`` for M with 256 KiB of journal per node; with
    ``/dir`` after it, that archive unpacked into a directory."""
    if spec.endswith(DIR):
        archive = ensure_bundle(spec.removesuffix(DIR), directory, seed)
        return unpack(archive)
    size, _, journal = spec.partition(":")
    path = directory / (f"{size}-j{journal}.tgz" if journal else f"{size}.tgz")
    if not path.exists():
        print(f"generating {path} ...", file=sys.stderr, flush=True)
        extra = ["--journal-kib", journal] if journal else []
        code = subprocess.call([sys.executable, "-m", "samples.synth", "--size", size,
                                "--seed", str(seed), "-o", str(path), *extra], cwd=ROOT)
        if code:
            raise SystemExit(f"generating {size} failed ({code})")
    return path


def unpack(archive: Path) -> Path:
    """``archive`` unpacked beside it (``M.tgz`` into ``M.d``), once."""
    import tarfile

    target = archive.with_name(archive.name.removesuffix(".tgz") + ".d")
    if not target.exists():
        print(f"unpacking {archive} into {target} ...", file=sys.stderr, flush=True)
        partial = target.with_name(target.name + ".partial")
        with tarfile.open(archive, "r:gz") as opened:
            opened.extractall(partial, filter="data")
        partial.rename(target)
    return target


def planted_of(bundle: Path) -> Path:
    """The planted findings of a generated archive, or of the archive a directory was
    unpacked from."""
    stem = bundle.name.removesuffix(".tgz").removesuffix(".d")
    return bundle.with_name(stem + ".planted.json")


def extract_pods(bundle: Path, target: Path) -> None:
    import tarfile

    if bundle.is_dir():
        found = sorted(bundle.glob("cluster/pods.json")) or sorted(
            bundle.glob("*/cluster/pods.json"))
        if not found:
            raise SystemExit(f"{bundle} has no cluster/pods.json")
        target.write_bytes(found[0].read_bytes())
        return
    with tarfile.open(bundle, "r|gz") as archive:
        for member in archive:
            if member.name.endswith("/cluster/pods.json"):
                handle = archive.extractfile(member)
                assert handle is not None
                with target.open("wb") as out:
                    while block := handle.read(1 << 20):
                        out.write(block)
                return
    raise SystemExit(f"{bundle} has no cluster/pods.json")


def findings_verdict(report_path: Path, planted_path: Path) -> str:
    """``as planted`` when the JSON report's findings are the planted ones
    (:func:`samples.synth.verdict.judge`), else what differs."""
    if str(ROOT) not in sys.path:  # run as a script: samples/ is the path's head
        sys.path.insert(0, str(ROOT))
    from samples.synth.verdict import Found, judge

    if not planted_path.exists():
        return "no planted.json"
    findings = json.loads(report_path.read_text())["findings"]
    verdict = judge((Found(f["rule_id"], f["id"], f["severity"]) for f in findings),
                    json.loads(planted_path.read_text()))
    if verdict.as_planted:
        return "as planted"
    return (f"NOT as planted: rules differing {verdict.differing}, "
            f"unexpected {verdict.unexpected[:5]}")


def bench_bundle(size: str, bundle: Path, runs: int, scratch: Path) -> Figures:
    figures = Figures(size, NODES.get(size.partition(":")[0].removesuffix(DIR), 0))
    planted = planted_of(bundle)
    unpacked = bundle.is_dir()
    if planted.exists():
        figures.nodes = json.loads(planted.read_text())["nodes"]
    pods = scratch / f"{size.replace('/', '-')}-pods.json"
    extract_pods(bundle, pods)
    if not unpacked:
        figures.info["archive_mb"] = bundle.stat().st_size / 1e6
    figures.info["pods_json_mb"] = pods.stat().st_size / 1e6
    python = sys.executable
    for index in range(runs):
        print(f"  {size} run {index + 1}/{runs}", file=sys.stderr, flush=True)
        if not unpacked:
            gzip = measure(["sh", "-c", f"gzip -dc '{bundle}' > /dev/null"])
            figures.add("gzip", gzip.seconds)
            figures.add("gzip_cpu", gzip.cpu)
        floor = measure([python, "-c", (_DIR_FLOOR if unpacked else _FLOOR) + _PARSE,
                         str(bundle)])
        parts = json.loads(floor.stdout)
        figures.add("floor_read", parts["read"])
        figures.add("floor_parse", parts["parse"])
        figures.add("floor", parts["read"] + parts["parse"])
        figures.add("floor_cpu", floor.cpu)
        figures.add("floor_rss", floor.rss_mib)
        if not unpacked:
            best = measure([python, "-c", _FLOOR + _PARSE, str(bundle), "zlib-ng"])
            parts_ng = json.loads(best.stdout)
            figures.add("ng_floor", parts_ng["read"] + parts_ng["parse"])
            figures.add("ng_floor_cpu", best.cpu)
        figures.info["members"] = parts["members"]
        figures.info["unpacked_mb"] = parts["bytes"] / 1e6
        figures.add("cores_free", free_cores())
        for fmt in ("json", "html"):
            out = scratch / f"{size.replace('/', '-')}.{fmt}"
            result = measure([GPU_TRIAGE, "analyze", str(bundle), "-f", fmt, "-o", str(out)])
            figures.add(fmt, result.seconds)
            figures.add(f"{fmt}_cpu", result.cpu)
            figures.add(f"{fmt}_rss", result.rss_mib)
            figures.info[f"{fmt}_mb"] = out.stat().st_size / 1e6
            if fmt == "json":
                figures.info["findings"] = findings_verdict(out, planted)
        figures.add("pods_rss", measure([python, "-c", _PODS_ONLY, str(pods)]).rss_mib)
    pods.unlink()
    return figures


def bench_startup(runs: int, scratch: Path) -> dict[str, float]:
    # Installed packages come with byte code; make sure ours has it too, whatever
    # PYTHONDONTWRITEBYTECODE says, so that both sides load compiled modules. One warm-up
    # run each fills the page cache.
    subprocess.run([sys.executable, "-m", "compileall", "-q", *PACKAGES], cwd=ROOT,
                   check=True)
    commands = {
        "imports": [sys.executable, "-c", "import click, pydantic, jinja2, orjson, tomlkit"],
        "small": [GPU_TRIAGE, "analyze", str(SMALL), "-f", "json", "-o",
                  str(scratch / "small.json")]}
    samples: dict[str, list[float]] = {}
    for command in commands.values():
        measure(command)
    for _ in range(runs):
        for name, command in commands.items():
            run = measure(command)
            samples.setdefault(name, []).append(run.seconds)
            samples.setdefault(f"{name}_cpu", []).append(run.cpu)
    return {name: statistics.median(values) for name, values in samples.items()}


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{os.cpu_count()} cores, {model}, {mem:.0f} GiB RAM, Python "
            f"{platform.python_version()}")


def report(all_figures: list[Figures], startup: dict[str, float] | None) -> str:
    lines = [f"machine: {machine()}", ""]
    header = (f"{'size':<7}{'nodes':>6}{'gzip -dc':>10}{'floor':>8}{'json':>8}{'html':>8}"
              f"{'json/fl':>9}{'html/fl':>9}{'cpu/fl':>8}{'ms/node':>9}{'RSS json':>10}"
              f"{'RSS html':>10}{'RSS pods':>10}{'rss/pods':>9}")
    lines += [header, "-" * len(header)]
    for f in all_figures:
        floor = f.median("floor")
        rss = max(f.median("json_rss"), f.median("html_rss"))
        gzip = f"{f.median('gzip'):>9.1f}s" if "gzip" in f.samples else f"{'-':>10}"
        lines.append(
            f"{f.size:<7}{f.nodes:>6}{gzip}{floor:>7.1f}s"
            f"{f.median('json'):>7.1f}s{f.median('html'):>7.1f}s"
            f"{f.median('json') / floor:>9.2f}{f.median('html') / floor:>9.2f}"
            f"{f.median('html_cpu') / f.median('floor_cpu'):>8.2f}"
            f"{1000 * f.median('html') / max(f.nodes, 1):>9.1f}"
            f"{f.median('json_rss'):>8.0f}Mi{f.median('html_rss'):>8.0f}Mi"
            f"{f.median('pods_rss'):>8.0f}Mi{rss / f.median('pods_rss'):>9.2f}")
    lines += ["", "CPU seconds (user + system of the child and its workers; on a shared machine "
              "these, and ratios from one run, are the figures to compare):", ""]
    header = (f"{'size':<7}{'floor':>8}{'floor ng':>10}{'ng/std':>8}{'json':>8}{'html':>8}"
              f"{'html/fl':>9}{'html/ng':>9}{'wall fl':>9}{'wall ng':>9}{'wall html':>11}")
    lines += [header, "-" * len(header)]
    for f in all_figures:
        html, floor = f.median("html_cpu"), f.median("floor_cpu")
        has_ng = "ng_floor_cpu" in f.samples
        ng = f.median("ng_floor_cpu") if has_ng else 0.0
        lines.append(
            f"{f.size:<7}{floor:>7.2f}s"
            + (f"{ng:>9.2f}s{ng / floor:>8.2f}" if has_ng else f"{'-':>10}{'-':>8}")
            + f"{f.median('json_cpu'):>7.2f}s{html:>7.2f}s{html / floor:>9.2f}"
            + (f"{html / ng:>9.2f}" if has_ng else f"{'-':>9}")
            + f"{f.median('floor'):>8.2f}s"
            + (f"{f.median('ng_floor'):>8.2f}s" if has_ng else f"{'-':>9}")
            + f"{f.median('html'):>10.2f}s")
    lines.append("")
    for f in all_figures:
        info = ", ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in sorted(f.info.items()))
        parts = ", ".join(f"{k}={statistics.median(v):.2f}" for k, v in sorted(f.samples.items()))
        lines.append(f"{f.size}: {info}")
        lines.append(f"{f.size} medians: {parts}")
    by_size = {f.size: f for f in all_figures}
    if "M" in by_size and "L" in by_size:
        m, big = by_size["M"], by_size["L"]
        ratio = (big.median("html") / big.nodes) / (m.median("html") / m.nodes)
        cpu = (big.median("html_cpu") / big.nodes) / (m.median("html_cpu") / m.nodes)
        lines.append(f"time per node L/M (html): wall {ratio:.2f}, cpu {cpu:.2f}")
    for f in all_figures:
        archive = by_size.get(f.size.removesuffix(DIR))
        if f.size.endswith(DIR) and archive is not None:
            lines.append(
                f"directory {f.size} against archive {archive.size}: html "
                f"{f.median('html') / archive.median('html'):.2f}, json "
                f"{f.median('json') / archive.median('json'):.2f} (wall); cpu html "
                f"{f.median('html_cpu') / archive.median('html_cpu'):.2f}; html against the "
                f"archive's floor {f.median('html') / archive.median('floor'):.2f}")
    for f in all_figures:
        used = f.median("html_cpu") / f.median("html")
        lines.append(f"{f.size}: cores free before the runs {f.median('cores_free'):.1f} of "
                     f"{os.cpu_count()}; analyze -f html used {used:.2f} CPU seconds a second")
    journal_sizes = [f for f in all_figures if ":" in f.size or f.size == "M"]
    if len(journal_sizes) > 1:
        shown = ", ".join(f"{f.size} {max(f.median('json_rss'), f.median('html_rss')):.0f} MiB"
                          for f in journal_sizes)
        lines.append(f"peak RSS by journal size: {shown}")
    if startup is not None:
        lines.append(f"import floor (click, pydantic, jinja2, orjson, tomlkit): "
                     f"{startup['imports']:.3f}s wall, {startup['imports_cpu']:.3f}s CPU")
        lines.append(f"analyze small sample: {startup['small']:.3f}s wall, "
                     f"{startup['small_cpu']:.3f}s CPU; against the import floor "
                     f"{startup['small'] / startup['imports']:.2f} (wall), "
                     f"{startup['small_cpu'] / startup['imports_cpu']:.2f} (CPU)")
    return "\n".join(lines)


def profile(bundle: Path, scratch: Path, top: int) -> str:
    stats_path = scratch / "analyze.prof"
    code = subprocess.call([sys.executable, "-m", "cProfile", "-o", str(stats_path),
                            GPU_TRIAGE, "analyze", str(bundle), "-f", "html", "-o",
                            str(scratch / "profiled.html")], cwd=ROOT,
                           stdout=subprocess.DEVNULL)
    if code not in (0, 1):
        raise SystemExit(f"profiled analyze exited {code}")
    import io
    import pstats

    text = io.StringIO()
    stats = pstats.Stats(str(stats_path), stream=text)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return text.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="S,M,L,M/dir")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "gpu-triage-bench",
                        help="where generated bundles are kept (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-startup", action="store_true", help="skip the startup check")
    parser.add_argument("--profile", action="store_true",
                        help="also cProfile one analyze of the largest size")
    parser.add_argument("--json", type=Path, help="also write the raw samples here")
    args = parser.parse_args(argv)
    sizes = [s.strip().upper() for s in args.sizes.split(",") if s.strip()]
    sizes = [s.removesuffix(DIR.upper()) + DIR if s.endswith(DIR.upper()) else s for s in sizes]
    if any(s.removesuffix(DIR).partition(":")[0] not in NODES for s in sizes):
        parser.error("sizes are S, M, L, optionally with :KIB of journal per node and /dir "
                     f"(unpacked): {sizes}")
    args.dir.mkdir(parents=True, exist_ok=True)
    bundles = {size: ensure_bundle(size, args.dir, args.seed) for size in sizes}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        scratch = Path(tmp)
        startup = None if args.no_startup else bench_startup(max(args.runs, 5), scratch)
        figures = [bench_bundle(size, bundles[size], args.runs, scratch) for size in sizes]
        print(report(figures, startup))
        if args.json:
            args.json.write_text(json.dumps({
                "machine": machine(), "startup": startup,
                "sizes": {f.size: {"nodes": f.nodes, "samples": f.samples, "info": f.info}
                          for f in figures}}, indent=2) + "\n")
        if args.profile:
            largest = max(sizes, key=lambda s: (NODES[s.removesuffix(DIR).partition(":")[0]],
                                                not s.endswith(DIR)))
            print(profile(bundles[largest], scratch, 40))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
