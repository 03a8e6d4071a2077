"""RT011 and RT012: the ``nvidia`` handler is there but cannot work, or is not the one
that pods without a RuntimeClass get."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts import Facts
from analyzers.facts.podlogs import ContainerLog
from analyzers.knowledge.signatures import SignatureMatch
from analyzers.results.models import Evidence
from analyzers.rule import Context
from bundle import specs
from bundle.evidence import first_line
from bundle.kube import Event, Pod

_NAME_UNSET = "containerd-runtime-name-unset"


_BINARY = "runtime-binary-missing"


_NVML_LOAD = "toolkit-cli-nvml-load-failed"


_FORK_PATH = re.compile(r"fork/exec (/\S*?): no such file")


_OPERATOR_ROOT = "/run/nvidia/driver"


_DRIVER_ROOT_MOUNT = "/driver-root"


def _dump_line(ctx: Context, node_name: str, pattern: str) -> Evidence | None:
    artifacts = ctx.facts.node(node_name)
    hit = first_line(artifacts.path(specs.CONTAINERD_DUMP),
                     artifacts.config_dump_text or "", pattern)
    return Evidence(path=hit.path, line=hit.line, excerpt=hit.excerpt) if hit else None


def _log_evidence(log: ContainerLog, hit: SignatureMatch) -> Evidence:
    where = log.locate(hit)
    return Evidence(path=where.path, line=where.line, excerpt=where.excerpt)


def _events_with(facts: Facts, pods: Iterable[Pod], signature: str) -> list[Event]:
    return [e for p in pods for e in facts.pod_events_with(p, signature)]


def _pods_of(facts: Facts, pods: Iterable[Pod], events: list[Event]) -> list[Pod]:
    """The pods among ``pods`` that have one of ``events`` (by identity: one set, not a
    scan of the list per event of every pod)."""
    wanted = {id(e) for e in events}
    return [p for p in pods if any(id(e) in wanted for e in facts.pod_events(p))]


def _logs_with(facts: Facts, pods: Iterable[Pod],
               signatures: tuple[str, ...]) -> list[tuple[ContainerLog, SignatureMatch]]:
    return [(log, hit) for p in pods for log in facts.pod_logs.of(p)
            for hit in log.matches() if hit.signature.id in signatures]


def _sc001_links(facts: Facts, node_name: str) -> list[refs.Link]:
    """SC001 findings of pending GPU pods that this node's silent device plugin explains."""
    links = []
    for key, verdict in sorted(facts.gate_verdicts.items()):
        if any(node_name in r.culprits or any(row.node == node_name and not row.advertised
                                              for row in r.rows)
               for r in verdict.resources):
            links.append(refs.link("SC001", key[0], key[1]))
    return links


def _look(ctx: Context, node_name: str, what: str) -> list[str]:
    """Read-first lines: the loaded configuration of this node's containerd."""
    where = ctx.facts.node_runtime(node_name)
    layout = where.layout
    head = sh.node_shell(sh.node(node_name), "busybox")
    if layout.stock:
        return [head, sh.cmd("containerd", "config", "dump", tail=what)]
    return [head, sh.note("# {distribution} runs containerd with {config}",
                          distribution=sh.word(layout.distribution, "distribution"),
                          config=sh.path(where.config)),
            sh.cmd(sh.path(layout.binary), "--config", sh.path(where.config), "config",
                   "dump", tail=what)]


@dataclass
class _Broken:
    parts: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)


def _driver_root(facts: Facts, node_name: str) -> tuple[str, str, Evidence | None]:
    """The driver root the toolkit was configured with, where that was read, evidence."""
    toolkit = facts.operands.get(node_name, {}).get("toolkit")
    if toolkit is not None:
        pod = toolkit.pod
        volumes: dict[str, int] = {}  # hostPath volume name -> its first index: one pass
        for index, volume in enumerate(pod.spec.volumes):
            if volume.host_path is not None:
                volumes.setdefault(volume.name, index)
        for container in list(pod.spec.init_containers) + list(pod.spec.containers):
            for mount in container.volume_mounts:
                if mount.mount_path.rstrip("/") != _DRIVER_ROOT_MOUNT or \
                        mount.name not in volumes:
                    continue
                index = volumes[mount.name]
                volume = pod.spec.volumes[index]
                path = volume.host_path.path if volume.host_path is not None else ""
                return path, f"hostPath of the toolkit pod {pod.name}", Evidence(
                    path=pod.source_path,
                    pointer=f"{pod.source_pointer}/spec/volumes/{index}/hostPath/path",
                    excerpt=f"{volume.name}: hostPath {path} -> {_DRIVER_ROOT_MOUNT}")
    policy = facts.cluster_policy
    if policy is not None:
        enabled = policy.component_enabled("driver")
        root = "/" if enabled is False else _OPERATOR_ROOT
        return root, (f"ClusterPolicy {policy.metadata.name} driver.enabled="
                      f"{'false' if enabled is False else 'true'}"), None
    return "/", "no operator: the host's driver", None


_DP_NVML = ("dp-nvml-missing", "dp-nvml-init-failed")


_NO_LIBRARY = ("could not load nvml library", "error_library_not_found", "libnvidia-ml.so")


_SMI_LOG = "workload-nvidia-smi-no-gpu"


_SMI_EXEC = "workload-nvidia-smi-exec-not-found"


_GPU_PREFIX = "nvidia.com/"


def _is_device_plugin(pod: Pod) -> bool:
    return any(c.name.startswith("nvidia-device-plugin") for c in pod.spec.containers) or \
        "nvidia-device-plugin" in pod.name


def _wants_gpu(pod: Pod) -> bool:
    return any(k.startswith(_GPU_PREFIX) for c in pod.spec.containers
               for k in (*c.resources.limits, *c.resources.requests))


@dataclass
class _Starved:
    plugins: list[Pod] = field(default_factory=list)
    workloads: list[Pod] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
