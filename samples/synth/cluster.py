"""The Kubernetes objects of a synthetic cluster, produced one item at a time.

Shapes follow the committed samples (``kubectl get -o json`` after the collector's
re-serialisation: sorted keys, one object per line). Per GPU node: kube-proxy and
flannel, the GPU Operator's operands (NFD worker, device plugin, GFD, DCGM exporter,
validator, CUDA validator), eight one-GPU training pods and ``cpu_pods`` CPU pods; the
planted roles change what a node shows (stuck operands, missing GPUs, rejected pods).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import orjson

from samples.synth.plan import (
    CREATED,
    GPUS_PER_NODE,
    OPERATOR_NS,
    POLICY,
    NodePlan,
    Plan,
    Role,
    digest,
    hexid,
    iso,
    plus,
    suffix,
    uid,
)

Obj = dict[str, Any]
VERSION = "v26.7.0"
CHART = f"gpu-operator-{VERSION}"
OPERATOR_IMAGE = f"nvcr.io/nvidia/gpu-operator:{VERSION}"
PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
NFD_IMAGE = "registry.k8s.io/nfd/node-feature-discovery:v0.19.0"
DCGM_EXPORTER_IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless"
INSTALLED = plus(CREATED, -9 * 86400)        # the operator was installed nine days ago
BOOTED = plus(CREATED, -6 * 86400)           # the nodes booted six days ago (within --since)
CONTROL_PLANE = ("cp-1", "cp-2", "cp-3")
NO_RUNTIME_EVENT = ("Failed to create pod sandbox: rpc error: code = Unknown desc = failed "
                    'to get sandbox runtime: no runtime for "nvidia" is configured')
ADMISSION = ("Allocate failed due to requested number of devices unavailable for "
             "nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected")
TOLERATIONS = [
    {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/disk-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/memory-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/pid-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
]
DEFAULT_TOLERATIONS = [
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
     "tolerationSeconds": 300},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
     "tolerationSeconds": 300},
]


def dumps(obj: Obj) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def list_chunks(items: Iterator[Obj]) -> Iterator[bytes]:
    """A ``kind: List`` as the collector stores it, streamed item by item."""
    yield b'{"apiVersion":"v1","items":['
    first = True
    for item in items:
        yield (b"\n" if first else b",\n") + dumps(item)
        first = False
    yield (b"" if first else b"\n") + b'],"kind":"List","metadata":{"resourceVersion":""}}\n'


def meta(kind: str, name: str, namespace: str | None, created: dt.datetime, *,
         labels: dict[str, str] | None = None, owner: Obj | None = None,
         generate_name: str | None = None) -> Obj:
    m: Obj = {"name": name, "uid": uid(kind, namespace, name),
              "resourceVersion": str(int.from_bytes(digest("rv", kind, namespace, name)[:3],
                                                    "big")),
              "creationTimestamp": iso(created)}
    if namespace:
        m["namespace"] = namespace
    if labels:
        m["labels"] = labels
    if owner:
        m["ownerReferences"] = [owner]
    if generate_name:
        m["generateName"] = generate_name
    return m


def owner(kind: str, name: str, namespace: str | None,
          api: str = "apps/v1") -> Obj:
    return {"apiVersion": api, "blockOwnerDeletion": True, "controller": True, "kind": kind,
            "name": name, "uid": uid(kind, namespace, name)}


def container(name: str, image: str, *, args: list[str] | None = None,
              env: dict[str, str] | None = None, resources: Obj | None = None,
              privileged: bool = False) -> Obj:
    c: Obj = {"image": image, "imagePullPolicy": "IfNotPresent", "name": name,
              "resources": resources or {}, "terminationMessagePath": "/dev/termination-log",
              "terminationMessagePolicy": "File",
              "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                "name": f"kube-api-access-{suffix(5, 'vol', name, image)}",
                                "readOnly": True}]}
    if args:
        c["command"] = ["sh", "-c"]
        c["args"] = args
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if privileged:
        c["securityContext"] = {"privileged": True}
    return c


def _volume(spec_containers: list[Obj]) -> list[Obj]:
    name = spec_containers[0]["volumeMounts"][0]["name"]
    return [{"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1",
                                                 "fieldPath": "metadata.namespace"},
                                    "path": "namespace"}]}}]}}]


def pod_spec(containers: list[Obj], *, node: str | None, inits: list[Obj] | None = None,
             runtime_class: str | None = None, tolerations: list[Obj] | None = None,
             selector: dict[str, str] | None = None, pinned: bool = False,
             account: str = "default", priority_class: str | None = None) -> Obj:
    spec: Obj = {"containers": containers, "dnsPolicy": "ClusterFirst",
                 "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
                 "priority": 0, "restartPolicy": "Always", "schedulerName": "default-scheduler",
                 "securityContext": {}, "serviceAccount": account,
                 "serviceAccountName": account, "terminationGracePeriodSeconds": 30,
                 "tolerations": tolerations or DEFAULT_TOLERATIONS,
                 "volumes": _volume(containers)}
    if node:
        spec["nodeName"] = node
    if inits:
        spec["initContainers"] = inits
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    if selector:
        spec["nodeSelector"] = selector
    if priority_class:
        spec["priorityClassName"] = priority_class
        spec["priority"] = 2000001000
    if pinned and node:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    return spec


def _cid(*parts: object) -> str:
    return "containerd://" + hexid(64, "ctr", *parts)


def _image_id(image: str) -> str:
    return f"{image.rsplit(':', 1)[0]}@sha256:{hexid(64, 'image', image)}"


def _status_running(spec: Obj, started: dt.datetime, pod_uid: str, ip: str,
                    host_ip: str) -> Obj:
    def done(c: Obj) -> Obj:
        cid = _cid(pod_uid, c["name"])
        return {"containerID": cid, "image": c["image"], "imageID": _image_id(c["image"]),
                "lastState": {}, "name": c["name"], "ready": True, "restartCount": 0,
                "started": False, "state": {"terminated": {
                    "containerID": cid, "exitCode": 0, "finishedAt": iso(plus(started, 2)),
                    "reason": "Completed", "startedAt": iso(plus(started, 1))}}}

    statuses = [{"containerID": _cid(pod_uid, c["name"]), "image": c["image"],
                 "imageID": _image_id(c["image"]), "lastState": {}, "name": c["name"],
                 "ready": True, "restartCount": 0, "started": True,
                 "state": {"running": {"startedAt": iso(plus(started, 3))}}}
                for c in spec["containers"]]
    status: Obj = {
        "conditions": [_cond(t, True, plus(started, 3)) for t in
                       ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")]
                      + [_cond("PodScheduled", True, started)],
        "containerStatuses": statuses, "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "qosClass": _qos(spec),
        "startTime": iso(started)}
    if spec.get("initContainers"):
        status["initContainerStatuses"] = [done(c) for c in spec["initContainers"]]
    return status


def _status_succeeded(spec: Obj, started: dt.datetime, pod_uid: str, host_ip: str) -> Obj:
    status = _status_running(spec, started, pod_uid, host_ip, host_ip)
    for s in status["containerStatuses"]:
        s["ready"] = False
        s["started"] = False
        s["state"] = {"terminated": {"containerID": s["containerID"], "exitCode": 0,
                                     "finishedAt": iso(plus(started, 9)), "reason": "Completed",
                                     "startedAt": iso(plus(started, 4))}}
    status["phase"] = "Succeeded"
    status["conditions"][2] = _cond("Ready", False, plus(started, 9), "PodCompleted")
    status["conditions"][3] = _cond("ContainersReady", False, plus(started, 9), "PodCompleted")
    del status["podIP"], status["podIPs"]
    return status


def _status_no_sandbox(spec: Obj, started: dt.datetime, host_ip: str) -> Obj:
    def waiting(c: Obj) -> Obj:
        return {"image": c["image"], "imageID": "", "lastState": {}, "name": c["name"],
                "ready": False, "restartCount": 0, "started": False,
                "state": {"waiting": {"reason": "PodInitializing"}}}

    inits = spec.get("initContainers", [])
    names = " ".join(c["name"] for c in spec["containers"])
    conditions = [_cond("PodReadyToStartContainers", False, started)]
    if inits:
        pending = " ".join(c["name"] for c in inits)
        conditions.append(_cond("Initialized", False, started, "ContainersNotInitialized",
                                f"containers with incomplete status: [{pending}]"))
    conditions += [
        _cond("Ready", False, started, "ContainersNotReady",
              f"containers with unready status: [{names}]"),
        _cond("ContainersReady", False, started, "ContainersNotReady",
              f"containers with unready status: [{names}]"),
        _cond("PodScheduled", True, started)]
    status: Obj = {"conditions": conditions,
                   "containerStatuses": [waiting(c) for c in spec["containers"]],
                   "hostIP": host_ip, "hostIPs": [{"ip": host_ip}], "phase": "Pending",
                   "qosClass": _qos(spec), "startTime": iso(started)}
    if inits:
        status["initContainerStatuses"] = [waiting(c) for c in inits]
    return status


def _cond(kind: str, ok: bool, since: dt.datetime, reason: str = "", message: str = "") -> Obj:
    c: Obj = {"lastProbeTime": None, "lastTransitionTime": iso(since),
              "status": "True" if ok else "False", "type": kind}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def _qos(spec: Obj) -> str:
    limits = [c["resources"].get("limits", {}) for c in spec["containers"]]
    requests = [c["resources"].get("requests", {}) for c in spec["containers"]]
    if not any(limits) and not any(requests):
        return "BestEffort"
    if all(r and r == lim for r, lim in zip(requests, limits, strict=True)):
        return "Guaranteed"
    return "Burstable"


def node_ip(index: int) -> str:
    return f"10.{20 + index // 62500}.{index // 250 % 250}.{index % 250 + 2}"


def pod_ip(index: int, slot: int) -> str:
    return f"10.{128 + index // 256}.{index % 256}.{slot + 2}"


# ------------------------------------------------------------------------------ nodes

def gpu_labels(n: NodePlan) -> dict[str, str]:
    labels = {
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": n.name,
        "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "dgx-h100",
        "topology.kubernetes.io/zone": f"rack-{n.index // 32:03d}",
        "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel",
        "feature.node.kubernetes.io/kernel-version.full": "6.8.0-88-generic",
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "feature.node.kubernetes.io/pci-15b3.present": "true",
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "24.04",
        "nvidia.com/gpu.present": "true",
    }
    for d in ("driver", "gpu-feature-discovery", "container-toolkit", "device-plugin", "dcgm",
              "dcgm-exporter", "node-status-exporter", "operator-validator", "mig-manager"):
        labels[f"nvidia.com/gpu.deploy.{d}"] = "true"
    if n.has_nvidia:  # GFD labels: GFD ran on the node
        labels.update({
            "nvidia.com/cuda.driver-version.full": "570.195.03",
            "nvidia.com/cuda.runtime-version.full": "12.8",
            "nvidia.com/gfd.timestamp": str(int(BOOTED.timestamp()) + 600),
            "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0",
            "nvidia.com/gpu.count": str(GPUS_PER_NODE), "nvidia.com/gpu.family": "hopper",
            "nvidia.com/gpu.machine": "DGX-H100", "nvidia.com/gpu.memory": "81559",
            "nvidia.com/gpu.mode": "compute", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none",
            "nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "single",
            "nvidia.com/mps.capable": "false"})
    return labels


def node_obj(name: str, index: int, labels: dict[str, str], gpus: int | None,
             capacity_gpus: int | None, taints: list[Obj] | None = None) -> Obj:
    capacity = {"cpu": "224", "ephemeral-storage": "3748905960Ki", "hugepages-1Gi": "0",
                "hugepages-2Mi": "0", "memory": "2113336152Ki", "pods": "110"}
    allocatable = {**capacity, "memory": "2113233752Ki", "ephemeral-storage": "3454939988582"}
    if capacity_gpus is not None:
        capacity["nvidia.com/gpu"] = str(capacity_gpus)
        allocatable["nvidia.com/gpu"] = str(gpus)
    heartbeat = iso(plus(CREATED, -17))

    def cond(kind: str, status: str, reason: str, message: str) -> Obj:
        return {"lastHeartbeatTime": heartbeat, "lastTransitionTime": iso(plus(BOOTED, 40)),
                "message": message, "reason": reason, "status": status, "type": kind}

    spec: Obj = {"podCIDR": f"10.{128 + index // 256}.{index % 256}.0/24"}
    spec["podCIDRs"] = [spec["podCIDR"]]
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {**meta("Node", name, None, INSTALLED, labels=labels),
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach":
                                         "true"}},
        "spec": spec,
        "status": {
            "addresses": [{"address": node_ip(index), "type": "InternalIP"},
                          {"address": name, "type": "Hostname"}],
            "allocatable": allocatable, "capacity": capacity,
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory",
                     "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure",
                     "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID",
                     "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status")],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"architecture": "amd64", "bootID": uid("boot", name),
                         "containerRuntimeVersion": "containerd://1.6.20",
                         "kernelVersion": "6.8.0-88-generic", "kubeletVersion": "v1.37.1",
                         "machineID": hexid(32, "machine", name), "operatingSystem": "linux",
                         "osImage": "Ubuntu 24.04.3 LTS", "systemUUID": uid("system", name)}},
    }


def nodes(plan: Plan) -> Iterator[Obj]:
    for i, name in enumerate(CONTROL_PLANE):
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                  "node-role.kubernetes.io/control-plane": ""}
        yield node_obj(name, 60000 + i, labels, None, None, taints=[
            {"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}])
    for n in plan.nodes:
        allocatable = n.allocatable
        capacity = GPUS_PER_NODE if allocatable is not None else None
        yield node_obj(n.name, n.index, gpu_labels(n), allocatable, capacity)


# ------------------------------------------------------------------------------- pods

class PodBuilder:
    """Pods and the events they leave, for one node at a time."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.seed = plan.seed

    def _pod(self, name: str, ns: str, spec: Obj, status: Obj, created: dt.datetime,
             labels: dict[str, str], own: Obj | None, generate: str | None) -> Obj:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": meta("Pod", name, ns, created, labels=labels, owner=own,
                                 generate_name=generate),
                "spec": spec, "status": status}

    # Operand pods of the GPU Operator, per component: (name, init containers, main).
    def operand_specs(self, node: str) -> list[tuple[str, str, list[Obj], list[Obj]]]:
        def validation(component: str) -> Obj:
            return container(f"{component}-validation", OPERATOR_IMAGE,
                             args=["nvidia-validator"], env={"COMPONENT": component,
                                                             "WITH_WAIT": "true"},
                             privileged=True)

        wait = container("toolkit-validation", OPERATOR_IMAGE, privileged=True, args=[
            "until [ -f /run/nvidia/validations/toolkit-ready ]; do echo waiting for nvidia "
            "container stack to be setup; sleep 5; done"])
        return [
            ("nvidia-device-plugin-daemonset", "nvidia-device-plugin", [wait],
             [container("nvidia-device-plugin", PLUGIN_IMAGE, privileged=True,
                        args=["/bin/entrypoint.sh"],
                        env={"FAIL_ON_INIT_ERROR": "true", "DEVICE_ID_STRATEGY": "uuid",
                             "NVIDIA_VISIBLE_DEVICES": "all", "MIG_STRATEGY": "single"})]),
            ("gpu-feature-discovery", "nvidia-device-plugin", [wait],
             [container("gpu-feature-discovery", PLUGIN_IMAGE, privileged=True,
                        env={"GFD_SLEEP_INTERVAL": "60s", "MIG_STRATEGY": "single"})]),
            ("nvidia-dcgm-exporter", "nvidia-dcgm-exporter", [wait],
             [container("nvidia-dcgm-exporter", DCGM_EXPORTER_IMAGE, privileged=True,
                        env={"DCGM_EXPORTER_LISTEN": ":9400",
                             "DCGM_EXPORTER_KUBERNETES": "true"})]),
            ("nvidia-operator-validator", "nvidia-operator-validator",
             [validation(c) for c in ("driver", "toolkit", "cuda", "plugin")],
             [container("nvidia-operator-validator", OPERATOR_IMAGE, privileged=True,
                        args=["echo all validations are successful; while true; do sleep "
                              "86400; done"])]),
        ]

    def node_pods(self, n: NodePlan) -> Iterator[tuple[Obj, list[Obj]]]:
        """(pod, its events) for every pod bound to ``n``."""
        host_ip = node_ip(n.index)
        slot = 0

        def daemon(ds: str, ns: str, spec: Obj, labels: dict[str, str],
                   created: dt.datetime, status: Obj | None = None) -> Obj:
            nonlocal slot
            name = f"{ds}-{suffix(5, self.seed, ds, n.name)}"
            pod_uid = uid("Pod", ns, name)
            slot += 1
            st = status or _status_running(spec, created, pod_uid, pod_ip(n.index, slot),
                                           host_ip)
            return self._pod(name, ns, spec, st, created,
                             {**labels, "controller-revision-hash": suffix(10, ds),
                              "pod-template-generation": "1"},
                             owner("DaemonSet", ds, ns), f"{ds}-")

        boot = plus(BOOTED, 95 + n.index % 60)
        system = [
            ("kube-proxy", "kube-system", container("kube-proxy", "registry.k8s.io/kube-proxy:"
                                                    "v1.37.1", privileged=True),
             {"k8s-app": "kube-proxy"}),
            ("kube-flannel-ds", "kube-flannel",
             container("kube-flannel", "ghcr.io/flannel-io/flannel:v0.27.4", privileged=True,
                       resources={"requests": {"cpu": "100m", "memory": "50Mi"}}),
             {"app": "flannel", "tier": "node"}),
            ("gpu-operator-node-feature-discovery-worker", OPERATOR_NS,
             container("worker", NFD_IMAGE, resources={"limits": {"memory": "512Mi"},
                                                       "requests": {"cpu": "5m",
                                                                    "memory": "64Mi"}}),
             {"app.kubernetes.io/name": "node-feature-discovery", "role": "worker"}),
            ("node-exporter", "monitoring",
             container("node-exporter", "quay.io/prometheus/node-exporter:v1.10.2",
                       resources={"limits": {"cpu": "250m", "memory": "180Mi"},
                                  "requests": {"cpu": "100m", "memory": "180Mi"}}),
             {"app.kubernetes.io/name": "node-exporter"}),
            ("fluent-bit", "logging",
             container("fluent-bit", "cr.fluentbit.io/fluent/fluent-bit:4.1.1",
                       resources={"limits": {"memory": "256Mi"},
                                  "requests": {"cpu": "50m", "memory": "128Mi"}}),
             {"app.kubernetes.io/name": "fluent-bit"}),
        ]
        for ds, ns, main, labels in system:
            spec = pod_spec([main], node=n.name, pinned=True, tolerations=[
                {"operator": "Exists"}], account=ds.split("-")[0])
            pod = daemon(ds, ns, spec, labels, boot)
            yield pod, self.started_events(pod, n.name, boot)

        created = plus(INSTALLED, 300)
        stuck = not n.has_nvidia
        for ds, account, inits, mains in self.operand_specs(n.name):
            spec = pod_spec(mains, node=n.name, inits=inits, runtime_class="nvidia",
                            tolerations=TOLERATIONS, pinned=True, account=account,
                            priority_class="system-node-critical",
                            selector={f"nvidia.com/gpu.deploy.{_deploy_label(ds)}": "true"})
            labels = {"app": ds, "app.kubernetes.io/managed-by": "gpu-operator",
                      "helm.sh/chart": CHART}
            if stuck:
                pod = daemon(ds, OPERATOR_NS, spec, labels, boot,
                             _status_no_sandbox(spec, boot, host_ip))
                yield pod, [self.scheduled(pod, n.name, boot), self.no_sandbox(pod, n.name)]
            else:
                pod = daemon(ds, OPERATOR_NS, spec, labels, created if n.index % 7 else boot)
                yield pod, self.started_events(pod, n.name, boot)
        if not stuck:
            yield self.cuda_validator(n, host_ip, boot)
        gpu_pods = n.allocatable or 0
        for k in range(gpu_pods):
            slot += 1
            yield self.training_pod(n, k, host_ip, pod_ip(n.index, slot))
        for k in range(self.plan.size.cpu_pods - 2):
            slot += 1
            yield self.cpu_pod(n, k, host_ip, pod_ip(n.index, slot))
        if n.role is Role.GPU_LOST:
            for k in range(self.plan.size.rejected_per_lost_node):
                yield self.rejected_pod(n, k)

    def cuda_validator(self, n: NodePlan, host_ip: str, boot: dt.datetime) -> tuple[Obj,
                                                                                  list[Obj]]:
        name = f"nvidia-cuda-validator-{suffix(5, self.seed, 'cuda', n.name)}"
        spec = pod_spec([container("nvidia-cuda-validator", OPERATOR_IMAGE,
                                   args=["echo cuda workload validated"])],
                        node=n.name, runtime_class="nvidia", tolerations=TOLERATIONS,
                        inits=[container("cuda-validation", OPERATOR_IMAGE,
                                         args=["vectorAdd"])],
                        account="nvidia-operator-validator")
        spec["restartPolicy"] = "OnFailure"
        started = plus(boot, 40)
        pod = self._pod(name, OPERATOR_NS, spec,
                        _status_succeeded(spec, started, uid("Pod", OPERATOR_NS, name), host_ip),
                        started, {"app": "nvidia-cuda-validator"},
                        owner("ClusterPolicy", POLICY, None, "nvidia.com/v1"), None)
        return pod, self.started_events(pod, n.name, started)

    def training_pod(self, n: NodePlan, k: int, host_ip: str, ip: str) -> tuple[Obj, list[Obj]]:
        job = f"ft-run-{n.index:04d}"
        name = f"{job}-{k}-{suffix(5, self.seed, job, k)}"
        ns = "ml-train"
        resources = {"limits": {"cpu": "24", "memory": "220Gi", "nvidia.com/gpu": "1"},
                     "requests": {"cpu": "24", "memory": "220Gi", "nvidia.com/gpu": "1"}}
        main = container("trainer", "nvcr.io/nvidia/pytorch:25.10-py3", resources=resources,
                         env={"JOB_COMPLETION_INDEX": str(k), "NCCL_DEBUG": "WARN",
                              "MASTER_ADDR": f"{job}-0.{job}.ml-train.svc",
                              "HF_TOKEN": "<redacted>"})
        main["command"] = ["torchrun", "--nproc-per-node=1", "train.py"]
        spec = pod_spec([main], node=n.name, account="trainer")
        spec["subdomain"] = job
        spec["hostname"] = f"{job}-{k}"
        created = plus(CREATED, -3600 * (1 + n.index % 20) - k)
        pod = self._pod(name, ns, spec,
                        _status_running(spec, created, uid("Pod", ns, name), ip, host_ip),
                        created, {"batch.kubernetes.io/job-name": job,
                                  "batch.kubernetes.io/job-completion-index": str(k),
                                  "team": f"team-{n.index % 17:02d}"},
                        owner("Job", job, ns, "batch/v1"), f"{job}-{k}-")
        return pod, self.started_events(pod, n.name, created)

    def cpu_pod(self, n: NodePlan, k: int, host_ip: str, ip: str) -> tuple[Obj, list[Obj]]:
        app = ("feature-etl", "tokenizer", "eval-harness", "metrics-relay")[k % 4]
        rs = f"{app}-{suffix(10, self.seed, app, n.index % 50)}"
        name = f"{rs}-{suffix(5, self.seed, n.name, k)}"
        ns = "data" if k % 2 else "ml-serving"
        resources = {"limits": {"cpu": "4", "memory": "16Gi"},
                     "requests": {"cpu": "2", "memory": "8Gi"}}
        spec = pod_spec([container(app, f"registry.example.com/ml/{app}:2026.11.{k % 9}",
                                   resources=resources,
                                   env={"LOG_LEVEL": "info", "API_KEY": "<redacted>"})],
                        node=n.name, account=app)
        created = plus(CREATED, -7200 * (1 + k) - n.index % 600)
        pod = self._pod(name, ns, spec,
                        _status_running(spec, created, uid("Pod", ns, name), ip, host_ip),
                        created, {"app": app, "pod-template-hash": rs.rsplit("-", 1)[1]},
                        owner("ReplicaSet", rs, ns), f"{rs}-")
        return pod, self.started_events(pod, n.name, created)

    def rejected_pod(self, n: NodePlan, k: int) -> tuple[Obj, list[Obj]]:
        rs = f"triton-{n.name}-{suffix(10, self.seed, 'triton', n.name)}"
        name = f"{rs}-{suffix(5, self.seed, n.name, 'rejected', k)}"
        ns = "ml-serving"
        resources = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}
        spec = pod_spec([container("triton", "nvcr.io/nvidia/tritonserver:25.10-py3",
                                   resources=resources)], node=n.name, account="triton")
        created = plus(CREATED, -1800 + 20 * k)
        status = {"message": f"Pod was rejected: {ADMISSION}", "phase": "Failed",
                  "reason": "UnexpectedAdmissionError", "startTime": iso(created)}
        pod = self._pod(name, ns, spec, status, created, {"app": "triton"},
                        owner("ReplicaSet", rs, ns), f"{rs}-")
        event = self.core_event(pod, n.name, "UnexpectedAdmissionError", ADMISSION, created,
                                warning=True)
        return pod, [event]

    def pending_pods(self) -> Iterator[tuple[Obj, list[Obj]]]:
        gpu_nodes = sum(1 for n in self.plan.nodes if n.allocatable is not None)
        total = len(self.plan.nodes) + len(CONTROL_PLANE)
        message = (f"0/{total} nodes are available: {len(CONTROL_PLANE)} node(s) had untolerated "
                   "taint {node-role.kubernetes.io/control-plane: }, "
                   f"{len(self.plan.nodes)} Insufficient nvidia.com/gpu. preemption: 0/{total} "
                   f"nodes are available: {len(CONTROL_PLANE)} Preemption is not helpful for "
                   f"scheduling, {gpu_nodes} No preemption victims found for incoming pod.")
        for k, name in enumerate(self.plan.pending_pod_names()):
            job = name.rsplit("-", 2)[0]
            ns = "ml-batch"
            resources = {"limits": {"nvidia.com/gpu": str(GPUS_PER_NODE)},
                         "requests": {"cpu": "96", "nvidia.com/gpu": str(GPUS_PER_NODE)}}
            spec = pod_spec([container("finetune", "nvcr.io/nvidia/nemo:25.09",
                                       resources=resources)], node=None, account="default")
            created = plus(CREATED, -900 - 60 * k)
            status = {"conditions": [_cond("PodScheduled", False, created, "Unschedulable",
                                           message)],
                      "phase": "Pending", "qosClass": "Burstable"}
            pod = self._pod(name, ns, spec, status, created, {"job-name": job},
                            owner("Job", job, ns, "batch/v1"), f"{job}-")
            yield pod, [self.scheduler_event(pod, "FailedScheduling", message, created,
                                             warning=True)]

    # ------------------------------------------------------------------------- events

    def _involved(self, pod: Obj, field_path: str | None = None) -> Obj:
        m = pod["metadata"]
        ref = {"apiVersion": "v1", "kind": "Pod", "name": m["name"],
               "namespace": m["namespace"], "resourceVersion": m["resourceVersion"],
               "uid": m["uid"]}
        if field_path:
            ref["fieldPath"] = field_path
        return ref

    def _event_meta(self, pod: Obj, reason: str, at: dt.datetime) -> Obj:
        m = pod["metadata"]
        name = f"{m['name']}.{hexid(16, reason, m['uid'])}"
        return meta("Event", name, m["namespace"], at)

    def scheduler_event(self, pod: Obj, reason: str, message: str, at: dt.datetime, *,
                        warning: bool = False) -> Obj:
        return {"action": "Scheduling" if warning else "Binding", "apiVersion": "v1",
                "eventTime": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "firstTimestamp": None,
                "involvedObject": self._involved(pod), "kind": "Event", "lastTimestamp": None,
                "message": message, "metadata": self._event_meta(pod, reason, at),
                "reason": reason, "reportingComponent": "default-scheduler",
                "reportingInstance": "default-scheduler-cp-1", "source": {},
                "type": "Warning" if warning else "Normal"}

    def core_event(self, pod: Obj, node: str, reason: str, message: str, at: dt.datetime, *,
                   warning: bool = False, count: int = 1, last: dt.datetime | None = None,
                   field_path: str | None = None) -> Obj:
        return {"apiVersion": "v1", "count": count, "eventTime": None,
                "firstTimestamp": iso(at), "involvedObject": self._involved(pod, field_path),
                "kind": "Event", "lastTimestamp": iso(last or at), "message": message,
                "metadata": self._event_meta(pod, reason, at), "reason": reason,
                "reportingComponent": "kubelet", "reportingInstance": node,
                "source": {"component": "kubelet", "host": node},
                "type": "Warning" if warning else "Normal"}

    def scheduled(self, pod: Obj, node: str, at: dt.datetime) -> Obj:
        m = pod["metadata"]
        return self.scheduler_event(pod, "Scheduled",
                                    f"Successfully assigned {m['namespace']}/{m['name']} to "
                                    f"{node}", at)

    def started_events(self, pod: Obj, node: str, at: dt.datetime) -> list[Obj]:
        main = pod["spec"]["containers"][0]
        path = f"spec.containers{{{main['name']}}}"
        return [
            self.scheduled(pod, node, at),
            self.core_event(pod, node, "Pulled", f"Container image \"{main['image']}\" already "
                            "present on machine", plus(at, 1), field_path=path),
            self.core_event(pod, node, "Created", f"Created container: {main['name']}",
                            plus(at, 1), field_path=path),
            self.core_event(pod, node, "Started", f"Started container {main['name']}",
                            plus(at, 2), field_path=path),
        ]

    def no_sandbox(self, pod: Obj, node: str) -> Obj:
        first = plus(BOOTED, 100)
        return self.core_event(pod, node, "FailedCreatePodSandBox", NO_RUNTIME_EVENT, first,
                               warning=True, count=4000 + int(digest(node)[0]),
                               last=plus(CREATED, -12))


def _deploy_label(ds: str) -> str:
    return {"nvidia-device-plugin-daemonset": "device-plugin",
            "gpu-feature-discovery": "gpu-feature-discovery",
            "nvidia-dcgm-exporter": "dcgm-exporter",
            "nvidia-operator-validator": "operator-validator"}[ds]


def control_plane_pods(plan: Plan) -> Iterator[tuple[Obj, list[Obj]]]:
    """The operator and NFD master on the control plane (no events: they are old)."""
    del plan
    for name, labels, image, ds in (
        (f"gpu-operator-{suffix(10, 'op')}-{suffix(5, 'op')}", {"app": "gpu-operator"},
         OPERATOR_IMAGE, "gpu-operator"),
        (f"gpu-operator-node-feature-discovery-master-{suffix(10, 'nfd')}-{suffix(5, 'nfd')}",
         {"app.kubernetes.io/name": "node-feature-discovery", "role": "master"}, NFD_IMAGE,
         "gpu-operator-node-feature-discovery-master"),
    ):
        spec = pod_spec([container(ds.rsplit("-", 1)[-1], image)], node="cp-1", account=ds)
        pod_uid = uid("Pod", OPERATOR_NS, name)
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": meta("Pod", name, OPERATOR_NS, INSTALLED, labels=labels,
                                owner=owner("ReplicaSet", name.rsplit("-", 1)[0], OPERATOR_NS)),
               "spec": spec,
               "status": _status_running(spec, INSTALLED, pod_uid, "10.127.0.5", "10.19.0.2")}
        yield pod, []


# ----------------------------------------------------------------- cluster-wide objects

def daemonsets(plan: Plan) -> list[Obj]:
    gpu = len(plan.nodes)
    ready = sum(1 for n in plan.nodes if n.has_nvidia)
    result = []
    for ds, ns in (("kube-proxy", "kube-system"), ("kube-flannel-ds", "kube-flannel"),
                   ("gpu-operator-node-feature-discovery-worker", OPERATOR_NS),
                   ("node-exporter", "monitoring"), ("fluent-bit", "logging"),
                   ("nvidia-device-plugin-daemonset", OPERATOR_NS),
                   ("gpu-feature-discovery", OPERATOR_NS), ("nvidia-dcgm-exporter", OPERATOR_NS),
                   ("nvidia-operator-validator", OPERATOR_NS)):
        operand = ns == OPERATOR_NS and "feature-discovery-worker" not in ds
        desired = gpu if operand else gpu + (len(CONTROL_PLANE) if "kube" in ds else 0)
        ok = ready if operand else desired
        labels = {"app": ds} if operand else {"app.kubernetes.io/name": ds}
        template: Obj = {"metadata": {"labels": labels}, "spec": pod_spec(
            [container(ds, OPERATOR_IMAGE)], node=None, tolerations=TOLERATIONS,
            runtime_class="nvidia" if operand else None,
            selector={f"nvidia.com/gpu.deploy.{_deploy_label(ds)}": "true"} if operand
            else None)}
        own = owner("ClusterPolicy", POLICY, None, "nvidia.com/v1") if operand else None
        result.append({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {**meta("DaemonSet", ds, ns, INSTALLED, labels=labels, owner=own),
                         "generation": 1},
            "spec": {"revisionHistoryLimit": 10, "selector": {"matchLabels": labels},
                     "template": template, "updateStrategy": {
                         "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
                         "type": "RollingUpdate"}},
            "status": {"currentNumberScheduled": desired, "desiredNumberScheduled": desired,
                       "numberAvailable": ok, "numberMisscheduled": 0, "numberReady": ok,
                       "numberUnavailable": desired - ok, "observedGeneration": 1,
                       "updatedNumberScheduled": desired}})
    return result


def deployments() -> list[Obj]:
    result = []
    for name, image in (("gpu-operator", OPERATOR_IMAGE),
                        ("gpu-operator-node-feature-discovery-master", NFD_IMAGE),
                        ("coredns", "registry.k8s.io/coredns/coredns:v1.12.4")):
        ns = "kube-system" if name == "coredns" else OPERATOR_NS
        labels = {"app": name}
        result.append({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {**meta("Deployment", name, ns, INSTALLED, labels={
                **labels, "app.kubernetes.io/version": VERSION, "helm.sh/chart": CHART}),
                "generation": 1},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": pod_spec([container(name, image)], node=None)}},
            "status": {"availableReplicas": 1, "observedGeneration": 1, "readyReplicas": 1,
                       "replicas": 1, "updatedReplicas": 1}})
    return result


def runtime_classes() -> list[Obj]:
    return [{"apiVersion": "node.k8s.io/v1", "handler": name, "kind": "RuntimeClass",
             "metadata": meta("RuntimeClass", name, None, INSTALLED,
                              owner=owner("ClusterPolicy", POLICY, None, "nvidia.com/v1"))}
            for name in ("nvidia", "nvidia-cdi", "nvidia-legacy")]


def namespaces() -> list[Obj]:
    return [{"apiVersion": "v1", "kind": "Namespace",
             "metadata": meta("Namespace", ns, None, INSTALLED,
                              labels={"kubernetes.io/metadata.name": ns}),
             "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
            for ns in ("data", "default", "gpu-operator", "kube-flannel", "kube-system",
                       "logging", "ml-batch", "ml-serving", "ml-train", "monitoring")]


def policy_spec(toolkit: bool) -> Obj:
    def component(enabled: bool, repository: str, image: str, version: str) -> Obj:
        return {"enabled": enabled, "repository": repository, "image": image,
                "version": version, "imagePullPolicy": "IfNotPresent"}

    return {
        "operator": {"defaultRuntime": "containerd", "runtimeClass": "nvidia"},
        "daemonsets": {"priorityClassName": "system-node-critical",
                       "tolerations": [TOLERATIONS[0]], "updateStrategy": "RollingUpdate"},
        "validator": {"repository": "nvcr.io/nvidia", "image": "gpu-operator",
                      "version": VERSION},
        "mig": {"strategy": "single"}, "psa": {"enabled": False},
        "cdi": {"enabled": False, "default": False},
        "driver": component(False, "nvcr.io/nvidia", "driver", "580.126.20"),
        "toolkit": component(toolkit, "nvcr.io/nvidia/k8s", "container-toolkit", "v1.20.0"),
        "devicePlugin": component(True, "nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0"),
        "dcgm": component(False, "nvcr.io/nvidia/cloud-native", "dcgm", "4.5.2-1-ubuntu22.04"),
        "dcgmExporter": component(True, "nvcr.io/nvidia/k8s", "dcgm-exporter",
                                  "4.5.3-4.8.2-distroless"),
        "gfd": component(True, "nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0"),
        "migManager": component(False, "nvcr.io/nvidia/cloud-native", "k8s-mig-manager",
                                "v0.15.0"),
        "nodeStatusExporter": component(False, "nvcr.io/nvidia", "gpu-operator", VERSION),
        "gds": {"enabled": False}, "gdrcopy": {"enabled": False},
        "sandboxWorkloads": {"enabled": False}, "vgpuManager": {"enabled": False},
        "hostPaths": {"rootFS": "/", "driverInstallDir": "/run/nvidia/driver"},
    }


def cluster_policies(plan: Plan) -> list[Obj]:
    stuck = bool([n for n in plan.nodes if not n.has_nvidia])
    since = plus(CREATED, -3 * 3600)
    if stuck:
        conditions = [
            {"lastTransitionTime": iso(since), "message": "", "reason": "Error",
             "status": "False", "type": "Ready"},
            {"lastTransitionTime": iso(since), "message": "ClusterPolicy is not ready, states "
             "not ready: [state-operator-validation state-device-plugin state-dcgm-exporter "
             "gpu-feature-discovery]", "reason": "OperandNotReady", "status": "True",
             "type": "Error"}]
    else:
        conditions = [
            {"lastTransitionTime": iso(since), "message": "ClusterPolicy is ready as all "
             "resources have been successfully reconciled", "reason": "Reconciled",
             "status": "True", "type": "Ready"}]
    return [{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
             "metadata": {**meta("ClusterPolicy", POLICY, None, INSTALLED, labels={
                 "app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": CHART}),
                 "generation": 1},
             "spec": policy_spec(toolkit=False),
             "status": {"conditions": conditions, "namespace": OPERATOR_NS,
                        "state": "notReady" if stuck else "ready"}}]


def helm_history() -> list[Obj]:
    values = {"driver": {"enabled": False}, "toolkit": {"enabled": False},
              "cdi": {"enabled": False}, "migManager": {"enabled": False}}
    return [{"revision": 1, "status": "deployed", "chart": CHART,
             "app_version": VERSION, "updated": iso(INSTALLED), "description": "Install complete",
             "values": values}]


def version() -> Obj:
    return {"clientVersion": {"gitVersion": "v1.37.1", "major": "1", "minor": "37",
                              "platform": "linux/amd64"},
            "kustomizeVersion": "v5.7.1",
            "serverVersion": {"gitVersion": "v1.37.1", "major": "1", "minor": "37",
                              "platform": "linux/amd64"}}


def empty_list() -> bytes:
    return b'{"apiVersion":"v1","items":[],"kind":"List","metadata":{"resourceVersion":""}}\n'
