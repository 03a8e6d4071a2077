"""``gpu-triage redact BUNDLE -o OUT``: today's redaction, applied to a bundle again.

For a bundle made by an older collector (or with ``--no-redact``), a must-gather or a
troubleshoot tree, and for a customer's own list of strings (``--redact-file``). The
bundle is read by the project's safe readers (never unpacked to disk), every file is
redacted by the collector's own module (:mod:`collectors.redact`) exactly as the collector
would have, and the result is written as one ``.tgz`` through :mod:`gpu_triage.outputs`,
mode 0600. Anchors: Replicated troubleshoot's ``redact`` and ``sos clean``.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gpu_triage.cli_common import Failure, check_output, output_failure, shown, stderr, unreadable
from gpu_triage.exitcodes import Exit

if TYPE_CHECKING:
    from bundle.problems import ProblemLog
    from collectors.redact import CustomPatterns, Redactor

@click.command()
@click.argument("bundle_path", metavar="BUNDLE", type=click.Path(path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path),
              help="The redacted bundle to write (.tgz).")
@click.option("--redact-file", type=click.Path(path_type=Path),
              help="Your own list: one literal string per line, or `regex:PATTERN`; "
                   "blank lines and `#` comments are skipped.")
@click.option("--max-member-mib", type=click.IntRange(1), default=512, show_default=True,
              help="Refuse archive members larger than this.")
@click.option("--max-total-gib", type=click.IntRange(1), default=16, show_default=True,
              help="Stop reading an archive that expands beyond this.")
def redact(bundle_path: Path, output: Path, redact_file: Path | None, max_member_mib: int,
           max_total_gib: int) -> None:
    """Redact secrets in an existing bundle (v1, must-gather, troubleshoot) into a new .tgz.

    The result analyses the same as the original except for the redacted values.
    """
    from bundle import BundleError, Limits
    from bundle.layouts import find_root
    from bundle.problems import ProblemLog
    from bundle.sources import open_source
    from collectors.redact import Redactor
    from gpu_triage.outputs import OutputError, write

    custom = _custom(redact_file)
    check_output(output)
    redactor = Redactor(True, custom)
    limits = Limits(max_member_bytes=max_member_mib << 20, max_total_bytes=max_total_gib << 30)
    problems = ProblemLog()
    try:
        source = open_source(bundle_path, limits, problems, find_root)
    except BundleError as exc:
        raise unreadable(exc) from None
    files: list[tuple[str, bytes]] = []
    left_out: list[str] = []
    try:
        for rel in sorted(source.paths()):
            data = source.read(rel)
            redacted = None if data is None else redactor.bundle_file(rel, data)
            if redacted is None:
                left_out.append(rel)
            else:
                files.append((rel, redacted))
    finally:
        source.close()
    files = _manifest_first(files, redactor, len(custom.patterns))
    payload = _archive(_top(output), files)
    try:
        write(output, payload, 0o600)
    except OutputError as exc:
        raise output_failure(exc) from None
    _summary(output, payload, redactor, files, left_out, problems)


def _custom(path: Path | None) -> CustomPatterns:
    from collectors.redact import CustomPatterns

    if path is None:
        return CustomPatterns()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise Failure(f"cannot read --redact-file {shown(path)}: {exc}", Exit.USAGE) from None
    try:
        return CustomPatterns.parse(text, shown(path))
    except ValueError as exc:
        raise Failure(f"--redact-file {exc}", Exit.USAGE) from None


def _manifest_first(files: list[tuple[str, bytes]], redactor: Redactor,
                    custom: int) -> list[tuple[str, bytes]]:
    """manifest.json (format v1) goes first and says that this redaction was applied."""
    from bundle.specs import MANIFEST  # here: ``gpu-triage --help`` imports no bundle

    manifest = [data for rel, data in files if rel == MANIFEST]
    rest = [(rel, data) for rel, data in files if rel != MANIFEST]
    if not manifest:
        return rest
    try:
        parsed = json.loads(manifest[0])
    except ValueError:
        return [(MANIFEST, manifest[0]), *rest]
    if isinstance(parsed, dict):
        found = parsed.get("redaction")
        redaction: dict[str, object] = dict(found) if isinstance(found, dict) else {}
        redaction["reapplied"] = {"by": "gpu-triage redact", "custom_patterns": custom,
                                  "kinds": dict(sorted(redactor.kinds.items()))}
        parsed["redaction"] = redaction
        manifest[0] = (json.dumps(parsed, indent=1, ensure_ascii=False) + "\n").encode()
    return [(MANIFEST, manifest[0]), *rest]


def _top(output: Path) -> str:
    from gpu_triage.outputs import safe_name

    name = output.name
    for suffix in (".tgz", ".tar.gz", ".tar"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return safe_name(name or "bundle-redacted")


def _archive(top: str, files: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for rel, data in files:
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size, info.mode = len(data), 0o600
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _summary(output: Path, payload: bytes, redactor: Redactor, files: list[tuple[str, bytes]],
             left_out: list[str], problems: ProblemLog) -> None:
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(redactor.kinds.items())) or "none"
    stderr(f"gpu-triage redact: {sum(redactor.kinds.values())} values redacted ({kinds}); "
           "values are never shown")
    for rel in left_out:
        stderr(f"gpu-triage redact: left out {shown(rel)}: binary content or refused by the "
               "reader")
    for problem in problems.items:
        stderr(f"gpu-triage redact: {problem.kind}: {problem.describe()}")
    stderr(f"gpu-triage redact: wrote {shown(output)} ({len(files)} files, mode 0600); "
           f"sha256 {hashlib.sha256(payload).hexdigest()}")

