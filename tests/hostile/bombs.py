"""Small bundles that cost far more to analyse than their size: the work-budget corpus.

Each bomb is a bundle a hostile customer could send, a few bytes to a few megabytes
compressed, built here at run time (no stored blobs). ``tests/hostile/measure_bombs.py``
runs ``gpu-triage analyze`` on every one in a fresh, capped interpreter and prints time
and peak memory; the tests under ``tests/hostile`` assert the outcome of each (the
problem recorded, the exit code) without timing it.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kit.bundles import encode, kube_list, kube_node
from layouts_kit import SEP, must_gather_files

_GPU_NODE = kube_node("gpu-a", 8, other={}, hostname=False)
_NODE = "nodes/gpu-a/"
_CONFIG = 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'


@dataclass(frozen=True)
class Bomb:
    """One hostile bundle: ``build(directory)`` writes it and returns the path to analyse."""

    name: str
    what: str
    build: Callable[[Path], Path]


def tgz(target: Path, files: Mapping[str, str | bytes], *, top: str = "b",
        manifest: bool = True) -> Path:
    """A .tgz of ``files`` (with a gpu-triage manifest unless ``manifest`` is False),
    compressed at the highest level so that repetitive content stays tiny."""
    raw = encode(files) if manifest else {
        k: v if isinstance(v, bytes) else v.encode() for k, v in files.items()}
    with open(target, "wb") as out, \
            gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as stream, \
            tarfile.open(fileobj=stream, mode="w") as archive:
        for path, data in raw.items():
            info = tarfile.TarInfo(f"{top}/{path}" if top else path)
            info.size = len(data)
            info.mtime = 1_700_000_000
            archive.addfile(info, io.BytesIO(data))
    return target


def _gpu_files(**node_files: str | bytes) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "cluster/nodes.json": encode({"x": kube_list(_GPU_NODE)})["x"]}
    files.update({_NODE + path: data for path, data in node_files.items()})
    return files


def dotted_key(directory: Path, parts: int = 60_000) -> Path:
    key = ".".join(["a"] * parts)
    return tgz(directory / "dotted-key.tgz", _gpu_files(**{
        "containerd/files/etc/containerd/config.toml": _CONFIG,
        "containerd/files/etc/containerd/conf.d/99-x.toml": f"{key} = 1\n"}))


def empty_pods(directory: Path, count: int = 4_000_000) -> Path:
    body = b'{"kind":"List","items":[' + b",".join([b"{}"] * count) + b"]}"
    return tgz(directory / f"empty-pods-{count // 1_000_000}m.tgz", {"cluster/pods.json": body})


def kernel_continuations(directory: Path, lines: int = 2_000_000) -> Path:
    text = "[    1.000000] NVRM: GPU at PCI:0000:3b:00: GPU-1\n" + " continued\n" * lines
    return tgz(directory / "kernel-continuations.tgz", _gpu_files(**{"dmesg.txt": text}))


def malformed_journal(directory: Path, lines: int = 2_000_000) -> Path:
    return tgz(directory / "malformed-journal.tgz",
               _gpu_files(**{"journal/kubelet.jsonl": "x\n" * lines}))


def must_gather_yaml(directory: Path, mib: int = 16) -> Path:
    files = must_gather_files()
    item = "- {}\n"
    files["gpu_operand_ds.yaml"] = "items:\n" + item * (mib * (1 << 20) // len(item))
    return tgz(directory / "must-gather-yaml.tgz", files, top="must-gather", manifest=False)


def import_glob(directory: Path, stars: int = 8, name_length: int = 200) -> Path:
    pattern = "/etc/containerd/conf.d/" + "*a" * stars + "b.toml"
    config = f'version = 2\nimports = ["{pattern}"]\n'
    name = "a" * name_length + ".toml"
    return tgz(directory / "import-glob.tgz", _gpu_files(**{
        "containerd/files/etc/containerd/config.toml": config,
        f"containerd/files/etc/containerd/conf.d/{name}": "version = 2\n"}))


def nested_gzip(directory: Path, lines: int = 4_000_000) -> Path:
    """A must-gather whose bug report stays under the inner ratio floor by size, yet
    holds a kernel log made of millions of continuation lines."""
    dmesg = "[    1.000000] NVRM: GPU at PCI:0000:3b:00: GPU-1\n" + " c\n" * lines
    text = f"{SEP}\n\nStart of NVIDIA bug report log file.\n\n{SEP}\n\ndmesg:\n\n{dmesg}\n{SEP}\n"
    files = must_gather_files()
    files["nvidia-bug-report_gpu-a.log.gz"] = gzip.compress(text.encode(), 9, mtime=0)
    return tgz(directory / "nested-gzip.tgz", files, top="must-gather", manifest=False)


def nested_archive(directory: Path, mib: int = 192) -> Path:
    """A must-gather whose bug report is gzip of gzip: the inner stream (a few MiB that
    stay under the inner ratio cap by themselves) is so regular that the outer archive
    packs it into a few KiB, and it expands to ``mib`` MiB of kernel log."""
    dmesg = "[    1.000000] NVRM: GPU at PCI:0000:3b:00: GPU-1\n" * (mib << 20 >> 6)
    text = f"{SEP}\n\nStart of NVIDIA bug report log file.\n\n{SEP}\n\ndmesg:\n\n{dmesg}\n{SEP}\n"
    inner = gzip.compress(text.encode(), 1, mtime=0)
    assert len(text) <= 200 * len(inner), "the inner stream alone must pass the ratio cap"
    files = must_gather_files()
    files["nvidia-bug-report_gpu-a.log.gz"] = inner
    return tgz(directory / "nested-archive.tgz", files, top="must-gather", manifest=False)


def manifest_items(directory: Path, count: int = 2_500_000) -> Path:
    """A manifest listing millions of failed collection steps."""
    item = b'{"path":"x","error":"e"}'
    manifest = (b'{"format":"gpu-triage-bundle","format_version":1,"items":['
                + b",".join([item] * count) + b"]}")
    files: dict[str, str | bytes] = {**encode(_gpu_files()), "manifest.json": manifest}
    return tgz(directory / "manifest-items.tgz", files, manifest=False)


def refused_links(directory: Path, count: int = 490_000) -> Path:
    """Hundreds of thousands of symbolic links, each a refused member, among node files
    every rule reads."""
    path = directory / "refused-links.tgz"
    with open(path, "wb") as out, \
            gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as stream, \
            tarfile.open(fileobj=stream, mode="w") as archive:
        for name, data in encode(_gpu_files()).items():
            info = tarfile.TarInfo(f"b/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for index in range(count):
            info = tarfile.TarInfo(f"b/{_NODE}journal/l{index}.jsonl")
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            archive.addfile(info)
    return path


def node_directories(directory: Path, count: int = 400_000) -> Path:
    """Hundreds of thousands of node directories of one small file each."""
    path = directory / "node-directories.tgz"
    with open(path, "wb") as out, \
            gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as stream, \
            tarfile.open(fileobj=stream, mode="w") as archive:
        for name, data in encode(_gpu_files()).items():
            info = tarfile.TarInfo(f"b/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for index in range(count):
            info = tarfile.TarInfo(f"b/nodes/n{index}/dmesg.txt")
            info.size = 1
            archive.addfile(info, io.BytesIO(b"x"))
    return path


# Files every analysis reads: each sparse one would be read whole, up to the member cap.
SPARSE_PATHS = ("cluster/pods.json", "cluster/events.json", _NODE + "dmesg.txt",
                _NODE + "journal/kubelet.jsonl", _NODE + "journal/containerd.jsonl",
                _NODE + "containerd/config-dump.toml", _NODE + "nvidia-smi.xml",
                _NODE + "host/modules.txt")


def sparse_directory(directory: Path, size: int = 511 << 20) -> Path:
    """An unpacked bundle whose files are sparse: gigabytes that take no disk."""
    root = directory / "sparse-dir"
    for path, data in encode(_gpu_files()).items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    for path in SPARSE_PATHS:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as out:
            os.truncate(out.fileno(), size)
    return root


def deep_toml(directory: Path, depth: int = 100_000) -> Path:
    return tgz(directory / "deep-toml.tgz", _gpu_files(**{
        "containerd/files/etc/containerd/config.toml": _CONFIG,
        "containerd/files/etc/containerd/conf.d/99-x.toml": "a = " + "[" * depth + "]" * depth,
        "containerd/config-dump.toml": "version = 2\nx = " + "9" * 5_000 + "\n"}))


def deep_json(directory: Path, depth: int = 100_000) -> Path:
    line = '{"MESSAGE": ' + "[" * depth + "]" * depth + "}\n"
    return tgz(directory / "deep-json.tgz", _gpu_files(**{
        "journal/containerd.jsonl": line,
        "cdi/nvidia.json": "[" * depth + "]" * depth}))


BOMBS: tuple[Bomb, ...] = (
    Bomb("dotted-key", "a drop-in with a 60,000-part dotted TOML key", dotted_key),
    Bomb("empty-pods-4m", "pods.json listing 4 million empty objects", empty_pods),
    Bomb("empty-pods-22m", "pods.json listing 22 million empty objects",
         lambda d: empty_pods(d, 22_000_000)),
    Bomb("kernel-continuations", "2 million kernel-log continuation lines",
         kernel_continuations),
    Bomb("malformed-journal", "2 million malformed journal lines", malformed_journal),
    Bomb("must-gather-yaml", "a 16 MiB YAML list in a must-gather", must_gather_yaml),
    Bomb("import-glob", "eight '*' in an imports glob against a 200-character name",
         import_glob),
    Bomb("nested-gzip", "a must-gather bug report that expands under the inner ratio floor",
         nested_gzip),
    Bomb("sparse-directory", "an unpacked bundle with eight sparse 511 MiB files",
         sparse_directory),
    Bomb("deep-toml", "a 100,000-deep TOML array and a 5,000-digit integer", deep_toml),
    Bomb("deep-json", "a 100,000-deep JSON array in a journal line and a CDI spec", deep_json),
    Bomb("nested-archive", "a must-gather bug report of gzip in gzip: 192 MiB of kernel log",
         nested_archive),
    Bomb("manifest-items", "a manifest of 2.5 million failed steps", manifest_items),
    Bomb("refused-links", "490,000 symbolic links among a node's files", refused_links),
    Bomb("node-directories", "400,000 node directories of one file each", node_directories),
)
