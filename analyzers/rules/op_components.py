"""OP004, OP005, OP008: DCGM exporter, Fabric Manager and the device plugin."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzers import commands as sh
from analyzers import refs
from analyzers.facts.distro import CRIO, DOCKER
from analyzers.facts.fabric import FM_JOURNAL, FabricState
from analyzers.facts.gpu import is_gpu_resource
from analyzers.facts.operands import OperandPod
from analyzers.facts.podlogs import ContainerLog
from analyzers.facts.preconditions import Need, stack_component
from analyzers.facts.refusals import CreateRefusal
from analyzers.facts.stages import Stage
from analyzers.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.refs import Link
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import KERNEL_LINES, LOGS, names, node_ref
from analyzers.rules.common import field as object_field
from analyzers.rules.drv_driver import DriverNotUsable, SecureBootRefusedModule
from analyzers.rules.drv_support import DriverCannotDriveGpu
from analyzers.rules.op_common import (
    HOSTENGINE_ENV,
    blocked_evidence,
    capped,
    events_evidence,
    hostengine_address,
    logs_cmd,
    namespace,
    on_node,
    operand_evidence,
    quote,
)
from analyzers.rules.op_refused import describe
from bundle.evidence import Locator
from bundle.kernel import normalize_pci
from bundle.kube import Node, quantity_int

_UUID = re.compile(r"\bGPU-[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}\b")
_XID = re.compile(r"Xid=(\d{1,4})")


def _restarts(operand: OperandPod) -> int:
    status = operand.pod.status
    return sum(s.restart_count for s in status.container_statuses)


# ----------------------------------------------------------------------------- OP004


def exporter_logs(ctx: Context, exporter: OperandPod) -> tuple[ContainerLog, ...]:
    """The exporter's logs that tell its present: an earlier run's log only when it
    is failing or has restarted."""
    logs = ctx.facts.pod_logs.of(exporter.pod)
    if exporter.healthy and not _restarts(exporter):
        logs = tuple(log for log in logs if not log.previous)
    return logs


def exporter_hits(ctx: Context, exporter: OperandPod) -> list[Locator]:
    """OP004's error lines in the exporter's logs (it cannot reach or start DCGM)."""
    return [log.locate(m) for log in exporter_logs(ctx, exporter)
            for m in log.matches("OP004", errors_only=True)]


class DcgmExporterNoDcgm(Rule):
    """DCGM exporter cannot reach DCGM.

    The DCGM exporter on a GPU node crash-loops or fails to collect because it cannot
    connect to the DCGM host engine (``Error connecting to nv-hostengine``,
    ``Failed to connect to remote hostengine``, ``Host engine connection invalid``) or
    cannot start its embedded DCGM. Matched through the signature knowledge base, so
    every exporter version's wording counts. The finding shows the configured host
    engine address and the state of the ``nvidia-dcgm`` pod on the same node. When the
    same exporter cannot collect profiling metrics (OP013), that is its cause.

    Why it matters:
    GPU metrics (utilisation, memory, Xid counters) disappear from Prometheus on that
    node; alerts and capacity dashboards go blind while GPU workloads keep running.

    Remediation:
    ``kubectl -n gpu-operator get pods -o wide -l app=nvidia-dcgm`` (is the host engine
    running on that node?), ``kubectl -n gpu-operator logs <exporter pod> --previous``,
    check ``DCGM_REMOTE_HOSTENGINE_INFO`` and NetworkPolicies between the two pods.
    """

    id = "OP004"
    slug = "dcgm-exporter-no-dcgm"
    severity = Severity.MEDIUM
    confidence = Confidence.CONFIRMED
    inputs = (cluster("pods.json"), LOGS)
    needs = (Need.OPERATOR,)
    tags = ("operator", "monitoring")

    def check(self, ctx: Context) -> Iterable[Finding]:
        for name in ctx.facts.gpu_nodes:
            row = ctx.facts.operands.get(name, {})
            exporter = row.get("dcgm-exporter")
            if exporter is None:
                continue
            logs = exporter_logs(ctx, exporter)
            hits = exporter_hits(ctx, exporter)
            if hits:
                yield self._finding(ctx, name, exporter, row.get("dcgm"), hits, logs)

    def _finding(self, ctx: Context, name: str, exporter: OperandPod, dcgm: OperandPod | None,
                 hits: list[Locator], logs: tuple[ContainerLog, ...]) -> Finding:
        ns = namespace(ctx)
        pod = exporter.pod
        address = hostengine_address(pod)
        target = f" at {address}" if address else ""
        restarts = _restarts(exporter)
        summary = (f"On {name}, the DCGM exporter {pod.name} ({exporter.state}, {restarts} "
                   f"restart(s)) cannot reach DCGM{target}: {quote(hits[-1].excerpt)}.")
        if dcgm is None:
            summary += (" No nvidia-dcgm pod runs on the node: if the exporter is meant to use "
                        "a separate DCGM, it is not deployed there (dcgm.enabled).")
        elif not dcgm.healthy:
            summary += f" The nvidia-dcgm pod there ({dcgm.pod.name}) is {dcgm.state}."
        else:
            summary += (f" The nvidia-dcgm pod there ({dcgm.pod.name}) is Running: check the "
                        "address and NetworkPolicies between the two pods.")
        evidence = [operand_evidence(exporter), *capped(hits, 3)]
        if dcgm is not None:
            evidence.append(operand_evidence(dcgm))
        remediation = sh.lines(
            on_node(ns, name),
            sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "pods", "-o", "wide",
                   "-l", "app=nvidia-dcgm"),
            [logs_cmd(ns, log, 40) for log in logs[:2]],
            sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "pod", sh.pod(pod.name),
                   "-o", sh.raw("jsonpath='{.spec.containers[0].env}'"), sh.raw("|"),
                   "tr", sh.raw("',' '\\n'"), sh.raw("|"), "grep", "-i", HOSTENGINE_ENV),
            sh.cmd("kubectl", "-n", sh.namespace(ns), "get", "networkpolicy"),
        )
        objects = [node_ref(name), ObjectRef(kind="Pod", namespace=pod.namespace, name=pod.name)]
        return self.finding(name, summary, nodes=[name], objects=objects, evidence=evidence,
                            remediation=remediation)


# ----------------------------------------------------------------------------- OP005


class FabricManagerNotWorking(Rule):
    """NVSwitch node without a working Fabric Manager.

    On NVSwitch systems (HGX/DGX) the GPUs must join the NVLink fabric before CUDA can
    use them, and Fabric Manager sets that fabric up. Three sources show it is not
    done: the CUDA validator (or any CUDA workload) failing with ``system not yet
    initialized`` (CUDA error 802), nvidia-smi reporting a fabric state other than
    ``Completed`` / ``Success`` (``gpu/fabric/state``, ``gpu/fabric/status``), and
    Fabric Manager's own errors in its journal or the driver container's log (version
    mismatch, service failed, bad config, no NVSwitch found). A GPU node without node
    files leaves only the first source: the rule is then ``partial``, never ``passed``.

    Why it matters:
    ``nvidia-smi`` works, so the node looks healthy, but no CUDA program can run: the
    validator never passes ``cuda-validation`` and every operand above it stays in
    Init, so the node advertises no GPU.

    Remediation:
    On the node: ``nvidia-smi -q | grep -i -A2 Fabric`` and
    ``systemctl status nvidia-fabricmanager`` (host driver) or
    ``kubectl -n gpu-operator logs <driver pod> -c nvidia-driver-ctr | grep -i fabric``
    (driver container). Install Fabric Manager of exactly the driver's version and
    start it, one node at a time.
    """

    id = "OP005"
    slug = "fabric-manager-not-working"
    severity = Severity.CRITICAL
    confidence = Confidence.LIKELY
    inputs = (cluster("pods.json"), LOGS, node("nvidia-smi.xml", optional=True),
              node(FM_JOURNAL, optional=True))
    tags = ("operator", "nvswitch", "fabric-manager")

    def check(self, ctx: Context) -> Iterable[Finding]:
        blind = [name for name in ctx.facts.gpu_nodes if name not in ctx.facts.node_dirs]
        if blind:
            # the pod logs alone cannot show an idle fabric: no nvidia-smi, no FM journal
            self.unjudged(f"{len(blind)} GPU node(s) have no node files ({', '.join(blind[:3])}"
                          f"{', …' if len(blind) > 3 else ''}): nvidia-smi's fabric state and "
                          "the Fabric Manager journal were not collected, only pod logs read")
        for name, fabric in sorted(ctx.facts.nvlink_fabric.items()):
            if fabric.broken:
                yield self._finding(ctx, name, fabric)

    def _finding(self, ctx: Context, name: str, fabric: FabricState) -> Finding:
        ns = namespace(ctx)
        artifacts = ctx.bundle.node(name)
        driver = ctx.facts.operands.get(name, {}).get("driver")
        facts: list[str] = []
        if fabric.not_initialized:
            facts.append("CUDA fails with 'system not yet initialized' "
                         f"({fabric.not_initialized[0].path.split('/')[-1]})")
        unregistered = fabric.unregistered
        if unregistered:
            states = sorted({g.state + (f"/{g.status}" if g.status else "")
                             for g in unregistered})
            facts.append(f"nvidia-smi shows {len(unregistered)} of {len(fabric.fabric_gpus)} "
                         f"GPU(s) not registered with the fabric (state {', '.join(states)})")
        if fabric.fm_errors:
            facts.append(f"Fabric Manager reports: {quote(fabric.fm_errors[0].excerpt)}")
        if fabric.no_switch:
            facts.append("Fabric Manager found no NVSwitch to manage")
        if driver is not None and not fabric.fm_started:
            facts.append(f"the driver container ({driver.pod.name}) never logged starting "
                         "Fabric Manager")
        elif driver is None and not artifacts.has(FM_JOURNAL) and name in ctx.facts.node_dirs:
            facts.append("the host has no nvidia-fabricmanager journal (with a host driver "
                         "the admin must install and enable Fabric Manager)")
        unregistered_cuda = bool(fabric.not_initialized or unregistered)
        summary = (f"On {name} (NVSwitch system), the NVLink fabric is not set up: "
                   f"{'; '.join(facts)}.")
        if unregistered_cuda:
            summary += " No CUDA program can run on the node until Fabric Manager runs."
        evidence = capped(fabric.not_initialized, 2)
        evidence += capped([g.where for g in unregistered], 2)
        evidence += capped(fabric.fm_errors, 3) + capped(fabric.no_switch, 1)
        lines = ["# on the node, look first:",
                 "nvidia-smi -q | grep -i -A2 Fabric      # State Completed / Status Success "
                 "when healthy",
                 "ls /proc/driver/nvidia-nvswitch/devices/ 2>/dev/null | wc -l"]
        if driver is not None:
            lines.append(sh.cmd("kubectl", "-n", sh.namespace(ns), "logs",
                                sh.pod(driver.pod.name), "-c", "nvidia-driver-ctr",
                                tail=" | grep -i fabric"))
        else:
            lines += ["systemctl status nvidia-fabricmanager --no-pager",
                      "journalctl -u nvidia-fabricmanager --since -1d | tail -30",
                      "# install nvidia-fabricmanager of exactly the driver version "
                      "(nvidia-smi --query-gpu=driver_version --format=csv,noheader), hold it, "
                      "then: systemctl enable --now nvidia-fabricmanager"]
        lines += [sh.cmd("kubectl", "-n", sh.namespace(ns), "logs", "-l",
                         "app=nvidia-cuda-validator", "-c", "cuda-validation", "--tail=20"),
                  sh.note("# then let the validator retry: kubectl -n {ns} delete pod -l "
                          "app=nvidia-operator-validator --field-selector spec.nodeName={node}",
                          ns=sh.namespace(ns), node=sh.node(name))]
        return self.finding(
            name, summary, severity=self.severity if unregistered_cuda else Severity.HIGH,
            nodes=[name], objects=[node_ref(name)], evidence=evidence,
            remediation=sh.lines(lines), causes=[refs.OP001(name)],
        )


# ----------------------------------------------------------------------------- OP008

_NVML_MISSING = "dp-nvml-missing"
_NVML_INIT = "dp-nvml-init-failed"
_REGISTER = "dp-register-failed"
_NO_DEVICES = "dp-no-devices-found"
_CONFIG = "dp-config-invalid"
_UNHEALTHY = ("dp-xid-unhealthy", "dp-healthcheck-unhealthy")
_MARKER = "dp-retrieving-plugins"
_TEXT = {
    _NVML_MISSING: "it cannot load NVML (libnvidia-ml.so.1): the runtime did not inject the "
                   "driver libraries into the container",
    _NVML_INIT: "NVML failed to initialise",
    _REGISTER: "it could not start its gRPC server or register with kubelet",
    _NO_DEVICES: "it found no GPUs and waits indefinitely",
    _CONFIG: "its sharing configuration was rejected",
}


@dataclass
class PluginPicture:
    """What one node's device plugin pod and logs say."""

    reasons: list[str] = field(default_factory=list)
    # NVML missing because the driver cannot serve the GPU (not an injection problem),
    # and whether the cause named is only inferred (injection, with nothing linked).
    driver_down: bool = False
    inferred: bool = False
    evidence: list[Evidence] = field(default_factory=list)
    causes: list[Link] = field(default_factory=list)
    logs: list[ContainerLog] = field(default_factory=list)


def _advertised(obj: Node | None) -> tuple[bool, str]:
    if obj is None:
        return True, ""
    shown = []
    advertised = False
    for resource in sorted({*obj.status.capacity, *obj.status.allocatable}):
        if not is_gpu_resource(resource):
            continue
        cap = obj.status.capacity.get(resource)
        alloc = obj.status.allocatable.get(resource)
        advertised |= (quantity_int(alloc) or 0) > 0
        shown.append(f"{resource} capacity {cap or 0}, allocatable {alloc or 0}")
    return advertised, "; ".join(shown) or "no nvidia.com/* resource in capacity"


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
    inputs = (cluster("pods.json"), cluster("nodes.json", optional=True), LOGS,
              cluster("events.json", optional=True), cluster("clusterpolicies.json", optional=True),
              node("nvidia-smi.xml", optional=True), *KERNEL_LINES,
              cluster("daemonsets.json", optional=True))
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
                    picture.causes.append(refs.OP017(refused.key))
                else:
                    picture.reasons.append("no device plugin pod runs on the node")
                    picture.causes.append(refs.OP002(name))
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
                    picture.causes.append(refs.RT015(name))
                elif cri.cri == CRIO:
                    picture.reasons.append("its sandbox cannot be created: CRI-O has no "
                                           "'nvidia' runtime handler (see RT010)")
                else:
                    picture.reasons.append("its sandbox cannot be created: containerd has no "
                                           "'nvidia' runtime handler (see RT001)")
                    picture.causes.append(refs.RT001(name))
                picture.evidence += events_evidence(blocked.sandbox, 2)
            elif blocked.no_sandbox:
                first = stages.first if stages is not None else None
                label = (first if first is not None else blocked.stage).label
                picture.reasons.append(f"it never got a pod sandbox (no container has "
                                       f"started); the node's operands stop at the {label} "
                                       "stage (see OP001)")
                picture.causes.append(refs.OP001(name))
            elif blocked.stage < Stage.PLUGIN:
                first = stages.first if stages is not None else None
                label = (first if first is not None else blocked.stage).label
                picture.reasons.append(f"it waits in init container {blocked.container}; the "
                                       f"node's operands stop at the {label} stage (see OP001)")
                picture.causes.append(refs.OP001(name))
        elif not plugin.healthy:
            handler_refused = ctx.facts.pod_events_with(plugin.pod, _HANDLER_REFUSED)
            if handler_refused:
                # a pod outside the operator's stages (a standalone plugin) refused a sandbox
                # by Docker's shim: the runtime gate on Docker is the cause
                picture.reasons.append(_docker_refused(ctx.facts.node_cri(name).describe()))
                picture.causes.append(refs.RT015(name))
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
                picture.causes.append(refs.RT001(name))
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
        smi = ctx.bundle.node(name).nvidia_smi
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
                pci = next((normalize_pci(g.bus_id) for g in smi.gpus
                            if g.uuid and g.uuid.lower() == uuid[0].lower()), None)
            if pci is None:
                continue
            links.append(refs.DRV001(name, pci))
            xid = _XID.search(text)
            if xid is not None and xid[1] == "79":
                links.append(refs.DRV002(name, pci))
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


def _driver_down(ctx: Context, name: str) -> list[Link]:
    """The findings saying the node's driver cannot load or drive its GPU."""
    found = [ref(name) for rule, ref in ((SecureBootRefusedModule, refs.DRV004),
                                         (DriverNotUsable, refs.DRV003),
                                         (DriverCannotDriveGpu, refs.DRV008))
             if rule.explains(ctx, name)]
    driver = ctx.facts.driver_kernel.get(name)
    if driver is not None and driver.broken:
        found.append(refs.OP010(name))
    return found


_HANDLER_REFUSED = "sandbox-runtimehandler-not-supported"


def _docker_refused(cri: str) -> str:
    return (f"its sandbox cannot be created: the node's CRI is Docker ({cri}), which runs "
            "no 'nvidia' RuntimeClass handler (see RT015)")


def _refused_plugin(ctx: Context) -> CreateRefusal | None:
    """A device-plugin DaemonSet (the operator's or a standalone one) whose pods are
    refused at creation."""
    for _, refusal in sorted(ctx.facts.refused_daemonsets.items()):
        ds = refusal.daemonset
        if ds.metadata.name == "nvidia-device-plugin-daemonset" or \
                stack_component(ds) == "device-plugin":
            return refusal
    return None


def _ev(locator: Locator) -> Evidence:
    return Evidence(path=locator.path, line=locator.line, excerpt=locator.excerpt)


def _dedupe(items: list[Evidence]) -> list[Evidence]:
    seen: set[tuple[str, int | None, str | None]] = set()
    result = []
    for item in items:
        key = (item.path, item.line, item.pointer)
        if key not in seen:
            seen.add(key)
            result.append(item)
    return result

