"""containerd configuration of the synthetic nodes, with real ``config dump`` output.

Three variants cover every node:

- ``healthy``: ``config.toml`` imports ``/etc/containerd/conf.d/*.toml`` and the host's
  ``nvidia-ctk`` wrote ``99-nvidia.toml`` (runtimes ``nvidia``, ``nvidia-cdi``,
  ``nvidia-legacy``); the dump has them.
- ``no-runtime``: a fresh ``config.toml`` and no drop-in; the dump has only ``runc``.
- ``clobbered``: the healthy files plus ``99-registry.toml``, a three-line registry
  drop-in that sorts after ``99-nvidia.toml``; containerd 1.x replaces the whole CRI
  plugin table per imported file, so the dump has only ``runc`` again.

Running containerd 2,000 times is too slow, so each variant's dump is produced once by
the installed containerd (through ``samplekit.containerd``, the same code that makes
the committed samples' dumps) and cached on disk, keyed by containerd's version and
the variant's files.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from samples.samplekit import containerd

MAIN = containerd.MAIN
DROP_IN = containerd.DROP_IN
REGISTRY = "/etc/containerd/conf.d/99-registry.toml"
REGISTRY_TEXT = (
    "version = 2\n"
    "\n"
    '[plugins."io.containerd.grpc.v1.cri".registry]\n'
    '  config_path = "/etc/containerd/certs.d"\n'
)
VARIANTS = ("healthy", "no-runtime", "clobbered")


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    files: dict[str, str]   # absolute host path -> text, config.toml first
    dump: str
    version: str            # ``containerd --version``


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpu-triage" / "synth"


def _cached_dump(version: str, files: dict[str, str], directory: Path) -> str:
    key = hashlib.sha256(json.dumps([version, sorted(files.items())]).encode()).hexdigest()
    path = directory / f"dump-{key[:24]}.toml"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        pass
    text = containerd.config_dump(files)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    except OSError:
        pass  # a read-only cache only costs time
    return text


def load_variants(directory: Path | None = None) -> dict[str, Variant]:
    """The three variants; raises ``samplekit.containerd.ContainerdUnavailable``
    without containerd 1.6.20 (its dumps are what the analyzer judges)."""
    where = directory or cache_dir()
    version = containerd.version_text()
    fresh = containerd.fresh_config()
    fresh_dump = _cached_dump(version, {MAIN: fresh}, where)
    healthy = containerd.toolkit_files(fresh, fresh_dump)
    clobbered = {**healthy, REGISTRY: REGISTRY_TEXT}
    files = {"healthy": healthy, "no-runtime": {MAIN: fresh}, "clobbered": clobbered}
    return {name: Variant(name, tree, _cached_dump(version, tree, where), version)
            for name, tree in files.items()}
