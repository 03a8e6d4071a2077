"""Properties of the reader and every parser on arbitrary and on mutated input.

The only outcomes allowed: a result (possibly with recorded problems), or
:class:`BundleError` for an archive that cannot be read at all. Nothing else escapes,
and no rule ends in ``error`` because of what a file holds.

CI runs a short deterministic sample; see conftest.py for the long fuzz run.
"""

from __future__ import annotations

import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from hostile_kit import HOSTILE, Member, gz, tar_bytes, valid_members, write
from hypothesis import given
from hypothesis import strategies as st

from analyzers.engine import analyze
from analyzers.engine.plugins import LoadedRule, discover
from analyzers.results.models import Report, RuleStatus
from bundle import Bundle, BundleError, Limits, open_bundle
from bundle.kernel import kernel_lines_from_journal, parse_dmesg, parse_xid, scan_signals
from bundle.nvsmi import XMLProblem, parse_nvidia_smi
from bundle.problems import ProblemLog
from bundle.textfiles import parse_journal, parse_key_values

MANIFEST = valid_members()["manifest.json"]
NODE = "nodes/gpu-a/"
RULES: list[LoadedRule] = discover().rules
KINDS = {"parse", "refused", "truncated", "corrupt", "trailing"}


class MemorySource:
    """A Source over a dict, so parser properties need no files."""

    display = "<memory>"

    def __init__(self, files: dict[str, bytes]) -> None:
        self._files = files

    def paths(self) -> list[str]:
        return sorted(self._files)

    def size(self, path: str) -> int | None:
        data = self._files.get(path)
        return None if data is None else len(data)

    def read(self, path: str) -> bytes | None:
        return self._files.get(path)

    def close(self) -> None:
        return None


def _bundle(files: dict[str, bytes]) -> Bundle:
    return Bundle(MemorySource({"manifest.json": MANIFEST, **files}), ProblemLog(), "<memory>")


def _check_problems(opened: Bundle) -> None:
    for problem in opened.problems:
        assert problem.kind in KINDS
        assert problem.path and problem.message


def _full_run(opened: Bundle) -> Report:
    report = analyze(opened, RULES)
    errors = [(r.rule_id, r.reason) for r in report.rules if r.status is RuleStatus.ERROR]
    assert errors == []
    report.model_dump_json()  # the report serialises whatever the bundle held
    _check_problems(opened)
    return report


def _touch_everything(opened: Bundle) -> None:
    cluster = opened.cluster
    _ = (cluster.version, cluster.nodes, cluster.pods, cluster.events, cluster.daemonsets,
         cluster.deployments, cluster.runtimeclasses, cluster.resourcequotas,
         cluster.configmaps, cluster.clusterpolicies, cluster.nvidiadrivers, cluster.helm,
         opened.logs)
    for name in opened.node_names:
        node = opened.node(name)
        _ = (node.config_dump, node.containerd_files, node.containerd_version,
             node.journal("containerd"), node.journal("kubelet"), node.dmesg,
             node.systemd_containerd, node.nvidia_smi, node.cdi_files, node.host("uname.txt"))
    _check_problems(opened)


# -- parsers on arbitrary input ------------------------------------------------------------

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=2000)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner,
                                                                max_size=5),
    max_leaves=40)


@HOSTILE
@given(st.lists(st.one_of(text, json_values.map(lambda v: orjson.dumps(v).decode())),
                max_size=20))
def test_journal_lines(lines: list[str]) -> None:
    for entry, number, error in parse_journal("\n".join(lines)):
        assert 1 <= number <= max(len("\n".join(lines).splitlines()), 1)
        assert (entry is None) == bool(error)
        if entry is not None:
            assert isinstance(entry.message, str)


@HOSTILE
@given(text)
def test_systemd_show(value: str) -> None:
    for key, item in parse_key_values(value).items():
        assert key and " " not in key and isinstance(item, str)


xml_fragments = st.lists(st.sampled_from([
    "<nvidia_smi_log>", "</nvidia_smi_log>", "<gpu id='x'>", "</gpu>", "<uuid>", "</uuid>",
    "<fb_memory_usage><total>", "</total></fb_memory_usage>", "1e999 MiB", "N/A", "&amp;",
    "&e;", "<!DOCTYPE l [<!ENTITY e 'x'>]>", "<?xml version='1.0'?>", "<![CDATA[", "]]>",
    "\x00", "\xff", "<processes><process_info><pid>", "</pid></process_info></processes>",
]) | text, max_size=30).map("".join)


@HOSTILE
@given(st.one_of(st.binary(max_size=2000), xml_fragments.map(str.encode)))
def test_nvidia_smi_xml(data: bytes) -> None:
    try:
        smi = parse_nvidia_smi(data)
    except XMLProblem:
        return
    for gpu in smi.gpus:
        assert gpu.fb_total_mib is None or isinstance(gpu.fb_total_mib, int)


@HOSTILE
@given(text)
def test_kernel_lines(value: str) -> None:
    for line in parse_dmesg(value, "dmesg.txt", year_hint=2026):
        parse_xid(line)
        scan_signals(line)


@HOSTILE
@given(st.lists(st.dictionaries(st.sampled_from(
    ["MESSAGE", "_TRANSPORT", "SYSLOG_IDENTIFIER", "__REALTIME_TIMESTAMP",
     "_SOURCE_MONOTONIC_TIMESTAMP", "PRIORITY"]), json_values), max_size=10))
def test_kernel_lines_from_journal(records: list[dict[str, Any]]) -> None:
    for line in kernel_lines_from_journal(enumerate(records, start=1), "j.jsonl"):
        parse_xid(line)
        scan_signals(line)


@HOSTILE
@given(st.one_of(st.binary(max_size=1500), text.map(str.encode),
                 json_values.map(orjson.dumps),
                 st.lists(json_values).map(lambda items: orjson.dumps(
                     {"kind": "List", "items": items}))))
def test_every_reader_accessor(data: bytes) -> None:
    """Every cluster list and node artifact read from the same arbitrary bytes."""
    paths = ["cluster/nodes.json", "cluster/pods.json", "cluster/events.json",
             "cluster/daemonsets.json", "cluster/clusterpolicies.json", "cluster/helm/r.json",
             NODE + "containerd/config-dump.toml", NODE + "containerd/files/etc/x.toml",
             NODE + "journal/containerd.jsonl", NODE + "dmesg.txt", NODE + "nvidia-smi.xml",
             NODE + "systemd/containerd.txt", NODE + "cdi/x.yaml",
             "logs/gpu-operator/p/c.log"]
    _touch_everything(_bundle(dict.fromkeys(paths, data)))


@HOSTILE
@given(st.one_of(st.binary(max_size=1000), json_values.map(orjson.dumps)))
def test_manifest(data: bytes) -> None:
    try:
        opened = _bundle({"manifest.json": data})
    except BundleError as exc:
        assert "format_version" in exc.problem
        return
    assert opened.manifest.format_version == 1


# -- the archive reader --------------------------------------------------------------------

@contextmanager
def _archive(data: bytes) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield write(Path(tmp) / "bundle.tgz", data)


def _open_archive(data: bytes, limits: Limits | None = None) -> Bundle | None:
    with _archive(data) as path:
        try:
            return open_bundle(path, limits)
        except BundleError:
            return None


@HOSTILE
@given(st.binary(max_size=4000))
def test_arbitrary_bytes_as_an_archive(data: bytes) -> None:
    opened = _open_archive(data)
    if opened is not None:
        with opened:
            _check_problems(opened)


@HOSTILE
@given(st.lists(st.tuples(
    st.one_of(st.text(max_size=120), st.binary(max_size=60)),
    st.sampled_from([tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.LNKTYPE, tarfile.SYMTYPE,
                     tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.DIRTYPE, tarfile.FIFOTYPE,
                     tarfile.CONTTYPE, tarfile.GNUTYPE_SPARSE, b"Z"]),
    st.binary(max_size=600)), max_size=8))
def test_arbitrary_members(members: list[tuple[str | bytes, bytes, bytes]]) -> None:
    built = [Member("b/manifest.json", MANIFEST)]
    for name, kind, data in members:
        built.append(Member(name or "x", data if kind in tarfile.REGULAR_TYPES else b"",
                            type=kind, linkname="../../etc/passwd"))
    try:
        data = gz(tar_bytes(built))
    except (ValueError, UnicodeError):
        return  # tarfile cannot write this header; nothing to read
    opened = _open_archive(data)
    assert opened is not None
    with opened:
        _check_problems(opened)
        for path in opened.paths:
            assert not path.startswith("/") and ".." not in path.split("/")
            assert opened.read_bytes(path) is not None


def _mutate(data: bytes, draw: st.DrawFn) -> bytes:
    mutated = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        at = draw(st.integers(0, max(len(mutated) - 1, 0)))
        if action == "flip" and mutated:
            mutated[at] ^= draw(st.integers(1, 255))
        elif action == "truncate":
            del mutated[at:]
        elif action == "insert":
            mutated[at:at] = draw(st.binary(min_size=1, max_size=64))
        elif mutated:
            del mutated[at:at + draw(st.integers(1, 64))]
    return bytes(mutated)


VALID_TAR = tar_bytes(Member(f"top/{p}", d) for p, d in valid_members().items())
VALID_TGZ = gz(VALID_TAR)


@HOSTILE
@given(st.data())
def test_mutated_archive(data: st.DataObject) -> None:
    """Flip, cut and insert bytes in a valid .tgz or .tar, then analyse what is left."""
    original = data.draw(st.sampled_from([VALID_TGZ, VALID_TAR]), label="container")
    opened = _open_archive(_mutate(original, data.draw))
    if opened is not None:
        with opened:
            _full_run(opened)


@HOSTILE
@given(st.data())
def test_mutated_member_contents(data: st.DataObject) -> None:
    """Damage one file of a valid bundle; the analysis still completes."""
    members = valid_members()
    path = data.draw(st.sampled_from(sorted(p for p in members if p != "manifest.json")),
                     label="path")
    members[path] = _mutate(members[path], data.draw)
    with _bundle(members) as opened:
        _full_run(opened)


def _replace_somewhere(value: Any, draw: st.DrawFn) -> Any:
    """``value`` with one node somewhere inside replaced by an arbitrary JSON value."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        return {**value, key: _replace_somewhere(value[key], draw)}
    if isinstance(value, list) and value and draw(st.booleans()):
        index = draw(st.integers(0, len(value) - 1))
        return [*value[:index], _replace_somewhere(value[index], draw), *value[index + 1:]]
    return draw(json_values)


JSON_PATHS = sorted(p for p in valid_members() if p.endswith(".json") or p.endswith(".jsonl"))


@HOSTILE
@given(st.data())
def test_wrong_types_anywhere_in_json(data: st.DataObject) -> None:
    """Any value of any JSON file (or journal line) replaced by a value of any type."""
    members = valid_members()
    path = data.draw(st.sampled_from(JSON_PATHS), label="path")
    if path.endswith(".jsonl"):
        lines = members[path].decode().splitlines()
        index = data.draw(st.integers(0, len(lines) - 1), label="line")
        lines[index] = orjson.dumps(_replace_somewhere(orjson.loads(lines[index]),
                                                       data.draw)).decode()
        members[path] = "\n".join(lines).encode()
    else:
        members[path] = orjson.dumps(_replace_somewhere(orjson.loads(members[path]), data.draw))
    try:
        opened = _bundle(members)
    except BundleError as exc:  # only a manifest without a usable format_version
        assert path == "manifest.json" and "format_version" in exc.problem
        return
    with opened:
        _full_run(opened)
