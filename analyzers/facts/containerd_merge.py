"""Emulate how containerd loads ``config.toml`` plus its ``imports`` (rule RT002).

Given the files copied from a node (host path -> TOML text) and the containerd
version, predict the configuration containerd loads, which runtime handlers the CRI
plugin ends up with, and which later file replaced an earlier file's plugin table.
Nothing here raises on bad input: what would stop containerd is reported in
``MergeResult.load_error`` (and ``problems``), and the runtimes are then empty.

Loading, all versions
    containerd keeps a queue that starts with the main file. It takes the next path,
    skips it when that exact path string was loaded already (so a file imported twice
    or a circular import is merged once, at its first position), merges it, then
    appends the file's own ``imports`` to the end of the queue (breadth first, so
    recursive imports work). Only an import containing ``*`` is a glob; any other
    (even with ``?`` or ``[``) is a plain path, cleaned and, when relative, joined
    to the importing file's directory. Globs follow Go's ``filepath.Glob``: per
    directory level names sorted byte-wise (``Z`` before ``a``, ``99-a`` before
    ``999``), ``*`` and ``?`` never cross ``/``, ``[...]`` classes negate with
    ``^``, ``\\`` escapes, dot files match, no match adds nothing, a malformed
    pattern is an error. A missing import, a glob match that is a directory, a file
    that is not TOML or has a top-level value of the wrong type stops containerd (it
    does not start; ``config dump`` fails). A main config that was not copied is
    reported and treated as absent: containerd then runs on built-in defaults.

containerd 1.x (1.6, 1.7)
    Each file is merged with ``mergo`` (override, append slices) and then every
    ``[plugins.<name>]`` table of the newer file *replaces* the whole table loaded
    before (``proxy_plugins``, ``stream_processors``, ``timeouts`` likewise per
    key). Top-level values, also inside ``[grpc]``, ``[debug]`` and the like,
    override only when non-zero (``oom_score = 0`` cannot reset ``-999``);
    ``disabled_plugins`` / ``required_plugins`` append, duplicates kept; the merged
    ``imports`` is the list of files loaded. The merged ``version`` is the last
    non-zero one (default 1). Version 1 reads the CRI plugin from ``plugins.cri`` and
    ignores ``plugins."io.containerd.grpc.v1.cri"``; version 2 reads the URI and
    refuses to start when a plugin key or a disabled/required plugin is not a URI.
    When the loaded CRI table defines ``containerd.runtimes``, that map *replaces*
    the built-in ``runc`` (an empty table leaves no runtime); without it ``runc``
    stays. A disabled CRI plugin loads no runtime. Release gates (from the source):
    before 1.6.29 / 1.7.16 a relative glob is resolved against the process's working
    directory (``/`` under systemd, the ``cwd`` argument here), not the importing
    file; 1.6.32+ / 1.7.17+ refuse ``version`` > 2 (older releases read it as 2);
    1.7 requires plugin keys to start with ``io.containerd.``.

Clobbers (1.x)
    A :class:`Clobber` is recorded when a file's table of a plugin replaces the
    table an earlier file had set and at least one setting of the earlier table is
    not in the newer one (an identical copy, as the toolkit writes, is no clobber).
    ``lost_runtimes`` lists the runtime handlers of the earlier table that the newer
    table lacks. Tables are compared as written, whichever plugin name the config
    version reads.

containerd 2.x (read from the source only: no 2.x binary was run)
    Plugin tables are deep-merged key by key (commit a21e379b, first in 2.0.0):
    tables merge recursively and any other value (scalars, arrays) of the newer
    file wins, zero values included; top-level lists append without duplicates.
    2.0-2.2: files of version 0/1 get plugin names renamed (``cri`` ->
    ``io.containerd.grpc.v1.cri``) and are merged; the merged version is the last
    non-zero one, and only if it is 2 do the CRI migrations run, once, over the
    merged tables: ``io.containerd.grpc.v1.cri`` moves into
    ``io.containerd.cri.v1.runtime`` (keys already there win, so a runtimes table
    there drops the moved runtimes; 2.0.0/2.0.1 replace the table instead) and
    ``io.containerd.cri.v1.images``, and the gRPC table keeps only its streaming
    server settings. If the merged version is 3 nothing is migrated and CRI settings
    left under ``io.containerd.grpc.v1.cri`` (a version 1 config's included) are
    ignored. 2.3+: each older file is migrated on its own before the merge; 2.3.x
    also refuses a file whose version is higher than the first versioned file's
    (reverted on main after 2.3). The runtime plugin decodes into a default config
    whose ``runtimes`` map already holds ``runc`` and go-toml v2 adds to that map,
    so ``runc`` always stays. ``merged.config`` for 2.x is the migrated version 3
    form. The ``imports`` line that 2.2+ puts in ``config default`` output changes
    nothing when loading a file.

Verified against a binary
    Debian's containerd 1.6.20 (``containerd --config F config dump``): all of the
    loading paragraph, and of the 1.x paragraph what applies to 1.6.20 (whole-table
    replacement, cwd-relative globs, version 1 vs 2 plugin names, version 3 read as
    2, non-URI keys refused, zero values and appended lists, the ``runc`` default
    and its replacement, load failures), plus that :func:`corrected_dropin` output
    loads the nvidia runtime together with the clobbering file's settings.
    ``tests/test_containerd_merge_property.py`` compares load success, runtimes,
    default runtime, registry ``config_path``, sandbox image, ``oom_score``,
    ``disabled_plugins`` and the set of files loaded on generated cases (120 by
    default, about 20 s; 1500 in about 2 minutes all agreed). The 1.6.29+/1.7
    gates above and everything about 2.x come from reading the source only.

Work budgets
    Files are parsed by :mod:`bundle.tomlsafe`: a file over its limits (size, depth,
    integer digits) stops the emulation with ``refused`` set, and nothing is concluded
    (no runtimes, no clobbers), since containerd may well have read it. Globs are
    matched chunk by chunk at the leftmost place (as Go does; no backtracking), and one
    emulation compares at most :data:`MAX_GLOB_NAMES` names with globs. A path queued
    once is not queued again.

Left out
    Type errors inside plugin settings (a string where containerd wants a table),
    symlinks in the copied tree, the ``runtime_platform`` part of the image
    migration, plugins not registered in the binary (their tables stay in the merged
    config here but are dropped from a dump), 2.x plugins other than CRI that
    migrate their own settings, Windows paths and globs, and TOML dialect
    differences between Go's parsers and :mod:`tomllib`.
"""

from __future__ import annotations

import copy
import posixpath
import tomllib
from collections import deque
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from bundle import versions
from bundle.tomlsafe import TomlRefused
from bundle.tomlsafe import loads as toml_loads

if TYPE_CHECKING:
    from tomlkit.container import Container
    from tomlkit.toml_document import TOMLDocument

CRI_V1_ID = "cri"
CRI_GRPC = "io.containerd.grpc.v1.cri"
CRI_RUNTIME = "io.containerd.cri.v1.runtime"
CRI_IMAGES = "io.containerd.cri.v1.images"
DEFAULT_MAIN = "/etc/containerd/config.toml"
DEFAULT_RUNTIME = "runc"

Version = versions.Version
Table = dict[str, object]

# Top-level fields of containerd's server config and how they merge.
_SCALARS: dict[str, type] = {
    "version": int, "root": str, "state": str, "temp": str, "plugin_dir": str,
    "oom_score": int,
}
_STRUCTS = ("grpc", "ttrpc", "debug", "metrics", "cgroup")
_SLICES = ("disabled_plugins", "required_plugins", "imports")
_KEYED = ("proxy_plugins", "stream_processors", "timeouts")

# Plugin names that version 1 configs could use without the URI prefix.
_V1_CORE_PLUGINS = {
    "cri": CRI_GRPC,
    "cgroups": "io.containerd.monitor.v1.cgroups",
    "linux": "io.containerd.runtime.v1.linux",
    "scheduler": "io.containerd.gc.v1.scheduler",
    "bolt": "io.containerd.metadata.v1.bolt",
    "task": "io.containerd.runtime.v2.task",
    "opt": "io.containerd.internal.v1.opt",
    "restart": "io.containerd.internal.v1.restart",
    "tracing": "io.containerd.internal.v1.tracing",
    "otlp": "io.containerd.tracing.processor.v1.otlp",
    "aufs": "io.containerd.snapshotter.v1.aufs",
    "btrfs": "io.containerd.snapshotter.v1.btrfs",
    "devmapper": "io.containerd.snapshotter.v1.devmapper",
    "native": "io.containerd.snapshotter.v1.native",
    "overlayfs": "io.containerd.snapshotter.v1.overlayfs",
    "zfs": "io.containerd.snapshotter.v1.zfs",
}

# CRI keys that the 2.x migration sends elsewhere than the runtime plugin.
_IMAGE_KEYS = (
    "registry", "image_decryption", "max_concurrent_downloads",
    "image_pull_progress_timeout", "image_pull_with_sync_fs", "stats_collect_period",
)
_SERVER_KEYS = (
    "disable_tcp_service", "stream_server_address", "stream_server_port",
    "stream_idle_timeout", "enable_tls_streaming", "x509_key_pair_streaming",
)
_IMAGE_CONTAINERD_KEYS = ("snapshotter", "disable_snapshot_annotations", "discard_unpacked_layers")


@dataclass(frozen=True)
class Clobber:
    """A later file replaced a plugin table that an earlier file had set (1.x)."""

    file: str            # the later file that replaced the table (absolute path)
    overridden: str      # the earlier file whose settings were lost
    plugin: str          # e.g. "io.containerd.grpc.v1.cri"
    lost_runtimes: tuple[str, ...]   # runtime handler names defined before and gone after


@dataclass(frozen=True)
class MergeResult:
    """What containerd would load from the copied files."""

    config: dict[str, object]           # merged config (1.x plugin names as written;
    #                                     2.x after migration to version 3 names)
    load_order: tuple[str, ...]         # files in the order merged (absolute paths)
    runtimes: frozenset[str]            # CRI runtime handlers containerd ends up with
    clobbers: tuple[Clobber, ...]
    problems: tuple[str, ...]           # unparsable file, missing import, etc.
    load_error: str | None = None       # why containerd would not start; None when it loads
    refused: str | None = None          # why the load was not emulated to its end (a
    #                                     file or the imports over a work budget); the
    #                                     runtimes and clobbers are then empty


# Names compared against import globs in one emulation, at most: honest configurations
# import one or two globs over a directory of a few files.
MAX_GLOB_NAMES = 100_000
# Files from the copied tree that corrected_dropin rewrites with tomlkit, at most (bytes):
# tomlkit is some ten times slower than tomllib.
MAX_REWRITE_BYTES = 256 << 10


class _LoadError(Exception):
    """containerd would stop loading here (it does not start, `config dump` fails)."""


class _BadPattern(Exception):
    """Go's filepath.ErrBadPattern."""


class _Refused(Exception):
    """The emulation stops here: a file or the imports are over a work budget. Not what
    containerd would do; nothing is concluded from the files."""


@dataclass(frozen=True)
class _Profile:
    """The behaviour switches of one containerd release."""

    major: int
    glob_relative_to_parent: bool     # 1.6.29+/1.7.16+: relative globs join the parent dir
    rejects_version_above_2: bool     # 1.6.32+/1.7.17+
    plugin_key_needs_prefix: bool     # 1.7+: plugin keys must start with io.containerd.
    per_file_migration: bool          # 2.3+: older files migrated one by one before merging
    dropin_version_check: bool        # 2.3.x: drop-in version may not exceed the main file's
    runtime_migration_replaces: bool  # 2.0.0, 2.0.1: runtime migration replaces the table
    description: str


def _profile(version: Version) -> _Profile:
    major, minor, patch = version
    text = f"containerd {major}.{minor}.{patch}"
    if major >= 2:
        return _Profile(
            major=2, glob_relative_to_parent=True, rejects_version_above_2=False,
            plugin_key_needs_prefix=False,
            per_file_migration=(minor, patch) >= (3, 0),
            dropin_version_check=minor == 3,
            runtime_migration_replaces=(minor, patch) < (0, 2),
            description=text,
        )
    relative_fix = (minor == 6 and patch >= 29) or (minor == 7 and patch >= 16) or minor > 7
    version_gate = (minor == 6 and patch >= 32) or (minor == 7 and patch >= 17) or minor > 7
    return _Profile(
        major=1, glob_relative_to_parent=relative_fix, rejects_version_above_2=version_gate,
        plugin_key_needs_prefix=minor >= 7, per_file_migration=False,
        dropin_version_check=False, runtime_migration_replaces=False, description=text,
    )


# --------------------------------------------------------------------------- paths, glob


def _clean(path: str) -> str:
    """Go's filepath.Clean on Unix."""
    if not path:
        return "."
    cleaned = posixpath.normpath(path)
    if cleaned.startswith("//"):
        cleaned = "/" + cleaned.lstrip("/")
    return cleaned


def _join(*parts: str) -> str:
    """Go's filepath.Join: join the non-empty parts and clean."""
    kept = [p for p in parts if p]
    return _clean("/".join(kept)) if kept else ""


class _Tree:
    """The copied files seen as a file system rooted at ``/``: a tree of names (one
    entry per path component, however long the paths), and the names compared
    against import globs so far (:data:`MAX_GLOB_NAMES`)."""

    def __init__(self, files: Mapping[str, str], cwd: str) -> None:
        self.files = {_clean(path): text for path, text in files.items() if path.startswith("/")}
        self.cwd = cwd
        self.root: dict[str, Any] = {}
        self.compared = 0
        for path in self.files:
            node = self.root
            for part in _parts(path):
                node = node.setdefault(part, {})

    def absolute(self, path: str) -> str:
        return _clean(path) if path.startswith("/") else _join(self.cwd, path)

    def _node(self, path: str) -> dict[str, Any] | None:
        node: dict[str, Any] | None = self.root
        for part in _parts(self.absolute(path)):
            node = node.get(part) if node is not None else None
        return node

    def is_dir(self, path: str) -> bool:
        node = self._node(path)
        return node is self.root or bool(node)

    def exists(self, path: str) -> bool:
        return self.absolute(path) in self.files or self.is_dir(path)

    def names(self, path: str) -> list[str]:
        return sorted(self._node(path) or ())

    def charge(self, count: int, pattern: str) -> None:
        """Count names about to be compared with a glob; refuse past the budget."""
        self.compared += count
        if self.compared > MAX_GLOB_NAMES:
            raise _Refused(f"import globs would compare more than {MAX_GLOB_NAMES:,} file "
                           f"names (at {pattern!r})")


def _parts(absolute: str) -> list[str]:
    """The components of a clean absolute path (none for ``/``)."""
    return absolute.split("/")[1:] if absolute != "/" else []


# One element of a pattern: a literal character, ``?`` (None), or a ``[...]`` class
# (negated, inclusive ranges). Each matches exactly one character of a name.
_Atom = str | None | tuple[bool, tuple[tuple[str, str], ...]]
# A run of atoms, and whether one or more ``*`` came before it.
_Chunk = tuple[bool, tuple[_Atom, ...]]


def _pattern_chunks(pattern: str) -> tuple[_Chunk, ...]:
    """Parse one Go filepath.Match pattern (no separators) into chunks, or raise."""
    chunks: list[_Chunk] = []
    star = False
    atoms: list[_Atom] = []
    i = 0
    n = len(pattern)

    def escaped_char(j: int) -> tuple[str, int]:
        # getEsc: one (possibly backslash-escaped) character inside a class.
        if j >= n or pattern[j] in "-]":
            raise _BadPattern(pattern)
        if pattern[j] == "\\":
            j += 1
            if j >= n:
                raise _BadPattern(pattern)
        if j + 1 >= n:
            raise _BadPattern(pattern)  # the class is not closed
        return pattern[j], j + 1

    while i < n:
        char = pattern[i]
        if char == "*":
            if atoms:
                chunks.append((star, tuple(atoms)))
                atoms = []
            star = True
            i += 1
        elif char == "?":
            atoms.append(None)
            i += 1
        elif char == "\\":
            if i + 1 >= n:
                raise _BadPattern(pattern)
            atoms.append(pattern[i + 1])
            i += 2
        elif char == "[":
            i += 1
            negated = i < n and pattern[i] == "^"
            if negated:
                i += 1
            ranges: list[tuple[str, str]] = []
            while True:
                if i < n and pattern[i] == "]" and ranges:
                    i += 1
                    break
                low, i = escaped_char(i)
                high = low
                if pattern[i] == "-":
                    high, i = escaped_char(i + 1)
                ranges.append((low, high))
            atoms.append((negated, tuple(ranges)))
        else:
            atoms.append(char)
            i += 1
    chunks.append((star, tuple(atoms)))
    return tuple(chunks)


def _atom_matches(atom: _Atom, char: str) -> bool:
    if atom is None:
        return True
    if isinstance(atom, str):
        return atom == char
    negated, ranges = atom
    return any(low <= char <= high for low, high in ranges) != negated


def _chunk_at(atoms: tuple[_Atom, ...], name: str, start: int) -> int:
    """Where ``atoms`` matched at ``start`` of ``name`` end, or -1."""
    if start + len(atoms) > len(name):
        return -1
    for offset, atom in enumerate(atoms):
        if not _atom_matches(atom, name[start + offset]):
            return -1
    return start + len(atoms)


def _name_matches(chunks: tuple[_Chunk, ...], name: str) -> bool:
    """Go's filepath.Match of a name without separators, in time linear in the name
    times the pattern: no backtracking. Every atom matches one character, so the
    leftmost place where a chunk after a ``*`` matches is always the best place to
    continue from; only the last chunk must also end where the name ends."""
    pos = 0
    for index, (star, atoms) in enumerate(chunks):
        last = index == len(chunks) - 1
        if star and not atoms:
            return True  # a trailing * takes the rest of the name
        end = _chunk_at(atoms, name, pos)
        if end >= 0 and (end == len(name) or not last):
            pos = end
            continue
        if not star:
            return False
        if last:  # the chunk must end the name: one place to try
            start = len(name) - len(atoms)
            return start > pos and _chunk_at(atoms, name, start) >= 0
        for start in range(pos + 1, len(name) - len(atoms) + 1):
            end = _chunk_at(atoms, name, start)
            if end >= 0:
                pos = end
                break
        else:
            return False
    return pos == len(name)


def _has_meta(path: str) -> bool:
    return any(char in path for char in "*?[\\")


def _glob(pattern: str, tree: _Tree, depth: int = 0) -> list[str]:
    """Go's filepath.Glob over the copied tree (I/O errors ignored, as Go does)."""
    if depth > 10000:
        raise _BadPattern(pattern)
    for segment in pattern.split("/"):
        _pattern_chunks(segment)  # validate the whole pattern first, as Glob does
    if not _has_meta(pattern):
        return [pattern] if tree.exists(pattern) else []
    slash = pattern.rfind("/")
    directory, name = pattern[: slash + 1], pattern[slash + 1 :]
    if directory == "":
        directory = "."
    elif directory != "/":
        directory = directory[:-1]
    if not _has_meta(directory):
        return _glob_dir(directory, name, tree)
    if directory == pattern:
        raise _BadPattern(pattern)
    found: list[str] = []
    for match in _glob(directory, tree, depth + 1):
        found.extend(_glob_dir(match, name, tree))
    return found


def _glob_dir(directory: str, name: str, tree: _Tree) -> list[str]:
    if not tree.is_dir(directory):
        return []
    chunks = _pattern_chunks(name)
    entries = tree.names(directory)
    tree.charge(len(entries), name)
    return [_join(directory, entry) for entry in entries if _name_matches(chunks, entry)]


def _resolve_imports(parent: str, imports: list[str], tree: _Tree, profile: _Profile) -> list[str]:
    resolved: list[str] = []
    for raw in imports:
        path = raw
        if profile.glob_relative_to_parent or "*" not in raw:
            path = _clean(raw)
            if not path.startswith("/"):
                path = _join(posixpath.dirname(parent) or ".", path)
        if "*" in path:
            try:
                resolved.extend(_glob(path, tree))
            except _BadPattern:
                raise _LoadError(f"{parent}: import {raw!r} is not a valid glob pattern") from None
        else:
            resolved.append(path)
    return resolved


# --------------------------------------------------------------------------- merging


def _is_zero(value: object) -> bool:
    return value is None or value == "" or value == 0 or value is False or value == []


def _as_table(value: object) -> Table | None:
    return cast(Table, value) if isinstance(value, dict) else None


def _deep_merge(into: Table, newer: Mapping[str, object]) -> None:
    """2.x plugin merge: tables merge recursively, every other value of `newer` wins."""
    for key, value in newer.items():
        current = into.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            _deep_merge(cast(Table, current), cast(Table, value))
        else:
            into[key] = copy.deepcopy(value)


def _check_types(path: str, data: Mapping[str, object]) -> None:
    for key, kind in _SCALARS.items():
        value = data.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise _LoadError(f"{path}: `{key}` must be {kind.__name__}, got {value!r}")
    for key in _SLICES:
        value = data.get(key)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise _LoadError(f"{path}: `{key}` must be an array of strings")
    for key in (*_STRUCTS, *_KEYED, "plugins"):
        value = data.get(key)
        if value is not None and not isinstance(value, dict):
            raise _LoadError(f"{path}: `{key}` must be a table")
    plugins = _as_table(data.get("plugins")) or {}
    for name, table in plugins.items():
        if not isinstance(table, dict):
            raise _LoadError(f"{path}: plugins.{name} must be a table")


def _merge_top(merged: Table, data: Mapping[str, object], major: int) -> None:
    """Merge everything but `plugins`: the mergo rules both major versions share."""
    for key in _SCALARS:
        if key in data and (key not in merged or not _is_zero(data[key])):
            merged[key] = data[key]
    for key in _STRUCTS:
        section = _as_table(data.get(key))
        if section is None:
            continue
        target = cast(Table, merged.setdefault(key, {}))
        for field, value in section.items():
            if field not in target or not _is_zero(value):
                target[field] = copy.deepcopy(value)
    for key in _SLICES:
        items = cast(list[str], data.get(key) or [])
        target_list = cast(list[str], merged.setdefault(key, []))
        for item in items:
            if major == 1 or item not in target_list:
                target_list.append(item)
    for key in _KEYED:
        section = _as_table(data.get(key))
        if section is not None:
            keyed = cast(Table, merged.setdefault(key, {}))
            for name, value in section.items():
                keyed[name] = copy.deepcopy(value)


def _v1_plugin_name(name: str) -> str:
    if "." in name:
        return name
    if name in _V1_CORE_PLUGINS:
        return _V1_CORE_PLUGINS[name]
    if name.endswith("-service"):
        return "io.containerd.service.v1." + name
    if name in ("windows", "windows-lcow"):
        return "io.containerd.snapshotter.v1." + name
    return "io.containerd.grpc.v1." + name


def _v1_migrate(data: Table) -> None:
    """2.x: rename version 1 plugin names to URIs (plugins, disabled, required)."""
    plugins = _as_table(data.get("plugins"))
    if plugins is not None:
        data["plugins"] = {_v1_plugin_name(k): v for k, v in plugins.items()}
    for key in ("disabled_plugins", "required_plugins"):
        names = data.get(key)
        if isinstance(names, list):
            data[key] = [_v1_plugin_name(str(n)) for n in names]


def _migrate_cri(plugins: Table, profile: _Profile) -> list[str]:
    """2.x CRI plugin migrations from version 2 names (runtime, images, then gRPC).

    Returns the runtime handlers under ``io.containerd.grpc.v1.cri`` that the
    migration dropped because the runtime plugin already had a runtimes table.
    """
    source = _as_table(plugins.get(CRI_GRPC))
    if source is None:
        return []
    dropped: list[str] = []
    # io.containerd.cri.v1.runtime
    if profile.runtime_migration_replaces:
        runtime = copy.deepcopy(source)
    else:
        runtime = _as_table(plugins.get(CRI_RUNTIME)) or {}
        for key, value in source.items():
            if key in ("cni", "containerd", "sandbox_image", *_IMAGE_KEYS, *_SERVER_KEYS):
                continue
            runtime.setdefault(key, copy.deepcopy(value))
        cni = _as_table(source.get("cni"))
        if cni is not None:
            new_cni = _as_table(runtime.get("cni")) or {}
            for key, value in cni.items():
                if key == "bin_dir":
                    new_cni["bin_dirs"] = [value]
                else:
                    new_cni.setdefault(key, copy.deepcopy(value))
            runtime["cni"] = new_cni
        containerd = _as_table(source.get("containerd"))
        if containerd is not None:
            new_containerd = _as_table(runtime.get("containerd")) or {}
            kept = _as_table(new_containerd.get("runtimes"))
            moving = _as_table(containerd.get("runtimes"))
            if kept is not None and moving is not None:
                dropped = sorted(set(moving) - set(kept))
            for key, value in containerd.items():
                if key not in _IMAGE_CONTAINERD_KEYS:
                    new_containerd.setdefault(key, copy.deepcopy(value))
            runtime["containerd"] = new_containerd
    for handler in (_runtimes_of(runtime) or {}).values():
        settings = _as_table(handler)
        if settings is not None and "sandbox_mode" in settings and "sandboxer" not in settings:
            settings["sandboxer"] = settings["sandbox_mode"]
            if not profile.runtime_migration_replaces:
                del settings["sandbox_mode"]
    plugins[CRI_RUNTIME] = runtime
    # io.containerd.cri.v1.images
    images = _as_table(plugins.get(CRI_IMAGES)) or {}
    pinned = _as_table(images.get("pinned_images")) or {}
    if "sandbox_image" in source:
        pinned["sandbox"] = source["sandbox_image"]
    if pinned:
        images["pinned_images"] = pinned
    for key in _IMAGE_KEYS:
        if key in source:
            images[key] = copy.deepcopy(source[key])
    containerd_src = _as_table(source.get("containerd"))
    if containerd_src is not None and "runtimes" in containerd_src:
        for key in _IMAGE_CONTAINERD_KEYS:
            if key in containerd_src:
                images[key] = copy.deepcopy(containerd_src[key])
    plugins[CRI_IMAGES] = images
    # io.containerd.grpc.v1.cri keeps the streaming server settings only
    plugins[CRI_GRPC] = {k: source[k] for k in _SERVER_KEYS if k in source}
    return dropped


def _dropped_note(where: str, dropped: list[str]) -> str:
    return (f"{where}: the 2.x migration of plugins.{CRI_GRPC!r} keeps the runtimes table "
            f"already under {CRI_RUNTIME!r} and drops runtimes {dropped}")


def _runtimes_of(table: object) -> dict[str, object] | None:
    """The `containerd.runtimes` table of one CRI plugin table, if it defines one."""
    containerd = (_as_table(table) or {}).get("containerd")
    return _as_table((_as_table(containerd) or {}).get("runtimes"))


def runtimes_in(config: Mapping[str, object]) -> frozenset[str]:
    """Runtime handler names a config (a file, a merged config or a dump) defines.

    Looks at every place some containerd reads CRI runtimes from:
    ``plugins.cri`` (1.x, version 1), ``plugins."io.containerd.grpc.v1.cri"`` (1.x
    version 2, migrated by 2.x) and ``plugins."io.containerd.cri.v1.runtime"`` (2.x).
    On a ``containerd config dump`` only the loaded location is populated, so the
    result is what containerd loaded. Built-in defaults are not added here.
    """
    plugins = _as_table(config.get("plugins")) or {}
    names: set[str] = set()
    for key in (CRI_V1_ID, CRI_GRPC, CRI_RUNTIME):
        names.update((_runtimes_of(plugins.get(key)) or {}).keys())
    return frozenset(names)


def _leaves(table: Mapping[str, object], prefix: tuple[str, ...] = ()) -> set[tuple[object, ...]]:
    found: set[tuple[object, ...]] = set()
    for key, value in table.items():
        if isinstance(value, dict):
            found.add((*prefix, key, "{}"))
            found.update(_leaves(cast(Table, value), (*prefix, key)))
        else:
            found.add((*prefix, key, repr(value)))
    return found


# --------------------------------------------------------------------------- emulate


class _Loader:
    def __init__(
        self, files: Mapping[str, str], version: Version | None, main: str, cwd: str
    ) -> None:
        self.tree = _Tree(files, cwd)
        self.problems: list[str] = [
            f"{path}: not an absolute host path, ignored" for path in files
            if not path.startswith("/")
        ]
        self.parsed: dict[str, Table] = {}
        self.main = main
        if version is None:
            version = self._guess_version()
        self.profile = _profile(version)
        self.merged: Table = {}
        self.owner: dict[str, tuple[str, Table]] = {}
        self.clobbers: list[Clobber] = []
        self.order: list[str] = []

    def _guess_version(self) -> Version:
        declared: list[int] = []
        for text in self.tree.files.values():
            try:
                value = toml_loads(text).get("version")
            except tomllib.TOMLDecodeError:  # (TomlRefused too)
                continue
            if isinstance(value, int):
                declared.append(value)
        guess: Version = (2, 2, 0) if any(v >= 3 for v in declared) else (1, 7, 27)
        self.problems.append(
            "containerd version unknown: emulating containerd "
            + ".".join(map(str, guess))
            + (" (a file declares version 3)" if guess[0] == 2 else "")
        )
        return guess

    def parse(self, key: str) -> Table:
        absolute = self.tree.absolute(key)
        text = self.tree.files.get(absolute)
        if text is None:
            if self.tree.is_dir(key):
                raise _LoadError(f"{absolute}: is a directory, not a config file")
            raise _LoadError(f"{absolute}: imported but not among the copied files")
        try:
            data: Table = toml_loads(text)
        except TomlRefused as refused:
            raise _Refused(f"{absolute}: {refused}") from None
        except tomllib.TOMLDecodeError as error:
            raise _LoadError(f"{absolute}: not valid TOML ({error})") from None
        _check_types(absolute, data)
        unknown = sorted(
            k for k in data
            if k not in _SCALARS and k not in (*_STRUCTS, *_SLICES, *_KEYED, "plugins")
        )
        if unknown:
            self.problems.append(f"{absolute}: unknown top-level keys ignored: {unknown}")
        return data

    def run(self) -> MergeResult:
        self.merged = {"version": 1 if self.profile.major == 1 else 3}
        error: str | None = None
        refused: str | None = None
        main_abs = self.tree.absolute(self.main)
        if main_abs not in self.tree.files and not self.tree.is_dir(self.main):
            self.problems.append(
                f"{main_abs}: main config not among the copied files; containerd started "
                "without --config runs on its built-in defaults"
            )
        else:
            try:
                self._load_all()
                self._finish()
            except _LoadError as stop:
                error = str(stop)
                self.problems.append(f"containerd would not start: {error}")
            except _Refused as stop:
                refused = str(stop)
                self.problems.append(f"not emulated: {refused}")
                self.clobbers.clear()
        runtimes = (frozenset() if error is not None or refused is not None
                    else self._effective_runtimes())
        return MergeResult(
            config=self.merged,
            load_order=tuple(self.order),
            runtimes=runtimes,
            clobbers=tuple(self.clobbers),
            problems=tuple(self.problems),
            load_error=error,
            refused=refused,
        )

    def _load_all(self) -> None:
        # A path already loaded or queued is not queued again: containerd would skip
        # it when its turn came, and a queue of every repeat grows with imports x files.
        queued = {self.main}
        pending = deque([self.main])
        root_version = 0
        while pending:
            key = pending.popleft()
            data = self.parse(key)
            absolute = self.tree.absolute(key)
            file_version = cast(int, data.get("version", 0))
            if self.profile.major == 2:
                if self.profile.dropin_version_check:
                    root_version = root_version or file_version
                    if file_version > root_version:
                        raise _LoadError(
                            f"{absolute}: drop-in config version {file_version} higher than "
                            f"root config version {root_version}"
                        )
                self._merge_v2(data, absolute)
            else:
                self._merge_v1(data, absolute)
            imports = cast(list[str], data.get("imports") or [])
            self.order.append(absolute)
            for path in _resolve_imports(key, imports, self.tree, self.profile):
                if path not in queued:
                    queued.add(path)
                    pending.append(path)
        if self.profile.major == 1:
            self.merged["imports"] = list(self.order)

    def _merge_v1(self, data: Table, absolute: str) -> None:
        _merge_top(self.merged, data, 1)
        plugins = cast(Table, self.merged.setdefault("plugins", {}))
        for name, table in (_as_table(data.get("plugins")) or {}).items():
            new_table = copy.deepcopy(cast(Table, table))
            previous = self.owner.get(name)
            if previous is not None:
                earlier_file, earlier = previous
                if _leaves(earlier) - _leaves(new_table):
                    before = set((_runtimes_of(earlier) or {}).keys())
                    after = set((_runtimes_of(new_table) or {}).keys())
                    self.clobbers.append(Clobber(
                        file=absolute, overridden=earlier_file, plugin=name,
                        lost_runtimes=tuple(sorted(before - after)),
                    ))
            plugins[name] = new_table
            self.owner[name] = (absolute, new_table)

    def _merge_v2(self, data: Table, absolute: str) -> None:
        data = copy.deepcopy(data)
        file_version = cast(int, data.get("version", 0))
        target = cast(int, self.merged.get("version", 3))
        if self.profile.per_file_migration:
            if file_version > 3:
                raise _LoadError(f"{absolute}: config version {file_version} is not supported")
            if file_version < target:
                plugins = cast(Table, data.setdefault("plugins", {}))
                for step in range(file_version, target):
                    if step == 1:
                        _v1_migrate(data)
                        plugins = cast(Table, data["plugins"])
                    dropped = _migrate_cri(plugins, self.profile)
                    if dropped:
                        self.problems.append(_dropped_note(absolute, dropped))
                data["version"] = target
        elif file_version in (0, 1):
            if target >= 2:
                _v1_migrate(data)
            data["version"] = target
        _merge_top(self.merged, data, 2)
        plugins_into = cast(Table, self.merged.setdefault("plugins", {}))
        _deep_merge(plugins_into, _as_table(data.get("plugins")) or {})

    def _finish(self) -> None:
        version = cast(int, self.merged.get("version") or 1)
        plugins = cast(Table, self.merged.setdefault("plugins", {}))
        names = [*cast(list[str], self.merged.get("disabled_plugins", [])),
                 *cast(list[str], self.merged.get("required_plugins", []))]
        if self.profile.major == 2:
            if version > 3:
                raise _LoadError(f"config version {version} is not supported (max 3)")
            for name in names:
                if "." not in name:
                    raise _LoadError(f"invalid plugin URI {name!r} in disabled/required plugins")
            if version < 3:
                dropped = _migrate_cri(plugins, self.profile)
                if dropped:
                    self.problems.append(_dropped_note("merged config (version 2)", dropped))
                self.merged["version"] = 3
            if _runtimes_of(plugins.get(CRI_GRPC)):
                self.problems.append(
                    f"runtimes under plugins.{CRI_GRPC!r} are ignored by containerd 2.x "
                    f"(config version 3 reads them from {CRI_RUNTIME!r})"
                )
            return
        if version < 2:
            self.problems.append("config version 1 is deprecated: plugins are read by short "
                                 "name (plugins.cri), full plugin URIs are ignored")
            if CRI_GRPC in plugins and CRI_V1_ID not in plugins:
                self.problems.append(f"version 1 config: plugins.{CRI_GRPC!r} is ignored; "
                                     "containerd 1.x reads plugins.cri")
            return
        if version > 2 and self.profile.rejects_version_above_2:
            raise _LoadError(f"unsupported config version `{version}` (1.x reads 1 or 2)")
        for name in [*names, *plugins]:
            if not self._is_uri(name):
                raise _LoadError(f"invalid plugin key URI {name!r} expect io.containerd.x.vx")

    def _is_uri(self, name: str) -> bool:
        if self.profile.plugin_key_needs_prefix:
            return name.startswith("io.containerd.") and len(name.split(".", 3)) >= 4
        return len(name.split(".")) >= 4

    def _effective_runtimes(self) -> frozenset[str]:
        plugins = _as_table(self.merged.get("plugins")) or {}
        disabled = set(cast(list[str], self.merged.get("disabled_plugins", [])))
        if self.profile.major == 2:
            if CRI_RUNTIME in disabled:
                self.problems.append(f"{CRI_RUNTIME} is disabled: no CRI runtimes load")
                return frozenset()
            defined = _runtimes_of(plugins.get(CRI_RUNTIME)) or {}
            return frozenset({DEFAULT_RUNTIME, *defined})
        version = cast(int, self.merged.get("version") or 1)
        key = CRI_V1_ID if version < 2 else CRI_GRPC
        if key in disabled:
            self.problems.append(f"the CRI plugin ({key}) is disabled: no CRI runtimes load")
            return frozenset()
        table = _as_table(plugins.get(key)) or {}
        containerd = table.get("containerd")
        if containerd is not None and not isinstance(containerd, dict):
            self.problems.append(f"plugins.{key}.containerd is not a table: the CRI plugin "
                                 "config cannot be decoded")
            return frozenset()
        if containerd is not None and "runtimes" in containerd:
            runtimes = containerd["runtimes"]
            if not isinstance(runtimes, dict):
                self.problems.append(f"plugins.{key}.containerd.runtimes is not a table: the "
                                     "CRI plugin config cannot be decoded")
                return frozenset()
            return frozenset(runtimes)
        return frozenset({DEFAULT_RUNTIME})


def emulate(
    files: Mapping[str, str],
    version: tuple[int, int, int] | None,
    main: str = DEFAULT_MAIN,
    *,
    cwd: str = "/",
) -> MergeResult:
    """Predict what containerd `version` loads from `files` (host path -> TOML text).

    `version` None guesses (2.x when a file declares ``version = 3``, else 1.7) and
    says so in ``problems``. `cwd` is containerd's working directory, which only
    matters for relative glob imports before 1.6.29 / 1.7.16 (``/`` under systemd).
    Never raises: anything containerd would stop on is in ``load_error`` and
    ``problems``, and ``runtimes`` is then empty.
    """
    return _Loader(files, version, main, cwd).run()


# --------------------------------------------------------------------------- corrected drop-in
# tomlkit (it keeps comments) is imported by the functions below: only a clobber needs it.


def _plain(value: object) -> object:
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


def _merge_documents(
    into: Container, newer: Container, carried: list[str], displaced: list[str]
) -> list[str]:
    """Fold `newer` into `into` (newer wins on values), keeping both files' comments.

    A comment of `newer` travels with the next item it precedes: above a table or
    value that is added, it is added just before it. A comment above a value that
    replaces one of `into` (whose own comments stay where they are) goes to
    `displaced`. Returns the comments that preceded nothing.
    """
    import tomlkit.items

    for key, item in newer.body:
        if key is None:
            if isinstance(item, tomlkit.items.Comment):
                carried.append(item.as_string().strip())
            continue
        name = key.key
        current = into.get(name) if name in into else None
        if isinstance(item, tomlkit.items.Table) and isinstance(current, tomlkit.items.Table):
            carried = _merge_documents(current.value, item.value, carried, displaced)
            continue
        if name in into:
            displaced.extend(carried)
            into[name] = item
        else:
            for text in carried:
                into.append(None, tomlkit.comment(text.lstrip("#").strip()))
            into.append(key, item)
        carried = []
    return carried


def _is_main(path: str) -> bool:
    return posixpath.basename(path) == posixpath.basename(DEFAULT_MAIN)


def _header(clobber: Clobber) -> list[str]:
    lost = ", ".join(clobber.lost_runtimes)
    lines = [
        f"Written by gpu-triage: {clobber.file} replaced the whole",
        f"plugins.{clobber.plugin!r} table of {clobber.overridden}"
        + (f" and dropped the runtimes {lost}." if lost else "."),
        "This file carries the settings of both, merged under the same plugin table.",
    ]
    if _is_main(clobber.overridden):
        lines.append(f"Install it as {clobber.file}; keep {clobber.overridden}.")
    else:
        lines.append(f"Install it as {clobber.file} and delete {clobber.overridden}.")
    return lines


def _only_plugin(config: MutableMapping[str, Any], plugin: str) -> None:
    """Keep only ``plugins.<plugin>`` of the main config: the rest of it still loads."""
    for key in [k for k in config if k != "plugins"]:
        del config[key]
    plugins = config.get("plugins")
    if isinstance(plugins, MutableMapping):
        for name in [n for n in plugins if n != plugin]:
            del plugins[name]


def _align_top_level(earlier: MutableMapping[str, Any], later: MutableMapping[str, Any]) -> None:
    """Edit `later` so that a deep merge over `earlier` gives containerd's top level.

    A zero value of a top-level setting never overrides a set one, and the plugin
    lists add up; the combined file must not change what the two files did.
    """
    for key in _SCALARS:
        if key in later and key in earlier and _is_zero(_plain(later[key])):
            del later[key]
    for key in _STRUCTS:
        older, newer = earlier.get(key), later.get(key)
        if isinstance(older, MutableMapping) and isinstance(newer, MutableMapping):
            for field in [f for f in newer if f in older and _is_zero(_plain(newer[f]))]:
                del newer[field]
    for key in _SLICES:
        older, newer = earlier.get(key), later.get(key)
        if isinstance(older, list) and isinstance(newer, list):
            combined = [str(item) for item in older]
            combined += [str(item) for item in newer if str(item) not in combined]
            later[key] = combined


def relative_imports(text: str | None) -> list[str]:
    """The ``imports`` of a containerd config file that are relative paths (resolved, by
    containerd, against the file's folder); none when the text is not TOML."""
    try:
        imports = toml_loads(text or "").get("imports", [])
    except tomllib.TOMLDecodeError:
        return []
    return [str(i) for i in imports if isinstance(i, str) and not i.startswith("/")]


def corrected_dropin(files: Mapping[str, str], clobber: Clobber) -> str:
    """One drop-in that carries both files of a clobber, to replace both of them.

    The earlier (overridden) file's tables, the nvidia runtimes among them, are
    deep-merged with the clobbering file's settings, the clobbering file winning on
    conflicting values, under the same plugin table; top-level settings combine as
    containerd combined them (zero values do not override, plugin lists add up).
    Comments of both files are kept. The result is TOML text: install it under the
    clobbering file's name and delete the overridden file. When the overridden file
    is the main ``config.toml`` keep that file (it is what imports the drop-ins);
    only its table of that plugin is copied. The drop-in must stay the last file
    that sets this plugin's table. Raises ValueError when either file is missing, not
    TOML, or over a budget (:data:`MAX_REWRITE_BYTES`, :mod:`bundle.tomlsafe`).
    """
    tree = _Tree(files, "/")
    texts: list[str] = []
    for path in (clobber.overridden, clobber.file):
        text = tree.files.get(_clean(path))
        if text is None:
            raise ValueError(f"{path} is not among the files")
        texts.append(text)
    earlier_text, later_text = texts
    for text in texts:
        if len(text) > MAX_REWRITE_BYTES:
            raise ValueError(f"a file of {len(text):,} characters is over the limit of "
                             f"{MAX_REWRITE_BYTES:,} for a rewrite")
    try:
        expected: dict[str, Any] = toml_loads(earlier_text)
        later: dict[str, Any] = toml_loads(later_text)
    except TomlRefused as error:
        raise ValueError(str(error)) from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"not valid TOML: {error}") from None
    if _is_main(clobber.overridden):
        _only_plugin(expected, clobber.plugin)
    if _is_main(clobber.file):
        later.pop("imports", None)
    _align_top_level(expected, later)
    _deep_merge(expected, later)
    header = _header(clobber)
    import tomlkit

    try:
        document = tomlkit.parse(earlier_text)
        later_document = tomlkit.parse(later_text)
        if _is_main(clobber.overridden):
            _only_plugin(document, clobber.plugin)
        if _is_main(clobber.file) and "imports" in later_document:
            del later_document["imports"]
        _align_top_level(document, later_document)
        displaced: list[str] = []
        displaced += _merge_documents(document, later_document, [], displaced)
        lines = [f"# {line}" for line in header]
        if displaced:
            lines.append(f"# Comments of {clobber.file} on settings merged below:")
            lines += [f"#   {text.lstrip('#').strip()}" for text in displaced]
        text = "\n".join(lines) + "\n\n" + document.as_string()
        if toml_loads(text) == expected:
            return text
    except Exception:  # tomlkit quirks: fall back to the plain rewrite below
        pass
    return _plain_rewrite(expected, header, (earlier_text, later_text))


def _plain_rewrite(data: Mapping[str, Any], header: list[str], sources: Iterable[str]) -> str:
    """A fresh document of `data`; the sources' comments kept as a block on top."""
    import tomlkit

    document: TOMLDocument = tomlkit.document()
    for line in header:
        document.add(tomlkit.comment(line))
    document.add(tomlkit.comment("Comments of the merged files:"))
    for text in sources:
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith("#"):
                document.add(tomlkit.comment("  " + stripped.lstrip("#").strip()))
    document.add(tomlkit.nl())
    for key, value in data.items():
        document.add(key, tomlkit.item(_plain(value)))
    return document.as_string()
