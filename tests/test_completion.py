"""Shell completion as the README documents it: click's ``_GPU_TRIAGE_COMPLETE`` variable
makes the installed ``gpu-triage`` print a completion script for bash, zsh and fish, and
that script's completions name the real subcommands."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
SCRIPT = Path(sys.executable).parent / ("gpu-triage.exe" if os.name == "nt" else "gpu-triage")
HOOKS = {"bash": "~/.bashrc", "zsh": "~/.zshrc",
         "fish": "~/.config/fish/completions/gpu-triage.fish"}


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    if not SCRIPT.is_file():
        pytest.skip(f"no installed console script at {SCRIPT} (pip install -e .)")
    return subprocess.run([str(SCRIPT)], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_source_script_per_shell(shell: str) -> None:
    result = _run({"_GPU_TRIAGE_COMPLETE": f"{shell}_source"})
    assert result.returncode == 0, result.stderr
    assert "_gpu_triage_completion" in result.stdout
    assert f"_GPU_TRIAGE_COMPLETE={shell}_complete" in result.stdout
    assert result.stderr == ""


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash to check the script's syntax")
def test_bash_script_parses() -> None:
    script = _run({"_GPU_TRIAGE_COMPLETE": "bash_source"}).stdout
    checked = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True,
                             timeout=60, check=False)
    assert checked.returncode == 0, checked.stderr


def test_completes_subcommands() -> None:
    result = _run({"_GPU_TRIAGE_COMPLETE": "bash_complete", "COMP_WORDS": "gpu-triage an",
                   "COMP_CWORD": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["plain,analyze"]
    result = _run({"_GPU_TRIAGE_COMPLETE": "bash_complete", "COMP_WORDS": "gpu-triage re",
                   "COMP_CWORD": "1"})
    assert sorted(result.stdout.split()) == ["plain,redact", "plain,render"]


def test_without_the_variable_no_script() -> None:
    result = _run({})
    assert "_gpu_triage_completion" not in result.stdout + result.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_readme_documents_each_shell(shell: str) -> None:
    text = README.read_text(encoding="utf-8")
    assert f"_GPU_TRIAGE_COMPLETE={shell}_source gpu-triage" in text
    assert HOOKS[shell] in text
