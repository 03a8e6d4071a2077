"""The one-file collector for the tests: gpu-triage-collect.pyz built from this checkout, and
the oldest and a newer Python to run it with (pyenv's, where this machine has them)."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

from collectors.pyz import build

# The collector's promise is Python 3.8 or newer; 3.11 is the analyzer's own minimum.
WANTED = ("3.8", "3.11")


def python(version: str) -> str | None:
    """A python<version> interpreter: pyenv's versions, else one on PATH, else None."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for found in sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin",
                                               "python3")), reverse=True):
        if os.access(found, os.X_OK):
            return found
    return shutil.which(f"python{version}")


def write_pyz(directory: Path) -> Path:
    """Build the archive into `directory` (where nothing else of the collector is)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "gpu-triage-collect.pyz"
    path.write_bytes(build())
    return path
