"""The customer's data never outlives the analysis: worker spools are removed on Ctrl-C,
``SIGTERM`` and ``SIGHUP``, and a run removes the spools that killed runs left behind —
only those it can prove dead."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tarfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bundle import spooldir
from bundle.spooldir import PREFIX, remove_stale, spool_dir

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "incident-toolkit-disabled"
LONG_AGO = time.time() + 3600  # "now" an hour later: every spool is old enough to judge

pytestmark = pytest.mark.skipif(spooldir.fcntl is None, reason="no flock on this platform")

# An analysis whose node-file workers start at once (one node a chunk) and then hang, so
# that the signal arrives while a spool is in use.
SLOW_RUN = textwrap.dedent("""
    import sys, time
    from analyzers.speed import prefetch
    prefetch.MIN_NODES = 1
    prefetch.CHUNK = 1
    def slow(bundle, name):
        time.sleep(60)
    prefetch.parse_here = slow
    from gpu_triage.cli import main
    sys.exit(main(sys.argv[1:]))
""")

HOLDER = textwrap.dedent("""
    import sys, time
    from bundle.spooldir import spool_dir
    with spool_dir() as path:
        print(path, flush=True)
        time.sleep(60)
""")


def _spools(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.name.startswith(PREFIX))


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}


def _wait_for(predicate: Callable[[], object], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """The sample as a .tgz, manifest first, as the collector writes it."""
    target = tmp_path / "bundle.tgz"
    files = sorted(p for p in SAMPLE.rglob("*") if p.is_file())
    files.sort(key=lambda p: p.name != "manifest.json" or p.parent != SAMPLE)
    with tarfile.open(target, "w:gz") as tar:
        for path in files:
            tar.add(path, arcname=f"b/{path.relative_to(SAMPLE)}")
    return target


def _start(tmp: Path, archive: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", SLOW_RUN, "analyze", str(archive), "--jobs", "2", "-f", "json",
         "-o", str(out)], env=_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stopped_analysis_leaves_no_spool(tmp_path: Path, archive: Path, signum: int) -> None:
    spool_root = tmp_path / "tmp"
    spool_root.mkdir()
    process = _start(spool_root, archive, tmp_path / "r.json")
    try:
        _wait_for(lambda: _spools(spool_root) and any((s / "0.chunk").exists()
                                                      for s in _spools(spool_root)))
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # whatever a failure left running
    assert process.returncode == (130 if signum == signal.SIGINT else 128 + signum), err
    assert _spools(spool_root) == []
    assert not (tmp_path / "r.json").exists()


def test_a_killed_run_s_spool_is_removed_by_the_next_run(tmp_path: Path, archive: Path) -> None:
    spool_root = tmp_path / "tmp"
    spool_root.mkdir()
    process = _start(spool_root, archive, tmp_path / "r.json")
    try:
        _wait_for(lambda: _spools(spool_root))
        (left,) = _spools(spool_root)
        assert remove_stale(spool_root, now=LONG_AGO) == []  # alive: kept
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the run and its workers: none can clean up
        process.communicate(timeout=60)
    assert left.is_dir()
    removed: list[Path] = []
    _wait_for(lambda: removed.extend(remove_stale(spool_root, now=LONG_AGO)) or removed,
              seconds=30)  # until the killed workers' locks are gone with them
    assert removed == [left] and _spools(spool_root) == []


def test_a_live_run_s_spool_is_kept_however_old(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], env=_env(tmp_path),
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None
        path = Path(holder.stdout.readline().decode().strip())
        assert path.parent == tmp_path and path.is_dir()
        assert remove_stale(tmp_path, now=LONG_AGO) == []
        assert path.is_dir()
    finally:
        holder.kill()
        holder.communicate(timeout=30)
    assert remove_stale(tmp_path, now=LONG_AGO) == [path]
    assert not path.exists()


def test_a_young_spool_is_kept(tmp_path: Path) -> None:
    """Just created, not yet locked by its run: never judged."""
    path = _dead_spool(tmp_path)
    assert remove_stale(tmp_path, now=time.time()) == []
    assert path.is_dir()


def _dead_spool(root: Path, name: str = f"{PREFIX}4242-abc") -> Path:
    path = root / name
    path.mkdir(mode=0o700)
    (path / spooldir.LOCK).write_bytes(b"")
    (path / "0.result").write_bytes(b"customer data")
    return path


def test_only_provably_stale_spools_are_removed(tmp_path: Path) -> None:
    dead = _dead_spool(tmp_path)
    wide = _dead_spool(tmp_path, f"{PREFIX}4243-abc")
    wide.chmod(0o755)  # not made by spool_dir
    no_lock = _dead_spool(tmp_path, f"{PREFIX}4244-abc")
    (no_lock / spooldir.LOCK).unlink()
    other = _dead_spool(tmp_path, "gpu-triage-something-else")
    (tmp_path / "elsewhere").mkdir()
    target = _dead_spool(tmp_path / "elsewhere", f"{PREFIX}4245-abc")
    link = tmp_path / f"{PREFIX}4246-abc"
    link.symlink_to(target)  # a link named like a spool: never followed
    lock_link = _dead_spool(tmp_path, f"{PREFIX}4247-abc")
    (lock_link / spooldir.LOCK).unlink()
    (lock_link / spooldir.LOCK).symlink_to(target / spooldir.LOCK)
    assert remove_stale(tmp_path, now=LONG_AGO) == [dead]
    for kept in (wide, no_lock, other, target, lock_link):
        assert kept.is_dir(), kept
    assert link.is_symlink()


def test_spool_dir_is_private_and_removed_on_error(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    seen = []
    with pytest.raises(RuntimeError), spool_dir() as path:
        seen.append(path)
        assert path.parent == tmp_path
        assert path.name.startswith(f"{PREFIX}{os.getpid()}-")
        assert path.stat().st_mode & 0o777 == 0o700
        raise RuntimeError("a failing analysis")
    assert not seen[0].exists()
