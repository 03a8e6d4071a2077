"""The hostile-input suite: corpus, caps, malformed content, properties, sandbox.

CI runs a few dozen examples per property so the whole suite stays under a minute.
A longer fuzz run is one command (the count is per property):

    GPU_TRIAGE_FUZZ_EXAMPLES=20000 .venv/bin/pytest tests/hostile -q

The profile is built in ``hostile_kit.HOSTILE`` and applied per test, so other suites
keep their own Hypothesis settings.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

