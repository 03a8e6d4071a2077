"""Scheduling samples: the number gate. Each is a small fleet (``samplekit/fleet.py``) of
two GPU servers and a control-plane node, healthy except for the one thing the sample
shows, with a GPU pod that cannot get what it asks for.

| sample | what the numbers say |
|---|---|
| ``sched-full`` | every GPU assigned; a pending pod |
| ``sched-unhealthy`` | capacity 8, allocatable 7 after an Xid 79; the pending pod needs 8 |
| ``sched-not-advertised`` | no device plugin: ``nvidia.com/gpu`` on no node |
| ``sched-too-big`` | 8 GPUs asked on 4-GPU nodes |
| ``sched-taint`` | free GPUs behind a taint the pod does not tolerate |
| ``sched-quota`` | a namespace's GPU quota used up; the API server refuses new pods |
| ``timeslicing`` | 4 slots per GPU, ``failRequestsGreaterThanOne``; a pod asking 2 is rejected |
| ``mig-mixed`` | A100 40GB with MIG ``mixed``: per-profile resources, none left of one |
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

from samples.samplekit import gpuop
from samples.samplekit.core import at, iso, k8s_suffix, number, plus
from samples.samplekit.dcgpu import A10, A100_PCIE_40GB, L4, L40S, Card, Load, mig_layout
from samples.samplekit.fleet import (
    CUDA,
    PYTORCH,
    TRITON,
    Rig,
    RigState,
    Stack,
    Timeline,
    add_nodes,
    base_state,
    control_plane,
    default_statuses,
    emit,
    fleet_scene,
    gpu_container,
    gpu_resources,
    install_stack,
    install_values,
    node_writers,
    operator_log,
    owned,
    pending_pod,
    run_pod,
    server,
    set_env,
    toolkit_config,
    with_config_manager,
    workload_spec,
)
from samples.samplekit.k8s import (
    Obj,
    condition,
    configmap_obj,
    event_core,
    event_scheduler,
    meta,
    namespace_obj,
    pod_obj,
    qos_class,
)
from samples.samplekit.oplogs import klog_line
from samples.samplekit.scene import LogLine, Scene

PLUGIN = "nvidia-device-plugin-daemonset"
GFD = "gpu-feature-discovery"
VALIDATOR = "nvidia-operator-validator"
CP_TAINT = "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"


def insufficient(resource: str = "nvidia.com/gpu", gpu_nodes: int = 2) -> str:
    """The scheduler's FitError when every GPU node lacks room for the request."""
    total = gpu_nodes + 1
    return (
        f"0/{total} nodes are available: {CP_TAINT}, {gpu_nodes} Insufficient {resource}. "
        f"preemption: 0/{total} nodes are available: 1 Preemption is not helpful for "
        f"scheduling, {gpu_nodes} No preemption victims found for incoming pod."
    )


def fleet(t: Timeline, card: Card, count: int, machine: str, *, nodes: int = 2,
          cpu_vendor: str = "AMD") -> list[Rig]:
    boot = plus(t.cluster_init, -1471.3)
    servers = [server(f"gpu-{i}", i, card, count, machine=machine, boot_at=plus(boot, 31 * i),
                      cpu_vendor=cpu_vendor) for i in range(1, nodes + 1)]
    return [control_plane(boot), *servers]


def timeline(created: str) -> Timeline:
    """A cluster built three weeks, and the operator installed sixteen days, before
    ``created``: everything from the install is outside the 168 h log window."""
    end = at(created)
    return Timeline(cluster_init=plus(end, -21 * 86400 - 3317.4),
                    helm_install=plus(end, -16 * 86400 - 5123.9), created=end)


def healthy_stack(t: Timeline, rigs: list[Rig], **kw: object) -> Stack:
    resync = [plus(t.created, -21 * 3600 - 742.3), plus(t.created, -11 * 3600 - 742.6)]
    stack = Stack(helm=[gpuop.helm_revision(1, "deployed", t.helm_install, "Install complete",
                                            install_values())],
                  operator_log=operator_log(t, rigs, default_statuses(), resync))
    for key, value in kw.items():
        setattr(stack, key, value)
    return stack


def busy(rig: Rig, indices: range | list[int], pid: int) -> Rig:
    """``rig`` with a training process on the listed GPUs."""
    memory = rig.slots[0].card.gpu.memory_mib
    power = rig.slots[0].card.gpu.power_limit_w
    loads = {
        i: Load(util=number(88, 99, "util", rig.name, i),
                used_mib=int(memory * 0.8) + number(0, 700, "mem", rig.name, i),
                power_w=round(power * number(70, 92, "pw", rig.name, i) / 100, 2),
                temp_c=number(58, 76, "temp", rig.name, i), pid=pid)
        for i in indices
    }
    return replace(rig, slots=tuple(replace(s, load=loads.get(s.index, s.load))
                                    for s in rig.slots))


def job_pod(scene: Scene, rig: Rig, job: str, namespace: str, resources: dict[str, int],
            started: dt.datetime, *, image: str = PYTORCH,
            tolerations: list[Obj] | None = None) -> Obj:
    name = f"{job}-{k8s_suffix(5, 'job', namespace, job)}"
    spec = workload_spec(gpu_container("train", image, resources, command=["torchrun"],
                                       args=["--standalone", "/workspace/run.py"]),
                         tolerations=tolerations, restart_policy="Never")
    return run_pod(scene, rig, name=name, namespace=namespace, spec=spec, started=started,
                   labels={"batch.kubernetes.io/job-name": job, "job-name": job},
                   owners=owned("Job", job, namespace, "batch/v1"), generate_name=f"{job}-")


def plain_nodes(scene: Scene, rigs: list[Rig], t: Timeline, **kw: object) -> None:
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs), **kw)


def write_plain(scene: Scene, rigs: list[Rig]) -> None:
    files = toolkit_config()
    node_writers(scene, rigs, lambda rig, _now: base_state(scene, rig, files))


def namespaces(scene: Scene, t: Timeline, *names: str) -> None:
    scene.namespaces += [namespace_obj(n, plus(t.helm_install, 3 * 86400 + 411)) for n in names]


# ----------------------------------------------------------------------- sched-full


def sched_full(root: Path) -> None:
    """Two nodes of four L40S, all eight GPUs assigned; a two-GPU job waits."""
    t = timeline("2026-11-27T16:20:00Z")
    rigs = fleet(t, L40S, 4, "PowerEdge R760xa")
    rigs[1] = busy(rigs[1], range(4), 48213)
    rigs[2] = busy(rigs[2], range(4), 51977)
    scene = fleet_scene(rigs, t)
    namespaces(scene, t, "ml")
    install_stack(scene, rigs, t, healthy_stack(t, rigs))
    job_pod(scene, rigs[1], "pretrain-8b-r3", "ml", {"nvidia.com/gpu": 4},
            at("2026-11-26T21:04:12Z"))
    job_pod(scene, rigs[2], "hpo-trial-17", "ml", {"nvidia.com/gpu": 2},
            at("2026-11-27T11:48:31Z"))
    job_pod(scene, rigs[2], "hpo-trial-18", "ml", {"nvidia.com/gpu": 2},
            at("2026-11-27T11:48:33Z"))
    created = at("2026-11-27T15:37:52Z")
    job = "eval-harness"
    pending_pod(scene, name=f"{job}-{k8s_suffix(5, 'job', 'ml', job)}", namespace="ml",
                spec=workload_spec(gpu_container("eval", PYTORCH, {"nvidia.com/gpu": 2},
                                                 command=["python3"],
                                                 args=["-m", "lm_eval", "--tasks", "mmlu"]),
                                   restart_policy="Never"),
                created=created, message=insufficient(), last=plus(t.created, -148.6),
                attempts=9, labels={"batch.kubernetes.io/job-name": job, "job-name": job},
                owners=owned("Job", job, "ml", "batch/v1"))
    plain_nodes(scene, rigs, t)
    write_plain(scene, rigs)
    emit(scene, root, "ml-train")


# ------------------------------------------------------------------ sched-unhealthy


def xid_plugin_log(when: dt.datetime, uuid: str) -> list[LogLine]:
    """The device plugin's health check on a critical Xid (v0.19): the device is
    reported unhealthy to kubelet and never comes back until the plugin restarts."""
    return [
        LogLine(when, klog_line("health.go:185", f"XidCriticalError: Xid=79 on Device={uuid}; "
                                "marking device as unhealthy.")(when)),
        LogLine(plus(when, 0.0002), klog_line("server.go:301", f"'nvidia.com/gpu' device marked "
                                              f"unhealthy: {uuid}")(plus(when, 0.0002))),
    ]


def sched_unhealthy(root: Path) -> None:
    """Xid 79 on one of gpu-1's eight L4s: capacity 8, allocatable 7; an 8-GPU job waits."""
    t = timeline("2026-11-25T10:45:00Z")
    rigs = fleet(t, L4, 8, "ThinkSystem SR665 V3")
    rigs[2] = busy(rigs[2], range(4), 77120)
    lost = rigs[1].slots[5]
    scene = fleet_scene(rigs, t)
    namespaces(scene, t, "vision")
    xid_at = at("2026-11-25T03:17:44.912331Z")
    stack = healthy_stack(t, rigs, logs={PLUGIN: {"gpu-1": {
        "toolkit-validation": [], "nvidia-device-plugin": xid_plugin_log(xid_at, lost.uuid)}}})
    install_stack(scene, rigs, t, stack)
    job_pod(scene, rigs[2], "batch-embed-1124", "vision", {"nvidia.com/gpu": 4},
            at("2026-11-24T22:10:05Z"))
    pending_pod(scene, name="train-vit-h-0", namespace="vision",
                spec=workload_spec(gpu_container("train", PYTORCH, {"nvidia.com/gpu": 8},
                                                 command=["torchrun"],
                                                 args=["--nproc-per-node=8", "train.py"])),
                created=at("2026-11-25T09:58:16Z"), message=insufficient(),
                last=plus(t.created, -211.7), attempts=11,
                labels={"app": "train-vit-h", "statefulset.kubernetes.io/pod-name":
                        "train-vit-h-0"},
                owners=owned("StatefulSet", "train-vit-h", "vision"))
    resources = gpu_resources(rigs, gpu_1={"nvidia.com/gpu": (8, 7)})
    add_nodes(scene, rigs, t, resources=resources)
    files = toolkit_config()
    serial = lost.serial
    bus = lost.pci[:-2]  # 0000:b1:00
    kernel = [
        (plus(xid_at, -0.0412), f"NVRM: GPU at PCI:{bus}: {lost.uuid}"),
        (plus(xid_at, -0.0411), f"NVRM: GPU Board Serial Number: {serial}"),
        (plus(xid_at, -0.0410), f"NVRM: Xid (PCI:{bus}): 79, pid='<unknown>', name=<unknown>, "
                                "GPU has fallen off the bus."),
        (plus(xid_at, -0.0408), f"NVRM: GPU {lost.pci}: GPU has fallen off the bus."),
        (plus(xid_at, -0.0391), "NVRM: A GPU crash dump has been created. If possible, please "
                                "run"),
        (plus(xid_at, -0.0390), "NVRM: nvidia-bug-report.sh as root to collect this data "
                                "before"),
        (plus(xid_at, -0.0389), "NVRM: the NVIDIA kernel module is unloaded."),
    ]

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        if rig.name == "gpu-1":
            st.dmesg_extra = kernel
            st.smi_slots = tuple(s for s in rig.slots if s.index != lost.index)
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "vision-k8s")


# ------------------------------------------------------------- sched-not-advertised


def sched_not_advertised(root: Path) -> None:
    """Installed with devicePlugin.enabled=false for a standalone plugin that was never
    deployed: GFD labels four A10s per node, no node advertises nvidia.com/gpu."""
    t = timeline("2026-11-24T13:30:00Z")
    rigs = fleet(t, A10, 4, "ProLiant DL380 Gen11", cpu_vendor="Intel")
    scene = fleet_scene(rigs, t)
    namespaces(scene, t, "research")
    validator = gpuop.operand_templates()[VALIDATOR]
    validator.spec["initContainers"] = [c for c in validator.spec["initContainers"]
                                        if c["name"] != "plugin-validation"]
    values = install_values(devicePlugin={"enabled": False})
    statuses = default_statuses()
    statuses.pop("state-device-plugin")
    statuses.pop("state-mps-control-daemon")
    resync = [plus(t.created, -17 * 3600 - 31.9), plus(t.created, -7 * 3600 - 32.2)]
    stack = Stack(
        policy_patch={"devicePlugin": {"enabled": False}},
        helm=[gpuop.helm_revision(1, "deployed", t.helm_install, "Install complete", values)],
        skip=frozenset({PLUGIN, "nvidia-device-plugin-mps-control-daemon"}),
        templates={VALIDATOR: validator},
        operator_log=operator_log(t, rigs, statuses, resync),
    )
    install_stack(scene, rigs, t, stack)
    pending_pod(scene, name="llm-notebook-0", namespace="research",
                spec=workload_spec(gpu_container("notebook", PYTORCH, {"nvidia.com/gpu": 1},
                                                 command=["jupyter"],
                                                 args=["lab", "--ip=0.0.0.0", "--no-browser"],
                                                 cpu="8", memory="64Gi")),
                created=at("2026-11-24T12:51:09Z"), message=insufficient(),
                last=plus(t.created, -96.3), attempts=10,
                labels={"app": "llm-notebook",
                        "statefulset.kubernetes.io/pod-name": "llm-notebook-0"},
                owners=owned("StatefulSet", "llm-notebook", "research"))
    add_nodes(scene, rigs, t, resources={r.name: {} for r in rigs if r.slots})
    files = toolkit_config()

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        st.cdi = False  # no device plugin, so no k8s.device-plugin.nvidia.com spec
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "research-k8s")


# --------------------------------------------------------------------- sched-too-big


def sched_too_big(root: Path) -> None:
    """A pod asking for 8 GPUs on nodes of 4 L40S each: it can never fit."""
    t = timeline("2026-11-23T08:40:00Z")
    rigs = fleet(t, L40S, 4, "PowerEdge R760xa")
    rigs[1] = busy(rigs[1], [0, 1], 23518)
    scene = fleet_scene(rigs, t)
    namespaces(scene, t, "ml")
    install_stack(scene, rigs, t, healthy_stack(t, rigs))
    job_pod(scene, rigs[1], "distill-3b", "ml", {"nvidia.com/gpu": 2},
            at("2026-11-22T19:33:48Z"))
    pending_pod(scene, name="train-70b-0", namespace="ml",
                spec=workload_spec(gpu_container("train", PYTORCH, {"nvidia.com/gpu": 8},
                                                 command=["torchrun"],
                                                 args=["--nproc-per-node=8", "train.py",
                                                       "--model=70b"], cpu="96",
                                                 memory="900Gi")),
                created=at("2026-11-23T07:02:44Z"), message=insufficient(),
                last=plus(t.created, -302.2), attempts=19,
                labels={"app": "train-70b", "statefulset.kubernetes.io/pod-name": "train-70b-0"},
                owners=owned("StatefulSet", "train-70b", "ml"))
    plain_nodes(scene, rigs, t)
    write_plain(scene, rigs)
    emit(scene, root, "ml-train")


# ----------------------------------------------------------------------- sched-taint

DEDICATED = {"effect": "NoSchedule", "key": "dedicated", "operator": "Equal", "value": "gpu"}


def sched_taint(root: Path) -> None:
    """GPU nodes tainted dedicated=gpu:NoSchedule; the operator tolerates it, a new
    research pod does not, and waits although six GPUs are free."""
    t = timeline("2026-11-26T11:15:00Z")
    rigs = fleet(t, L4, 4, "PowerEdge R760", cpu_vendor="Intel")
    rigs[1] = busy(rigs[1], [0, 1], 60331)
    scene = fleet_scene(rigs, t)
    namespaces(scene, t, "ml", "research")
    values = install_values(daemonsets={"tolerations": [dict(DEDICATED)]},
                            **{"node-feature-discovery": {
                                "worker": {"tolerations": [dict(DEDICATED)]},
                                "gc": {"tolerations": [dict(DEDICATED)]}}})
    stack = healthy_stack(t, rigs, tolerations=[dict(DEDICATED)],
                          helm=[gpuop.helm_revision(1, "deployed", t.helm_install,
                                                    "Install complete", values)])
    install_stack(scene, rigs, t, stack)
    run_pod(scene, rigs[1], name="asr-serve-0", namespace="ml",
            spec=workload_spec(gpu_container("triton", TRITON, {"nvidia.com/gpu": 2},
                                             command=["tritonserver"],
                                             args=["--model-repository=/models"]),
                               tolerations=[dict(DEDICATED)]),
            started=at("2026-11-25T17:22:40Z"),
            labels={"app": "asr-serve", "statefulset.kubernetes.io/pod-name": "asr-serve-0"},
            owners=owned("StatefulSet", "asr-serve", "ml"))
    message = ("0/3 nodes are available: 1 node(s) had untolerated taint "
               "{node-role.kubernetes.io/control-plane: }, 2 node(s) had untolerated taint "
               "{dedicated: gpu}. preemption: 0/3 nodes are available: 3 Preemption is not "
               "helpful for scheduling.")
    pending_pod(scene, name="whisper-finetune-0", namespace="research",
                spec=workload_spec(gpu_container("train", PYTORCH, {"nvidia.com/gpu": 1},
                                                 command=["python3"],
                                                 args=["finetune.py", "--model=whisper-large"],
                                                 cpu="8", memory="64Gi")),
                created=at("2026-11-26T10:31:27Z"), message=message,
                last=plus(t.created, -187.0), attempts=8,
                labels={"app": "whisper-finetune",
                        "statefulset.kubernetes.io/pod-name": "whisper-finetune-0"},
                owners=owned("StatefulSet", "whisper-finetune", "research"))
    taint = [{"effect": "NoSchedule", "key": "dedicated", "value": "gpu"}]
    plain_nodes(scene, rigs, t, taints={r.name: taint for r in rigs if r.slots})
    write_plain(scene, rigs)
    emit(scene, root, "shared-gpu")


# ----------------------------------------------------------------------- sched-quota


def quota_obj(namespace: str, name: str, hard: dict[str, str], used: dict[str, str],
              created: dt.datetime) -> Obj:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": meta("ResourceQuota", name, namespace, created=created),
            "spec": {"hard": dict(hard)}, "status": {"hard": dict(hard), "used": dict(used)}}


def sched_quota(root: Path) -> None:
    """team-a's quota of 4 GPUs is used by two jobs; the API server refuses the pods of
    a third while gpu-2 has four GPUs free."""
    t = timeline("2026-11-24T17:05:00Z")
    rigs = fleet(t, A10, 4, "ProLiant DL380 Gen11", cpu_vendor="Intel")
    rigs[1] = busy(rigs[1], range(4), 31877)
    scene = fleet_scene(rigs, t)
    namespaces(scene, t, "team-a")
    install_stack(scene, rigs, t, healthy_stack(t, rigs))
    for job, started in (("nightly-train-1124", at("2026-11-24T02:00:07Z")),
                         ("ablation-2", at("2026-11-24T14:12:55Z"))):
        job_pod(scene, rigs[1], job, "team-a", {"nvidia.com/gpu": 2}, started)
    hard = {"limits.nvidia.com/gpu": "4", "requests.cpu": "96", "requests.memory": "768Gi",
            "requests.nvidia.com/gpu": "4"}
    used = {"limits.nvidia.com/gpu": "4", "requests.cpu": "32", "requests.memory": "256Gi",
            "requests.nvidia.com/gpu": "4"}
    scene.resourcequotas.append(quota_obj("team-a", "gpu-quota", hard, used,
                                          plus(t.helm_install, 3 * 86400 + 420)))
    job = "ablation-3"
    job_ref = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": meta("Job", job, "team-a", created=at("2026-11-24T16:21:40Z"))}
    refused = (f'Error creating: pods "{job}-{k8s_suffix(5, "job", "team-a", job)}" is '
               "forbidden: exceeded quota: gpu-quota, requested: limits.nvidia.com/gpu=2,"
               "requests.nvidia.com/gpu=2, used: limits.nvidia.com/gpu=4,"
               "requests.nvidia.com/gpu=4, limited: limits.nvidia.com/gpu=4,"
               "requests.nvidia.com/gpu=4")
    scene.events.append(event_core(job_ref, "FailedCreate", refused,
                                   component="job-controller",
                                   first=at("2026-11-24T16:21:40Z"),
                                   last=plus(t.created, -64.0), count=13, warning=True))
    plain_nodes(scene, rigs, t)
    write_plain(scene, rigs)
    emit(scene, root, "team-gpu")


# ----------------------------------------------------------------------- timeslicing

SLICING = (
    "version: v1\n"
    "flags:\n"
    "  migStrategy: none\n"
    "sharing:\n"
    "  timeSlicing:\n"
    "    failRequestsGreaterThanOne: true\n"
    "    resources:\n"
    "    - name: nvidia.com/gpu\n"
    "      replicas: 4\n"
)


def rejected_pod(scene: Scene, rig: Rig, rs: str, namespace: str, index: int,
                 created: dt.datetime, spec: Obj) -> None:
    """A pod kubelet refused at admission: the device plugin's Allocate failed."""
    name = f"{rs}-{k8s_suffix(5, 'rs', namespace, rs, index)}"
    metadata = meta("Pod", name, namespace, created=created,
                    labels={"app": rs.rsplit("-", 1)[0], "pod-template-hash": rs.rsplit("-")[-1]},
                    owners=owned("ReplicaSet", rs, namespace), generate_name=f"{rs}-")
    error = ('rpc error: code = Unknown desc = invalid allocation request for "nvidia.com/gpu": '
             "invalid request: maximum request size for shared resources is 1; found 2")
    spec = dict(spec, nodeName=rig.name)
    status = {
        "conditions": [condition("PodScheduled", True, created)],
        "message": f"Pod was rejected: Allocate failed due to {error}, which is unexpected",
        "phase": "Failed",
        "qosClass": qos_class(spec["containers"]),
        "reason": "UnexpectedAdmissionError",
        "startTime": iso(plus(created, 0.4)),
    }
    pod = pod_obj(metadata, spec, status)
    scene.pods.append(pod)
    scene.events.append(event_scheduler(pod, "Scheduled", f"Successfully assigned {namespace}/"
                                        f"{name} to {rig.name}", first=plus(created, 0.02),
                                        action="Binding"))
    scene.events.append(event_core(pod, "UnexpectedAdmissionError",
                                   f"Allocate failed due to {error}, which is unexpected",
                                   component="kubelet", host=rig.name,
                                   first=plus(created, 0.41), warning=True))
    scene.log(namespace, name, spec["containers"][0]["name"], [])


def timeslicing(root: Path) -> None:
    """Time-slicing with 4 replicas and failRequestsGreaterThanOne: nodes advertise 16
    slots for 4 A10s; a Deployment asking for 2 slots is rejected at admission."""
    t = timeline("2026-11-26T09:40:00Z")
    rigs = fleet(t, A10, 4, "ProLiant DL380 Gen11", cpu_vendor="Intel")
    rigs[1] = busy(rigs[1], [0, 1], 8812)
    rigs[2] = busy(rigs[2], [0], 9120)
    scene = fleet_scene(rigs, t)
    namespaces(scene, t, "notebooks", "render")
    config = {"name": "time-slicing-config", "default": "any"}
    templates = gpuop.operand_templates()
    stack = healthy_stack(
        t, rigs,
        policy_patch={"devicePlugin": {"config": config}},
        helm=[gpuop.helm_revision(1, "deployed", t.helm_install, "Install complete",
                                  install_values(devicePlugin={"config": config}))],
        templates={PLUGIN: with_config_manager(templates[PLUGIN], "nvidia-device-plugin", "any"),
                   GFD: with_config_manager(templates[GFD], GFD, "any")},
    )
    install_stack(scene, rigs, t, stack)
    scene.configmaps.append(configmap_obj("time-slicing-config", gpuop.NS, {"any": SLICING},
                                          plus(t.helm_install, -95.2)))
    for i, (rig, user, started) in enumerate((
            (rigs[1], "alice", at("2026-11-25T08:12:09Z")),
            (rigs[1], "bob", at("2026-11-25T13:40:51Z")),
            (rigs[2], "chen", at("2026-11-26T07:58:20Z")))):
        spec = workload_spec(gpu_container("notebook", PYTORCH, {"nvidia.com/gpu": 1},
                                           command=["jupyter"], args=["lab", "--ip=0.0.0.0"],
                                           cpu="4", memory="32Gi"))
        run_pod(scene, rig, name=f"nb-{user}-0", namespace="notebooks", spec=spec,
                started=plus(started, i * 0.01),
                labels={"app": f"nb-{user}", "statefulset.kubernetes.io/pod-name":
                        f"nb-{user}-0"},
                owners=owned("StatefulSet", f"nb-{user}", "notebooks"))
    rs = "sdxl-render-5f7d9c8b6d"
    spec = workload_spec(gpu_container("render", TRITON, {"nvidia.com/gpu": 2},
                                       command=["tritonserver"],
                                       args=["--model-repository=/models/sdxl"]))
    first = plus(t.created, -1544.8)
    for i in range(3):
        rejected_pod(scene, rigs[2], rs, "render", i, plus(first, 0.9 * i), spec)
    shared = {"nvidia.com/gpu": (16, 16)}
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, gpu_1=shared, gpu_2=shared),
              labels={r.name: {"nvidia.com/gpu.replicas": "4",
                               "nvidia.com/gpu.sharing-strategy": "time-slicing",
                               "nvidia.com/gpu.product": "NVIDIA-A10-SHARED"}
                      for r in rigs if r.slots})
    write_plain(scene, rigs)
    emit(scene, root, "shared-a10")


# ------------------------------------------------------------------------- mig-mixed

MIG_CONFIG = (
    "version: v1\n"
    "mig-configs:\n"
    "  all-disabled:\n"
    "  - devices: all\n"
    "    mig-enabled: false\n"
    "  3g-4x1g:\n"
    "  - devices: all\n"
    "    mig-enabled: true\n"
    "    mig-devices:\n"
    '      "1g.5gb": 4\n'
    '      "3g.20gb": 1\n'
)


def mig_labels(count: int) -> dict[str, str]:
    """GFD labels of a node whose GPUs each hold 1 x 3g.20gb and 4 x 1g.5gb (mixed)."""
    out = {"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": "3g-4x1g",
           "nvidia.com/mig.config.state": "success", "nvidia.com/mig.capable": "true"}
    for profile, per_gpu, (sms, mem, copy, dec) in (
            ("1g.5gb", 4, (14, 4864, 1, 0)), ("3g.20gb", 1, (42, 19968, 3, 2))):
        gi, ci = profile[0], profile[0]
        base = f"nvidia.com/mig-{profile}"
        out |= {f"{base}.count": str(per_gpu * count), f"{base}.memory": str(mem),
                f"{base}.multiprocessors": str(sms), f"{base}.slices.gi": gi,
                f"{base}.slices.ci": ci, f"{base}.engines.copy": str(copy),
                f"{base}.engines.decoder": str(dec), f"{base}.engines.encoder": "0",
                f"{base}.engines.jpeg": "1" if profile == "3g.20gb" else "0",
                f"{base}.engines.ofa": "1" if profile == "3g.20gb" else "0"}
    return out


def mig_mixed(root: Path) -> None:
    """A100 40GB nodes in MIG mixed strategy: nvidia.com/mig-1g.5gb and
    nvidia.com/mig-3g.20gb advertised, every 3g.20gb taken, nvidia.com/gpu on no node."""
    t = timeline("2026-11-27T13:10:00Z")
    rigs = fleet(t, A100_PCIE_40GB, 4, "PowerEdge R750xa")
    layout = mig_layout({"3g.20gb": 1, "1g.5gb": 4})
    for i in (1, 2):
        rigs[i] = replace(rigs[i], slots=tuple(replace(s, mig=layout) for s in rigs[i].slots))
    scene = fleet_scene(rigs, t)
    namespaces(scene, t, "ml")
    templates = gpuop.operand_templates()
    mixed = {
        PLUGIN: set_env(templates[PLUGIN], "nvidia-device-plugin", MIG_STRATEGY="mixed"),
        GFD: set_env(templates[GFD], GFD, MIG_STRATEGY="mixed"),
        VALIDATOR: set_env(templates[VALIDATOR], "plugin-validation", MIG_STRATEGY="mixed"),
    }
    policy = {"mig": {"strategy": "mixed"},
              "migManager": {"config": {"name": "custom-mig-config", "default": "all-disabled"}}}
    values = install_values(mig={"strategy": "mixed"},
                            migManager={"config": {"name": "custom-mig-config"}})
    stack = healthy_stack(t, rigs, policy_patch=policy, templates=mixed,
                          helm=[gpuop.helm_revision(1, "deployed", t.helm_install,
                                                    "Install complete", values)])
    install_stack(scene, rigs, t, stack)
    scene.configmaps.append(configmap_obj("custom-mig-config", gpuop.NS,
                                          {"config.yaml": MIG_CONFIG},
                                          plus(t.helm_install, -61.7)))
    for i, (rig, n, started) in enumerate((
            (rigs[1], "a", at("2026-11-24T10:02:11Z")),
            (rigs[1], "b", at("2026-11-24T10:02:12Z")),
            (rigs[2], "c", at("2026-11-24T10:02:12Z")),
            (rigs[2], "d", at("2026-11-24T10:02:13Z")))):
        rs = "llm-serve-84c6d9b7f5"
        spec = workload_spec(gpu_container("vllm", "docker.io/vllm/vllm-openai:v0.11.2",
                                           {"nvidia.com/mig-3g.20gb": 2},
                                           command=["vllm"], args=["serve", "/models/llama-8b",
                                                                   "--tensor-parallel-size=2"]))
        run_pod(scene, rig, name=f"{rs}-{k8s_suffix(5, 'serve', n)}", namespace="ml", spec=spec,
                started=plus(started, 0.1 * i), labels={"app": "llm-serve",
                                                        "pod-template-hash": "84c6d9b7f5"},
                owners=owned("ReplicaSet", rs, "ml"), generate_name=f"{rs}-")
    run_pod(scene, rigs[1], name="nb-dana-0", namespace="ml",
            spec=workload_spec(gpu_container("notebook", PYTORCH, {"nvidia.com/mig-1g.5gb": 1},
                                             command=["jupyter"], args=["lab"], cpu="4",
                                             memory="32Gi")),
            started=at("2026-11-26T15:44:02Z"),
            labels={"app": "nb-dana", "statefulset.kubernetes.io/pod-name": "nb-dana-0"},
            owners=owned("StatefulSet", "nb-dana", "ml"))
    pending_pod(scene, name="llm-eval-0", namespace="ml",
                spec=workload_spec(gpu_container("eval", "docker.io/vllm/vllm-openai:v0.11.2",
                                                 {"nvidia.com/mig-3g.20gb": 1},
                                                 command=["python3"],
                                                 args=["-m", "lm_eval", "--tasks", "gsm8k"])),
                created=at("2026-11-27T12:21:30Z"),
                message=insufficient("nvidia.com/mig-3g.20gb"), last=plus(t.created, -251.0),
                attempts=10, labels={"app": "llm-eval",
                                     "statefulset.kubernetes.io/pod-name": "llm-eval-0"},
                owners=owned("StatefulSet", "llm-eval", "ml"))
    pending_pod(scene, name="cuda-smoke", namespace="default",
                spec=workload_spec(gpu_container("cuda", CUDA, {"nvidia.com/gpu": 1},
                                                 command=["nvidia-smi"], args=["-L"], cpu="1",
                                                 memory="1Gi"), restart_policy="Never"),
                created=at("2026-11-27T12:57:41Z"), message=insufficient(),
                last=plus(t.created, -311.9), attempts=3)
    per_node = {"nvidia.com/mig-1g.5gb": (16, 16), "nvidia.com/mig-3g.20gb": (4, 4)}
    add_nodes(scene, rigs, t, resources=gpu_resources(rigs, gpu_1=per_node, gpu_2=per_node),
              labels={r.name: mig_labels(len(r.slots)) for r in rigs if r.slots})
    files = toolkit_config()

    def state(rig: Rig, _now: dt.datetime) -> RigState:
        st = base_state(scene, rig, files)
        st.cdi = False  # the mixed-strategy plugin's per-profile specs are not modelled
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "a100-mig")

