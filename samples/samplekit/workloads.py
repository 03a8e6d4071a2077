"""Placing pods: controllers, pod life cycles, and what each leaves behind.

A pod's ``Outcome`` decides its status, its events (scheduler, kubelet), its
container logs, and the sandbox attempts its node's containerd and kubelet
journals will show. DaemonSet and Deployment helpers derive pods from their
templates the way the controllers do.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from .core import fraction, k8s_suffix, plus, uid
from .k8s import (
    DAEMONSET_TOLERATIONS,
    Obj,
    daemonset_obj,
    deployment_obj,
    event_core,
    event_scheduler,
    meta,
    owner_ref,
    pin_to_node,
    pod_obj,
    status_no_sandbox,
    status_ran,
)
from .model import Host
from .scene import LogLine, SandboxAttempt, Scene

NO_NVIDIA_RUNTIME = 'failed to get sandbox runtime: no runtime for "nvidia" is configured'


@dataclass(frozen=True)
class Stuck:
    """Bound to a node whose runtime cannot create the sandbox, until collection."""

    scheduled: dt.datetime


@dataclass(frozen=True)
class Ran:
    """Containers ran; ``main_end`` set means the pod Succeeded. ``stuck_since``
    set means sandbox creation failed from then until ``sandbox``."""

    scheduled: dt.datetime
    sandbox: dt.datetime
    init_runs: tuple[tuple[dt.datetime, dt.datetime], ...]
    main_start: dt.datetime
    main_end: dt.datetime | None = None
    ready: dt.datetime | None = None
    stuck_since: dt.datetime | None = None
    stuck_until: dt.datetime | None = None  # when the runtime got the handler (default: sandbox)


@dataclass(frozen=True)
class Custom:
    """Any other life cycle (an init container still running, a crash loop, an image
    that cannot be pulled): ``build`` places the pod itself and returns it, leaving its
    status, events, logs and sandbox attempts in the scene (see ``podstates``)."""

    scheduled: dt.datetime
    build: Callable[[Scene, Host, Obj, Obj], Obj]  # (scene, host, metadata, spec) -> pod


Outcome = Stuck | Ran | Custom


def retry_times(start: dt.datetime, end: dt.datetime, seed: str) -> list[dt.datetime]:
    """kubelet's pod worker retries a failed sync after 10 s plus up to 50 % jitter."""
    times = []
    t = plus(start, 0.3 + fraction(seed, "first"))
    i = 0
    while t < end:
        times.append(t)
        i += 1
        t = plus(t, 10 + 5 * fraction(seed, i))
    return times


SANDBOX_RPC_ERROR = f"rpc error: code = Unknown desc = {NO_NVIDIA_RUNTIME}"


def place_pod(
    scene: Scene,
    host: Host,
    *,
    metadata: Obj,
    spec: Obj,
    outcome: Outcome,
    logs: dict[str, list[LogLine]] | None = None,
    via_scheduler: bool = True,
) -> Obj:
    """Bind a pod to ``host`` and record its status, events, logs and sandboxes."""
    spec = copy.deepcopy(spec)
    spec["nodeName"] = host.name
    name, ns, pod_uid = metadata["name"], metadata["namespace"], metadata["uid"]
    if isinstance(outcome, Custom):
        built = outcome.build(scene, host, metadata, spec)
        if via_scheduler:
            scene.events.append(event_scheduler(
                built, "Scheduled", f"Successfully assigned {ns}/{name} to {host.name}",
                first=outcome.scheduled, action="Binding"))
        return built
    inits = spec.get("initContainers", [])
    containers = inits + spec["containers"]
    handler = spec.get("runtimeClassName", "runc")

    if isinstance(outcome, Stuck):
        status = status_no_sandbox(spec, pod_uid, host, outcome.scheduled)
    else:
        ip = host.ip if spec.get("hostNetwork") else scene.pod_ip(host)
        status = status_ran(
            spec,
            pod_uid,
            host,
            ip,
            scheduled=outcome.scheduled,
            sandbox_at=outcome.sandbox,
            init_runs=list(outcome.init_runs),
            main_start=outcome.main_start,
            main_end=outcome.main_end,
            ready_at=outcome.ready,
        )
    pod = pod_obj(metadata, spec, status)
    scene.pods.append(pod)

    if via_scheduler:
        scene.events.append(
            event_scheduler(
                pod,
                "Scheduled",
                f"Successfully assigned {ns}/{name} to {host.name}",
                first=outcome.scheduled,
                action="Binding",
            )
        )

    # sandbox attempts: failures until the runtime had the handler, then success
    fail_from = outcome.scheduled if isinstance(outcome, Stuck) else outcome.stuck_since
    if isinstance(outcome, Stuck):
        fail_until = scene.created_at
    else:
        fail_until = outcome.stuck_until or outcome.sandbox
    failures = retry_times(fail_from, fail_until, pod_uid) if fail_from else []
    attempts = scene.sandbox_attempts.setdefault(host.name, [])
    for t in failures:
        attempts.append(SandboxAttempt(t, name, ns, pod_uid, handler, ok=False))
    if failures:
        scene.events.append(
            event_core(
                pod,
                "FailedCreatePodSandBox",
                f"Failed to create pod sandbox: {SANDBOX_RPC_ERROR}",
                component="kubelet",
                host=host.name,
                first=failures[0],
                last=failures[-1],
                count=len(failures),
                warning=True,
            )
        )

    if isinstance(outcome, Stuck):
        reason = "PodInitializing" if inits else "ContainerCreating"
        for c in containers:
            scene.log_error(
                ns,
                name,
                c["name"],
                f'Error from server (BadRequest): container "{c["name"]}" in pod '
                f'"{name}" is waiting to start: {reason}',
            )
        return pod

    starts = [t0 for t0, _ in outcome.init_runs] + [outcome.main_start] * len(spec["containers"])
    started_at = [(c["name"], t) for c, t in zip(containers, starts, strict=True)]
    attempts.append(
        SandboxAttempt(outcome.sandbox, name, ns, pod_uid, handler, ok=True, containers=started_at)
    )
    for c, started in zip(containers, starts, strict=True):
        path = (
            f"spec.initContainers{{{c['name']}}}"
            if c in inits
            else f"spec.containers{{{c['name']}}}"
        )
        image = c["image"]
        present = scene.node_images.setdefault(host.name, set())
        if image not in present:
            present.add(image)
            seconds = 1.2 + 6 * fraction(pod_uid, c["name"], "pull")
            scene.events.append(
                event_core(
                    pod,
                    "Pulling",
                    f'Pulling image "{image}"',
                    component="kubelet",
                    host=host.name,
                    first=plus(started, -seconds - 0.2),
                    field_path=path,
                )
            )
            scene.events.append(
                event_core(
                    pod,
                    "Pulled",
                    f'Successfully pulled image "{image}" in {seconds:.3f}s '
                    f"({seconds:.3f}s including waiting). "
                    f"Image size: {40_000_000 + int(fraction(image) * 300_000_000)} bytes.",
                    component="kubelet",
                    host=host.name,
                    first=plus(started, -0.2),
                    field_path=path,
                )
            )
        else:
            scene.events.append(
                event_core(
                    pod,
                    "Pulled",
                    f'Container image "{image}" already present on machine',
                    component="kubelet",
                    host=host.name,
                    first=plus(started, -0.2),
                    field_path=path,
                )
            )
        scene.events.append(
            event_core(
                pod,
                "Created",
                f"Created container: {c['name']}",
                component="kubelet",
                host=host.name,
                first=plus(started, -0.1),
                field_path=path,
            )
        )
        scene.events.append(
            event_core(
                pod,
                "Started",
                f"Started container {c['name']}",
                component="kubelet",
                host=host.name,
                first=started,
                field_path=path,
            )
        )
    for c in containers:
        scene.log(ns, name, c["name"], (logs or {}).get(c["name"], []))
    return pod


# ------------------------------------------------------------------------ controllers


@dataclass
class Template:
    """What a controller stamps out: labels, selector and pod spec."""

    name: str
    namespace: str
    labels: dict[str, str]  # on the controller object
    selector: dict[str, str]
    pod_labels: dict[str, str]
    spec: Obj
    annotations: dict[str, str] = field(default_factory=dict)


def daemonset_pod_name(tpl: Template, host_name: str) -> str:
    return f"{tpl.name}-{k8s_suffix(5, tpl.namespace, tpl.name, host_name)}"


def daemonset_pod_uid(tpl: Template, host_name: str) -> str:
    return uid("Pod", tpl.namespace, daemonset_pod_name(tpl, host_name))


def add_daemonset(
    scene: Scene,
    tpl: Template,
    *,
    created: dt.datetime,
    pods: dict[str, Outcome],
    logs: dict[str, dict[str, list[LogLine]]] | None = None,
    owners: list[Obj] | None = None,
    generation: int = 1,
) -> Obj:
    """A DaemonSet with one pod per entry of ``pods`` (host name -> outcome)."""
    ds_meta = meta(
        "DaemonSet",
        tpl.name,
        tpl.namespace,
        created=created,
        labels=tpl.labels,
        annotations={
            "deprecated.daemonset.template.generation": str(generation),
            **tpl.annotations,
        },
        owners=owners,
        generation=generation,
    )
    ready = sum(1 for o in pods.values() if isinstance(o, Ran) and o.main_end is None)
    ds = daemonset_obj(
        ds_meta,
        selector=tpl.selector,
        template_labels=tpl.pod_labels,
        spec=tpl.spec,
        desired=len(pods),
        ready=ready,
    )
    scene.daemonsets.append(ds)
    revision = k8s_suffix(10, "controller-revision", tpl.namespace, tpl.name, generation)
    for host_name, outcome in pods.items():
        host = scene.host(host_name)
        name = daemonset_pod_name(tpl, host_name)
        spec = copy.deepcopy(tpl.spec)
        spec["affinity"] = pin_to_node(host_name)
        spec["tolerations"] = spec.get("tolerations", []) + copy.deepcopy(DAEMONSET_TOLERATIONS)
        if spec.get("hostNetwork"):
            spec["tolerations"].append(
                {
                    "effect": "NoSchedule",
                    "key": "node.kubernetes.io/network-unavailable",
                    "operator": "Exists",
                }
            )
        pod_meta = meta(
            "Pod",
            name,
            tpl.namespace,
            created=outcome.scheduled,
            labels={
                **tpl.pod_labels,
                "controller-revision-hash": revision,
                "pod-template-generation": str(generation),
            },
            owners=[owner_ref("apps/v1", "DaemonSet", tpl.name, ds_meta["uid"])],
            generate_name=f"{tpl.name}-",
        )
        pod = place_pod(
            scene,
            host,
            metadata=pod_meta,
            spec=spec,
            outcome=outcome,
            logs=(logs or {}).get(host_name),
        )
        scene.events.append(
            event_core(
                ds,
                "SuccessfulCreate",
                f"Created pod: {pod['metadata']['name']}",
                component="daemonset-controller",
                first=plus(outcome.scheduled, -0.01),
            )
        )
    return ds


def add_deployment(
    scene: Scene,
    tpl: Template,
    *,
    created: dt.datetime,
    pods: list[tuple[str, Outcome]],
    logs: list[dict[str, list[LogLine]]] | None = None,
) -> Obj:
    """A Deployment, its (implicit) ReplicaSet and its pods."""
    template_hash = k8s_suffix(10, "pod-template-hash", tpl.namespace, tpl.name)
    rs_name = f"{tpl.name}-{template_hash}"
    dep_meta = meta(
        "Deployment",
        tpl.name,
        tpl.namespace,
        created=created,
        labels=tpl.labels,
        annotations={"deployment.kubernetes.io/revision": "1", **tpl.annotations},
        generation=1,
    )
    ready_at = max((o.ready or o.main_start) for _, o in pods if isinstance(o, Ran))
    dep = deployment_obj(
        dep_meta,
        selector=tpl.selector,
        template_labels=tpl.pod_labels,
        spec=tpl.spec,
        replicas=len(pods),
        replicaset=rs_name,
        available_since=ready_at,
        progressed_at=ready_at,
    )
    scene.deployments.append(dep)
    rs_uid_meta = meta("ReplicaSet", rs_name, tpl.namespace, created=created)
    scene.events.append(
        event_core(
            dep,
            "ScalingReplicaSet",
            f"Scaled up replica set {rs_name} from 0 to {len(pods)}",
            component="deployment-controller",
            first=plus(created, 0.02),
        )
    )
    for i, (host_name, outcome) in enumerate(pods):
        host = scene.host(host_name)
        name = f"{rs_name}-{k8s_suffix(5, tpl.namespace, tpl.name, i)}"
        pod_meta = meta(
            "Pod",
            name,
            tpl.namespace,
            created=outcome.scheduled,
            labels={**tpl.pod_labels, "pod-template-hash": template_hash},
            owners=[owner_ref("apps/v1", "ReplicaSet", rs_name, rs_uid_meta["uid"])],
            generate_name=f"{rs_name}-",
        )
        place_pod(
            scene,
            host,
            metadata=pod_meta,
            spec=tpl.spec,
            outcome=outcome,
            logs=(logs or [{}] * len(pods))[i],
        )
        rs_ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": rs_uid_meta}
        scene.events.append(
            event_core(
                rs_ref,
                "SuccessfulCreate",
                f"Created pod: {name}",
                component="replicaset-controller",
                first=plus(outcome.scheduled, -0.01),
            )
        )
    return dep
