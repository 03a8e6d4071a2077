"""RT011: The nvidia runtime handler is configured but cannot start containers."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.evidence import event_evidence
from analyzers.facts.handlers import NVIDIA_PREFIX, RuntimeEntry
from analyzers.facts.preconditions import Need
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import EVENT_CAP, LOGS, RUNTIME_FILES, names, node_ref
from analyzers.rules.rt._handler import (
    _BINARY,
    _FORK_PATH,
    _NAME_UNSET,
    _NVML_LOAD,
    _OPERATOR_ROOT,
    _Broken,
    _driver_root,
    _dump_line,
    _events_with,
    _log_evidence,
    _logs_with,
    _look,
    _pods_of,
    _sc001_links,
)
from bundle import specs
from bundle.kube import Pod


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
    inputs = (node(specs.CONTAINERD_DUMP), cluster(specs.EVENTS, optional=True),
              cluster(specs.PODS, optional=True), cluster(specs.CLUSTERPOLICIES, optional=True),
              LOGS, *RUNTIME_FILES)
    needs = (Need.CONTAINERD,)
    tags = ("runtime", "containerd")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        for node_name in facts.gpu_nodes:
            cri = facts.node(node_name).cri_runtimes
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
                path=ctx.facts.node(node_name).path(specs.CONTAINERD_DUMP),
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
            causes=[refs.link("OP001", node_name), refs.link("OP008", node_name),
                    *_sc001_links(facts, node_name)])
