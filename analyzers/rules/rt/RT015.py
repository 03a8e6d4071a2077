"""RT015: Docker is the node's CRI and cannot start GPU containers with the nvidia runtime."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers.facts.evidence import event_evidence
from analyzers.facts.preconditions import DOCKERSHIM, Need, NodeCri
from analyzers.results.models import Confidence, Evidence, Finding, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import node_ref
from analyzers.rules.rt._docker import (
    DAEMON_JSON,
    HANDLER_REFUSED,
    NVIDIA,
    DockerConfig,
    _gpu_pods,
    _remediation,
    read_daemon_json,
)
from bundle import specs
from bundle.kube import Event


class DockerNoNvidiaRuntime(Rule):
    """Docker is the node's CRI and cannot start GPU containers with the nvidia runtime.

    On a node whose kubelet talks to Docker (``containerRuntimeVersion: docker://``,
    dockershim before Kubernetes 1.24 or cri-dockerd after it), containerd's
    configuration is not what starts containers: Docker's ``/etc/docker/daemon.json`` is.
    The rule reports GPU pods refused with ``RuntimeHandler "nvidia" not supported``
    (dockershim, and cri-dockerd before it passed handlers on, run no RuntimeClass
    handler but their own), ``daemon.json`` without a ``runtimes.nvidia`` entry while
    GPU pods run or wait on the node, and ``nvidia`` registered but not
    ``default-runtime`` where the kubelet cannot ask for it per pod (dockershim) or
    GPU-stack pods name no RuntimeClass.

    Why it matters:
    Without the nvidia runtime Docker starts GPU containers with plain runc: the device
    plugin cannot load NVML and advertises no GPU, workloads see no driver; a pod that
    names ``runtimeClassName: nvidia`` never gets a sandbox at all. containerd's own
    rules (RT001-RT005) do not apply to such a node.

    Remediation:
    Read first on the node: ``docker info --format '{{json .Runtimes}} {{.DefaultRuntime}}'``
    and ``cat /etc/docker/daemon.json``. Then register the runtime with
    ``nvidia-ctk runtime configure --runtime=docker --set-as-default`` and restart
    Docker, one node at a time; remove ``runtimeClassName`` from pods on dockershim
    nodes (or move the node to containerd).
    """

    id = "RT015"
    slug = "docker-no-nvidia-runtime"
    severity = Severity.CRITICAL
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.NODES), node(DAEMON_JSON, optional=True),
              node(specs.KUBELET_FLAGS, optional=True), node(specs.RUNTIME_JSON, optional=True),
              cluster(specs.PODS, optional=True), cluster(specs.EVENTS, optional=True))
    needs = (Need.DOCKER,)
    tags = ("runtime", "docker")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        refused: dict[str, list[Event]] = {}
        for event in facts.events_with(HANDLER_REFUSED):
            ref = event.involved_object
            pod = facts.pods_by_key.get((ref.namespace or "", ref.name or ""))
            if pod is not None and pod.spec.node_name:
                refused.setdefault(pod.spec.node_name, []).append(event)
        for node_name in facts.gpu_nodes:
            cri = facts.node_cri(node_name)
            if cri.cri != "docker":
                continue
            config = read_daemon_json(ctx, node_name) if node_name in facts.node_dirs else \
                f"{node_name}: no node files were collected"
            found = self._judge(ctx, node_name, cri, config, refused.get(node_name, []))
            if found is not None:
                yield found
            elif isinstance(config, str):
                self.unjudged(config)

    def _judge(self, ctx: Context, node_name: str, cri: NodeCri, config: DockerConfig | str,
               refused: list[Event]) -> Finding | None:
        reasons: list[str] = []
        evidence: list[Evidence] = []
        if cri.evidence is not None:
            evidence.append(cri.evidence)
        severity = self.severity
        shim = cri.shim or "Docker's CRI shim"
        if refused:
            reasons.append(f"{len(refused)} event(s) say RuntimeHandler \"nvidia\" not "
                           f"supported: {shim} runs no RuntimeClass handler but its own, so "
                           "pods naming runtimeClassName: nvidia never get a sandbox")
            evidence += [event_evidence(e) for e in refused[:3]]
        if isinstance(config, DockerConfig):
            pods = _gpu_pods(ctx, node_name)
            if NVIDIA not in config.runtimes and pods:
                reasons.append(f"{config.path} registers no 'nvidia' runtime (runtimes: "
                               f"{', '.join(sorted(config.runtimes)) or 'none'}), while "
                               f"{len(pods)} GPU pod(s) run or wait on the node")
                evidence.append(Evidence(path=config.path, line=config.runtimes_line,
                                         excerpt="runtimes: " + (", ".join(
                                             sorted(config.runtimes)) or "(none)")))
            elif config.default != NVIDIA and pods:
                without = [p for p in pods if not p.spec.runtime_class_name]
                if cri.shim == DOCKERSHIM or without:
                    severity = Severity.HIGH if not refused else severity
                    who = (f"{len(without)} GPU pod(s) name no RuntimeClass"
                           if without else "dockershim cannot select it per pod")
                    reasons.append(f"'nvidia' is registered but default-runtime is "
                                   f"{config.default or 'runc (unset)'} and {who}, so they "
                                   "start with runc and see no driver")
                    evidence.append(Evidence(path=config.path, line=config.default_line,
                                             excerpt=f"default-runtime: "
                                                     f"{config.default or '(unset)'}"))
        if not reasons:
            return None
        summary = (f"On {node_name}, the kubelet talks to Docker ({cri.describe()}, from "
                   f"{cri.basis}): " + "; ".join(reasons) + ".")
        return self.finding(node_name, summary, severity=severity, nodes=[node_name],
                            objects=[node_ref(node_name)], evidence=evidence,
                            remediation=_remediation(node_name))
