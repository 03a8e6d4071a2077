"""RT006 and RT007: references that point at nothing — CDI specs and runtime handlers."""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.runtimes import NVIDIA_HANDLER, Cause
from analyzers.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.refs import Link
from analyzers.rule import CannotJudge, Context, Rule, cluster, node
from analyzers.rules.common import (
    LOGS,
    OPERATOR_SETTINGS,
    RUNTIME_FILES,
    event_evidence,
    events_matching,
    field,
    names,
    node_ref,
)
from analyzers.rules.op_labels import PRESENT
from bundle.kube import RuntimeClass
from bundle.manifest import ManifestItem

_SO_VERSION = re.compile(r"lib(?:cuda|nvidia-ml|nvidia-ptxjitcompiler)\.so\.(\d+\.\d+(?:\.\d+)?)")


class _ItemsByPath:
    """The manifest's items sorted by path once: the items whose path starts with a
    prefix are then one range of the sorted list, not a walk over every item of the
    bundle (one per collected file) for every node."""

    def __init__(self, items: Sequence[ManifestItem]) -> None:
        self._sorted = sorted(enumerate(items), key=lambda pair: pair[1].path)
        self._paths = [item.path for _, item in self._sorted]

    def under(self, prefix: str) -> list[ManifestItem]:
        """The items whose path starts with ``prefix``, in manifest order."""
        start = end = bisect.bisect_left(self._paths, prefix)
        while end < len(self._paths) and self._paths[end].startswith(prefix):
            end += 1
        return [item for _, item in sorted(self._sorted[start:end], key=lambda p: p[0])]


def _cdi_collected(ctx: Context, items: _ItemsByPath, node_name: str) -> bool:
    return bool(items.under(f"nodes/{node_name}/cdi")) or \
        bool(ctx.bundle.node(node_name).cdi_files)


def _cause_link(ctx: Context, node_name: str) -> list[Link]:
    cause = ctx.facts.runtime_cause(node_name)
    policy = ctx.facts.cluster_policy
    if cause is Cause.TOOLKIT_DISABLED and policy is not None:
        return [refs.CFG004(policy.metadata.name)]
    if node_name in ctx.facts.node_dirs and ctx.bundle.node(node_name).nvidia_smi is None:
        # A CDI spec is generated from the loaded driver: with no usable driver there
        # is none to generate (DRV003/DRV004 say why, when they fire).
        return [refs.DRV003(node_name), refs.DRV004(node_name)]
    return []


def _not_gpu_node(ctx: Context, node_name: str) -> bool:
    """The policy runs the toolkit, but the operator has not marked the node a GPU node,
    so it deployed no toolkit there (OP003 says why, when NFD's label is missing)."""
    obj = ctx.facts.nodes.get(node_name)
    return obj is not None and obj.labels.get(PRESENT) != "true" and \
        ctx.facts.toolkit_enabled()


def _loaded_handlers(ctx: Context, node_name: str) -> tuple[frozenset[str], str] | None:
    """The runtime handlers a node's runtime has loaded, and the file that says so: CRI-O's
    loaded configuration on CRI-O nodes, containerd's on the others (None: not known; on
    Docker nodes containerd's configuration is not what runs pods, see RT015)."""
    if ctx.facts.node_runtime(node_name).runtime == "docker":
        return None
    if ctx.facts.node_runtime(node_name).runtime == "cri-o":
        found = ctx.facts.runtime_gate.get(node_name)
        crio = found.crio if found is not None else None
        if crio is None or crio.handlers is None:
            return None
        return crio.handlers, crio.dump_path
    state = ctx.facts.runtime(node_name)
    return (state.loaded, state.dump_path) if state.loaded is not None else None


def _runtime_word(ctx: Context, nodes: list[str]) -> str:
    crio = any(ctx.facts.node_runtime(n).runtime == "cri-o" for n in nodes)
    return "runtime" if crio else "containerd"


class CdiSpecMissing(Rule):
    """CDI is enabled but a GPU node has no NVIDIA CDI spec, or a stale one.

    With ``cdi.enabled`` (the default since GPU Operator 25.10) devices are injected
    by name from specs under ``/var/run/cdi`` or ``/etc/cdi``. A node without an
    NVIDIA spec, or with a spec generated for another driver version, cannot
    resolve the device names the plugin hands out.

    Why it matters:
    Containers fail at creation with ``unresolvable CDI devices`` or get libraries
    of a driver that is no longer installed, while the node still advertises GPUs.

    Remediation:
    On the node: ``ls -l /var/run/cdi /etc/cdi``; check that the toolkit pod is
    running there (it writes the management spec) or regenerate a host spec with
    ``nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml`` after a driver change.
    """

    id = "RT006"
    slug = "cdi-spec-missing"
    severity = Severity.HIGH
    confidence = Confidence.LIKELY
    inputs = (cluster("clusterpolicies.json"), node("nvidia-smi.xml", optional=True),
              node("cdi/*", optional=True), cluster("helm/*.json", optional=True),
              cluster("pods.json", optional=True), *RUNTIME_FILES, LOGS)
    tags = ("runtime", "cdi")

    def check(self, ctx: Context) -> Iterable[Finding]:
        policy = ctx.facts.cluster_policy
        cdi = policy.spec.get("cdi") if policy is not None else None
        if policy is None or not isinstance(cdi, dict) or cdi.get("enabled") is not True:
            return
        items = _ItemsByPath(ctx.bundle.manifest.items)
        judged = [n for n in ctx.facts.gpu_nodes
                  if n in ctx.facts.node_dirs and _cdi_collected(ctx, items, n)]
        if not judged:
            raise CannotJudge("no GPU node had its CDI directories (cdi/) collected")
        for node_name in judged:
            artifacts = ctx.bundle.node(node_name)
            specs = {p: t for p, t in artifacts.cdi_files.items() if "nvidia" in p.lower()}
            policy_evidence = field(policy, "spec.cdi.enabled: true", "spec", "cdi", "enabled")
            if not specs:
                gap = next((i for i in items.under(f"nodes/{node_name}/cdi") if i.error), None)
                excerpt = (f"{gap.path}: {gap.error}" if gap is not None
                           else "(no file with 'nvidia' in its name under cdi/)")
                yield self.finding(
                    node_name,
                    f"On {node_name}, CDI is enabled in ClusterPolicy {policy.metadata.name} but "
                    "no NVIDIA CDI spec exists under /etc/cdi or /var/run/cdi.",
                    nodes=[node_name], objects=[node_ref(node_name)],
                    evidence=[policy_evidence,
                              Evidence(path=artifacts.path("cdi/"), excerpt=excerpt)],
                    caused_by=_cause_link(ctx, node_name),
                    remediation=_cdi_remediation(node_name))
                continue
            smi = artifacts.nvidia_smi
            driver = smi.driver_version if smi is not None else None
            for path, text in sorted(specs.items()):
                versions = set(_SO_VERSION.findall(text))
                if driver and versions and driver not in versions:
                    found = ", ".join(sorted(versions))
                    yield self.finding(
                        node_name,
                        f"On {node_name}, the CDI spec cdi/{path} was generated for driver "
                        f"{found}, but the node runs {driver}.",
                        severity=Severity.HIGH, nodes=[node_name], objects=[node_ref(node_name)],
                        evidence=[Evidence(path=artifacts.path("cdi/" + path),
                                           excerpt=f"libraries of driver {found}"),
                                  Evidence(path=artifacts.path("nvidia-smi.xml"),
                                           excerpt=f"driver_version {driver}")],
                        remediation=_cdi_remediation(node_name))
                    break


class BrokenRuntimeReference(Rule):
    """A runtimeClassName or RuntimeClass handler points at nothing.

    Pods name a ``runtimeClassName`` that no RuntimeClass defines (the API server
    refuses them, or they stay unscheduled), or a RuntimeClass's handler is defined
    by no GPU node's loaded containerd configuration.

    Why it matters:
    The object looks valid in Kubernetes (``kubectl get runtimeclass`` lists it)
    while the node cannot honour it: every pod using it fails at sandbox creation.

    Remediation:
    Compare ``kubectl get runtimeclass -o custom-columns=N:.metadata.name,H:.handler``
    with ``containerd config dump | grep 'runtimes\\.'`` on a GPU node; create the
    missing RuntimeClass or fix the node's containerd configuration.
    """

    id = "RT007"
    slug = "broken-runtime-reference"
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (cluster("runtimeclasses.json"), cluster("pods.json"),
              node("containerd/config-dump.toml", optional=True), *RUNTIME_FILES,
              *OPERATOR_SETTINGS, node("nvidia-smi.xml", optional=True), LOGS,
              cluster("events.json", optional=True))
    tags = ("runtime",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        classes = {rc.metadata.name: rc for rc in ctx.bundle.cluster.runtimeclasses}
        yield from self._missing_classes(ctx, classes)
        yield from self._missing_handlers(ctx, classes)

    def _missing_classes(self, ctx: Context, classes: dict[str, RuntimeClass]) -> Iterable[Finding]:
        users = defaultdict(list)
        for pod in ctx.bundle.cluster.pods:
            name = pod.spec.runtime_class_name
            if name and name not in classes and not pod.terminated:
                users[name].append(pod)
        for name, pods in sorted(users.items()):
            evidence = [field(p, f"{p.namespace}/{p.name} runtimeClassName: {name}", "spec",
                              "runtimeClassName") for p in pods[:3]]
            evidence += [event_evidence(e) for p in pods[:3]
                         for e in events_matching(ctx.facts.pod_events(p), self.id)][:3]
            yield self.finding(
                f"class/{name}",
                f"{len(pods)} pod(s) name runtimeClassName '{name}', which no RuntimeClass "
                f"defines ({names(f'{p.namespace}/{p.name}' for p in pods)}).",
                objects=[ObjectRef(kind="Pod", namespace=p.namespace, name=p.name)
                         for p in pods[:10]],
                evidence=evidence, remediation=_RUNTIME_CLASSES)

    def _missing_handlers(self, ctx: Context,
                          classes: dict[str, RuntimeClass]) -> Iterable[Finding]:
        loaded = {n: found for n in ctx.facts.gpu_nodes
                  if (found := _loaded_handlers(ctx, n)) is not None}
        judged = list(loaded)
        if not judged:
            return
        for name, rc in sorted(classes.items()):
            handler = rc.handler
            if handler == NVIDIA_HANDLER:
                continue  # RT001 (containerd) and RT010 (CRI-O) judge it node by node
            lacking = [n for n in judged if handler not in loaded[n][0]]
            if len(lacking) < len(judged):
                continue
            links = sorted({link for n in lacking for link in _cause_link(ctx, n)}
                           | {refs.OP003(n) for n in lacking if _not_gpu_node(ctx, n)})
            yield self.finding(
                f"handler/{handler}",
                f"RuntimeClass {name} uses handler '{handler}', but no GPU node's loaded "
                f"{_runtime_word(ctx, lacking)} configuration defines it ({names(lacking)}); "
                "pods using it cannot start anywhere.",
                nodes=lacking, objects=[ObjectRef(kind="RuntimeClass", name=name)]
                + [node_ref(n) for n in lacking[:10]],
                evidence=[field(rc, f"RuntimeClass {name} handler: {handler}", "handler")]
                + [Evidence(path=loaded[n][1], excerpt=f"(no runtimes.{handler} table)")
                   for n in lacking[:2]],
                caused_by=links, remediation=_RUNTIME_CLASSES)


_RUNTIME_CLASSES = sh.lines(
    "kubectl get runtimeclass -o custom-columns=NAME:.metadata.name,HANDLER:.handler",
    "# on a GPU node, the runtimes its containerd loaded:",
    "# containerd config dump | grep 'runtimes\\.'",
    "# create the missing RuntimeClass, or fix the node's container runtime configuration",
)


def _cdi_remediation(node_name: str) -> str:
    node = sh.node(node_name)
    return sh.lines(
        sh.node_shell(node),
        "ls -l /var/run/cdi /etc/cdi",
        "nvidia-smi --query-gpu=driver_version --format=csv,noheader",
        "# the toolkit pod on this node writes the management spec: is it running? After a",
        "# driver change, regenerate a host spec:",
        "# nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml",
    )
