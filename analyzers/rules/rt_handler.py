"""RT011 and RT012: the ``nvidia`` handler is there but cannot work, or is not the one
that pods without a RuntimeClass get."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts import Facts
from analyzers.facts.handlers import NVIDIA_PREFIX, CriRuntimes, RuntimeEntry, cri_runtimes
from analyzers.facts.podlogs import ContainerLog
from analyzers.facts.preconditions import Need
from analyzers.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import EVENT_CAP, LOGS, RUNTIME_FILES, event_evidence, names, node_ref
from analyzers.signatures import SignatureMatch
from bundle.evidence import first_line
from bundle.kube import Event, Pod

_NAME_UNSET = "containerd-runtime-name-unset"
_BINARY = "runtime-binary-missing"
_NVML_LOAD = "toolkit-cli-nvml-load-failed"
_FORK_PATH = re.compile(r"fork/exec (/\S*?): no such file")
_OPERATOR_ROOT = "/run/nvidia/driver"
_DRIVER_ROOT_MOUNT = "/driver-root"


def _dump_line(ctx: Context, node_name: str, pattern: str) -> Evidence | None:
    artifacts = ctx.bundle.node(node_name)
    hit = first_line(artifacts.path("containerd/config-dump.toml"),
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
            links.append(refs.SC001(key[0], key[1]))
    return links


def _judged(ctx: Context, node_name: str) -> CriRuntimes | None:
    facts = ctx.facts
    if node_name not in facts.node_dirs or not facts.node_runtime(node_name).containerd:
        return None
    if facts.runtime(node_name).wrong_dump is not None:
        return None  # the dump is not of the file containerd runs with: RT001 says so
    return cri_runtimes(ctx.bundle.node(node_name).config_dump)


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


class NvidiaHandlerBroken(Rule):
    """The nvidia runtime handler is configured but cannot start containers.

    containerd's loaded configuration has an ``nvidia`` runtime (so RT001 is quiet), yet
    containers started through it fail: the runtime table has no ``runtime_type``
    (containerd refuses with ``container.Runtime.Name must be set``), its ``BinaryName``
    names a file that is not on the node (``fork/exec …nvidia-container-runtime: no
    such file or directory``), or the NVIDIA hook cannot load ``libnvidia-ml.so.1``
    from the driver root it was configured with (the host's ``/`` or the driver
    container's ``/run/nvidia/driver``). Judged from the config dump and the events and
    logs of the node's pods.

    Why it matters:
    Every pod using the handler (the operator's own operands and the device plugin
    among them) fails at sandbox or container creation, so the node advertises no GPUs,
    while ``kubectl get runtimeclass`` and the configuration both look right.

    Remediation:
    Read the runtime's table in the loaded configuration first (``containerd config
    dump | grep -A4 'runtimes.nvidia]'``), then fix the one thing the finding names:
    add ``runtime_type = "io.containerd.runc.v2"``, point ``BinaryName`` at the
    installed runtime (the operator installs it under ``/usr/local/nvidia/toolkit``),
    or make the driver root match where the driver is (``driver.enabled`` in the
    ClusterPolicy). Change one node at a time.
    """

    id = "RT011"
    slug = "nvidia-handler-broken"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (node("containerd/config-dump.toml"), cluster("events.json", optional=True),
              cluster("pods.json", optional=True), cluster("clusterpolicies.json", optional=True),
              LOGS, *RUNTIME_FILES)
    needs = (Need.CONTAINERD,)
    tags = ("runtime", "containerd")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        for node_name in facts.gpu_nodes:
            cri = _judged(ctx, node_name)
            if cri is None:
                continue
            nvidia = {n: e for n, e in cri.runtimes.items() if n.startswith(NVIDIA_PREFIX)}
            if not nvidia:
                continue  # no handler at all: RT001's finding
            broken = _Broken()
            pods = [p for p in facts.pods_by_node.get(node_name, []) if not p.terminated]
            self._no_type(ctx, node_name, nvidia, pods, broken)
            self._binary(ctx, node_name, nvidia, pods, broken)
            self._driver_root(ctx, node_name, pods, broken)
            if broken.parts:
                yield self._finding(ctx, node_name, broken)

    def _no_type(self, ctx: Context, node_name: str, nvidia: dict[str, RuntimeEntry],
                 pods: list[Pod], broken: _Broken) -> None:
        untyped = sorted(n for n, e in nvidia.items() if not e.runtime_type)
        events = _events_with(ctx.facts, pods, _NAME_UNSET)
        if not untyped:
            return
        broken.parts.append(f"the runtime table(s) {names(untyped)} have no runtime_type, "
                            "so containerd refuses every container created through them "
                            "(container.Runtime.Name must be set)")
        for name in untyped[:2]:
            line = _dump_line(ctx, node_name, f"runtimes.{name}]")
            broken.evidence.append(line if line is not None else Evidence(
                path=ctx.bundle.node(node_name).path("containerd/config-dump.toml"),
                excerpt=f"(runtimes.{name} has no runtime_type)"))
        broken.evidence += [event_evidence(e) for e in events[:EVENT_CAP]]
        broken.pods += _pods_of(ctx.facts, pods, events)
        where = ctx.facts.node_runtime(node_name)
        edit = where.layout.templates[0] if where.layout.templates else where.config
        broken.fixes.append(sh.note('# add runtime_type = "io.containerd.runc.v2" to that table '
                                    "in {file}", file=sh.path(edit)))

    def _binary(self, ctx: Context, node_name: str, nvidia: dict[str, RuntimeEntry],
                pods: list[Pod], broken: _Broken) -> None:
        events = _events_with(ctx.facts, pods, _BINARY)
        if not events:
            return
        missing = sorted({m[1] for e in events if (m := _FORK_PATH.search(e.message or ""))})
        configured = {e.binary: n for n, e in nvidia.items() if e.binary}
        named = [f"{path} (BinaryName of runtime {configured[path]})" if path in configured
                 else path for path in missing]
        what = names(named) if named else "the nvidia runtime's binary"
        broken.parts.append(f"containerd cannot execute {what}: the file is not on the node "
                            f"({len(events)} event(s) say no such file or directory)")
        for path in missing[:2]:
            line = _dump_line(ctx, node_name, path)
            if line is not None:
                broken.evidence.append(line)
        broken.evidence += [event_evidence(e) for e in events[:EVENT_CAP]]
        broken.pods += _pods_of(ctx.facts, pods, events)
        for path in missing[:2]:
            broken.fixes.append(sh.cmd("ls", "-l", sh.path(path)))
        broken.fixes.append(sh.cmd("ls", "-l", "/usr/local/nvidia/toolkit/",
                                   tail="   # where the operator installs the runtime"))

    def _driver_root(self, ctx: Context, node_name: str, pods: list[Pod],
                     broken: _Broken) -> None:
        facts = ctx.facts
        events = _events_with(facts, pods, _NVML_LOAD)
        logs = _logs_with(facts, pods, (_NVML_LOAD,))
        if not events and not logs:
            return
        root, origin, root_evidence = _driver_root(facts, node_name)
        driver_pod = facts.operands.get(node_name, {}).get("driver")
        if root == _OPERATOR_ROOT and driver_pod is None:
            why = ("no driver container runs on this node, so that directory holds no driver "
                   "(the host's own driver is under /)")
        elif root == "/" and driver_pod is not None:
            why = (f"the driver comes from the driver container {driver_pod.pod.name}, which "
                   f"installs it under {_OPERATOR_ROOT}, not /")
        elif driver_pod is not None and not driver_pod.healthy:
            why = f"the driver container {driver_pod.pod.name} is {driver_pod.state}"
        else:
            why = "no libnvidia-ml.so.1 was found there"
        broken.parts.append(f"the NVIDIA hook cannot load libnvidia-ml.so.1 from the driver "
                            f"root {root} ({origin}): {why}")
        if root_evidence is not None:
            broken.evidence.append(root_evidence)
        broken.evidence += [event_evidence(e) for e in events[:EVENT_CAP]]
        broken.evidence += [_log_evidence(log, hit) for log, hit in logs[:2]]
        broken.pods += _pods_of(facts, pods, events)
        broken.pods += [log.pod for log, _ in logs]
        broken.fixes += [sh.cmd("ls", sh.path(_OPERATOR_ROOT + "/usr/lib64"),
                                sh.path(_OPERATOR_ROOT + "/usr/lib/x86_64-linux-gnu"),
                                tail=" 2>&1 | head -3   # the driver container's root"),
                         "ldconfig -p | grep libnvidia-ml   # the host's driver",
                         "kubectl get clusterpolicy -o jsonpath='{.items[0].spec.driver}{\"\\n\"}'",
                         "# driver.enabled=false when the host has the driver, true when the "
                         "driver container provides it"]

    def _finding(self, ctx: Context, node_name: str, broken: _Broken) -> Finding:
        facts = ctx.facts
        where = facts.node_runtime(node_name)
        on = node_name if where.layout.stock else f"{node_name} ({where.describe()})"
        pods = list({(p.namespace, p.name): p for p in broken.pods}.values())
        users = f" Affected pods: {names(p.name for p in pods)}." if pods else ""
        summary = (f"On {on}, containerd has the nvidia runtime but it cannot work: "
                   f"{'; '.join(broken.parts)}.{users}")
        remediation = sh.lines(_look(ctx, node_name, " | grep -A4 'runtimes.nvidia'"),
                               broken.fixes,
                               "# then restart the runtime on this node only and recreate "
                               "one failed pod")
        objects = [node_ref(node_name)] + [
            ObjectRef(kind="Pod", namespace=p.namespace, name=p.name) for p in pods[:10]]
        return self.finding(
            node_name, summary, nodes=[node_name], objects=objects, evidence=broken.evidence,
            remediation=remediation,
            causes=[refs.OP001(node_name), refs.OP008(node_name),
                    *_sc001_links(facts, node_name)])


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


class NvidiaNotDefault(Rule):
    """Pods without a RuntimeClass get no driver: nvidia is not containerd's default runtime.

    A standalone device plugin (Helm chart ``nvidia-device-plugin`` without the GPU
    Operator) and GPU workloads that name no ``runtimeClassName`` run with containerd's
    default runtime. Unless that default is ``nvidia`` (or the devices come through
    CDI), nothing injects the driver: the plugin logs ``could not load NVML library``
    and registers no GPUs, and workloads print ``nvidia-smi: not found`` or fail with
    ``"nvidia-smi": executable file not found``. Fires on a node whose loaded
    configuration's ``default_runtime_name`` is not an NVIDIA runtime when such a pod
    there shows one of those lines.

    Why it matters:
    The node has a healthy driver and even an ``nvidia`` runtime, yet the device plugin
    advertises nothing (pending GPU pods) or GPU pods start without the driver.

    Remediation:
    Look at ``default_runtime_name`` in the loaded configuration first. Then either give
    the pods ``runtimeClassName: nvidia`` (the device plugin chart's ``runtimeClassName``
    value), or make ``nvidia`` the default: ``CONTAINERD_SET_AS_DEFAULT=true`` in the
    operator's toolkit.env, ``default_runtime_name = "nvidia"`` in the file containerd
    runs with (its template on k3s/RKE2/MicroK8s; ``--default-runtime nvidia`` on
    k3s/RKE2), one node at a time.
    """

    id = "RT012"
    slug = "nvidia-not-default"
    severity = Severity.HIGH
    confidence = Confidence.LIKELY
    inputs = (node("containerd/config-dump.toml"), cluster("pods.json"),
              cluster("events.json", optional=True), LOGS,
              cluster("runtimeclasses.json", optional=True), *RUNTIME_FILES)
    needs = (Need.CONTAINERD,)
    tags = ("runtime", "containerd")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        handlers = {rc.metadata.name: rc.handler for rc in ctx.bundle.cluster.runtimeclasses}
        for node_name in facts.gpu_nodes:
            cri = _judged(ctx, node_name)
            if cri is None or cri.nvidia_default:
                continue
            pods = [p for p in facts.pods_by_node.get(node_name, [])
                    if not p.terminated and not handlers.get(
                        p.spec.runtime_class_name or "", p.spec.runtime_class_name or ""
                    ).startswith(NVIDIA_PREFIX)]
            starved = self._starved(facts, pods)
            if starved.plugins or starved.workloads:
                yield self._finding(ctx, node_name, cri, starved)

    @staticmethod
    def _starved(facts: Facts, pods: list[Pod]) -> _Starved:
        found = _Starved()
        for pod in pods:
            if _is_device_plugin(pod):
                hits = [(log, hit) for log, hit in _logs_with(facts, [pod], _DP_NVML)
                        if any(w in hit.text.lower() for w in _NO_LIBRARY)]
                if hits:
                    found.plugins.append(pod)
                    found.evidence += [_log_evidence(log, hit) for log, hit in hits[:1]]
            elif _wants_gpu(pod):
                hits = _logs_with(facts, [pod], (_SMI_LOG,))
                hits = [(log, hit) for log, hit in hits if "not found" in hit.text.lower()]
                events = _events_with(facts, [pod], _SMI_EXEC)
                if hits or events:
                    found.workloads.append(pod)
                    found.evidence += [_log_evidence(log, hit) for log, hit in hits[:1]]
                    found.evidence += [event_evidence(e) for e in events[:1]]
        return found

    def _finding(self, ctx: Context, node_name: str, cri: CriRuntimes,
                 starved: _Starved) -> Finding:
        facts = ctx.facts
        where = facts.node_runtime(node_name)
        dump = ctx.bundle.node(node_name).path("containerd/config-dump.toml")
        line = _dump_line(ctx, node_name, "default_runtime_name")
        evidence = [line if line is not None else Evidence(
            path=dump, excerpt=f"(no default_runtime_name: containerd's default {cri.default})")]
        has_nvidia = "nvidia" in cri.runtimes
        parts = []
        if starved.plugins:
            parts.append(f"the device plugin pod(s) {names(p.name for p in starved.plugins)} "
                         "cannot load NVML, so the node advertises no GPUs")
        if starved.workloads:
            parts.append(f"GPU pod(s) {names(p.name for p in starved.workloads)} start "
                         "without the driver (nvidia-smi not found)")
        runtime = ("It has an nvidia runtime, but these pods name no runtimeClassName"
                   if has_nvidia else "It has no nvidia runtime at all")
        cdi = "CDI injection is on" if cri.enable_cdi else "CDI injection is off"
        on = node_name if where.layout.stock else f"{node_name} ({where.describe()})"
        summary = (f"On {on}, containerd's default runtime is {cri.default}, not nvidia: "
                   f"{'; '.join(parts)}. {runtime}; {cdi}.")
        layout = where.layout
        fixes = [
            "# either give these pods runtimeClassName: nvidia (device plugin chart: "
            "--set runtimeClassName=nvidia),",
            "# or make nvidia the default runtime:",
        ]
        if facts.operator_expected:
            fixes.append("#   operator: toolkit.env CONTAINERD_SET_AS_DEFAULT=true "
                         "(helm upgrade --reuse-values)")
        elif layout.distribution in ("k3s", "rke2"):
            fixes.append(sh.note("#   {distribution}: default-runtime: nvidia in its "
                                 "config.yaml (or --default-runtime nvidia), then restart it",
                                 distribution=sh.word(layout.distribution, "distribution")))
        else:
            target = layout.templates[0] if layout.templates else where.config
            fixes.append(sh.note('#   default_runtime_name = "nvidia" in {file}, then '
                                 "restart containerd", file=sh.path(target)))
        objects = [node_ref(node_name)] + [
            ObjectRef(kind="Pod", namespace=p.namespace, name=p.name)
            for p in (starved.plugins + starved.workloads)[:10]]
        severity = Severity.CRITICAL if starved.plugins else self.severity
        return self.finding(
            node_name, summary, severity=severity, nodes=[node_name], objects=objects,
            evidence=evidence + starved.evidence,
            remediation=sh.lines(_look(ctx, node_name,
                                       " | grep -nE 'default_runtime_name|enable_cdi'"),
                                 fixes),
            causes=[refs.OP008(node_name), *(_sc001_links(facts, node_name)
                                            if starved.plugins else [])])
