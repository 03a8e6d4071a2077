"""Every archive a customer sends: .zip, .tar.xz, .tar.bz2, .tar.zst and plain .tar,
told apart by content (each test names them wrongly on purpose), read under the caps and
refusals of the .tgz path, with hostile ones of each kind.

Archives are made here with the real compressors: Python's ``zipfile``, ``lzma``,
``bz2`` and the ``zstandard`` binding, and the Debian ``zip`` and ``zstd`` binaries where
installed (``.ci/setup --system``), so that what is read is what the tools write.
"""

from __future__ import annotations

import bz2
import io
import lzma
import random
import shutil
import stat
import subprocess
import tarfile
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zstandard
from kit.bundles import encode

from bundle import BundleError, Limits, open_bundle

MIB = 1 << 20
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
INCIDENT = SAMPLES / "incident-toolkit-disabled"
NODES = b'{"apiVersion": "v1", "kind": "List", "items": []}'


def _files() -> dict[str, bytes]:
    return encode({"cluster/nodes.json": NODES, "nodes/gpu-a/dmesg.txt": b"[1.0] hello\n"})


def _tar(files: dict[str, bytes], top: str = "b") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for path, data in files.items():
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "xz": lambda data: lzma.compress(data, preset=1),
    "bzip2": lambda data: bz2.compress(data, compresslevel=1),
    "zstd": lambda data: zstandard.ZstdCompressor(level=3).compress(data),
    "plain": lambda data: data,
}


@pytest.fixture(autouse=True)
def _duplicates_allowed() -> Iterator[None]:
    with warnings.catch_warnings():  # a duplicate member is written on purpose
        warnings.simplefilter("ignore", UserWarning)
        yield


def _zip(path: Path, members: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in members:
            archive.writestr(info, data)
    return path


def _opened(path: Path, limits: Limits | None = None) -> tuple[list[tuple[str, str, str]],
                                                               list[str]]:
    with open_bundle(path, limits) as opened:
        return ([(p.path, p.kind, p.message) for p in opened.problems], list(opened.paths))


# -- each kind reads as the .tgz does --------------------------------------------------


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_each_compression_reads_every_file(tmp_path: Path, kind: str) -> None:
    files = _files()
    path = tmp_path / "bundle.tgz"  # the wrong name: the content decides
    path.write_bytes(COMPRESSORS[kind](_tar(files)))
    problems, paths = _opened(path)
    assert problems == []
    assert paths == sorted(files)
    with open_bundle(path) as opened:
        assert opened.read_bytes("nodes/gpu-a/dmesg.txt") == b"[1.0] hello\n"


def test_zip_reads_every_file(tmp_path: Path) -> None:
    files = _files()
    path = _zip(tmp_path / "bundle.tar.gz", [(f"b/{p}", d) for p, d in files.items()])
    assert _opened(path) == ([], sorted(files))


@pytest.mark.parametrize("tool", ["xz", "bzip2", "zstd", "zip"])
def test_real_tools_archive_of_a_sample_analyses_like_the_directory(
        tmp_path: Path, tool: str) -> None:
    """The incident sample archived by the real binary: same findings as the directory."""
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (.ci/setup --system installs it)")
    from hostile_kit import analyze_path

    if tool == "zip":
        target = tmp_path / "incident.zip"
        subprocess.run(["zip", "-qr", str(target), INCIDENT.name], cwd=SAMPLES, check=True)
    else:
        plain = tmp_path / "incident.tar"
        with tarfile.open(plain, "w") as archive:
            archive.add(INCIDENT, arcname=INCIDENT.name)
        subprocess.run([tool, "-q", str(plain)], check=True)
        (target,) = [p for p in tmp_path.iterdir() if p.name.startswith("incident.tar.")]
    expected = [(f.id, f.summary) for f in analyze_path(INCIDENT).findings]
    report = analyze_path(target)
    assert report.problems == []
    assert [(f.id, f.summary) for f in report.findings] == expected


# -- zip: the refusals of the tar path ----------------------------------------------------


def _link(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16  # as Info-ZIP's zip --symlinks
    return info, target.encode()


def test_zip_member_refusals(tmp_path: Path) -> None:
    files = _files()
    fifo = zipfile.ZipInfo("b/nodes/gpu-a/host/cmdline")
    fifo.external_attr = (stat.S_IFIFO | 0o644) << 16
    members: list[tuple[zipfile.ZipInfo | str, bytes]] = [
        (f"b/{p}", d) for p, d in files.items()]
    members += [_link("b/cluster/pods.json", "/etc/passwd"),
                _link("b/cluster/events.json", "nodes.json"),
                (fifo, b""),
                ("/etc/cron.d/x", b"absolute"),
                ("b/../../escape.txt", b"dots"),
                ("b/cluster/nodes.json", b"second copy")]
    path = _zip(tmp_path / "b.bin", members)
    problems, paths = _opened(path)
    unsafe = "unsafe name (absolute, '..', control characters or not UTF-8)"
    assert problems == [  # sorted by path, as every problem list is
        ("../../escape.txt", "refused", unsafe),
        ("/etc/cron.d/x", "refused", unsafe),
        ("cluster/events.json", "refused", "not a regular file (symbolic link to 'nodes.json')"),
        ("cluster/nodes.json", "refused", "duplicate member; the first copy was kept"),
        ("cluster/pods.json", "refused", "not a regular file (symbolic link to '/etc/passwd')"),
        ("nodes/gpu-a/host/cmdline", "refused", "not a regular file (FIFO)"),
    ]
    assert paths == sorted(files)
    with open_bundle(path) as opened:
        assert opened.read_bytes("cluster/nodes.json") == NODES


def test_encrypted_zip_member_is_refused_clearly(tmp_path: Path) -> None:
    if shutil.which("zip") is None:
        pytest.skip("zip is not installed (.ci/setup --system installs it)")
    source = tmp_path / "src" / "b"
    for path, data in _files().items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_bytes(data)
    target = tmp_path / "locked.zip"
    subprocess.run(["zip", "-qr", str(target), "b/manifest.json", "b/cluster"],
                   cwd=source.parent, check=True)
    subprocess.run(["zip", "-qr", "-P", "secret", str(target), "b/nodes"],
                   cwd=source.parent, check=True)
    problems, paths = _opened(target)
    assert problems == [("nodes/gpu-a/dmesg.txt", "refused",
                         "encrypted (password-protected) zip member; gpu-triage takes no "
                         "password: ask for the archive without one")]
    assert paths == ["cluster/nodes.json", "manifest.json"]


def test_zip_bomb_stops_at_the_ratio_cap(tmp_path: Path) -> None:
    """70 MiB of zeros deflate to about 70 KiB: past the 64 MiB floor at 1000x."""
    members: list[tuple[zipfile.ZipInfo | str, bytes]] = [
        (f"b/{p}", d) for p, d in _files().items()]
    members.append(("b/logs/ns/p/c.log", b"\0" * (70 * MIB)))
    path = _zip(tmp_path / "bomb.zip", members)
    assert path.stat().st_size < 200_000
    problems, paths = _opened(path)
    assert len(problems) == 1
    where, kind, message = problems[0]
    assert (where, kind) == (str(path), "refused")
    assert "expands" not in message and "declare more than 200 times its size" in message
    assert "logs/ns/p/c.log" not in paths and "cluster/nodes.json" in paths


def test_zip_member_over_the_member_cap_is_refused(tmp_path: Path) -> None:
    members: list[tuple[zipfile.ZipInfo | str, bytes]] = [
        (f"b/{p}", d) for p, d in _files().items()]
    members.append(("b/logs/ns/p/c.log", b"x" * (2 * MIB)))
    problems, _ = _opened(_zip(tmp_path / "big.zip", members), Limits(max_member_bytes=MIB))
    assert problems == [("logs/ns/p/c.log", "refused",
                         f"{2 * MIB} bytes exceeds the {MIB} byte cap; not read")]


def test_zip_listing_more_entries_than_the_cap_is_refused_before_parsing(
        tmp_path: Path) -> None:
    members: list[tuple[zipfile.ZipInfo | str, bytes]] = [
        (f"b/{p}", d) for p, d in _files().items()]
    members += [(f"b/cdi/f{i}.json", b"{}") for i in range(50)]
    path = _zip(tmp_path / "many.zip", members)
    with pytest.raises(BundleError) as caught:
        open_bundle(path, Limits(max_members=20))
    assert caught.value.problem == ("zip archive lists 53 members, more than the 20 member "
                                    "cap (--max-members)")


def test_damaged_zip_member_is_a_truncation(tmp_path: Path) -> None:
    members: list[tuple[zipfile.ZipInfo | str, bytes]] = [
        (f"b/{p}", d) for p, d in _files().items()]
    members.append(("b/logs/ns/p/c.log", b"a line of a log\n" * 1000))
    path = _zip(tmp_path / "bad.zip", members)
    data = bytearray(path.read_bytes())
    at = data.index(b"b/logs/ns/p/c.log") + len("b/logs/ns/p/c.log") + 20
    data[at : at + 8] = b"\xff" * 8  # inside the deflated data: the CRC cannot match
    path.write_bytes(bytes(data))
    problems, paths = _opened(path)
    assert len(problems) == 1 and problems[0][1] == "truncated"
    assert "inside logs/ns/p/c.log" in problems[0][2]
    assert "cluster/nodes.json" in paths and "logs/ns/p/c.log" not in paths


# -- the other compressions: bombs and damage -------------------------------------------


@pytest.mark.parametrize("kind", ["xz", "bzip2", "zstd"])
def test_decompression_bomb_stops_at_the_ratio_cap(tmp_path: Path, kind: str) -> None:
    files = _files()
    files["logs/ns/p/c.log"] = b"\0" * (80 * MIB)
    path = tmp_path / "bomb.zip"
    path.write_bytes(COMPRESSORS[kind](_tar(files)))
    assert path.stat().st_size * 200 < 80 * MIB
    problems, paths = _opened(path)
    assert [(p[1], "a decompression bomb" in p[2]) for p in problems] == [("refused", True)]
    assert "inside logs/ns/p/c.log" in problems[0][2]
    assert "logs/ns/p/c.log" not in paths and "cluster/nodes.json" in paths


@pytest.mark.parametrize("kind", ["xz", "bzip2", "zstd"])
def test_cut_archive_keeps_what_came_before(tmp_path: Path, kind: str) -> None:
    files = _files()
    files["logs/ns/p/c.log"] = random.Random(1).randbytes(MIB)  # does not compress away
    data = COMPRESSORS[kind](_tar(files))
    path = tmp_path / "cut.tar"
    path.write_bytes(data[: len(data) * 3 // 4])
    problems, paths = _opened(path)
    assert len(problems) == 1 and problems[0][1] == "truncated", problems
    assert "cluster/nodes.json" in paths and "logs/ns/p/c.log" not in paths


def test_garbage_after_a_magic_number_is_not_a_bundle(tmp_path: Path) -> None:
    path = tmp_path / "x.tar.xz"
    path.write_bytes(b"\xfd7zXZ\x00" + b"garbage" * 100)
    with pytest.raises(BundleError) as caught:
        open_bundle(path)
    assert caught.value.problem.startswith("archive is truncated or corrupt before manifest")


# -- an archive in an archive ---------------------------------------------------------------


def test_zip_holding_the_tgz_is_opened_one_level_deep(tmp_path: Path) -> None:
    files = _files()
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz") as archive:
        for path, data in files.items():
            info = tarfile.TarInfo(f"b/{path}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    wrapper = _zip(tmp_path / "from-the-portal.zip", [("bundle.tgz", inner.getvalue())])
    assert _opened(wrapper) == ([], sorted(files))
    with open_bundle(wrapper) as opened:
        assert opened.read_bytes("cluster/nodes.json") == NODES


def test_only_one_level_is_opened(tmp_path: Path) -> None:
    once = _zip(tmp_path / "once.zip", [(f"b/{p}", d) for p, d in _files().items()])
    twice = _zip(tmp_path / "twice.zip", [("once.zip", once.read_bytes())])
    thrice = _zip(tmp_path / "thrice.zip", [("twice.zip", twice.read_bytes())])
    assert _opened(twice)[1] == sorted(_files())
    with pytest.raises(BundleError) as caught:
        open_bundle(thrice)
    assert caught.value.path == f"{thrice} (twice.zip)"
    assert caught.value.problem.startswith("no manifest.json at the top")


def test_one_text_file_in_an_archive_is_no_bundle(tmp_path: Path) -> None:
    path = tmp_path / "notes.zip"
    _zip(path, [("notes.txt", b"please look at node gpu-a\n")])
    with pytest.raises(BundleError) as caught:
        open_bundle(path)
    assert caught.value.problem.endswith("it holds 1 file(s): notes.txt")
