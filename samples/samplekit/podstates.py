"""Pods caught part-way: an init container still running, a container in a crash
loop, an image that cannot be pulled.

``workloads.place_pod`` knows two life cycles (no sandbox at all, or every container
ran). The samples of broken nodes need the others kubectl shows as ``Init:0/4``,
``Init:CrashLoopBackOff``, ``CrashLoopBackOff`` and ``ImagePullBackOff``. A
``Custom`` outcome built here says, per container, how far it got; the builder
writes the pod status kubelet would report, kubelet's events (with their counts),
the container logs ``kubectl logs`` returns (and ``--previous`` for restarted
containers), and the sandbox the node's journals show.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from .core import hexid, iso, plus
from .k8s import (
    Obj,
    condition,
    container_status,
    event_core,
    image_id,
    pod_obj,
    qos_class,
    running,
    terminated,
    waiting,
)
from .model import Host
from .scene import ContainerLog, LogLine, SandboxAttempt, Scene
from .workloads import Custom


@dataclass(frozen=True)
class Run:
    """One finished run of a container."""

    start: dt.datetime
    end: dt.datetime
    exit_code: int = 0
    reason: str | None = None  # kubelet's termination reason; None: Completed or Error


@dataclass(frozen=True)
class Finished:
    """A container that ran to its end (an init container: completed)."""

    run: Run


@dataclass(frozen=True)
class Running:
    """A container running since ``start`` (an init container: still working)."""

    start: dt.datetime


@dataclass(frozen=True)
class NotStarted:
    """Waits for the containers before it (kubelet's ``PodInitializing``)."""


@dataclass(frozen=True)
class Looping:
    """Exits non-zero again and again; kubelet waits (up to 5 min) between runs."""

    runs: tuple[Run, ...]
    back_off: dt.datetime  # when kubelet last logged the back-off


@dataclass(frozen=True)
class PullFailing:
    """The image cannot be pulled: ``pulls`` attempts between ``first`` and ``last``,
    each failing with ``error``; kubelet backs off in between."""

    first: dt.datetime
    last: dt.datetime
    pulls: int
    error: str
    back_offs: int


Plan = Finished | Running | NotStarted | Looping | PullFailing


def _started(plan: Plan) -> dt.datetime | None:
    if isinstance(plan, Finished):
        return plan.run.start
    if isinstance(plan, Running):
        return plan.start
    if isinstance(plan, Looping):
        return plan.runs[0].start
    return None


def _names(containers: list[Obj]) -> str:
    return "[" + " ".join(c["name"] for c in containers) + "]"


def _status(pod_uid: str, full: str, c: Obj, plan: Plan, *, init: bool) -> Obj:
    name = c["name"]
    if isinstance(plan, Finished):
        run = plan.run
        reason = "Completed" if run.exit_code == 0 else "Error"
        return container_status(pod_uid, c, terminated(run.start, run.end, run.exit_code, reason),
                                ready=init)
    if isinstance(plan, Running):
        return container_status(pod_uid, c, running(plan.start), ready=not init)
    if isinstance(plan, NotStarted):
        return container_status(pod_uid, c, waiting("PodInitializing"), ready=False)
    if isinstance(plan, PullFailing):
        return container_status(
            pod_uid, c, waiting("ImagePullBackOff", f'Back-off pulling image "{c["image"]}"'),
            ready=False)
    last = plan.runs[-1]
    restarts = len(plan.runs) - 1
    status = container_status(
        pod_uid, c,
        waiting("CrashLoopBackOff",
                f"back-off 5m0s restarting failed container={name} pod={full}"),
        ready=False, restarts=restarts)
    cid = f"containerd://{hexid(64, 'ctr', pod_uid, name, restarts)}"
    status["containerID"] = cid
    status["imageID"] = image_id(c["image"])
    status["lastState"] = terminated(last.start, last.end, exit_code=last.exit_code,
                                     reason=last.reason or "Error")
    status["lastState"]["terminated"]["containerID"] = cid
    return status


def _events(scene: Scene, pod: Obj, host: Host, c: Obj, plan: Plan, *, init: bool,
            full: str) -> None:
    section = "initContainers" if init else "containers"
    path = f"spec.{section}{{{c['name']}}}"
    image = c["image"]

    def kubelet(reason: str, message: str, first: dt.datetime, last: dt.datetime | None = None,
                count: int = 1, warning: bool = False) -> None:
        scene.events.append(event_core(pod, reason, message, component="kubelet",
                                       host=host.name, first=first, last=last, count=count,
                                       warning=warning, field_path=path))

    if isinstance(plan, PullFailing):
        kubelet("Pulling", f'Pulling image "{image}"', plan.first, plan.last, plan.pulls)
        kubelet("Failed", f'Failed to pull image "{image}": {plan.error}',
                plus(plan.first, 0.9), plus(plan.last, 0.9), plan.pulls, warning=True)
        kubelet("Failed", "Error: ErrImagePull", plus(plan.first, 0.9), plus(plan.last, 0.9),
                plan.pulls, warning=True)
        back = plus(plan.last, 13.2)
        kubelet("BackOff", f'Back-off pulling image "{image}"', plus(plan.first, 2.1), back,
                plan.back_offs)
        kubelet("Failed", "Error: ImagePullBackOff", plus(plan.first, 2.1), back,
                plan.back_offs, warning=True)
        return
    runs: list[dt.datetime]
    if isinstance(plan, Looping):
        runs = [r.start for r in plan.runs]
    else:
        started = _started(plan)
        runs = [started] if started is not None else []
    if not runs:
        return
    images = scene.node_images.setdefault(host.name, set())
    images.add(image)
    count = len(runs)
    kubelet("Pulled", f'Container image "{image}" already present on machine',
            plus(runs[0], -0.2), plus(runs[-1], -0.2), count)
    kubelet("Created", f"Created container: {c['name']}", plus(runs[0], -0.1),
            plus(runs[-1], -0.1), count)
    kubelet("Started", f"Started container {c['name']}", runs[0], runs[-1], count)
    if isinstance(plan, Looping):
        kubelet("BackOff", f"Back-off restarting failed container {c['name']} in pod {full}",
                plus(plan.runs[0].end, 1.0), plan.back_off, max(count * 5, 2), warning=True)


def custom(
    scheduled: dt.datetime,
    sandbox: dt.datetime,
    plans: Mapping[str, Plan],
    logs: Mapping[str, list[LogLine]] | None = None,
    previous: Mapping[str, list[LogLine]] | None = None,
    pod_status: Mapping[str, str] | None = None,
) -> Custom:
    """A pod whose containers stand as ``plans`` says (name -> plan; containers not
    named have not started). ``logs`` are each container's current log, ``previous``
    the last run before it for looping containers."""

    def build(scene: Scene, host: Host, metadata: Obj, spec: Obj) -> Obj:
        name, ns, pod_uid = metadata["name"], metadata["namespace"], metadata["uid"]
        full = f"{name}_{ns}({pod_uid})"
        inits = spec.get("initContainers", [])
        mains = spec["containers"]
        plan_of = {c["name"]: plans.get(c["name"], NotStarted()) for c in inits + mains}
        init_done = all(isinstance(plan_of[c["name"]], Finished) for c in inits)
        mains_up = [c for c in mains if isinstance(plan_of[c["name"]], Running)]
        mains_started = all(_started(plan_of[c["name"]]) is not None for c in mains)
        ended = [p.run for p in (plan_of[c["name"]] for c in mains) if isinstance(p, Finished)]
        phase = "Running" if init_done and mains_started else "Pending"
        if len(ended) == len(mains):
            phase = "Failed" if any(r.exit_code for r in ended) else "Succeeded"
        pending_inits = [c for c in inits if not isinstance(plan_of[c["name"]], Finished)]
        unready = [c for c in mains if c not in mains_up]
        initialized_at = max((plan_of[c["name"]].run.end for c in inits   # type: ignore[union-attr]
                              if isinstance(plan_of[c["name"]], Finished)), default=sandbox)
        over = max((r.end for r in ended), default=None) if phase in ("Failed", "Succeeded") \
            else None
        conditions = [
            condition("PodReadyToStartContainers", over is None, over or sandbox),
            condition("Initialized", True, initialized_at) if init_done else
            condition("Initialized", False, scheduled, "ContainersNotInitialized",
                      f"containers with incomplete status: {_names(pending_inits)}"),
        ]
        if over is not None:
            why = "PodFailed" if phase == "Failed" else "PodCompleted"
            conditions += [condition("Ready", False, over, why),
                           condition("ContainersReady", False, over, why)]
        elif unready:
            text = f"containers with unready status: {_names(unready)}"
            conditions += [condition("Ready", False, scheduled, "ContainersNotReady", text),
                           condition("ContainersReady", False, scheduled, "ContainersNotReady",
                                     text)]
        else:
            up = max(p.start for p in (plan_of[c["name"]] for c in mains)
                     if isinstance(p, Running))
            conditions += [condition("Ready", True, up), condition("ContainersReady", True, up)]
        conditions.append(condition("PodScheduled", True, scheduled))
        ip = host.ip if spec.get("hostNetwork") else scene.pod_ip(host)
        status: Obj = {
            "conditions": conditions,
            "containerStatuses": [_status(pod_uid, full, c, plan_of[c["name"]], init=False)
                                  for c in mains],
            "hostIP": host.ip,
            "hostIPs": [{"ip": host.ip}],
            "phase": phase,
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "qosClass": qos_class(mains),
            "startTime": iso(scheduled),
        }
        if inits:
            status["initContainerStatuses"] = [
                _status(pod_uid, full, c, plan_of[c["name"]], init=True) for c in inits]
        status.update(pod_status or {})
        pod = pod_obj(metadata, spec, status)
        scene.pods.append(pod)

        for c in inits + mains:
            _events(scene, pod, host, c, plan_of[c["name"]], init=c in inits, full=full)
        for c in inits + mains:
            plan = plan_of[c["name"]]
            if isinstance(plan, NotStarted | PullFailing):
                why = ("PodInitializing" if isinstance(plan, NotStarted)
                       else "trying and failing to pull image")
                scene.log_error(ns, name, c["name"],
                                f'Error from server (BadRequest): container "{c["name"]}" in '
                                f'pod "{name}" is waiting to start: {why}')
                continue
            scene.log(ns, name, c["name"], list((logs or {}).get(c["name"], [])))
            if isinstance(plan, Looping) and len(plan.runs) > 1:
                scene.logs.append(ContainerLog(ns, name, c["name"],
                                               list((previous or {}).get(c["name"], [])),
                                               previous=True))
        handler = spec.get("runtimeClassName", "runc")
        started = [(c["name"], t) for c in inits + mains
                   if (t := _started(plan_of[c["name"]])) is not None]
        scene.sandbox_attempts.setdefault(host.name, []).append(
            SandboxAttempt(sandbox, name, ns, pod_uid, handler, ok=True, containers=started))
        return pod

    return Custom(scheduled, build)


def crash_runs(first: dt.datetime, until: dt.datetime, run_s: float) -> tuple[Run, ...]:
    """kubelet's CrashLoopBackOff: runs of ``run_s`` seconds, 10 s back-off doubling up
    to 5 min between them, until ``until``."""
    runs = [Run(first, plus(first, run_s), 1)]
    delay = 10.0
    while True:
        nxt = plus(runs[-1].end, delay)
        if plus(nxt, run_s) >= until:
            return tuple(runs)
        runs.append(Run(nxt, plus(nxt, run_s), 1))
        delay = min(delay * 2, 300.0)


def after_reboot(scene: Scene, host: Host, boot: dt.datetime, first_s: float = 38.0) -> None:
    """The pods of ``host`` that were Running before the machine rebooted at ``boot``:
    kubelet re-creates their sandboxes after it starts, init containers run again and
    every container restarts (``restartCount`` +1, last state ``Unknown`` exit 255).
    Pods placed with post-boot times only get the restart counted."""
    k = 0
    for pod in scene.pods:
        status = pod["status"]
        if pod["spec"].get("nodeName") != host.name or status.get("phase") != "Running":
            continue
        mains = status["containerStatuses"]
        if not all("running" in c["state"] for c in mains):
            continue
        md = pod["metadata"]
        shift = _at(mains[0]["state"]["running"]["startedAt"]) < boot
        k += 1
        sandbox = plus(boot, first_s + 0.83 * k)
        t = plus(sandbox, 0.3)
        started: list[tuple[str, dt.datetime]] = []
        for st in status.get("initContainerStatuses", []):
            term = st["state"].get("terminated")
            if term is None:
                continue
            if shift:
                term["startedAt"] = iso(t)
                t = plus(t, 0.9)
                term["finishedAt"] = iso(t)
                t = plus(t, 0.3)
            started.append((st["name"], _at(term["startedAt"])))
        for st in mains:
            old = st["state"]["running"]["startedAt"]
            old_id = st.get("containerID", "")
            if shift:
                st["state"]["running"]["startedAt"] = iso(t)
                new_id = hexid(64, "ctr", md["uid"], st["name"], iso(boot))
                st["containerID"] = f"containerd://{new_id}"
            st["restartCount"] += 1
            st["lastState"] = {"terminated": {"containerID": old_id, "exitCode": 255,
                                              "finishedAt": iso(plus(boot, -47.0)),
                                              "reason": "Unknown", "startedAt": old}}
            started.append((st["name"], _at(st["state"]["running"]["startedAt"])))
        if not shift:
            continue
        main = max(when for _, when in started)
        for cond in status["conditions"]:
            moved = {"PodReadyToStartContainers": sandbox, "Initialized": plus(main, -0.3),
                     "Ready": plus(main, 1), "ContainersReady": plus(main, 1)}.get(cond["type"])
            if moved is not None:
                cond["lastTransitionTime"] = iso(moved)
        handler = pod["spec"].get("runtimeClassName", "runc")
        scene.sandbox_attempts.setdefault(host.name, []).append(
            SandboxAttempt(sandbox, md["name"], md["namespace"], md["uid"], handler, ok=True,
                           containers=started))


def _at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
