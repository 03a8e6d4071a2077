"""OP008: Device plugin not registered or not healthy on a GPU node."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.distro import CRIO, DOCKER
from analyzers.facts.evidence import field as object_field
from analyzers.facts.kernel_events import gpu_address
from analyzers.facts.operands import OperandPod
from analyzers.facts.podlogs import ContainerLog
from analyzers.facts.stages import Stage
from analyzers.refs import Link
from analyzers.results.models import Confidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import KERNEL_LINES, LOGS, names, node_ref
from analyzers.rules.op._common import (
    blocked_evidence,
    capped,
    events_evidence,
    logs_cmd,
    namespace,
    on_node,
    operand_evidence,
)
from analyzers.rules.op._components import (
    _HANDLER_REFUSED,
    _MARKER,
    _NVML_INIT,
    _NVML_MISSING,
    _TEXT,
    _UNHEALTHY,
    _UUID,
    _XID,
    PluginPicture,
    _advertised,
    _dedupe,
    _docker_refused,
    _driver_down,
    _ev,
    _refused_plugin,
)
from analyzers.rules.op._refused import describe
from bundle import specs
from bundle.kube import Node


class DevicePluginUnhealthy(Rule):
    """Device plugin not registered or not healthy on a GPU node.

    On each GPU node the operator's device plugin must run, load NVML, register
    ``nvidia.com/gpu`` with kubelet and keep its devices healthy. The rule reports a
    missing or failing plugin pod (and what it waits for), NVML load failures in
    every version's wording (``Detected non-NVML platform``, ``Incompatible platform
    detected``, ``Incompatible strategy detected``, ``Unsupported platform
    detected``, ``Failed to initialize NVML``), registration and configuration
    errors, devices marked unhealthy (``XidCriticalError ... marking device as
    unhealthy``), and a Running plugin on a node that advertises no GPU.

    Why it matters:
    Without a registered, healthy plugin the node has no allocatable ``nvidia.com/gpu``
    and the scheduler answers ``Insufficient nvidia.com/gpu`` for every GPU pod,
    whatever the hardware.

    Remediation:
    ``kubectl -n gpu-operator get pods -o wide -l app=nvidia-device-plugin-daemonset``,
    ``kubectl -n gpu-operator logs <plugin pod> -c nvidia-device-plugin``, and compare
    with the node's capacity and allocatable. NVML load failures are runtime injection
    problems (RT001, CDI), not driver problems; unhealthy devices need the GPU fixed
    (DRV001/DRV002) and then a plugin restart.
    """

    id = "OP008"
    slug = "device-plugin-unhealthy"
    severity = Severity.HIGH
    confidence = Confidence.CONFIRMED
    inputs = (cluster(specs.PODS), cluster(specs.NODES, optional=True), LOGS,
              cluster(specs.EVENTS, optional=True), cluster(specs.CLUSTERPOLICIES, optional=True),
              node(specs.NVIDIA_SMI, optional=True), *KERNEL_LINES,
              cluster(specs.DAEMONSETS, optional=True))
    tags = ("operator", "device-plugin")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        policy = facts.cluster_policy
        disabled = policy is not None and policy.component_enabled("devicePlugin") is False
        for name in facts.gpu_nodes:
            obj = facts.nodes.get(name)
            plugin = facts.device_plugins.get(name)
            if plugin is None and obj is not None and disabled and policy is not None:
                # Disabled on purpose is fine until a pod needs what nobody offers.
                if facts.pending_gpu_pods and not _advertised(obj)[0]:
                    picture = PluginPicture()
                    picture.reasons.append(
                        "the ClusterPolicy disables the device plugin (devicePlugin.enabled="
                        "false) and no other plugin advertises GPUs on the node, so kubelet "
                        "offers no nvidia.com/gpu there")
                    picture.evidence.append(object_field(
                        policy, "spec.devicePlugin.enabled: false", "spec", "devicePlugin",
                        "enabled"))
                    yield self._finding(ctx, name, obj, None, picture, _advertised(obj)[1])
                continue
            if plugin is None and obj is None:
                continue
            if obj is not None and (
                    obj.labels.get("nvidia.com/gpu.deploy.device-plugin") == "false"
                    or obj.labels.get("nvidia.com/gpu.deploy.operands") == "false"
                    or obj.labels.get("nvidia.com/gpu.workload.config",
                                      "container") != "container"):
                continue
            advertised, capacity = _advertised(obj)
            picture = self._picture(ctx, name, plugin, advertised)
            if picture.reasons:
                yield self._finding(ctx, name, obj, plugin, picture, capacity)

    def _picture(self, ctx: Context, name: str, plugin: OperandPod | None,
                 advertised: bool) -> PluginPicture:
        picture = PluginPicture()
        if plugin is None:
            if not advertised:
                refused = _refused_plugin(ctx)
                if refused is not None:
                    # the pods were never created: the refusal, not the node's labels
                    picture.reasons.append(f"no device plugin pod runs on the node: "
                                           f"{describe(refused)} (see OP017)")
                    picture.causes.append(refs.link("OP017", refused.key))
                else:
                    picture.reasons.append("no device plugin pod runs on the node")
                    picture.causes.append(refs.link("OP002", name))
            return picture
        stages = ctx.facts.operand_stages.get(name)
        blocked = next((b for b in stages.blocked if b.operand is plugin), None) \
            if stages is not None else None
        if blocked is not None:
            picture.evidence.append(blocked_evidence(blocked))
            if blocked.sandbox:
                cri = ctx.facts.node_cri(name)
                if cri.cri == DOCKER:
                    picture.reasons.append(_docker_refused(cri.describe()))
                    picture.causes.append(refs.link("RT015", name))
                elif cri.cri == CRIO:
                    picture.reasons.append("its sandbox cannot be created: CRI-O has no "
                                           "'nvidia' runtime handler (see RT010)")
                else:
                    picture.reasons.append("its sandbox cannot be created: containerd has no "
                                           "'nvidia' runtime handler (see RT001)")
                    picture.causes.append(refs.link("RT001", name))
                picture.evidence += events_evidence(blocked.sandbox, 2)
            elif blocked.no_sandbox:
                first = stages.first if stages is not None else None
                label = (first if first is not None else blocked.stage).label
                picture.reasons.append(f"it never got a pod sandbox (no container has "
                                       f"started); the node's operands stop at the {label} "
                                       "stage (see OP001)")
                picture.causes.append(refs.link("OP001", name))
            elif blocked.stage < Stage.PLUGIN:
                first = stages.first if stages is not None else None
                label = (first if first is not None else blocked.stage).label
                picture.reasons.append(f"it waits in init container {blocked.container}; the "
                                       f"node's operands stop at the {label} stage (see OP001)")
                picture.causes.append(refs.link("OP001", name))
        elif not plugin.healthy:
            handler_refused = ctx.facts.pod_events_with(plugin.pod, _HANDLER_REFUSED)
            if handler_refused:
                # a pod outside the operator's stages (a standalone plugin) refused a sandbox
                # by Docker's shim: the runtime gate on Docker is the cause
                picture.reasons.append(_docker_refused(ctx.facts.node_cri(name).describe()))
                picture.causes.append(refs.link("RT015", name))
                picture.evidence += events_evidence(handler_refused, 2)
        logs = list(ctx.facts.pod_logs.of(plugin.pod))
        if plugin.healthy:
            logs = [log for log in logs if not log.previous]
        picture.logs = logs
        self._read_logs(ctx, name, logs, picture)
        if plugin.healthy and not advertised and not picture.reasons:
            picture.reasons.append("it is Running but the node advertises no GPU resource")
        elif not plugin.healthy and not picture.reasons:
            picture.reasons.append(f"it is {plugin.state}")
            picture.evidence.insert(0, operand_evidence(plugin))
        return picture

    def _read_logs(self, ctx: Context, name: str, logs: list[ContainerLog],
                   picture: PluginPicture) -> None:
        marker: str | None = None
        seen: set[str] = set()
        unhealthy: list[tuple[ContainerLog, str]] = []
        for log in logs:
            for hit in log.matches(self.id):
                sig = hit.signature.id
                if sig == _MARKER:
                    marker = "Retreiving" if "retreiving" in hit.text.lower() else "Retrieving"
                    continue
                if sig in _UNHEALTHY:
                    if not log.previous:
                        unhealthy.append((log, hit.text))
                        picture.evidence.append(_ev(log.locate(hit)))
                    continue
                if sig not in _TEXT or hit.signature.kind != "error":
                    continue
                if sig not in seen:
                    seen.add(sig)
                    picture.reasons.append(_TEXT[sig])
                picture.evidence.append(_ev(log.locate(hit)))
        if _NVML_MISSING in seen or _NVML_INIT in seen:
            if marker is not None:
                version = "v0.14 or older" if marker == "Retreiving" else "v0.15 or newer"
                picture.reasons.append(f"the log's '{marker} plugins.' line dates the plugin "
                                       f"to {version}")
            if ctx.facts.node_cri(name).containerd_possible and \
                    ctx.facts.runtime(name).has_nvidia is False:
                picture.causes.append(refs.link("RT001", name))
        if _NVML_MISSING in seen:
            self._nvml_missing(ctx, name, picture)
        if unhealthy:
            uuids = sorted({m[0] for _, text in unhealthy if (m := _UUID.search(text))})
            listed = f" ({names(uuids, 3)})" if uuids else ""
            picture.reasons.append(f"it marked {len(uuids) or 'all'} GPU(s) unhealthy{listed}")
            picture.causes += self._gpu_links(ctx, name, [text for _, text in unhealthy])
        picture.evidence = _dedupe(picture.evidence)

    @staticmethod
    def _nvml_missing(ctx: Context, name: str, picture: PluginPicture) -> None:
        """No libnvidia-ml in the container: the runtime did not inject it — unless the
        driver itself cannot load or drive the GPU, which leaves nothing to inject."""
        down = _driver_down(ctx, name)
        if not down:
            picture.inferred = not picture.causes
            return
        ids = ", ".join(sorted(link.split(":", 1)[0] for link in down))
        index = picture.reasons.index(_TEXT[_NVML_MISSING])
        picture.reasons[index] = (
            "it cannot load NVML (libnvidia-ml.so.1): the driver on the node cannot serve "
            f"the GPU (see {ids}), so there are no driver libraries to inject")
        picture.causes += down
        picture.driver_down = True

    @staticmethod
    def _gpu_links(ctx: Context, name: str, lines: list[str]) -> list[Link]:
        """DRV001/DRV002 ids of the GPUs the plugin marked, by UUID → PCI address."""
        kernel = ctx.facts.kernel_events.get(name)
        smi = ctx.facts.node(name).nvidia_smi
        links: list[Link] = []
        for text in lines:
            uuid = _UUID.search(text)
            if uuid is None:
                continue
            pci: str | None = None
            gpu = kernel.gpu_by_uuid(uuid[0]) if kernel is not None else None
            if gpu is not None:
                pci = gpu.pci
            elif smi is not None:
                pci = next((gpu_address(g.bus_id) for g in smi.gpus
                            if g.uuid and g.uuid.lower() == uuid[0].lower()), None)
            if pci is None:
                continue
            links.append(refs.link("DRV001", name, pci))
            xid = _XID.search(text)
            if xid is not None and xid[1] == "79":
                links.append(refs.link("DRV002", name, pci))
        return links

    def _finding(self, ctx: Context, name: str, obj: Node | None, plugin: OperandPod | None,
                 picture: PluginPicture, capacity: str) -> Finding:
        ns = plugin.pod.namespace if plugin is not None else namespace(ctx)
        who = f"the device plugin {plugin.pod.name} ({plugin.state})" if plugin else \
            "the device plugin"
        summary = f"On {name}, {who}: {'; '.join(picture.reasons)}."
        if obj is not None:
            summary += f" Node: {capacity}."
        evidence = capped(picture.evidence, 6)
        if obj is not None:
            evidence.append(object_field(obj, capacity, "status", "capacity"))
        lines = [on_node(ns, name)]
        if plugin is not None:
            lines += [logs_cmd(ns, log, 60) for log in picture.logs[:3]]
        else:
            lines.append(sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "ds",
                                "nvidia-device-plugin-daemonset", "-o", "wide"))
        lines.append(sh.cmd("kubectl", "get", "node", sh.node(name), "-o",
                            sh.raw("jsonpath='{.status.capacity}{\"\\n\"}"
                                   "{.status.allocatable}{\"\\n\"}'")))
        if any("NVML" in r for r in picture.reasons) and not picture.driver_down:
            lines += ["# on the node: the driver is usually fine; check the injection:",
                      "docker info --format '{{json .Runtimes}} {{.DefaultRuntime}}'"
                      if ctx.facts.node_cri(name).cri == DOCKER else
                      "containerd config dump | grep -nE 'runtimes.nvidia|enable_cdi|"
                      "default_runtime_name'",
                      sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "pod",
                             sh.pod(plugin.pod.name) if plugin else sh.raw("<pod>"), "-o",
                             sh.raw("jsonpath='{.spec.runtimeClassName}{\"\\n\"}'"))]
        if any("unhealthy" in r for r in picture.reasons):
            lines += ["# on the node: dmesg --time-format iso | grep -iE 'NVRM: Xid' | tail",
                      sh.note("# after the GPU is repaired: kubectl -n {ns} delete pod {pod}",
                              ns=sh.namespace(ns),
                              pod=sh.pod(plugin.pod.name) if plugin else sh.raw("<plugin pod>"))]
        objects = [node_ref(name)]
        if plugin is not None:
            objects.append(ObjectRef(kind="Pod", namespace=plugin.pod.namespace,
                                     name=plugin.pod.name))
        return self.finding(name, summary, nodes=[name], objects=objects, evidence=evidence,
                            remediation=sh.lines(lines), caused_by=picture.causes,
                            confidence=Confidence.LIKELY if picture.inferred else None)
