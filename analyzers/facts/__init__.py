"""Facts derived once from a bundle and shared by every rule.

Rules never re-derive these: GPU nodes, per-node GPU accounting, pods indexed by
node, by namespace and by (namespace, name), the operator's pods, operand pods per node
and component, the active ClusterPolicy, events by the object they are about and the
signatures their messages match, and each node's loaded runtime handlers. A bundle of a
large cluster holds tens of thousands of pods and hundreds of thousands of events, so
each index is built in one pass and rules look objects up instead of walking the lists.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from functools import cached_property

from analyzers.facts import (
    distro,
    driverkernel,
    driverstep,
    fabric,
    first_error,
    gate,
    gpu,
    hostmodules,
    inventory,
    mig,
    oomkill,
    operand_images,
    operands,
    operator_presence,
    operator_version,
    podlogs,
    preconditions,
    quotas,
    refusals,
    runtimes,
    scheduling,
    sharing,
    smi,
    stages,
    toolkit_env,
    usage,
)
from analyzers.facts.kernel_events import NodeKernel, by_node
from analyzers.facts.node import NodeFacts
from analyzers.facts.operands import OperandPod
from analyzers.knowledge import signatures
from analyzers.knowledge.signatures import SignatureMatch
from analyzers.results.models import Evidence
from bundle import Bundle, specs
from bundle.crds import Crd
from bundle.kube import (
    ClusterPolicy,
    DaemonSet,
    Event,
    HelmRevision,
    Node,
    Pod,
    RuntimeClass,
)
from bundle.lspci import PciDevice
from bundle.manifest import Manifest
from bundle.problems import Problem

ObjectKey = tuple[str, str, str]  # (kind, namespace, name)


def _listed(cris: list[preconditions.NodeCri]) -> str:
    """The nodes' CRIs, grouped: ``docker (cri-dockerd) on 4 node(s) (gpu-a: <basis>)``."""
    groups: dict[str, list[preconditions.NodeCri]] = defaultdict(list)
    for cri in cris:
        groups[cri.describe()].append(cri)
    return "; ".join(f"{what} on {len(found)} node(s) ({found[0].node}: {found[0].basis})"
                     for what, found in sorted(groups.items()))


class Facts:
    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self._runtime: dict[str, runtimes.RuntimeState] = {}
        self._smi_failures: dict[str, smi.SmiFailure | None] = {}
        self._modules: dict[str, hostmodules.Modules | None] = {}
        self._secure_boot: dict[str, tuple[bool | None, Evidence | None]] = {}
        self._foreign_gpus: dict[str, list[PciDevice]] = {}
        self._signature_events_by_object: dict[str, dict[ObjectKey, list[Event]]] = {}
        self._first_errors: dict[tuple[str, str, str | None], first_error.FirstError | None] = {}
        self._node_facts: dict[str, NodeFacts] = {}

    def node(self, name: str) -> NodeFacts:
        """Everything about the node ``name`` (``facts.node.NodeFacts``): its object, its
        files (each parsed once) and its per-node facts; one object per node and run."""
        found = self._node_facts.get(name)
        if found is None:
            found = self._node_facts[name] = NodeFacts(self, name)
        return found

    # -- the cluster files and the bundle itself, as rules reach them ---------------------

    @property
    def pods(self) -> list[Pod]:
        """Every pod of ``cluster/pods.json``, in bundle order."""
        return self.bundle.cluster.pods

    @property
    def events(self) -> list[Event]:
        """Every event of ``cluster/events.json``, in bundle order."""
        return self.bundle.cluster.events

    @property
    def runtimeclasses(self) -> list[RuntimeClass]:
        """The RuntimeClasses of ``cluster/runtimeclasses.json``."""
        return self.bundle.cluster.runtimeclasses

    @property
    def helm_releases(self) -> dict[str, list[HelmRevision]]:
        """Helm release name → its revisions by number (``cluster/helm/<release>.json``)."""
        return self.bundle.cluster.helm

    @cached_property
    def gpu_quotas(self) -> list[quotas.GpuQuota]:
        """Every ``nvidia.com/*`` key of every ResourceQuota, with its hard and used."""
        return quotas.gpu_quotas(self.bundle.cluster.resourcequotas)

    def operand_mismatches(self, version: str) -> list[operand_images.OperandMismatch]:
        """The operator namespace's operand images (every pod's, where the namespace is
        not known) that are not the versions operator ``version`` expects."""
        namespace = self.operator_namespace
        pods = (self.bundle.cluster.pods if namespace is None
                else self.pods_by_namespace.get(namespace, []))
        return operand_images.mismatches(pods, version)

    @property
    def node_objects(self) -> list[Node]:
        """Every Node of ``cluster/nodes.json``, in bundle order (``nodes`` by name)."""
        return self.bundle.cluster.nodes

    @property
    def node_names(self) -> list[str]:
        """The nodes with a ``nodes/<name>/`` folder, sorted (``node_dirs`` as a list)."""
        return self.bundle.node_names

    @property
    def daemonsets(self) -> list[DaemonSet]:
        """Every DaemonSet of ``cluster/daemonsets.json``, in bundle order."""
        return self.bundle.cluster.daemonsets

    @property
    def clusterpolicies(self) -> list[ClusterPolicy]:
        """Every ClusterPolicy of ``cluster/clusterpolicies.json`` (``cluster_policy`` is
        the one the operator follows)."""
        return self.bundle.cluster.clusterpolicies

    @property
    def crds(self) -> list[Crd] | None:
        """The GPU stack's CRDs (``cluster/crds.json``); None where not collected."""
        return self.bundle.cluster.crds

    @property
    def manifest(self) -> Manifest:
        """The bundle's ``manifest.json``: what the collector ran and what failed."""
        return self.bundle.manifest

    @property
    def problems(self) -> tuple[Problem, ...]:
        """What reading the bundle has found wrong so far (damaged, refused, unparsed)."""
        return self.bundle.problems

    def has(self, path: str) -> bool:
        """Whether the bundle holds ``path`` (a ``bundle.specs`` cluster path)."""
        return self.bundle.has(path)

    def container_log(self, namespace: str, pod: str, container: str) -> tuple[str, str] | None:
        """(path, text) of a container's current log; None where none was collected."""
        path = self.bundle.logs.get((namespace, pod, container))
        text = self.bundle.read_text(path) if path else None
        return (path, text) if path and text is not None else None

    def smi_failure(self, node: str) -> smi.SmiFailure | None:
        """How nvidia-smi failed on ``node`` (its manifest item, the words it left in
        nvidia-smi.xml), read once per run; None where it did not fail."""
        if node not in self._smi_failures:
            self._smi_failures[node] = smi.read_failure(self.bundle, node)
        return self._smi_failures[node]

    def modules(self, node: str) -> hostmodules.Modules | None:
        """The node's loaded nvidia / nouveau modules (``host/modules.txt``), read once."""
        if node not in self._modules:
            self._modules[node] = hostmodules.read_modules(self.bundle, node)
        return self._modules[node]

    def secure_boot(self, node: str) -> tuple[bool | None, Evidence | None]:
        """(enabled, evidence line) from the node's ``host/secureboot.txt``, read once."""
        if node not in self._secure_boot:
            self._secure_boot[node] = hostmodules.secure_boot(self.bundle, node)
        return self._secure_boot[node]

    def foreign_gpus(self, node: str) -> list[PciDevice]:
        """The node's NVIDIA GPUs bound to a driver other than nvidia (``lspci -k``)."""
        if node not in self._foreign_gpus:
            self._foreign_gpus[node] = hostmodules.foreign_gpus(self.node(node).lspci)
        return self._foreign_gpus[node]

    def cluster_indexes(self) -> tuple[Callable[[], object], ...]:
        """Calls that build the indexes of pods and events every analysis reads; made
        while worker processes parse the node files, they are off the rules' path."""
        return (lambda: self.pods_by_node, lambda: self.pods_by_key,
                lambda: self.pods_by_namespace, lambda: self.events_by_object,
                lambda: self._events_by_signature)

    @cached_property
    def nodes(self) -> dict[str, Node]:
        return {node.name: node for node in self.bundle.cluster.nodes}

    @cached_property
    def gpu_nodes(self) -> list[str]:
        return gpu.gpu_node_names(self.bundle)

    @cached_property
    def gpu_node_set(self) -> frozenset[str]:
        """``gpu_nodes`` for membership tests."""
        return frozenset(self.gpu_nodes)

    @cached_property
    def node_dirs(self) -> frozenset[str]:
        """``bundle.node_names`` (nodes with a ``nodes/<name>/`` directory) for membership
        tests."""
        return frozenset(self.bundle.node_names)

    @cached_property
    def pods_by_node(self) -> dict[str, list[Pod]]:
        index: dict[str, list[Pod]] = defaultdict(list)
        for pod in self.bundle.cluster.pods:
            if pod.spec.node_name:
                index[pod.spec.node_name].append(pod)
        return dict(index)

    @cached_property
    def pods_by_key(self) -> dict[tuple[str, str], Pod]:
        return {(pod.namespace, pod.name): pod for pod in self.bundle.cluster.pods}

    @cached_property
    def pods_by_namespace(self) -> dict[str, list[Pod]]:
        """Namespace → its pods, in bundle order."""
        index: dict[str, list[Pod]] = defaultdict(list)
        for pod in self.bundle.cluster.pods:
            index[pod.namespace].append(pod)
        return dict(index)

    @cached_property
    def operator_pods(self) -> list[Pod]:
        """Pods labelled ``app=gpu-operator`` (the operator itself), in bundle order."""
        return [pod for pod in self.bundle.cluster.pods
                if pod.metadata.labels.get("app") == "gpu-operator"]

    @cached_property
    def accounting(self) -> dict[str, gpu.NodeGPUs]:
        return gpu.accounting(self.bundle.cluster.nodes, self.pods_by_node)

    @cached_property
    def operator_namespace(self) -> str | None:
        return operands.operator_namespace(self.bundle.cluster.pods,
                                           self.bundle.manifest.operator_namespace)

    @cached_property
    def operator_signs(self) -> list[str]:
        """What says the GPU Operator is installed or meant to run (empty: a cluster that
        runs GPUs without it, e.g. a standalone device plugin)."""
        image = operator_version.operator_image(self.bundle.cluster.deployments, (),
                                                self.operator_namespace)
        owner = image.owner if image is not None else None
        return operator_presence.signs(
            self.bundle, self.operator_pods, self.operands,
            f"{owner.metadata.namespace}/{owner.metadata.name}" if owner is not None else None)

    @cached_property
    def kubernetes_version(self) -> str | None:
        """The API server's version: the manifest's, else ``cluster/version.json``'s
        ``serverVersion.gitVersion`` (when it is text)."""
        if self.bundle.manifest.cluster.server_version:
            return self.bundle.manifest.cluster.server_version
        server = self.bundle.cluster.version.get("serverVersion")
        version = server.get("gitVersion") if isinstance(server, dict) else None
        return version if isinstance(version, str) and version else None

    @cached_property
    def operator_version(self) -> operator_version.OperatorVersion:
        """The operator's image and Helm chart, and which of them gives its version."""
        return operator_version.OperatorVersion(
            operator_version.operator_image(self.bundle.cluster.deployments, self.operator_pods,
                                            self.operator_namespace),
            operator_version.operator_chart(self.bundle.cluster.helm))

    @property
    def operator_expected(self) -> bool:
        return bool(self.operator_signs)

    @cached_property
    def operands(self) -> dict[str, dict[str, operands.OperandPod]]:
        return operands.operands_by_node(self.bundle.cluster.pods, self.operator_namespace)

    @cached_property
    def cluster_policy(self) -> ClusterPolicy | None:
        """The policy the operator follows: not ``ignored``, the oldest if several."""
        policies = [p for p in self.bundle.cluster.clusterpolicies
                    if (p.status.state or "") != "ignored"]
        policies.sort(key=lambda p: (p.metadata.creation_timestamp or "", p.metadata.name))
        return policies[0] if policies else None

    @cached_property
    def events_by_object(self) -> dict[ObjectKey, list[Event]]:
        index: dict[ObjectKey, list[Event]] = defaultdict(list)
        for event in self.bundle.cluster.events:
            ref = event.involved_object
            index[(ref.kind or "", ref.namespace or "", ref.name or "")].append(event)
        return dict(index)

    def pod_events(self, pod: Pod) -> list[Event]:
        return self.events_by_object.get(("Pod", pod.namespace, pod.name), [])

    @cached_property
    def _event_signatures(self) -> dict[str, tuple[SignatureMatch, ...]]:
        """Event message → the signatures it matches, for the messages that match any.

        Several rules ask this of every event; the messages are matched once here, and
        a message repeated across events (a scheduler's "0/N nodes are available") once.
        """
        found: dict[str, tuple[SignatureMatch, ...]] = {}
        seen: set[str] = set()
        for event in self.bundle.cluster.events:
            message = event.message
            if not message or message in seen:
                continue
            seen.add(message)
            hits = signatures.match(message, "event")
            if hits:
                found[message] = tuple(hits)
        return found

    def event_signatures(self, event: Event) -> tuple[SignatureMatch, ...]:
        """What ``signatures.match(event.message, "event")`` gives, for an event of this
        bundle, without matching its message again."""
        return self._event_signatures.get(event.message or "", ())

    @cached_property
    def _events_by_signature(self) -> dict[str, list[Event]]:
        """Signature id → the events whose message matches it, in bundle order: a rule
        that looks for one signature reads its few events instead of walking them all."""
        index: dict[str, list[Event]] = defaultdict(list)
        matched = self._event_signatures
        for event in self.bundle.cluster.events:
            hits = matched.get(event.message or "")
            if hits:
                for signature in {hit.signature.id for hit in hits}:
                    index[signature].append(event)
        return dict(index)

    def events_with(self, signature: str) -> list[Event]:
        """The bundle's events whose message matches ``signature`` (an id), in bundle order."""
        return self._events_by_signature.get(signature, [])

    def events_for(self, rule_id: str) -> list[Event]:
        """The bundle's events whose message matches a signature that feeds ``rule_id``,
        in bundle order."""
        wanted = {hit.signature.id for hits in self._event_signatures.values() for hit in hits
                  if rule_id in hit.signature.rules}
        if not wanted:
            return []
        if len(wanted) == 1:
            return self.events_with(wanted.pop())
        return [event for event in self.bundle.cluster.events
                if wanted.intersection(h.signature.id for h in self.event_signatures(event))]

    def pod_events_with(self, pod: Pod, signature: str) -> list[Event]:
        """The events about ``pod`` whose message matches ``signature``, in bundle order."""
        by_object = self._signature_events_by_object.get(signature)
        if by_object is None:
            by_object = defaultdict(list)
            for event in self.events_with(signature):
                ref = event.involved_object
                by_object[(ref.kind or "", ref.namespace or "", ref.name or "")].append(event)
            self._signature_events_by_object[signature] = by_object
        return by_object.get(("Pod", pod.namespace, pod.name), [])

    @cached_property
    def _detected_runtimes(self) -> dict[str, distro.NodeRuntime]:
        names = sorted(set(self.nodes) | self.node_dirs)
        return {name: distro.detect(self.bundle.node(name) if name in self.node_dirs else None,
                                    self.nodes.get(name), name) for name in names}

    @cached_property
    def node_cris(self) -> dict[str, preconditions.NodeCri]:
        """Per node: the CRI its kubelet talks to (kubelet flags, nodeInfo, runtime.json,
        dockershim's events), see ``facts.preconditions``."""
        refusals: dict[str, list[Event]] = defaultdict(list)
        for event in self.events_with("sandbox-runtimehandler-not-supported"):
            ref = event.involved_object
            pod = self.pods_by_key.get((ref.namespace or "", ref.name or ""))
            where = operands.node_of(pod) if pod is not None else None
            if where:
                refusals[where].append(event)
        return {name: preconditions.node_cri(
            name, self.bundle.node(name) if name in self.node_dirs else None,
            self.nodes.get(name), detected, refusals.get(name, ()))
            for name, detected in self._detected_runtimes.items()}

    def node_cri(self, node: str) -> preconditions.NodeCri:
        found = self.node_cris.get(node)
        return found if found is not None else preconditions.NodeCri(
            node, None, None, "no Node object and no node files")

    @cached_property
    def node_runtimes(self) -> dict[str, distro.NodeRuntime]:
        """Per node (with a Node object or a node directory): its container runtime and
        Kubernetes distribution, from ``runtime.json`` or else the Node object; the
        runtime is the CRI the kubelet talks to where that is known (a Docker node's
        host runs containerd too, under dockerd, which is not its CRI)."""
        found = {}
        for name, detected in self._detected_runtimes.items():
            cri = self.node_cris[name].cri
            found[name] = detected if cri is None or cri == detected.runtime else \
                replace(detected, runtime=cri)
        return found

    @cached_property
    def components(self) -> dict[str, preconditions.Component]:
        """Per GPU-stack component: run by the operator, standalone, or absent."""
        return preconditions.components(self.bundle.cluster.pods, self.operands,
                                        self.operator_namespace)

    def oom_kills(self, node: str) -> list[oomkill.OomKill]:
        """The memory-cgroup OOM kills the node's kernel log records (``facts.oomkill``)."""
        return oomkill.kills(self.bundle, node)

    @cached_property
    def inventory(self) -> inventory.Inventory:
        """Every workload of the GPU stack, however installed, with what it is for and
        whether the operator manages it (see ``facts.inventory``)."""
        cluster = self.bundle.cluster
        return inventory.build(cluster.daemonsets, cluster.deployments, cluster.pods,
                               self.operator_namespace)

    @cached_property
    def device_plugins(self) -> dict[str, OperandPod]:
        """Per node: the device plugin pod serving it — the operator's operand, else a
        standalone plugin's pod (static manifest, Helm chart, a cloud's managed plugin)."""
        found: dict[str, OperandPod] = {}
        for pod in self.components["device-plugin"].pods:
            where = operands.node_of(pod)
            if where:
                candidate = OperandPod("device-plugin", pod, operands.pod_state(pod))
                current = found.get(where)
                if current is None or (current.healthy and not candidate.healthy
                                       and not pod.terminated):
                    found[where] = candidate
        for name, by_component in self.operands.items():
            if "device-plugin" in by_component:
                found[name] = by_component["device-plugin"]
        return found

    @cached_property
    def refused_daemonsets(self) -> dict[str, refusals.CreateRefusal]:
        """``namespace/name`` → why a DaemonSet cannot create its pods (FailedCreate with
        desired above current), see ``facts.refusals``."""
        return refusals.refused_daemonsets(self.bundle.cluster.daemonsets,
                                           self.events_by_object)

    def unmet(self, need: preconditions.Need) -> str | None:
        """Why ``need`` does not hold in this bundle (the rule that needs it is skipped
        with that reason), or None when it holds or cannot be ruled out."""
        if need is preconditions.Need.OPERATOR:
            return None if self.operator_expected else operator_presence.STANDALONE
        names = self.gpu_nodes or sorted(self.nodes)
        cris = [self.node_cri(name) for name in names]
        if not cris:
            return None
        if need is preconditions.Need.CONTAINERD:
            if any(c.containerd_possible for c in cris):
                return None
            return "no GPU node runs containerd as its CRI: " + _listed(cris)
        wanted = distro.CRIO if need is preconditions.Need.CRIO else distro.DOCKER
        if any(c.cri == wanted for c in cris):
            return None
        return f"no node is known to run {wanted} as its CRI: " + _listed(cris)

    @cached_property
    def _dump_commands(self) -> dict[str, object]:
        """Manifest item path → command, for the nodes' containerd config dumps."""
        return {item.path: item.command for item in self.bundle.manifest.items
                if item.path.endswith("/containerd/config-dump.toml")}

    def node_runtime(self, node: str) -> distro.NodeRuntime:
        found = self.node_runtimes.get(node)
        return found if found is not None else distro.detect(None, None, node)

    def runtime(self, node: str) -> runtimes.RuntimeState:
        state = self._runtime.get(node)
        if state is None:
            state = runtimes.runtime_state(
                self.bundle.node(node), self.node_runtime(node),
                self._dump_commands.get(specs.node_file(node, specs.CONTAINERD_DUMP)))
            self._runtime[node] = state
        return state

    def toolkit_enabled(self) -> bool:
        """``spec.toolkit.enabled`` of the active policy; the operator's default is true."""
        policy = self.cluster_policy
        enabled = policy.component_enabled("toolkit") if policy is not None else None
        return True if enabled is None else enabled

    def runtime_cause(self, node: str) -> runtimes.Cause:
        toolkit = self.operands.get(node, {}).get("toolkit")
        found = self.runtime_gate.get(node, gate.NodeGate())
        return runtimes.missing_cause(
            self.runtime(node),
            toolkit_enabled=self.toolkit_enabled(),
            toolkit_running=toolkit is not None and toolkit.healthy,
            misdirected=found.misdirection is not None,
            template_broken=found.template is not None,
        )

    @cached_property
    def toolkit_settings(self) -> dict[str, toolkit_env.Setting]:
        """The toolkit's env values (host paths) from the ClusterPolicy and Helm values,
        and from the toolkit pod's hostPath volumes for path variables neither sets."""
        pods = [self.operands[n]["toolkit"].pod for n in sorted(self.operands)
                if "toolkit" in self.operands[n]]
        return toolkit_env.settings(self.cluster_policy, self.bundle.cluster.helm,
                                    pods[0] if pods else None)

    def toolkit_log_hits(self, node: str, signature_id: str) -> tuple[gate.LogHit, ...]:
        """Lines of the toolkit pod on ``node`` that match the signature ``signature_id``."""
        toolkit = self.operands.get(node, {}).get("toolkit")
        if toolkit is None:
            return ()
        return tuple((log, hit) for log in self.pod_logs.of(toolkit.pod)
                     for hit in log.matches() if hit.signature.id == signature_id)

    @cached_property
    def runtime_gate(self) -> dict[str, gate.NodeGate]:
        """Per GPU node: the toolkit aimed at the wrong file or socket (RT008), a
        regenerated configuration that lost the runtime (RT009), CRI-O's handlers (RT010)."""
        target = toolkit_env.target(self.toolkit_settings)
        runtime_setting = self.toolkit_settings.get("RUNTIME")
        enabled = self.toolkit_enabled()
        result = {}
        for name in self.gpu_nodes:
            where = self.node_runtime(name)
            has_dir = name in self.node_dirs
            crio = gate.crio_state(self.bundle.node(name)) \
                if has_dir and gate.is_crio(where) else None
            misdirected = template = None
            if enabled:
                misdirected = gate.misdirection(
                    where, target, runtime_setting.value if runtime_setting else None,
                    self.toolkit_log_hits(name, "toolkit-containerd-not-on-path"),
                    self.runtime(name).has_nvidia if has_dir else None)
            if enabled and has_dir and where.containerd:
                template = gate.template_loss(
                    where, self.bundle.node(name), target,
                    self.toolkit_log_hits(name, "toolkit-template-parsed-as-toml"),
                    self.runtime(name).has_nvidia)
            result[name] = gate.NodeGate(misdirected, template, crio)
        return result

    @cached_property
    def kernel_events(self) -> dict[str, NodeKernel]:
        """Per node: Xid events and GPU kernel signals (dmesg + journal kernel entries,
        deduplicated) and the node's GPUs by PCI address (see ``facts.kernel_events``)."""
        return by_node(self.bundle)

    # -- the number gate (SC001-SC006, CFG003, DRV007) -----------------------------------

    @cached_property
    def pending_gpu_pods(self) -> list[Pod]:
        """Pods not yet bound to a node that ask for at least one ``nvidia.com/*`` resource."""
        return [p for p in self.bundle.cluster.pods if scheduling.is_pending_gpu_pod(p)]

    @cached_property
    def gate_verdicts(self) -> dict[tuple[str, str], scheduling.PodVerdict]:
        """(namespace, name) of each pending GPU pod → the per-node arithmetic and branch."""
        found = scheduling.verdicts(self.pending_gpu_pods, self.bundle.cluster.nodes,
                                    self.accounting, self.gpu_nodes)
        return {(v.pod.namespace, v.pod.name): v for v in found}

    @cached_property
    def gpu_sharing(self) -> sharing.SharingSetup:
        """The device-plugin sharing config the ClusterPolicy names, read key by key."""
        return sharing.setup(self.cluster_policy, self.bundle.cluster.configmaps,
                             self.operator_namespace)

    @cached_property
    def idle_gpus(self) -> dict[str, list[usage.IdleGPU]]:
        """Per node: GPUs at ~0 % utilisation holding framebuffer while pods hold GPUs."""
        return usage.idle_gpus(self.bundle, self.gpu_nodes, self.accounting)

    # -- the operator and its operands (OP001-OP010) ---------------------------------------

    @cached_property
    def pod_logs(self) -> podlogs.PodLogs:
        """Container logs per pod in run order (init containers first), read once."""
        return podlogs.PodLogs(self.bundle)

    def first_error(self, pod: Pod, container: str | None = None) -> first_error.FirstError | None:
        """The first error line of ``pod``'s logs (only ``container``'s when given): the
        previous instance's log before the current one, harmless wordings skipped (see
        ``facts.first_error``); read once per run and pod."""
        key = (pod.namespace, pod.name, container)
        if key not in self._first_errors:
            self._first_errors[key] = first_error.first_error(self.pod_logs, pod, container)
        return self._first_errors[key]

    @cached_property
    def operand_stages(self) -> dict[str, stages.NodeStages]:
        """Per GPU node: failing operand pods and the stage (driver → toolkit → cuda →
        plugin → other operands) each is stuck at; ``.first`` is the first failing one."""
        return {name: stages.node_stages(name, self.operands.get(name, {}), self.pod_events)
                for name in self.gpu_nodes}

    @cached_property
    def nvlink_fabric(self) -> dict[str, fabric.FabricState]:
        """Per GPU node: NVLink fabric / Fabric Manager evidence (CUDA 'system not yet
        initialized', nvidia-smi fabric state, FM journal and driver-container lines)."""
        result = {}
        for name in self.gpu_nodes:
            pods = {(p.namespace, p.name): p for p in self.pods_by_node.get(name, [])}
            for operand in self.operands.get(name, {}).values():
                pods[(operand.pod.namespace, operand.pod.name)] = operand.pod
            result[name] = fabric.fabric_state(self.bundle.node(name), self.pod_logs,
                                               pods.values())
        return result

    @cached_property
    def driver_precompiled(self) -> bool:
        """``spec.driver.usePrecompiled`` of the active policy: true (or the text "true"),
        the operator runs signed precompiled driver images instead of building on the node."""
        policy = self.cluster_policy
        driver = policy.spec.get("driver") if policy is not None else None
        return isinstance(driver, dict) and driver.get("usePrecompiled") in (True, "true")

    @cached_property
    def driver_kernel(self) -> dict[str, driverkernel.DriverKernel]:
        """Per GPU node running an operator driver pod: its image against the node's
        kernel, image pull failures and driver build errors."""
        precompiled = self.driver_precompiled
        result = {}
        for name in self.gpu_nodes:
            operand = self.operands.get(name, {}).get("driver")
            if operand is None:
                continue
            result[name] = driverkernel.driver_kernel(
                self.bundle.node(name), self.nodes.get(name), operand.pod,
                self.pod_events(operand.pod), self.pod_logs, precompiled)
        return result

    @cached_property
    def driver_steps(self) -> dict[str, driverstep.DriverStep]:
        """Per GPU node whose operator driver pod is failing: the first build or install
        step its driver container's log shows failing, and of what kind."""
        return driverstep.driver_steps(self.gpu_nodes, self.operands, self.first_error)

    @cached_property
    def mig_configs(self) -> mig.MigConfigs | None:
        """The mig-parted ConfigMap the MIG manager applies (None when not collected)."""
        return mig.mig_configs(self.bundle.cluster.configmaps, self.cluster_policy,
                               self.operator_namespace)
