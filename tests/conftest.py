from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
# The repository root goes first so that a test folder named like one of our
# packages could never shadow it; the tests folder follows for the kits.
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]


@pytest.fixture(scope="session")
def samples() -> Path:
    return SAMPLES
