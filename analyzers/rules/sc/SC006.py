"""SC006: Shared-GPU misuse: more than one slot of a time-sliced GPU, or a stale config."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.evidence import event_evidence
from analyzers.facts.evidence import field as obj_field
from analyzers.facts.gpu import container_gpus
from analyzers.facts.sharing import SharingConfig, configmap_changed, pod_started
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster
from analyzers.rules.common import EVENT_CAP, names
from analyzers.rules.sc._common import (
    EXAMPLE_CAP,
    WorkloadGroup,
    by_workload,
    containers_of,
    pod_key,
    pod_ref,
    status_message_matches,
)
from analyzers.rules.sc._sharing import _pod_configs
from bundle import specs
from bundle.evidence import join_pointer
from bundle.kube import Pod


class SharedGpuMisuse(Rule):
    """Shared-GPU misuse: more than one slot of a time-sliced GPU, or a stale config.

    Reads the device-plugin config the ClusterPolicy names
    (``devicePlugin.config.name``; per node the key from the
    ``nvidia.com/device-plugin.config`` label, else ``devicePlugin.config.default``).
    Flags containers asking for more than 1 of a shared resource when
    ``failRequestsGreaterThanOne`` is on (always on for MPS), pods rejected with
    ``maximum request size for shared resources is 1``, and a config ConfigMap changed
    after the device plugin pods started (the operator does not watch it).

    Why it matters:
    Asking for 2 slots of a time-sliced GPU does not give two GPUs' worth of anything:
    the slots share one device's memory and compute. With
    ``failRequestsGreaterThanOne`` the plugin refuses such pods at admission and they
    are never retried. A config edited after the plugin started is not in effect.

    Remediation:
    Request 1 slot (or a dedicated GPU), then delete the failed pods. After editing the
    sharing ConfigMap, restart the device plugin pods one node at a time.
    """

    id = "SC006"
    slug = "shared-gpu-misuse"
    subject = refs.WORKLOAD_OR_CONFIGMAP
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (
        cluster(specs.PODS),
        cluster(specs.CONFIGMAPS, optional=True),
        cluster(specs.CLUSTERPOLICIES, optional=True),
        cluster(specs.EVENTS, optional=True),
    )
    tags = ("sharing",)

    def check(self, ctx: Context) -> Iterable[Finding]:
        # Without a config that refuses requests above 1, no request can be misuse: the
        # containers of every pod need not be read.
        refusing = any(c.fail_requests_greater_than_one
                       for c in ctx.facts.gpu_sharing.configs.values())
        found = ((pod, list(self._misuse(ctx, pod, refusing))) for pod in ctx.facts.pods)
        for subject, group in by_workload(found):
            yield self._request_finding(subject, group)
        stale = self._stale_config(ctx)
        if stale is not None:
            yield stale

    def _misuse(self, ctx: Context, pod: Pod, refusing: bool) -> Iterator[tuple[str, Evidence]]:
        facts = ctx.facts
        rejected = [m for m in status_message_matches(pod, "SC006")
                    if m.signature.id == "dp-shared-request-too-large"]
        events = facts.pod_events_with(pod, "dp-shared-request-too-large")
        if pod.terminated and not rejected and not events:
            return
        configs: list[SharingConfig] | None = None  # only read for a request above 1
        for section, index, container in containers_of(pod) if refusing else ():
            for resource, amount in sorted(container_gpus(container).items()):
                if amount <= 1:
                    continue
                if configs is None:
                    configs = _pod_configs(facts, pod)
                for config in configs:
                    shared = config.shared(resource)
                    if shared is None or not config.fail_requests_greater_than_one:
                        continue
                    where = "limits" if resource in container.resources.limits else "requests"
                    yield (f"container {container.name} asks for {amount} {resource}, a "
                           f"{config.strategy} resource with {shared.replicas} replicas per "
                           f"GPU and failRequestsGreaterThanOne on (config key "
                           f"'{config.key}')",
                           obj_field(pod, f"{pod_key(pod)} container {container.name} {where} "
                                          f"{resource}: {amount}",
                                     "spec", section, index, "resources", where, resource))
                    break
        for match in rejected:
            yield ("the device plugin rejected it: maximum request size for shared "
                   "resources is 1",
                   obj_field(pod, f"{pod_key(pod)}: {match.text}", "status", "message"))
        for event in events[:1]:
            yield ("the device plugin rejected it: maximum request size for shared "
                   "resources is 1", event_evidence(event))

    def _request_finding(self, subject: str,
                         group: WorkloadGroup[tuple[str, Evidence]]) -> Finding:
        pods = sorted(group.pods, key=pod_key)
        lines = list(dict.fromkeys(line for line, _ in group.found))
        summary = (f"{len(pods)} pod(s) of {subject} ask for more than one slot of a shared "
                   f"GPU: {'; '.join(lines)}. Slots of a time-sliced or MPS GPU share "
                   "one device; with failRequestsGreaterThanOne the plugin refuses the "
                   f"allocation and the pod is not retried. Pods: "
                   f"{names((pod_key(p) for p in pods), EXAMPLE_CAP)}.")
        ns = sh.namespace(pods[0].namespace)
        remediation = sh.lines(
            "# lower the request to 1 slot (or request a dedicated GPU), then delete the "
            "failed pods:",
            sh.cmd("kubectl", "get", "pods", "-n", ns, "--field-selector=status.phase=Failed"),
            sh.cmd("kubectl", "delete", "pod", sh.pod(pods[0].name), "-n", ns))
        return self.finding(subject, summary, nodes=sorted(group.nodes),
                            objects=[pod_ref(p) for p in pods[:10]],
                            evidence=[item for _, item in group.found[:4]],
                            remediation=remediation)

    def _stale_config(self, ctx: Context) -> Finding | None:
        facts = ctx.facts
        configmap = facts.gpu_sharing.configmap
        if configmap is None:
            return None
        changed = configmap_changed(configmap)
        if changed is None:
            return None
        when, where = changed
        stale: list[tuple[str, Pod, str]] = []
        for node_name, operand in sorted(facts.operands.items()):
            plugin = operand.get("device-plugin")
            if plugin is None:
                continue
            started = pod_started(plugin.pod, prefer="device-plugin")
            if started is not None and started < when:
                stale.append((node_name, plugin.pod, started.isoformat()))
        if not stale:
            return None
        namespace = configmap.metadata.namespace or facts.operator_namespace or "gpu-operator"
        subject = refs.WORKLOAD_OR_CONFIGMAP.of(namespace, configmap.metadata.name)
        nodes = [n for n, _, _ in stale]
        pointer = join_pointer(configmap.source_pointer, "metadata", *where.split("/"))
        evidence = [Evidence(path=configmap.source_path, pointer=pointer,
                             excerpt=f"ConfigMap {subject} last changed {when.isoformat()}")]
        for node_name, plugin_pod, began in stale[:EVENT_CAP]:
            evidence.append(obj_field(plugin_pod, f"{pod_key(plugin_pod)} on {node_name} "
                                                  f"started {began}",
                                      "status", "containerStatuses"))
        summary = (f"The device-plugin config ConfigMap {subject} changed at "
                   f"{when.isoformat()}, after the device plugin started on {names(nodes)}. "
                   "The operator does not watch this ConfigMap, so those plugins still run "
                   "the old sharing config until they restart.")
        ns = sh.namespace(namespace)
        remediation = sh.lines(
            sh.cmd("kubectl", "-n", ns, "get", "cm",
                   sh.name(configmap.metadata.name, "ConfigMap name"), "-o", "yaml"),
            "# restart the plugin one node at a time and check the new slot count:",
            sh.cmd("kubectl", "-n", ns, "delete", "pod", "-l", "app=nvidia-device-plugin-daemonset",
                   "--field-selector", sh.join("spec.nodeName=", sh.node(nodes[0]))),
            sh.cmd("kubectl", "get", "node", sh.node(nodes[0]), "-o",
                   sh.raw("jsonpath='{.status.allocatable.nvidia\\.com/gpu}'")))
        return self.finding(subject, summary, severity=Severity.LOW, nodes=nodes,
                            objects=[ObjectRef(kind="ConfigMap", namespace=namespace,
                                               name=configmap.metadata.name)],
                            evidence=evidence, remediation=remediation)
