"""A full ``analyze`` opens nothing outside the bundle and never touches the network.

Python audit hooks (PEP 578) see every ``open``, socket and process start. A hook
cannot be removed once added, so each run happens in a fresh interpreter.

Allowed: reading the bundle; reading the tool's own installed files (modules imported
late, package data such as the Xid catalog and the HTML template); writing the report
where the command line says (through a temporary file beside it, renamed into place:
gpu_triage.outputs); the reader's anonymous spool file in the temp directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
from hostile_kit import ROOT, gz, tar_bytes, valid_files
from hostile_kit import Member as TarMember
from kit.bundles import encode, write_dir

RUNNER = r"""
import json, os, sys

bundle, workdir, *args = sys.argv[1:]
os.chdir(workdir)
from gpu_triage.cli import main  # the entry point itself is imported before the hook

FORBIDDEN = ("socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.fork",
             "os.spawn", "os.startfile", "urllib.", "http.", "ftplib.", "smtplib.",
             "webbrowser.", "ctypes.")
seen = []
recording = True


def hook(event, args):
    if not recording:
        return
    if event == "open":
        path, mode, flags = (list(args) + [None, None])[:3]
        if isinstance(path, (str, bytes, os.PathLike)):
            seen.append(["open", os.fsdecode(path), mode if isinstance(mode, str) else None,
                         flags if isinstance(flags, int) else 0])
    elif event.startswith(FORBIDDEN):
        seen.append([event, repr(args)[:200], None, 0])


sys.addaudithook(hook)
code = main(["analyze", bundle, *args])
recording = False
print("\n@@" + json.dumps({"code": code, "events": seen, "sys_path": sys.path}))
"""

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _run(bundle: Path, workdir: Path, *args: str) -> tuple[int, list[list[object]]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(workdir / "tmp"),
           "NO_COLOR": "1", "XDG_CACHE_HOME": str(workdir / "cache")}
    (workdir / "tmp").mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-c", RUNNER, str(bundle), str(workdir), *args],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert "@@" in done.stdout, done.stderr
    result = json.loads(done.stdout.rsplit("@@", 1)[1])
    # zipimport probes each sys.path entry with an open; that is the import system
    # looking at its own search path (one entry is setuptools' editable path hook).
    search = set(result["sys_path"])
    return result["code"], [e for e in result["events"] if e[1] not in search]


def _installed_roots() -> list[Path]:
    paths = sysconfig.get_paths()
    roots = {ROOT, Path(sys.prefix), Path(sys.base_prefix)}
    roots |= {Path(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return [r.resolve() for r in roots]


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _judge(events: list[list[object]], bundle: Path, workdir: Path,
           outputs: set[Path]) -> list[str]:
    """What the run did that it should not have."""
    bad = []
    installed = _installed_roots()
    spool = (workdir / "tmp").resolve()
    # The directory reader opens each name relative to the descriptor of its directory
    # (bundle/directory.py), which the audit event does not show: a bare name must then
    # be a name in the bundle.
    names = {p.name for p in bundle.rglob("*")} if bundle.is_dir() else set()
    for event, target, mode, flags in events:
        if event != "open":
            bad.append(f"{event} {target}")
            continue
        path = Path(str(target))
        if path.name in names and str(path) == path.name:
            if int(str(flags)) & WRITE_FLAGS:
                bad.append(f"write {path} (in the bundle)")
            continue
        path = (workdir / path if not path.is_absolute() else path).resolve()
        writes = bool(int(str(flags)) & WRITE_FLAGS) or any(c in str(mode or "") for c in "wax+")
        beside_output = path.parent in {o.parent for o in outputs} and \
            path.name.startswith(".gpu-triage-") and path.name.endswith(".tmp")
        # the compiled HTML template (reports/template_cache.py) and the parsed packaged
        # data (analyzers/knowledge/cache.py): the only files besides the report, in the
        # user's own cache directory, named by the hash of what they were made from
        cached = workdir / "cache" / "gpu-triage"
        template = _under(path, [(cached / "templates").resolve(), (cached / "data").resolve()])
        if path in outputs or beside_output or _under(path, [spool]) or template:
            continue
        if writes:
            bad.append(f"write {path}")
        elif not (_under(path, [bundle.resolve()]) or _under(path, installed)):
            bad.append(f"read {path}")
    return bad


def _bundles(tmp_path: Path) -> dict[str, Path]:
    files = {**valid_files(),
             # a member over 1 MiB, so the archive reader spools to its temporary file
             "logs/gpu-operator/nvidia-device-plugin-daemonset-klmno/main.log":
                 "2026-11-29T13:59:00Z E1129 failed to initialize NVML\n" * 40_000}
    directory = write_dir(tmp_path / "bundle-dir", files)
    archive = tmp_path / "bundle.tgz"
    archive.write_bytes(gz(tar_bytes(TarMember(f"top/{p}", d) for p, d in encode(files).items())))
    return {"directory": directory, "archive": archive}


@pytest.mark.parametrize("kind", ["directory", "archive"])
def test_analyze_stays_inside_the_bundle(tmp_path: Path, kind: str) -> None:
    bundle = _bundles(tmp_path)[kind]
    workdir = tmp_path / "work"
    workdir.mkdir()
    report = workdir / "report.json"
    code, events = _run(bundle, workdir, "-f", "json", "-o", str(report))
    assert code == 1  # the valid bundle has critical findings
    assert json.loads(report.read_text())["schema_version"] == 1
    assert any(e[0] == "open" and str(e[1]).startswith(str(bundle)) for e in events)
    assert _judge(events, bundle, workdir, {report.resolve()}) == []
    assert sorted(p.name for p in (workdir / "tmp").iterdir()) == []


def test_default_output_writes_only_the_html_report(tmp_path: Path) -> None:
    bundle = _bundles(tmp_path)["archive"]
    workdir = tmp_path / "work"
    workdir.mkdir()
    code, events = _run(bundle, workdir)
    html = (workdir / "bundle.report.html").resolve()
    assert code == 1 and html.exists()
    assert _judge(events, bundle, workdir, {html}) == []
    assert sorted(p.name for p in workdir.iterdir()) == ["bundle.report.html", "cache", "tmp"]
    # what the cache holds is compiled templates and the packaged data, nothing else
    cached = [p for p in (workdir / "cache").rglob("*") if p.is_file()]
    kinds = sorted((p.parent.name, p.suffix, p.name.rpartition("-")[0]) for p in cached)
    assert kinds == [("data", ".pickle", "known-issues"), ("data", ".pickle", "signatures"),
                     ("templates", ".bin", kinds[2][2])]
    # and nothing of the bundle: a pod name it holds is in none of them
    assert not any(b"klmno" in p.read_bytes() for p in cached)


def test_the_judge_catches_a_stray_read_and_a_connection(tmp_path: Path) -> None:
    """The hook and the judge together are not vacuous."""
    events: list[list[object]] = [["open", "/etc/passwd", "r", 0],
                                  ["open", str(tmp_path / "x"), "w", 0],
                                  ["socket.connect", "('10.0.0.1', 443)", None, 0]]
    assert _judge(events, tmp_path / "b", tmp_path, set()) == [
        "read /etc/passwd", f"write {tmp_path / 'x'}", "socket.connect ('10.0.0.1', 443)"]
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.py"
        probe.write_text(RUNNER.replace('main(["analyze", bundle, *args])',
                                        'open("/etc/hostname").close() or 0'))
        done = subprocess.run([sys.executable, str(probe), "b", tmp], capture_output=True,
                              text=True, timeout=60, check=False,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        events = json.loads(done.stdout.rsplit("@@", 1)[1])["events"]
        assert ["open", "/etc/hostname", "r", 524288] in events or any(
            e[1] == "/etc/hostname" for e in events)
