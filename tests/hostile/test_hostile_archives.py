"""A corpus of hostile and broken archives, each with its exact expected outcome.

Every case is built here from Python (no stored blobs). An outcome is the list of
problems the reader must record (bundle-relative path, kind, message fragment) and the
exit code of ``gpu-triage analyze``; the case also checks that nothing was written
next to the archive (the reader never extracts).
"""

from __future__ import annotations

import gzip
import os
import struct
import tarfile
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from hostile_kit import (
    MANIFEST,
    Member,
    gz,
    manifest_member,
    tar_bytes,
    valid_tar,
    write,
    zero_bomb,
)
from kit.bundles import write_tar

from bundle import BundleError, Limits, open_bundle
from bundle.archive import NOT_AN_ARCHIVE
from gpu_triage.cli import main

NODES = b'{"apiVersion": "v1", "kind": "List", "items": []}'
ARCHIVE = "<archive>"  # stands for the archive's own path in expected problems


@dataclass(frozen=True)
class Case:
    build: Callable[[Path], Path]
    problems: tuple[tuple[str, str, str], ...] = ()
    exit_code: int = 0
    error: str | None = None  # BundleError fragment when the bundle is unreadable
    limits: Limits = Limits()
    paths: tuple[str, ...] | None = None  # exact bundle paths, when it matters


def tgz(*members: Member) -> Callable[[Path], Path]:
    return lambda tmp: write(tmp / "bundle.tgz", gz(tar_bytes([manifest_member(), *members])))


def raw(data: Callable[[], bytes], name: str = "bundle.tgz") -> Callable[[Path], Path]:
    return lambda tmp: write(tmp / name, data())


def _link(name: str, target: str, kind: bytes) -> Member:
    return Member(name, type=kind, linkname=target)


def _truncated_mid_member() -> bytes:
    big = Member("b/logs/ns/p/c.log", b"x" * 200_000)
    data = tar_bytes([manifest_member(), Member("b/cluster/nodes.json", NODES), big])
    return data[: 2048 + 1024 + 100_000]


def _cut_gzip(tmp: Path) -> Path:
    whole = gz(tar_bytes([manifest_member(), Member("b/cluster/nodes.json", NODES),
                          Member("b/logs/ns/p/c.log", os.urandom(300_000))]))
    return write(tmp / "bundle.tgz", whole[: len(whole) * 2 // 3])


def _bad_crc() -> bytes:
    data = bytearray(gz(tar_bytes([manifest_member(), Member("b/cluster/nodes.json", NODES)])))
    data[-8] ^= 0xFF  # the CRC32 of the gzip trailer
    return bytes(data)


def _chained_long_names() -> bytes:
    chain = [Member("././@LongLink", b"a" * 200 + b"\0", type=tarfile.GNUTYPE_LONGNAME)] * 1500
    return tar_bytes([manifest_member(), *chain, Member("b/x.txt", b"x")])


def _gzip_with_every_header_field(data: bytes) -> bytes:
    """A gzip member whose header carries an extra field, a name, a comment and a CRC."""
    head = struct.pack("<BBBBIBB", 0x1F, 0x8B, 8, 2 | 4 | 8 | 16, 0, 0, 255)
    head += struct.pack("<H", 4) + b"ex\0\0" + b"bundle.tar\0" + b"collected by hand\0"
    head += struct.pack("<H", zlib.crc32(head) & 0xFFFF)
    deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflate.compress(data) + deflate.flush()
    return head + body + struct.pack("<II", zlib.crc32(data), len(data))


def _manifest_then(members: list[Member]) -> tuple[bytes, bytes]:
    """The tar of the manifest and nodes.json, and the tar of ``members`` after them."""
    head = tar_bytes([manifest_member(), Member("b/cluster/nodes.json", NODES)], end=False)
    return head, tar_bytes(members)


def _corrupt_second_gzip_member() -> bytes:
    head, rest = _manifest_then([Member(f"b/logs/ns/p/c{i}.log", b"log line\n" * 400)
                                 for i in range(3)])
    damaged = bytearray(gz(rest))
    damaged[12] ^= 0x55  # inside the first deflate block header
    return gz(head) + bytes(damaged)


def _many(count: int) -> Callable[[Path], Path]:
    return tgz(*(Member(f"b/cdi/f{i}.json", b"{}") for i in range(count)))


CASES: dict[str, Case] = {
    "absolute path": Case(
        tgz(Member("/etc/cron.d/evil", b"* * * * * root sh\n")),
        (("/etc/cron.d/evil", "refused", "unsafe name"),)),
    "dot-dot escapes the root": Case(
        tgz(Member("b/../../evil.sh", b"x"), Member("b/nodes/gpu-a/../../../../etc/x", b"x")),
        (("../../evil.sh", "refused", "unsafe name"),
         ("nodes/gpu-a/../../../../etc/x", "refused", "unsafe name"))),
    "symlink pointing outside": Case(
        tgz(_link("b/cluster/pods.json", "/etc/passwd", tarfile.SYMTYPE)),
        (("cluster/pods.json", "refused", "symbolic link to '/etc/passwd'"),)),
    "symlink pointing inside": Case(
        tgz(Member("b/cluster/nodes.json", NODES),
            _link("b/cluster/events.json", "nodes.json", tarfile.SYMTYPE)),
        (("cluster/events.json", "refused", "symbolic link to 'nodes.json'"),)),
    "hard link pointing outside": Case(
        tgz(_link("b/cluster/events.json", "../../etc/shadow", tarfile.LNKTYPE)),
        (("cluster/events.json", "refused", "hard link to '../../etc/shadow'"),)),
    "hard link pointing inside": Case(
        tgz(_link("b/cluster/nodes.json", "b/manifest.json", tarfile.LNKTYPE)),
        (("cluster/nodes.json", "refused", "hard link to 'b/manifest.json'"),)),
    "device files and a FIFO": Case(
        tgz(Member("b/nodes/gpu-a/dmesg.txt", type=tarfile.CHRTYPE),
            Member("b/nodes/gpu-a/nvidia-smi.xml", type=tarfile.BLKTYPE),
            Member("b/nodes/gpu-a/host/cmdline", type=tarfile.FIFOTYPE)),
        (("nodes/gpu-a/dmesg.txt", "refused", "not a regular file (device file)"),
         ("nodes/gpu-a/nvidia-smi.xml", "refused", "not a regular file (device file)"),
         ("nodes/gpu-a/host/cmdline", "refused", "not a regular file (FIFO)"))),
    "unknown member type": Case(
        tgz(Member("b/cluster/pods.json", b"{}" * 300, type=b"Z"),
            Member("b/cluster/nodes.json", NODES)),
        (("cluster/pods.json", "refused", "not a regular file (special member)"),),
        paths=("cluster/nodes.json", "manifest.json")),
    "duplicate names, also after normalisation": Case(
        tgz(Member("b/cluster/nodes.json", NODES),
            Member("b/cluster//nodes.json", b'{"evil": 1}'),
            Member("b/./cluster/nodes.json", b'{"evil": 2}')),
        (("cluster/nodes.json", "refused", "duplicate member; the first copy was kept"),),
        paths=("cluster/nodes.json", "manifest.json")),
    "name that is not UTF-8": Case(
        tgz(Member(b"b/logs/ns/p/\xff\xfe.log", b"x")),
        (("logs/ns/p/\\xff\\xfe.log", "refused", "not UTF-8"),)),
    "control characters in a name": Case(
        tgz(Member("b/cluster/\x1b[31mred.json", b"{}")),
        (("cluster/\\x1b[31mred.json", "refused", "control characters"),)),
    "member bigger than the cap": Case(
        tgz(Member("b/logs/ns/p/c.log", b"x" * 5000), Member("b/cluster/nodes.json", NODES)),
        (("logs/ns/p/c.log", "refused", "5000 bytes exceeds the 4096 byte cap"),),
        limits=Limits(max_member_bytes=4096), paths=("cluster/nodes.json", "manifest.json")),
    "more members than the cap": Case(
        _many(150),
        (("cdi/f99.json", "refused", "more than 100 members; the rest were not read"),),
        limits=Limits(max_members=100)),
    "archive larger than the total cap": Case(
        tgz(*(Member(f"b/logs/ns/p/c{i}.log", b"y" * 3000) for i in range(5))),
        (("logs/ns/p/c3.log", "refused", "archive expands beyond 10000 bytes"),),
        limits=Limits(max_total_bytes=10_000)),
    "pax header larger than tarfile should read": Case(
        tgz(Member("b/PaxHeaders/x", b"9 a=b\n" * 200_000, type=tarfile.XHDTYPE),
            Member("b/x.txt", b"x")),
        ((ARCHIVE, "truncated", "an extended header of 1200000 bytes"),), exit_code=1),
    "chain of GNU long-name headers": Case(
        raw(lambda: gz(_chained_long_names())),
        ((ARCHIVE, "truncated", "too many chained extended headers"),), exit_code=1),
    "GNU sparse member": Case(
        tgz(Member("b/logs/ns/p/s.log", b"x" * 512, type=tarfile.GNUTYPE_SPARSE)),
        ((ARCHIVE, "truncated", "a GNU sparse member"),), exit_code=1),
    "pax sparse member, format 1.0": Case(
        tgz(Member("b/logs/ns/p/s.log", b"1\n0\n5\n" + b"x" * 509,
                   pax={"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                        "GNU.sparse.name": "b/logs/ns/p/s.log", "GNU.sparse.realsize": "5"})),
        ((ARCHIVE, "truncated", "a pax sparse member"),), exit_code=1),
    "pax sparse member, format 0.1": Case(
        tgz(Member("b/logs/ns/p/s.log", b"hello",
                   pax={"GNU.sparse.map": "0,5", "GNU.sparse.size": "5"}),
            Member("b/cluster/nodes.json", NODES)),
        (("logs/ns/p/s.log", "refused", "a sparse file, which bundles never hold"),),
        paths=("cluster/nodes.json", "manifest.json")),
    "pax sparse map that is not numbers": Case(
        tgz(Member("b/logs/ns/p/s.log", b"hello", pax={"GNU.sparse.map": "a,b"})),
        ((ARCHIVE, "truncated", "invalid literal for int()"),), exit_code=1),
    "archive cut inside a member": Case(
        raw(_truncated_mid_member, "bundle.tar"),
        ((ARCHIVE, "truncated", "archive ends early or is corrupt inside logs/ns/p/c.log"),),
        exit_code=1, paths=("cluster/nodes.json", "manifest.json")),
    "gzip stream cut short": Case(
        _cut_gzip,
        ((ARCHIVE, "truncated", "archive ends early or is corrupt inside logs/ns/p/c.log"),),
        exit_code=1, paths=("cluster/nodes.json", "manifest.json")),
    "tar without an end-of-archive marker": Case(
        raw(lambda: tar_bytes([manifest_member(), Member("b/cluster/nodes.json", NODES)],
                              end=False), "bundle.tar"),
        ((ARCHIVE, "truncated", "no end-of-archive marker) after cluster/nodes.json"),),
        exit_code=1),
    "garbage where a header should be": Case(
        raw(lambda: tar_bytes([manifest_member()], end=False) + b"\x07" * 512 + b"\0" * 1024,
            "bundle.tar"),
        ((ARCHIVE, "truncated", "an unreadable member header) after manifest.json"),),
        exit_code=1),
    "gzip with trailing garbage": Case(
        raw(lambda: gz(tar_bytes([manifest_member()])) + b"GARBAGE!" * 64),
        ((ARCHIVE, "trailing", "bytes after the end of the compressed archive are not gzip"),)),
    "two archives concatenated": Case(
        raw(lambda: gz(tar_bytes([manifest_member()]))
            + gz(tar_bytes([Member("b/cluster/nodes.json", NODES)]))),
        ((ARCHIVE, "trailing", "data follows the end-of-archive marker at byte 1024"),),
        paths=("manifest.json",)),
    "gzip checksum does not match": Case(
        raw(_bad_crc),
        ((ARCHIVE, "corrupt", "the gzip checksum of the archive does not match"),),
        exit_code=1),
    "gzip cut after the end of the tar": Case(
        raw(lambda: gz(tar_bytes([manifest_member()]))[:-4]),
        ((ARCHIVE, "trailing", "the gzip stream is cut after the end of the archive"),)),
    "decompression bomb, one member": Case(
        lambda tmp: zero_bomb(tmp / "bundle.tgz", [1 << 30]),
        (("logs/ns/p/c0.log", "refused", "1073741824 bytes exceeds the 536870912 byte cap"),
         (ARCHIVE, "refused", "reading stopped while skipping logs/ns/p/c0.log: the archive "
                    "expands more than 200 times its compressed size")),
        paths=("manifest.json",)),
    "decompression bomb, many members": Case(
        lambda tmp: zero_bomb(tmp / "bundle.tgz", [100 << 20] * 10),
        ((ARCHIVE, "refused",
          "reading stopped inside logs/ns/p/c0.log: the archive expands more than 200 times"),),
        paths=("manifest.json",)),
    "member declaring a base-256 size far past the end": Case(
        tgz(Member("b/logs/ns/p/huge.log", size=1 << 80)),
        (("logs/ns/p/huge.log", "refused", f"{1 << 80} bytes exceeds the 536870912 byte cap"),
         (ARCHIVE, "truncated", "archive ends early or is corrupt while skipping "
                    "logs/ns/p/huge.log (unexpected end of data)")),
        exit_code=1, paths=("manifest.json",)),
    "GNU and pax long names": Case(
        tgz(Member("b/logs/" + "n" * 120 + "/gnu.log", b"g"),
            Member("b/logs/" + "n" * 120 + "/pax.log", b"p", pax={"comment": "x"}),
            Member("b/logs/" + "n" * 120 + "/dir/", type=tarfile.DIRTYPE)),
        paths=("logs/" + "n" * 120 + "/gnu.log", "logs/" + "n" * 120 + "/pax.log",
               "manifest.json")),
    "gzip members back to back, zero padded": Case(
        raw(lambda: (lambda head, rest: gz(head) + bytes(100) + gz(rest) + bytes(10))(
            *_manifest_then([Member("b/cluster/pods.json", NODES)]))),
        paths=("cluster/nodes.json", "cluster/pods.json", "manifest.json")),
    "gzip header with every optional field": Case(
        raw(lambda: _gzip_with_every_header_field(tar_bytes([manifest_member()]))),
        paths=("manifest.json",)),
    "gzip length does not match": Case(
        raw(lambda: gz(tar_bytes([manifest_member()]))[:-4] + b"\1\0\0\0"),
        ((ARCHIVE, "corrupt", "the gzip checksum of the archive does not match: what was "
                   "read may be damaged (Incorrect length of data produced)"),),
        exit_code=1),
    "corrupt deflate data after the manifest": Case(
        raw(_corrupt_second_gzip_member),
        ((ARCHIVE, "truncated", "archive ends early or is corrupt after cluster/nodes.json "
                   "(zlib error: Error -3 while decompressing data: invalid code lengths set)"),),
        exit_code=1, paths=("cluster/nodes.json", "manifest.json")),
    "more than 1 MiB of zeros after the end": Case(
        raw(lambda: gz(tar_bytes([manifest_member()]) + bytes(2 << 20))),
        ((ARCHIVE, "trailing", "more than 1048576 bytes follow the end-of-archive marker at "
                   "byte 1024; they were not read"),)),
    "header cut in half": Case(
        raw(lambda: (lambda head, rest: head + rest[:256])(
            *_manifest_then([Member("b/cluster/pods.json", NODES)])), "bundle.tar"),
        ((ARCHIVE, "truncated", "at byte 2048 of the tar stream (an unreadable member header) "
                   "after cluster/nodes.json"),), exit_code=1),
    "empty file": Case(raw(lambda: b""), error="empty file, not a bundle", exit_code=3),
    "random bytes": Case(raw(lambda: bytes(range(256)) * 8), error=NOT_AN_ARCHIVE,
                         exit_code=3),
    "gzip of something that is not a tar": Case(
        raw(lambda: gzip.compress(b"plain text " * 100)), error=NOT_AN_ARCHIVE,
        exit_code=3),
    "no manifest": Case(
        raw(lambda: gz(tar_bytes([Member("b/cluster/nodes.json", NODES)]))),
        error="no manifest.json", exit_code=3),
    "cut before the manifest is complete": Case(
        raw(lambda: gz(tar_bytes([Member("b/manifest.json", os.urandom(3000))]))[:1500]),
        error="truncated or corrupt before manifest.json", exit_code=3),
}


def _expected(case: Case, path: Path) -> set[tuple[str, str, str]]:
    return {(str(path) if p == ARCHIVE else p, kind, text) for p, kind, text in case.problems}


def _assert_problems(found: list[tuple[str, str, str]], case: Case, path: Path) -> None:
    for want_path, want_kind, fragment in _expected(case, path):
        matching = [f for f in found if f[0] == want_path and f[1] == want_kind
                    and fragment in f[2]]
        assert matching, f"no {want_kind} problem on {want_path} with {fragment!r}: {found}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_reader_outcome(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[name]
    path = case.build(tmp_path)
    spool = tmp_path / "tmp"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    before = sorted(p.name for p in tmp_path.iterdir())
    if case.error is not None:
        with pytest.raises(BundleError, match=case.error):
            open_bundle(path, case.limits)
    else:
        with open_bundle(path, case.limits) as opened:
            found = [(p.path, p.kind, p.message) for p in opened.problems]
            _assert_problems(found, case, path)
            if case.paths is not None:
                assert tuple(opened.paths) == case.paths
            assert all(not p.startswith(("/", "../")) and "/../" not in p for p in opened.paths)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing extracted
    assert list(spool.iterdir()) == []  # the spool file is anonymous, and gone


# The CLI takes caps in MiB and GiB; the byte-sized caps above are the reader's alone.
CLI_CASES = sorted(name for name, case in CASES.items()
                   if case.limits.max_member_bytes % (1 << 20) == 0
                   and case.limits.max_total_bytes % (1 << 30) == 0)


@pytest.mark.parametrize("name", CLI_CASES)
def test_cli_outcome(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES[name]
    path = case.build(tmp_path)
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()
    limits = case.limits
    args = ["analyze", str(path), "-o", str(out), "--max-members", str(limits.max_members),
            "--max-member-mib", str(limits.max_member_bytes >> 20),
            "--max-total-gib", str(limits.max_total_bytes >> 30),
            "--max-ratio", str(limits.max_ratio)]
    code = main(args)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert code == case.exit_code, captured.err
    if case.error is not None:
        last = captured.err.splitlines()[-1]
        assert last.startswith(f"Error: cannot read bundle {path}:")
        assert case.error in last
        assert not out.exists()
        return
    report = orjson.loads(out.read_bytes())
    found = [(p["path"], p["kind"], p["message"]) for p in report["problems"]]
    _assert_problems(found, case, path)
    bnd = [f for f in report["findings"] if f["rule_id"] == "BND002"]
    assert {f["id"].split(":", 1)[1] for f in bnd} == {kind for _, kind, _ in case.problems}


def test_valid_archive_has_no_problems(tmp_path: Path) -> None:
    """The corpus's starting point really is clean, so every problem above is caused."""
    for name, data in (("b.tgz", gz(valid_tar())), ("b.tar", valid_tar())):
        with open_bundle(write(tmp_path / name, data)) as opened:
            assert opened.problems == ()
            assert "nodes/gpu-a/nvidia-smi.xml" in opened.paths


def test_truncation_is_named_in_bnd002(tmp_path: Path) -> None:
    files = {f"logs/gpu-operator/pod-{i}/c.log": os.urandom(40_000).hex() for i in range(8)}
    full = write_tar(tmp_path / "full.tgz", files).read_bytes()
    cut = write(tmp_path / "cut.tgz", full[: len(full) // 2])
    out = tmp_path / "r.json"
    assert main(["analyze", str(cut), "-o", str(out)]) == 1
    report = orjson.loads(out.read_bytes())
    (finding,) = [f for f in report["findings"] if f["id"] == "BND002:truncated"]
    assert finding["severity"] == "high"
    assert finding["summary"].startswith("1 problem(s) in 1 file(s): ")
    assert "archive ends early or is corrupt inside logs/gpu-operator/pod-" in finding["summary"]
    assert "analysed what was read" in finding["summary"]


def test_directory_bundle_refusals(tmp_path: Path) -> None:
    """An unpacked bundle: links, special files and bad names are refused, not followed."""
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read\n")
    root = tmp_path / "bundle"
    (root / "cluster").mkdir(parents=True)
    (root / "nodes" / "gpu-a" / "host").mkdir(parents=True)
    (root / "manifest.json").write_bytes(MANIFEST)
    (root / "cluster" / "nodes.json").write_bytes(NODES)
    (root / "cluster" / "pods.json").symlink_to(secret)
    (root / "cluster" / "events.json").symlink_to("nodes.json")
    (root / "nodes" / "gpu-b").symlink_to(tmp_path, target_is_directory=True)
    os.link(secret, root / "nodes" / "gpu-a" / "dmesg.txt")
    os.mkfifo(root / "nodes" / "gpu-a" / "host" / "cmdline")
    (root / os.fsdecode(b"bad-\xff.txt")).write_bytes(b"x")
    with open_bundle(root) as opened:
        refused = {p.path: p.message for p in opened.problems if p.kind == "refused"}
        assert refused == {
            "cluster/pods.json": "not a regular file (symbolic link)",
            "cluster/events.json": "not a regular file (symbolic link)",
            "nodes/gpu-b": "not a regular file (symbolic link)",
            "nodes/gpu-a/dmesg.txt": "a hard link (2 names for one file); not read",
            "nodes/gpu-a/host/cmdline": "not a regular file (FIFO)",
            "bad-\\xff.txt": "unsafe or non-UTF-8 name",
        }
        assert opened.paths == ["cluster/nodes.json", "manifest.json"]
        assert all(opened.read_bytes(p) != b"do not read\n" for p in opened.paths)


def test_directory_file_swapped_for_a_fifo_does_not_block(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    (root / "cluster").mkdir(parents=True)
    (root / "manifest.json").write_bytes(MANIFEST)
    target = root / "cluster" / "nodes.json"
    target.write_bytes(NODES)
    with open_bundle(root) as opened:
        target.unlink()
        os.mkfifo(target)  # after the walk, before the read
        assert opened.read_bytes("cluster/nodes.json") is None
        assert [(p.path, p.message) for p in opened.problems] == [
            ("cluster/nodes.json", "no longer a regular file; not read")]
