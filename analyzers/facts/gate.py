"""The runtime gate on distributions: is the toolkit aimed at the runtime's real files,
did a regenerated configuration lose the ``nvidia`` runtime, does CRI-O have a handler.

Derived once per node for RT008, RT009, RT010 and for RT001's choice of cause.
"""

from __future__ import annotations

import posixpath
import re
import tomllib
from dataclasses import dataclass
from typing import Any

from analyzers.facts.containerd_merge import runtimes_in
from analyzers.facts.distro import CONTAINERD, CRIO, NodeRuntime
from analyzers.facts.podlogs import ContainerLog
from analyzers.facts.runtimes import NVIDIA_HANDLER, is_template
from analyzers.facts.toolkit_env import ToolkitTarget, config_used, socket_used
from analyzers.knowledge.signatures import SignatureMatch
from bundle import NodeArtifacts, specs
from bundle.reader import toml_refused
from bundle.tomlsafe import TomlRefused
from bundle.tomlsafe import loads as toml_loads

LogHit = tuple[ContainerLog, SignatureMatch]
# A Go template that builds on the distribution's own one keeps what the distribution
# detects at start (the nvidia runtimes among it).
_BASE_TEMPLATE = re.compile(r"\{\{-?\s*template\s+\"base\"")
_NVIDIA_TABLE = re.compile(r"runtimes\.(?:\"nvidia\"|'nvidia'|nvidia)\s*\]")


@dataclass(frozen=True, slots=True)
class Misdirection:
    """The toolkit edits a config file or socket the node's containerd does not use."""

    target: ToolkitTarget
    config_wrong: bool
    socket_wrong: bool
    expected_config: str
    expected_socket: str
    dump_failures: tuple[LogHit, ...] = ()  # toolkit lines: it could not dump the config

    @property
    def wrong(self) -> bool:
        return self.config_wrong or self.socket_wrong or bool(self.dump_failures)


@dataclass(frozen=True, slots=True)
class TemplateLoss:
    """A regenerated configuration lost the runtime, or the template broke the toolkit."""

    template: str | None              # host path of the template judged
    main: str
    lost_on_restart: bool             # nvidia in the config but not in the template
    parse_failures: tuple[LogHit, ...] = ()   # toolkit lines: a Go template parsed as TOML
    toolkit_on_template: bool = False  # the toolkit is told to edit a Go template
    toolkit_on_generated: bool = False  # the toolkit edits the generated file itself


@dataclass(frozen=True, slots=True)
class CrioState:
    dump_path: str
    handlers: frozenset[str] | None   # None: no usable CRI-O config dump
    nvidia_files: tuple[str, ...]     # copied files that define an nvidia handler
    hooks: tuple[str, ...]            # NVIDIA OCI hooks found
    default_runtime: str | None = None


@dataclass(frozen=True, slots=True)
class NodeGate:
    misdirection: Misdirection | None = None
    template: TemplateLoss | None = None
    crio: CrioState | None = None


def misdirection(where: NodeRuntime, target: ToolkitTarget, runtime_setting: str | None,
                 dump_failures: tuple[LogHit, ...],
                 has_nvidia: bool | None = None) -> Misdirection | None:
    """Judged on containerd nodes whose layout is known (runtime.json or a distribution
    in nodeInfo), and on any containerd node where the paths were set explicitly. A node
    whose loaded configuration has the runtime anyway (k3s and RKE2 add it themselves
    when they find nvidia-container-runtime on the host) is not harmed: no finding."""
    if runtime_setting not in (None, "containerd") or not where.containerd:
        return None
    if has_nvidia is True and not dump_failures:
        return None
    explicit = target.config_setting is not None or target.socket_setting is not None
    if where.distribution is None and not (explicit and where.runtime == CONTAINERD) \
            and not dump_failures:
        return None
    layout = where.layout
    config_wrong = not config_used(target.config, layout, where.config)
    socket_wrong = not socket_used(target.socket, layout, where.socket)
    found = Misdirection(target, config_wrong, socket_wrong,
                         where.toolkit_config, where.socket or layout.socket, dump_failures)
    return found if found.wrong else None


def template_loss(where: NodeRuntime, artifacts: NodeArtifacts, target: ToolkitTarget,
                  parse_failures: tuple[LogHit, ...],
                  has_nvidia: bool | None = None) -> TemplateLoss | None:
    """Also judged: the toolkit told to edit the generated file itself (MicroK8s'
    ``containerd.toml``, k3s/RKE2 ``config.toml``). Its edit lasts until the next start
    of containerd, which the toolkit's own restart brings about; a node whose loaded
    configuration lacks the runtime has lost it that way."""
    layout = where.layout
    files = artifacts.containerd_files
    main = where.config
    # The templates sit beside the file containerd runs with, which may be named through
    # another path than the layout's (MicroK8s: /var/snap/microk8s/<revision>/args/...
    # in containerd's --config, /var/snap/microk8s/current/args/... in the layout).
    beside = [posixpath.join(posixpath.dirname(main), posixpath.basename(t))
              for t in layout.templates]
    templates = where.templates_in_effect(
        [t for t in dict.fromkeys([*layout.templates, *beside]) if t in files])
    if not layout.regenerated and not parse_failures:
        return None
    lost = False
    template = templates[0] if templates else None
    main_text = files.get(main)
    if template is not None and main_text is not None:
        in_main = NVIDIA_HANDLER in runtimes_in(_toml(main_text))
        text = files[template]
        in_template = bool(_NVIDIA_TABLE.search(text)) or bool(_BASE_TEMPLATE.search(text))
        lost = in_main and not in_template
    on_template = (is_template(target.config, layout.templates)
                   and target.config in files and "{{" in files[target.config])
    on_generated = (layout.regenerated and has_nvidia is False
                    and posixpath.normpath(target.config) in (main, layout.config))
    if not lost and not parse_failures and not on_template and not on_generated:
        return None
    return TemplateLoss(template if template is not None else
                        (target.config if on_template else None), main, lost, parse_failures,
                        on_template, on_generated)


def _toml(text: str) -> dict[str, Any]:
    try:
        return toml_loads(text)
    except tomllib.TOMLDecodeError:
        return {}


_HOOK_DIRS = ("/usr/share/containers/oci/hooks.d/", "/etc/containers/oci/hooks.d/")


def crio_state(artifacts: NodeArtifacts) -> CrioState:
    """CRI-O's loaded handlers (``crio status config`` / ``crio config``), the copied
    files that define ``nvidia`` and the NVIDIA OCI hooks installed."""
    dump_path = artifacts.path(specs.CRIO_DUMP)
    handlers: frozenset[str] | None = None
    default: str | None = None
    text = artifacts.bundle.read_text(dump_path)
    if text is not None:
        try:
            data = toml_loads(text)
        except TomlRefused as exc:
            toml_refused(artifacts.bundle, dump_path, exc)
        except tomllib.TOMLDecodeError as exc:
            artifacts.bundle.problem(dump_path, f"invalid TOML: {exc}", lost=True)
        else:
            runtime = _table(_table(data.get("crio")).get("runtime"))
            handlers = frozenset(_table(runtime.get("runtimes")))
            value = runtime.get("default_runtime")
            default = value if isinstance(value, str) else None
    base = artifacts.path(specs.CRIO_FILES_DIR).rstrip("/")
    nvidia_files: list[str] = []
    hooks: list[str] = []
    for path in artifacts.bundle.paths_under(base + "/"):
        host = path[len(base):]
        body = artifacts.bundle.read_text(path) or ""
        if host.startswith(_HOOK_DIRS):
            if "nvidia" in host.lower() or "nvidia-container" in body:
                hooks.append(host)
            continue
        if host.startswith("/etc/crio/"):
            runtimes = _table(_table(_table(_toml(body).get("crio")).get("runtime"))
                              .get("runtimes"))
            if NVIDIA_HANDLER in runtimes:
                nvidia_files.append(host)
    return CrioState(dump_path, handlers, tuple(sorted(nvidia_files)), tuple(sorted(hooks)),
                     default)


def _table(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def is_crio(where: NodeRuntime) -> bool:
    return where.runtime == CRIO
