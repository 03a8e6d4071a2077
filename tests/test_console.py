"""Output under a legacy encoding (Windows' cp1252): redirected output is UTF-8, a
terminal that lacks a character gets its ASCII spelling, and nothing ends in exit 4."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_triage.console import prepare

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
# Its HELM finding says "driver.enabled: false → (unset, chart default true)": "→" is
# not in cp1252.
HELM = SAMPLES / "helm-dropped-values"
INCIDENT = SAMPLES / "incident-toolkit-disabled"
HEALTHY = SAMPLES / "healthy-toolkit-enabled"


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    full = {**os.environ, **env}
    return subprocess.run([sys.executable, "-m", "gpu_triage", *args], cwd=cwd,
                          capture_output=True, env=full, timeout=300, check=False)


@pytest.mark.parametrize("fmt", ["text", "md", None])
def test_redirected_report_under_cp1252_is_utf8(tmp_path: Path, fmt: str | None) -> None:
    args = ["analyze", str(HELM)] + (["-f", fmt] if fmt else [])
    done = _run(args, tmp_path, PYTHONIOENCODING="cp1252")
    assert done.returncode == 1, done.stderr
    assert "driver.enabled: false → (unset" in done.stdout.decode("utf-8")
    if fmt is None:  # the HTML report is written too, not lost with the text
        assert (tmp_path / "helm-dropped-values.report.html").is_file()


def test_text_and_diff_files_under_cp1252(tmp_path: Path) -> None:
    done = _run(["analyze", str(HELM), "-f", "text", "-o", "r.txt"], tmp_path,
                PYTHONIOENCODING="cp1252", LC_ALL="C")
    assert done.returncode == 1, done.stderr
    assert "→" in (tmp_path / "r.txt").read_text(encoding="utf-8")
    done = _run(["diff", str(INCIDENT), str(HEALTHY)], tmp_path, PYTHONIOENCODING="cp1252")
    assert done.returncode == 0, done.stderr
    assert "→" in done.stdout.decode("utf-8")
    done = _run(["diff", str(INCIDENT), str(HEALTHY), "-o", "d.txt"], tmp_path,
                PYTHONIOENCODING="cp1252")
    assert done.returncode == 0 and "→" in (tmp_path / "d.txt").read_text(encoding="utf-8")


class _Terminal(io.BytesIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_without_the_character_gets_ascii() -> None:
    raw = _Terminal()
    stream = io.TextIOWrapper(raw, encoding="cp1252")
    prepare(stream)
    stream.write("false → true · ×2 … ✓ 日本 é\n")
    stream.flush()
    assert raw.getvalue().decode("cp1252") == "false -> true · ×2 … ok ?? é\n"
    ascii_raw = _Terminal()
    ascii_stream = io.TextIOWrapper(ascii_raw, encoding="ascii")
    prepare(ascii_stream)
    ascii_stream.write("a → b · c\n")
    ascii_stream.flush()
    assert ascii_raw.getvalue() == b"a -> b * c\n"


def test_a_utf8_stream_is_left_alone() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="strict")
    prepare(stream)
    assert (stream.encoding, stream.errors) == ("utf-8", "strict")
    redirected = io.TextIOWrapper(io.BytesIO(), encoding="cp1252")
    prepare(redirected)
    assert redirected.encoding == "utf-8"
