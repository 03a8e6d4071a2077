"""Fingerprints of every sample's JSON and HTML report, to prove a refactor changes no byte.

``python tests/report_snapshot.py --write`` renders every bundle under ``samples/`` (a
directory with a ``manifest.json``) through the real command line and stores one SHA-256
per report in ``tests/fixtures/report_snapshot.json``; ``--check`` (and
``tests/test_report_snapshot.py``) renders again and names every report that differs.
Only the generation timestamp is blanked before hashing. When a report is meant to
change (a new rule, new wording), rewrite the snapshot with ``--write`` in the same commit.
``--keep DIR`` leaves the stripped reports in DIR so two runs can be diffed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
SNAPSHOT = ROOT / "tests" / "fixtures" / "report_snapshot.json"
FORMATS = ("json", "html")
STAMPS = (
    re.compile(r'("generated_at": )"[^"]*"'),
    re.compile(r"(generated )\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"),
)


def bundles() -> list[Path]:
    return sorted(p.parent for p in SAMPLES.glob("*/manifest.json"))


def strip(text: str) -> str:
    for stamp in STAMPS:
        text = stamp.sub(r"\1<stamp>", text)
    return text


def render(keep: Path | None = None) -> dict[str, str]:
    """Render every sample once; return ``{"<sample>.<format>": sha256}``."""
    with tempfile.TemporaryDirectory(prefix="report-snapshot-") as tmp:
        out = Path(tmp)
        # relative paths: the report names the bundle's path, which must not depend on
        # where the checkout lives
        named = [str(bundle.relative_to(ROOT)) for bundle in bundles()]
        command = [sys.executable, "-m", "gpu_triage", "analyze", *named,
                   "-f", ",".join(FORMATS), "--out-dir", str(out), "-q", "--fail-on", "critical"]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode not in (0, 1):
            raise RuntimeError(f"analyze exited {done.returncode}: {done.stderr[-2000:]}")
        prints: dict[str, str] = {}
        for bundle in bundles():
            for fmt in FORMATS:
                report = out / f"{bundle.name}.report.{fmt}"
                text = strip(report.read_text(encoding="utf-8"))
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    (keep / report.name).write_text(text, encoding="utf-8")
                prints[f"{bundle.name}.{fmt}"] = hashlib.sha256(text.encode()).hexdigest()
        return prints


def differences(stored: dict[str, str], now: dict[str, str]) -> list[str]:
    def why(key: str) -> str:
        return "missing now" if key not in now else "new" if key not in stored else "differs"
    keys = sorted(set(stored) | set(now))
    return [f"{key}: {why(key)}" for key in keys if stored.get(key) != now.get(key)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="store the snapshot")
    parser.add_argument("--keep", type=Path, help="leave the stripped reports here")
    args = parser.parse_args(argv)
    now = render(args.keep)
    if args.write:
        SNAPSHOT.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{len(now)} reports fingerprinted into {SNAPSHOT.relative_to(ROOT)}")
        return 0
    diff = differences(json.loads(SNAPSHOT.read_text(encoding="utf-8")), now)
    print("\n".join(diff) or f"{len(now)} reports byte-identical to the snapshot")
    return 1 if diff else 0


if __name__ == "__main__":
    raise SystemExit(main())
