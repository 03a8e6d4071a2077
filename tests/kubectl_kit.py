"""The real kubectl binaries the tests run: the collector's (tests/collector) and serve's."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

CLOUD_SDK_BIN = Path("/usr/lib/google-cloud-sdk/bin")


def _version(path: Path) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", path.name.split("kubectl")[-1]))


def kubectl_binaries() -> list[Path]:
    """GPU_TRIAGE_TEST_KUBECTLS (paths joined by ':') if set; else the Cloud SDK's versioned
    kubectl binaries; else the kubectl on PATH (Debian's kubernetes-client, say)."""
    chosen = os.environ.get("GPU_TRIAGE_TEST_KUBECTLS")
    if chosen:
        return [Path(p) for p in chosen.split(os.pathsep) if p]
    versioned = sorted(CLOUD_SDK_BIN.glob("kubectl.1.*"), key=_version)
    if versioned:
        return versioned
    plain = shutil.which("kubectl")
    return [Path(plain)] if plain else []
