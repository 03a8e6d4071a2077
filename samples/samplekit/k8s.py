"""Kubernetes objects shaped like API server output (``kubectl get -o json``).

Only fields a real object carries are written; defaults the API server adds
(terminationMessagePath, dnsPolicy, the DaemonSet controller's tolerations, ...)
are filled in here so callers only state what a scenario decides.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from .core import hexid, iso, iso_micro, number, uid
from .model import Host

Obj = dict[str, Any]

PRIORITY = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


def meta(
    kind: str,
    name: str,
    namespace: str | None = None,
    *,
    created: dt.datetime,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owners: list[Obj] | None = None,
    generate_name: str | None = None,
    generation: int | None = None,
    incarnation: str = "",
) -> Obj:
    m: Obj = {
        "name": name,
        "uid": uid(kind, namespace or "", name, incarnation),
        "resourceVersion": str(number(1000, 99999, "rv", kind, namespace, name, incarnation)),
        "creationTimestamp": iso(created),
    }
    if namespace:
        m["namespace"] = namespace
    if labels:
        m["labels"] = dict(labels)
    if annotations:
        m["annotations"] = dict(annotations)
    if owners:
        m["ownerReferences"] = owners
    if generate_name:
        m["generateName"] = generate_name
    if generation is not None:
        m["generation"] = generation
    return m


def owner_ref(api_version: str, kind: str, name: str, owner_uid: str) -> Obj:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": owner_uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def by_namespace_name(items: list[Obj]) -> list[Obj]:
    return sorted(items, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))


# ---------------------------------------------------------------------- simple kinds


def namespace_obj(name: str, created: dt.datetime, labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": meta(
            "Namespace",
            name,
            created=created,
            labels={"kubernetes.io/metadata.name": name, **(labels or {})},
        ),
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def runtime_class_obj(name: str, handler: str, created: dt.datetime, owners: list[Obj]) -> Obj:
    return {
        "apiVersion": "node.k8s.io/v1",
        "handler": handler,
        "kind": "RuntimeClass",
        "metadata": meta(
            "RuntimeClass",
            name,
            created=created,
            labels={"app.kubernetes.io/component": "gpu-operator"},
            owners=owners,
        ),
    }


def configmap_obj(
    name: str, namespace: str, data: dict[str, str], created: dt.datetime, **kw: Any
) -> Obj:
    return {
        "apiVersion": "v1",
        "data": data,
        "kind": "ConfigMap",
        "metadata": meta("ConfigMap", name, namespace, created=created, **kw),
    }


# ----------------------------------------------------------------------------- nodes


def node_obj(
    host: Host,
    *,
    created: dt.datetime,
    labels: dict[str, str],
    annotations: dict[str, str],
    gpus: int | None,
    ready_at: dt.datetime,
    heartbeat: dt.datetime,
) -> Obj:
    """A Node; ``gpus`` is the advertised ``nvidia.com/gpu`` count, None when the
    device plugin never registered (the resource name is then absent)."""
    capacity = {
        "cpu": str(host.cpus),
        "ephemeral-storage": f"{host.storage_ki}Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{host.memory_ki}Ki",
        "pods": "110",
    }
    allocatable = dict(capacity)
    # kubelet's default hard eviction thresholds: memory.available<100Mi, nodefs.available<10%
    allocatable["memory"] = f"{host.memory_ki - 102400}Ki"
    allocatable["ephemeral-storage"] = str(host.storage_ki * 1024 * 9 // 10)
    if gpus is not None:
        capacity["nvidia.com/gpu"] = str(gpus)
        allocatable["nvidia.com/gpu"] = str(gpus)

    def cond(kind: str, status: str, reason: str, message: str, since: dt.datetime) -> Obj:
        return {
            "lastHeartbeatTime": iso(heartbeat),
            "lastTransitionTime": iso(since),
            "message": message,
            "reason": reason,
            "status": status,
            "type": kind,
        }

    spec: Obj = {"podCIDR": host.pod_cidr, "podCIDRs": [host.pod_cidr]}
    if host.control_plane:
        spec["taints"] = [{"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}]
    flannel_up = cond(
        "NetworkUnavailable", "False", "FlannelIsUp", "Flannel is running on this node", ready_at
    )
    flannel_up["lastHeartbeatTime"] = iso(ready_at)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta(
            "Node", host.name, created=created, labels=labels, annotations=annotations
        ),
        "spec": spec,
        "status": {
            "addresses": [
                {"address": host.ip, "type": "InternalIP"},
                {"address": host.name, "type": "Hostname"},
            ],
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": [
                flannel_up,
                cond(
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                    created,
                ),
                cond(
                    "DiskPressure",
                    "False",
                    "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure",
                    created,
                ),
                cond(
                    "PIDPressure",
                    "False",
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                    created,
                ),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status", ready_at),
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": boot_id(host),
                "containerRuntimeVersion": "containerd://1.6.20",
                "kernelVersion": host.kernel,
                "kubeletVersion": "v1.37.1",
                "machineID": hexid(32, "machine-id", host.name),
                "operatingSystem": "linux",
                "osImage": host.os_pretty,
                "systemUUID": _uuid_text(hexid(32, "system-uuid", host.name)),
            },
        },
    }


def boot_id(host: Host) -> str:
    return _uuid_text(hexid(32, "boot-id", host.name, iso(host.boot_at)))


def _uuid_text(h: str) -> str:
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# ------------------------------------------------------------------------ containers


def container(
    name: str,
    image: str,
    *,
    command: list[str] | None = None,
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
    resources: Obj | None = None,
    privileged: bool = False,
    ports: list[Obj] | None = None,
) -> Obj:
    c: Obj = {
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "name": name,
        "resources": resources or {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    if command:
        c["command"] = command
    if args:
        c["args"] = args
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if privileged:
        c["securityContext"] = {"privileged": True}
    if ports:
        c["ports"] = ports
    return c


def image_ref(image: str) -> str:
    """The fully qualified reference a container status reports."""
    first = image.split("/", 1)[0]
    if "." in first or ":" in first or first == "localhost":
        return image
    if "/" not in image:
        return f"docker.io/library/{image}"
    return f"docker.io/{image}"


def image_id(image: str) -> str:
    repo = image_ref(image).rsplit(":", 1)[0]
    return f"{repo}@sha256:{hexid(64, 'image', image)}"


def waiting(reason: str, message: str | None = None) -> Obj:
    w: Obj = {"reason": reason}
    if message:
        w["message"] = message
    return {"waiting": w}


def running(since: dt.datetime) -> Obj:
    return {"running": {"startedAt": iso(since)}}


def terminated(
    started: dt.datetime, finished: dt.datetime, exit_code: int = 0, reason: str = "Completed"
) -> Obj:
    return {
        "terminated": {
            "exitCode": exit_code,
            "finishedAt": iso(finished),
            "reason": reason,
            "startedAt": iso(started),
        }
    }


def container_status(pod_uid: str, spec: Obj, state: Obj, *, ready: bool, restarts: int = 0) -> Obj:
    status: Obj = {
        "image": image_ref(spec["image"]),
        "imageID": "",
        "lastState": {},
        "name": spec["name"],
        "ready": ready,
        "restartCount": restarts,
        "started": "running" in state,
        "state": state,
    }
    if "waiting" not in state:
        status["imageID"] = image_id(spec["image"])
        cid = f"containerd://{hexid(64, 'ctr', pod_uid, spec['name'])}"
        status["containerID"] = cid
        if "terminated" in state:
            state["terminated"]["containerID"] = cid
    return status


def condition(
    kind: str, ok: bool, since: dt.datetime | None, reason: str = "", message: str = ""
) -> Obj:
    c: Obj = {
        "lastProbeTime": None,
        "lastTransitionTime": iso(since) if since else None,
        "status": "True" if ok else "False",
        "type": kind,
    }
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def qos_class(containers: list[Obj]) -> str:
    requests = [c.get("resources", {}).get("requests", {}) for c in containers]
    limits = [c.get("resources", {}).get("limits", {}) for c in containers]
    compute = ("cpu", "memory")
    if not any(k in r for r in requests + limits for k in compute):
        return "BestEffort"
    if all(
        all(lim.get(k) and req.get(k, lim.get(k)) == lim.get(k) for k in compute)
        for req, lim in zip(requests, limits, strict=True)
    ):
        return "Guaranteed"
    return "Burstable"


# ------------------------------------------------------------------------------ pods

DAEMONSET_TOLERATIONS = [
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/disk-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/memory-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/pid-pressure", "operator": "Exists"},
    {"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
]

DEFAULT_TOLERATIONS = [
    {
        "effect": "NoExecute",
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "tolerationSeconds": 300,
    },
    {
        "effect": "NoExecute",
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "tolerationSeconds": 300,
    },
]


def pod_spec(
    containers: list[Obj],
    *,
    init_containers: list[Obj] | None = None,
    service_account: str = "default",
    priority_class: str | None = None,
    runtime_class: str | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[Obj] | None = None,
    restart_policy: str = "Always",
    host_network: bool = False,
    host_pid: bool = False,
    affinity: Obj | None = None,
) -> Obj:
    """A pod spec / pod template spec with the API server's defaults."""
    spec: Obj = {
        "containers": containers,
        "dnsPolicy": "ClusterFirstWithHostNet" if host_network else "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": PRIORITY.get(priority_class or "", 0),
        "restartPolicy": restart_policy,
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": service_account,
        "serviceAccountName": service_account,
        "terminationGracePeriodSeconds": 30,
    }
    if init_containers:
        spec["initContainers"] = init_containers
    if priority_class:
        spec["priorityClassName"] = priority_class
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if host_network:
        spec["hostNetwork"] = True
    if host_pid:
        spec["hostPID"] = True
    if affinity:
        spec["affinity"] = affinity
    return spec


def pin_to_node(node: str) -> Obj:
    """The node affinity the DaemonSet controller writes into each pod."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def pod_obj(metadata: Obj, spec: Obj, status: Obj) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def _names(containers: list[Obj]) -> str:
    return "[" + " ".join(c["name"] for c in containers) + "]"


def status_unschedulable(spec: Obj, since: dt.datetime, message: str) -> Obj:
    return {
        "conditions": [condition("PodScheduled", False, since, "Unschedulable", message)],
        "phase": "Pending",
        "qosClass": qos_class(spec["containers"]),
    }


def status_no_sandbox(spec: Obj, pod_uid: str, host: Host, scheduled: dt.datetime) -> Obj:
    """Bound to a node whose runtime never created the sandbox: every container
    waits, with kubelet's default reason (PodInitializing when the pod has init
    containers, ContainerCreating otherwise)."""
    inits = spec.get("initContainers", [])
    reason = "PodInitializing" if inits else "ContainerCreating"
    status: Obj = {
        "conditions": [
            condition("PodReadyToStartContainers", False, scheduled),
            condition(
                "Initialized",
                not inits,
                scheduled,
                *(
                    (
                        "ContainersNotInitialized",
                        f"containers with incomplete status: {_names(inits)}",
                    )
                    if inits
                    else ()
                ),
            ),
            condition(
                "Ready",
                False,
                scheduled,
                "ContainersNotReady",
                f"containers with unready status: {_names(spec['containers'])}",
            ),
            condition(
                "ContainersReady",
                False,
                scheduled,
                "ContainersNotReady",
                f"containers with unready status: {_names(spec['containers'])}",
            ),
            condition("PodScheduled", True, scheduled),
        ],
        "containerStatuses": [
            container_status(pod_uid, c, waiting(reason), ready=False) for c in spec["containers"]
        ],
        "hostIP": host.ip,
        "hostIPs": [{"ip": host.ip}],
        "phase": "Pending",
        "qosClass": qos_class(spec["containers"]),
        "startTime": iso(scheduled),
    }
    if inits:
        status["initContainerStatuses"] = [
            container_status(pod_uid, c, waiting(reason), ready=False) for c in inits
        ]
    return status


def status_ran(
    spec: Obj,
    pod_uid: str,
    host: Host,
    pod_ip: str,
    *,
    scheduled: dt.datetime,
    sandbox_at: dt.datetime,
    init_runs: list[tuple[dt.datetime, dt.datetime]],
    main_start: dt.datetime,
    main_end: dt.datetime | None = None,
    ready_at: dt.datetime | None = None,
) -> Obj:
    """A pod whose containers ran: Running (``main_end`` None) or Succeeded."""
    inits = spec.get("initContainers", [])
    succeeded = main_end is not None
    ready_at = ready_at or main_start
    initialized_at = init_runs[-1][1] if init_runs else scheduled
    if succeeded:
        assert main_end is not None
        tail = [
            condition("Ready", False, main_end, "PodCompleted"),
            condition("ContainersReady", False, main_end, "PodCompleted"),
        ]
        main_states = [terminated(main_start, main_end) for _ in spec["containers"]]
    else:
        tail = [condition("Ready", True, ready_at), condition("ContainersReady", True, ready_at)]
        main_states = [running(main_start) for _ in spec["containers"]]
    status: Obj = {
        "conditions": [
            condition("PodReadyToStartContainers", not succeeded, main_end or sandbox_at),
            condition("Initialized", True, initialized_at),
            *tail,
            condition("PodScheduled", True, scheduled),
        ],
        "containerStatuses": [
            container_status(pod_uid, c, st, ready=not succeeded)
            for c, st in zip(spec["containers"], main_states, strict=True)
        ],
        "hostIP": host.ip,
        "hostIPs": [{"ip": host.ip}],
        "phase": "Succeeded" if succeeded else "Running",
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "qosClass": qos_class(spec["containers"]),
        "startTime": iso(scheduled),
    }
    if inits:
        status["initContainerStatuses"] = [
            container_status(pod_uid, c, terminated(t0, t1), ready=True)
            for c, (t0, t1) in zip(inits, init_runs, strict=True)
        ]
    return status


# ---------------------------------------------------------------------------- events


def _event_name(obj_name: str, first: dt.datetime) -> str:
    return f"{obj_name}.{int(first.timestamp() * 1e9):x}"


def involved(obj: Obj, field_path: str | None = None) -> Obj:
    ref: Obj = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "resourceVersion": obj["metadata"]["resourceVersion"],
        "uid": obj["metadata"]["uid"],
    }
    if "namespace" in obj["metadata"]:
        ref["namespace"] = obj["metadata"]["namespace"]
    if field_path:
        ref["fieldPath"] = field_path
    return ref


def event_core(
    regarding: Obj,
    reason: str,
    message: str,
    *,
    component: str,
    first: dt.datetime,
    last: dt.datetime | None = None,
    count: int = 1,
    host: str | None = None,
    warning: bool = False,
    field_path: str | None = None,
) -> Obj:
    """An event from a component on the core/v1 recorder (kubelet, controllers)."""
    ns = regarding["metadata"].get("namespace", "default")
    name = _event_name(regarding["metadata"]["name"], first)
    source: Obj = {"component": component}
    if host:
        source["host"] = host
    return {
        "apiVersion": "v1",
        "count": count,
        "eventTime": None,
        "firstTimestamp": iso(first),
        "involvedObject": involved(regarding, field_path),
        "kind": "Event",
        "lastTimestamp": iso(last or first),
        "message": message,
        "metadata": meta("Event", name, ns, created=first),
        "reason": reason,
        "reportingComponent": component,
        "reportingInstance": host or "",
        "source": source,
        "type": "Warning" if warning else "Normal",
    }


def event_scheduler(
    regarding: Obj,
    reason: str,
    message: str,
    *,
    first: dt.datetime,
    action: str,
    series: tuple[int, dt.datetime] | None = None,
    warning: bool = False,
) -> Obj:
    """An event from kube-scheduler, which uses the events.k8s.io recorder: read
    through core/v1 it has eventTime and series, no first/lastTimestamp or count."""
    ns = regarding["metadata"].get("namespace", "default")
    ev: Obj = {
        "action": action,
        "apiVersion": "v1",
        "eventTime": iso_micro(first),
        "firstTimestamp": None,
        "involvedObject": involved(regarding),
        "kind": "Event",
        "lastTimestamp": None,
        "message": message,
        "metadata": meta(
            "Event", _event_name(regarding["metadata"]["name"], first), ns, created=first
        ),
        "reason": reason,
        "reportingComponent": "default-scheduler",
        "reportingInstance": "default-scheduler-cp-1",
        "source": {},
        "type": "Warning" if warning else "Normal",
    }
    if series:
        ev["series"] = {"count": series[0], "lastObservedTime": iso_micro(series[1])}
    return ev


# ------------------------------------------------------------------------ workloads


def daemonset_obj(
    metadata: Obj,
    *,
    selector: dict[str, str],
    template_labels: dict[str, str],
    spec: Obj,
    desired: int,
    ready: int,
) -> Obj:
    status: Obj = {
        "currentNumberScheduled": desired,
        "desiredNumberScheduled": desired,
        "numberMisscheduled": 0,
        "numberReady": ready,
        "observedGeneration": metadata.get("generation", 1),
    }
    if ready:
        status["numberAvailable"] = ready
    if desired - ready:
        status["numberUnavailable"] = desired - ready
    if desired:
        status["updatedNumberScheduled"] = desired
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata,
        "spec": {
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": template_labels}, "spec": spec},
            "updateStrategy": {
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
                "type": "RollingUpdate",
            },
        },
        "status": status,
    }


def deployment_obj(
    metadata: Obj,
    *,
    selector: dict[str, str],
    template_labels: dict[str, str],
    spec: Obj,
    replicas: int,
    replicaset: str,
    available_since: dt.datetime,
    progressed_at: dt.datetime,
) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "progressDeadlineSeconds": 600,
            "replicas": replicas,
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": selector},
            "strategy": {
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                "type": "RollingUpdate",
            },
            "template": {"metadata": {"labels": template_labels}, "spec": spec},
        },
        "status": {
            "availableReplicas": replicas,
            "conditions": [
                {
                    "lastTransitionTime": iso(available_since),
                    "lastUpdateTime": iso(available_since),
                    "message": "Deployment has minimum availability.",
                    "reason": "MinimumReplicasAvailable",
                    "status": "True",
                    "type": "Available",
                },
                {
                    "lastTransitionTime": iso(metadata_time(metadata)),
                    "lastUpdateTime": iso(progressed_at),
                    "message": f'ReplicaSet "{replicaset}" has successfully progressed.',
                    "reason": "NewReplicaSetAvailable",
                    "status": "True",
                    "type": "Progressing",
                },
            ],
            "observedGeneration": metadata.get("generation", 1),
            "readyReplicas": replicas,
            "replicas": replicas,
            "updatedReplicas": replicas,
        },
    }


def metadata_time(metadata: Obj) -> dt.datetime:
    return dt.datetime.strptime(metadata["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=dt.UTC
    )
