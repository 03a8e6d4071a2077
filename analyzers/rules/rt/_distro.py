"""RT008–RT010: the runtime gate on k3s, RKE2, k0s, MicroK8s and CRI-O nodes."""

from __future__ import annotations

from analyzers import commands as sh
from analyzers.facts.distro import NodeRuntime
from analyzers.facts.gate import LogHit
from analyzers.facts.runtimes import NVIDIA_HANDLER
from analyzers.results.models import Evidence
from bundle.kube import Pod


def _where(nr: NodeRuntime) -> str:
    return f"{nr.describe()} (from {nr.basis})"


def _distro_evidence(nr: NodeRuntime) -> list[Evidence]:
    return [nr.evidence] if nr.evidence is not None else []


def _log_evidence(hits: tuple[LogHit, ...]) -> list[Evidence]:
    found = []
    for log, hit in hits[:2]:
        where = log.locate(hit)
        found.append(Evidence(path=where.path, line=where.line, excerpt=where.excerpt))
    return found


def _env_fixes(config: str, socket: str, source: str | None) -> list[str]:
    """The toolkit.env values to set, as comments (a value may come from runtime.json)."""
    found = [sh.note("#   CONTAINERD_CONFIG={value}", value=sh.path(config)),
             sh.note("#   CONTAINERD_SOCKET={value}", value=sh.path(socket))]
    if source is not None:
        found.append(sh.note("#   RUNTIME_CONFIG_SOURCE=file={value}", value=sh.path(source)))
    return found


def _needs_nvidia(pod: Pod, handlers: dict[str, str]) -> bool:
    name = pod.spec.runtime_class_name
    return name is not None and handlers.get(name, name) == NVIDIA_HANDLER and \
        not pod.terminated
