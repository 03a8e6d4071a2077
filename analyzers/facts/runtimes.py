"""Loaded runtime handlers per node, and why an expected handler is missing.

The loaded configuration (``containerd config dump``) is the truth; the copied
files only explain it. The explanation is decided once here so that RT001 can say
which cause holds on each node and the cause's rule can claim the same nodes.
"""

from __future__ import annotations

import posixpath
import tomllib
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from analyzers.facts.containerd_merge import Clobber, emulate, runtimes_in
from analyzers.facts.distro import NodeRuntime
from bundle import NodeArtifacts, specs, versions
from bundle.tomlsafe import loads as toml_loads

NVIDIA_HANDLER = "nvidia"


class Cause(StrEnum):
    """Why the nvidia handler is missing from a node's loaded configuration."""

    TOOLKIT_DISABLED = "toolkit-disabled"        # ClusterPolicy toolkit.enabled=false
    TOOLKIT_MISDIRECTED = "toolkit-misdirected"  # edits a file/socket the runtime does not use
    TEMPLATE_BROKEN = "template-broken"          # a distribution template lost/broke it
    DROPIN_NOT_IMPORTED = "dropin-not-imported"  # 99-nvidia.toml exists, not imported
    DROPIN_CLOBBERED = "dropin-clobbered"        # a later drop-in replaced the CRI table
    TOOLKIT_NOT_RUNNING = "toolkit-not-running"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class RuntimeState:
    node: str
    dump_path: str
    loaded: frozenset[str] | None       # None: no usable config dump
    imports: tuple[str, ...]            # the dump's resolved imports
    load_order: tuple[str, ...]         # files the emulated merge reads, in order
    nvidia_dropins: tuple[str, ...]     # copied files that define the nvidia runtime
    clobbers: tuple[Clobber, ...]       # from emulating the imports merge
    main: str = "/etc/containerd/config.toml"  # the file containerd runs with
    wrong_dump: str | None = None       # why the collected dump is not of that file

    @property
    def has_nvidia(self) -> bool | None:
        return None if self.loaded is None else NVIDIA_HANDLER in self.loaded

    @property
    def unimported_dropins(self) -> tuple[str, ...]:
        imported = set(self.imports) | set(self.load_order)
        return tuple(p for p in self.nvidia_dropins
                     if p != self.main and p not in imported)

    def nvidia_clobber(self) -> Clobber | None:
        for clobber in self.clobbers:
            if NVIDIA_HANDLER in clobber.lost_runtimes:
                return clobber
        return None


def runtime_state(artifacts: NodeArtifacts, where: NodeRuntime | None = None,
                  dump_command: object = None) -> RuntimeState:
    """The node's runtime state. It depends only on the node's containerd texts, which
    repeat across a cluster's nodes, so it is computed once per distinct set of texts
    (the merge emulation parses every file again) and renamed for each node.

    ``where`` says which distribution's layout the node has: the merge starts at the file
    containerd really runs with (k3s, RKE2, k0s and MicroK8s keep it elsewhere than
    ``/etc/containerd/config.toml``), and that file's templates are no drop-ins.
    ``dump_command`` is the manifest item's command of the node's config dump."""
    files = artifacts.containerd_files
    config = artifacts.config_dump  # parsed here (memoized) so its problem is recorded
    artifacts.containerd_refused  # noqa: B018 - checked here so that each node records its own
    main = where.config if where is not None else DEFAULT_MAIN
    templates = where.layout.templates if where is not None else ()
    wrong = _wrong_dump(dump_command, main) if main != DEFAULT_MAIN else None
    key = (artifacts.config_dump_text, tuple(sorted(files.items())),
           artifacts.containerd_version, main, wrong)
    known = _STATES.get(key)
    if known is not None:
        return replace(known, node=artifacts.name,
                       dump_path=artifacts.path(specs.CONTAINERD_DUMP))
    state = _runtime_state(artifacts, None if wrong else config, files, main, templates)
    state = replace(state, wrong_dump=wrong)
    _STATES[key] = state
    if len(_STATES) > _STATES_LIMIT:
        del _STATES[next(iter(_STATES))]
    return state


DEFAULT_MAIN = "/etc/containerd/config.toml"
_STATES: dict[tuple[str | None, tuple[tuple[str, str], ...], str | None, str, str | None],
              RuntimeState] = {}
_STATES_LIMIT = 64


def _wrong_dump(command: object, main: str) -> str | None:
    """Why the collected dump is not the configuration containerd runs with on a
    distribution node, or None. A collector before format 1.1 ran ``containerd config
    dump`` with no ``--config``: that reads ``/etc/containerd/config.toml`` (or built-in
    defaults), not the distribution's file. The manifest item's command tells."""
    if not isinstance(command, list) or "dump" not in command:
        return None
    if any(str(arg).endswith(main) for arg in command):
        return None
    return (f"the dump was made with '{' '.join(map(str, command))}', which does not read "
            f"{main}, the file this node's containerd runs with")


def is_template(path: str, templates: tuple[str, ...] = ()) -> bool:
    """A file containerd never reads itself: a distribution's Go template."""
    base = posixpath.basename(path)
    return path in templates or base.endswith(".tmpl") or base == "containerd-template.toml"


def _runtime_state(artifacts: NodeArtifacts, config: dict[str, Any] | None,
                   files: dict[str, str], main: str,
                   templates: tuple[str, ...]) -> RuntimeState:
    imports_raw = config.get("imports", []) if config is not None else []
    imports = tuple(str(i) for i in imports_raw) if isinstance(imports_raw, list) else ()
    dropins = []
    for path, text in sorted(files.items()):
        if path == main or posixpath.basename(path) == "config.toml" or \
                is_template(path, templates):
            continue
        if NVIDIA_HANDLER in runtimes_in(_safe_toml(text)):
            dropins.append(path)
    clobbers: tuple[Clobber, ...] = ()
    load_order: tuple[str, ...] = ()
    loadable = {p: t for p, t in files.items() if not is_template(p, templates)}
    if loadable:
        merged = emulate(loadable, versions.containerd(artifacts.containerd_version), main)
        clobbers, load_order = merged.clobbers, merged.load_order
    return RuntimeState(
        node=artifacts.name,
        dump_path=artifacts.path(specs.CONTAINERD_DUMP),
        loaded=runtimes_in(config) if config is not None else None,
        imports=imports,
        load_order=load_order,
        nvidia_dropins=tuple(dropins),
        clobbers=clobbers,
        main=main,
    )


def _safe_toml(text: str) -> dict[str, object]:
    try:
        return toml_loads(text)
    except tomllib.TOMLDecodeError:  # not TOML, or over the budget (recorded by the bundle)
        return {}


def missing_cause(state: RuntimeState, *, toolkit_enabled: bool,
                  toolkit_running: bool, misdirected: bool = False,
                  template_broken: bool = False) -> Cause:
    """The one explanation that holds for a node whose loaded config lacks nvidia."""
    if not toolkit_enabled:
        return Cause.TOOLKIT_DISABLED
    if misdirected:
        return Cause.TOOLKIT_MISDIRECTED
    if template_broken:
        return Cause.TEMPLATE_BROKEN
    if state.unimported_dropins:
        return Cause.DROPIN_NOT_IMPORTED
    if state.nvidia_clobber() is not None:
        return Cause.DROPIN_CLOBBERED
    if not toolkit_running:
        return Cause.TOOLKIT_NOT_RUNNING
    return Cause.UNKNOWN
