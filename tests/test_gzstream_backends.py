"""The archive reader gives the same bytes, errors and salvage over zlib-ng as over zlib.

``bundle.gzstream`` inflates and checksums with zlib-ng when it can be imported and with
the standard library's zlib otherwise. The key cases of the reader's own tests (every
gzip case against ``GzipFile``, cut and corrupt deflate data, tar over gzip, a bundle
cut in half) run here with each backend switched in.
"""

from __future__ import annotations

import sys
import tarfile
import zlib
from pathlib import Path

import pytest
from stream_kit import decompressed_reading, gzip_reading, stream_reading, tarfile_reading
from test_gzstream import CASES as GZIP_CASES
from test_gzstream import LOG_GZ, ONE, _flip
from test_gzstream import test_corrupt_deflate_data_keeps_what_came_before as _corrupt
from test_tarstream import CASES as TAR_CASES

import bundle.gzstream
from bundle import open_bundle
from bundle.gzstream import STDLIB, Backend, _fastest

FAST = _fastest()
BACKENDS = {"zlib": STDLIB, "zlib-ng": FAST}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Backend:
    chosen = BACKENDS[request.param]
    monkeypatch.setattr(bundle.gzstream, "BACKEND", chosen)
    return chosen


def test_zlib_ng_is_the_backend_when_installed() -> None:
    # zlib-ng is a runtime dependency (pyproject.toml): the reader must really use it.
    assert FAST.name == "zlib-ng"
    assert bundle.gzstream.BACKEND == FAST
    assert FAST.error is not zlib.error  # so the reader's translation is exercised


def test_stdlib_is_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "zlib_ng", None)  # "import zlib_ng" now fails
    assert _fastest() is STDLIB


@pytest.mark.parametrize("name", sorted(GZIP_CASES))
def test_gzip_cases(backend: Backend, name: str) -> None:
    build, data, error = GZIP_CASES[name]
    raw = build()
    assert decompressed_reading(raw) == gzip_reading(raw) == (data, error)


@pytest.mark.parametrize("at", [0.1, 0.5, 0.9])
def test_cut_deflate_data(backend: Backend, at: float) -> None:
    raw = ONE[: int(len(ONE) * at)]
    ours, error = decompressed_reading(raw)
    assert (ours, error) == gzip_reading(raw)
    assert ours == zlib.decompressobj(-zlib.MAX_WBITS).decompress(raw[10:])


@pytest.mark.parametrize(("at", "error"), [
    (12, "error: Error -3 while decompressing data: invalid code lengths set"),
    (443, "error: Error -3 while decompressing data: invalid distance too far back"),
    (20_000, "BadGzipFile: CRC check failed 0x8f66da87 != 0x32191885"),
])
def test_corrupt_deflate_data(backend: Backend, at: int, error: str) -> None:
    _corrupt(at, error)
    # The error raised is zlib's own class whichever backend decoded it.
    if error.startswith("error:"):
        source = bundle.gzstream.Decompressed(
            __import__("io").BytesIO(_flip(LOG_GZ, at)), gzipped=True, budget=1 << 40,
            ratio=1 << 20)
        with pytest.raises(zlib.error):
            while source.read():
                pass


@pytest.mark.parametrize("name", sorted(TAR_CASES))
def test_tar_over_gzip(backend: Backend, name: str) -> None:
    import gzip

    data = TAR_CASES[name]()
    assert stream_reading(gzip.compress(data, mtime=0), gzipped=True) == tarfile_reading(data)


def test_bundle_cut_in_half(backend: Backend, tmp_path: Path) -> None:
    import io

    path = tmp_path / "cut.tgz"
    with tarfile.open(tmp_path / "full.tgz", "w:gz") as archive:
        for name, data in [("b/manifest.json", b'{"format_version": 1, "items": []}')] + [
                (f"b/logs/ns/p{i}/c.log", f"line {i}\n".encode() * 4000) for i in range(30)]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    raw = (tmp_path / "full.tgz").read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with open_bundle(path) as opened:
        assert [p.kind for p in opened.problems] == ["truncated"]
        logs = [p for p in opened.paths if p.startswith("logs/")]
        assert 0 < len(logs) < 30
        assert opened.read_bytes(logs[0]) == b"line 0\n" * 4000
