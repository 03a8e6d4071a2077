"""Runtime samples: the runtime gate broken by a file, and by values nobody carried.

- ``dropin-clobber``: the first write-up's incident on four GPU nodes. A registry
  drop-in named to sort after the toolkit's ``99-nvidia.toml`` replaced the whole CRI
  table on two nodes; the nvidia runtime is gone there, and the device-plugin pods
  re-created later cannot start, so those nodes stop advertising GPUs.
- ``helm-dropped-values``: a host-driver cluster upgraded without ``--reuse-values``:
  ``driver.enabled=false`` vanished, the operator deployed its driver DaemonSet, and
  the driver container crash-loops because the host driver is loaded.

Both are fleets (``samplekit/fleet.py``): the operator was installed more than a week
before collection, so only the incident's own traces fall inside the log window.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

from samples.samplekit import gpuop, journal, oplogs
from samples.samplekit.core import at, hexid, k8s_suffix, number, plus, uid
from samples.samplekit.dcgpu import A10, L40S, Load
from samples.samplekit.fleet import (
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
    owned,
    pending_pod,
    run_pod,
    server,
    toolkit_config,
    with_config_manager,
    workload_spec,
)
from samples.samplekit.k8s import (
    DAEMONSET_TOLERATIONS,
    Obj,
    condition,
    configmap_obj,
    container,
    container_status,
    daemonset_obj,
    event_core,
    event_scheduler,
    image_id,
    meta,
    namespace_obj,
    owner_ref,
    pin_to_node,
    pod_obj,
    pod_spec,
    terminated,
    waiting,
)
from samples.samplekit.oplogs import klog_line
from samples.samplekit.scene import LogLine, SandboxAttempt, Scene
from samples.samplekit.workloads import Ran, Stuck, Template, daemonset_pod_name

REGISTRY_DROPIN = "/etc/containerd/conf.d/zz-registry.toml"
REGISTRY_TEXT = (
    "version = 2\n"
    '[plugins."io.containerd.grpc.v1.cri".registry]\n'
    '  config_path = "/etc/containerd/certs.d"\n'
)
PLUGIN = "nvidia-device-plugin-daemonset"
GFD = "gpu-feature-discovery"


def busy(rig: Rig, loads: dict[int, Load]) -> Rig:
    """``rig`` with processes running on the listed GPUs."""
    slots = tuple(replace(s, load=loads.get(s.index)) for s in rig.slots)
    return replace(rig, slots=slots)


def training_load(node: str, index: int, memory_mib: int) -> Load:
    util = number(86, 99, "util", node, index)
    return Load(util=util, used_mib=int(memory_mib * 0.83) + number(0, 900, "mem", node, index),
                power_w=float(number(240, 330, "power", node, index)) + 0.37,
                temp_c=number(61, 74, "temp", node, index),
                pid=number(20000, 90000, "pid", node))


def config_manager_lines(start: dt.datetime, sidecar: bool) -> list[LogLine]:
    """config-manager (k8s-device-plugin) taking the node's config key."""
    label = "nvidia.com/device-plugin.config"
    lines = [
        klog_line("main.go:246", f"Waiting for change to '{label}' label"),
        klog_line("main.go:248", f"Label change detected: {label}="),
        klog_line("main.go:360", "No value set. Selecting default name: default"),
        klog_line("main.go:304", "Updating to config: default"),
    ]
    if sidecar:
        lines += [
            klog_line("main.go:309", "Already configured. Skipping update..."),
            klog_line("main.go:246", f"Waiting for change to '{label}' label"),
        ]
    else:
        lines.append(klog_line("main.go:312", "Successfully updated to config: default"))
    return oplogs.at_lines(start, lines, step=0.006)


# ------------------------------------------------------------------- dropin-clobber


def dropin_clobber(root: Path) -> None:
    """Registry drop-in after 99-nvidia.toml on gpu-2 and gpu-3: no nvidia runtime there,
    the re-created device plugins stuck in Init, GPUs no longer advertised."""
    t = Timeline(
        cluster_init=at("2026-11-09T13:05:20Z"),
        helm_install=at("2026-11-10T10:14:02Z"),
        created=at("2026-11-28T10:02:00Z"),
    )
    boot = at("2026-11-09T12:41:07Z")
    cp = control_plane(boot)
    servers = [
        server(f"gpu-{i}", i, L40S, 2, machine="PowerEdge R760xa", boot_at=plus(boot, 37 * i))
        for i in range(1, 5)
    ]
    memory = L40S.gpu.memory_mib
    servers[0] = busy(servers[0], {i: training_load("gpu-1", i, memory) for i in (0, 1)})
    servers[3] = busy(servers[3], {i: training_load("gpu-4", i, memory) for i in (0, 1)})
    rigs = [cp, *servers]
    affected = {"gpu-2": at("2026-11-27T16:41:09Z"), "gpu-3": at("2026-11-27T16:44:52Z")}
    deleted = at("2026-11-28T09:20:05Z")
    recreated = plus(deleted, 0.9)

    scene = fleet_scene(rigs, t)
    scene.namespaces += [
        namespace_obj("inference", plus(t.helm_install, 86400 * 2)),
        namespace_obj("ml", plus(t.helm_install, 86400 * 2)),
    ]
    config = {"name": "device-plugin-config", "default": "default"}
    templates = {
        PLUGIN: with_config_manager(gpuop.operand_templates()[PLUGIN], "nvidia-device-plugin",
                                    "default"),
        GFD: with_config_manager(gpuop.operand_templates()[GFD], GFD, "default"),
    }

    # the device-plugin pods deleted at 09:20 to make them re-read the edited config
    outcomes: dict[str, Stuck | Ran] = {}
    plugin_logs: dict[str, dict[str, list[LogLine]]] = {}
    registered: dict[str, dt.datetime] = {}
    for i, r in enumerate(servers):
        scheduled = plus(recreated, 0.04 * i)
        if r.name in affected:
            outcomes[r.name] = Stuck(scheduled)
            continue
        sandbox = plus(scheduled, 0.48)
        inits = ((plus(sandbox, 0.6), plus(sandbox, 0.7)), (plus(sandbox, 1.1), plus(sandbox, 1.5)))
        main = plus(sandbox, 2.0)
        outcomes[r.name] = Ran(scheduled, sandbox, inits, main, ready=plus(main, 1))
        plugin_logs[r.name] = {
            "toolkit-validation": [],
            "config-manager-init": config_manager_lines(inits[1][0], sidecar=False),
            "nvidia-device-plugin": oplogs.device_plugin(main),
            "config-manager": config_manager_lines(plus(main, 0.01), sidecar=True),
        }
        registered[r.name] = plus(main, 0.09)

    hosts = [r.host for r in rigs]
    ready = default_statuses()
    stuck = ready | {"state-device-plugin": "notReady"}
    op_log = oplogs.reconcile(at("2026-11-27T23:14:30Z"), hosts, ready)
    op_log += oplogs.reconcile(plus(recreated, 3.4), hosts, stuck)
    stack = Stack(
        policy_patch={"devicePlugin": {"config": config}},
        helm=[
            gpuop.helm_revision(1, "deployed", t.helm_install, "Install complete",
                                install_values(devicePlugin={"config": config}))
        ],
        outcomes={PLUGIN: outcomes},
        logs={PLUGIN: plugin_logs},
        templates=templates,
        ready=False,
        not_ready=["state-device-plugin"],
        since=plus(recreated, 3.5),
        operator_log=op_log,
    )
    install_stack(scene, rigs, t, stack)
    plugin_config = (
        "version: v1\n"
        "flags:\n"
        "  migStrategy: none\n"
        "  failOnInitError: true\n"
        "  plugin:\n"
        "    passDeviceSpecs: true\n"
        "    deviceListStrategy:\n"
        "    - cdi-annotations\n"
        "    - cdi-cri\n"
        "    deviceIDStrategy: uuid\n"
    )
    scene.configmaps.append(
        configmap_obj("device-plugin-config", gpuop.NS, {"default": plugin_config},
                      plus(t.helm_install, -312.4))
    )

    # the old plugin pods, deleted by hand: kubelet stops their containers
    tpl = templates[PLUGIN]
    for r in servers:
        old = f"{PLUGIN}-{k8s_suffix(5, 'before-delete', r.name)}"
        old_pod = pod_obj(meta("Pod", old, gpuop.NS, created=t.operands_up), tpl.spec, {})
        for c in ("nvidia-device-plugin", "config-manager"):
            scene.events.append(
                event_core(old_pod, "Killing", f"Stopping container {c}", component="kubelet",
                           host=r.name, first=plus(deleted, 0.31),
                           field_path=f"spec.containers{{{c}}}")
            )

    # workloads: gpu-1 and gpu-4 are full, gpu-2 and gpu-3 hold nothing
    big = {"nvidia.com/gpu": 2}
    run_pod(
        scene,
        servers[0],
        name="finetune-llama-0",
        namespace="ml",
        spec=workload_spec(
            gpu_container("trainer", PYTORCH, big, command=["torchrun"],
                          args=["--nproc-per-node=2", "/workspace/finetune.py",
                                "--config=/workspace/llama-8b-lora.yaml"])
        ),
        started=at("2026-11-26T18:12:40Z"),
        labels={"app": "finetune-llama", "apps.kubernetes.io/pod-index": "0",
                "statefulset.kubernetes.io/pod-name": "finetune-llama-0"},
        owners=owned("StatefulSet", "finetune-llama", "ml"),
    )
    rs = "triton-llm-7b9f6c5d48"
    run_pod(
        scene,
        servers[3],
        name=f"{rs}-kq2vx",
        namespace="inference",
        spec=workload_spec(
            gpu_container("triton", TRITON, big, command=["tritonserver"],
                          args=["--model-repository=/models", "--http-port=8000"])
        ),
        started=at("2026-11-24T08:03:11Z"),
        labels={"app": "triton-llm", "pod-template-hash": "7b9f6c5d48"},
        owners=owned("ReplicaSet", rs, "inference"),
        generate_name=f"{rs}-",
    )
    message = (
        "0/5 nodes are available: 1 node(s) had untolerated taint "
        "{node-role.kubernetes.io/control-plane: }, 4 Insufficient nvidia.com/gpu. "
        "preemption: 0/5 nodes are available: 1 Preemption is not helpful for scheduling, "
        "4 No preemption victims found for incoming pod."
    )
    trainer_created = at("2026-11-28T09:41:27Z")
    pending_pod(
        scene,
        name="trainer-0",
        namespace="ml",
        spec=workload_spec(
            gpu_container("trainer", PYTORCH, big, command=["torchrun"],
                          args=["--nproc-per-node=2", "/workspace/train.py"])
        ),
        created=trainer_created,
        message=message,
        last=at("2026-11-28T09:58:44.210Z"),
        attempts=5,
        labels={"app": "trainer", "apps.kubernetes.io/pod-index": "0",
                "statefulset.kubernetes.io/pod-name": "trainer-0"},
        owners=owned("StatefulSet", "trainer", "ml"),
    )

    # kubelet dropped nvidia.com/gpu from gpu-2 and gpu-3 five minutes after their plugin
    # went away; gpu-1 and gpu-4 advertise their two GPUs again
    resources = gpu_resources(rigs, gpu_2={}, gpu_3={})
    add_nodes(scene, rigs, t, resources=resources)

    plain = toolkit_config()
    clobbered = plain | {REGISTRY_DROPIN: REGISTRY_TEXT}

    def state(rig: Rig, now: dt.datetime) -> RigState:
        h = rig.host
        changed = affected.get(h.name)
        st = base_state(scene, rig, clobbered if changed else plain)
        k = st.kubelet_journal
        gone = plus(deleted, 0.52)
        k.daemon(gone, h.kubelet_pid, journal.klog(
            gone, "E", h.kubelet_pid, "client.go:93",
            "listAndWatch ended unexpectedly for device plugin",
            err="rpc error: code = Unavailable desc = error reading from server: EOF",
            resource="nvidia.com/gpu"))
        if h.name in registered:
            journal.kubelet_plugin_registered(k, registered[h.name])
        if changed:
            new_pid = number(212_000, 398_000, "containerd-pid", h.name, changed.isoformat())
            shims = [number(3000, 60000, "shim", h.name, i) for i in range(4)]
            # every CRI line in the journal so far came from the restarted process
            st.containerd_journal.entries = [
                (when, fields | {"_PID": str(new_pid)})
                for when, fields in st.containerd_journal.entries
            ]
            st.containerd_started = containerd_restart(st, changed, h.containerd_pid, new_pid,
                                                       shims)
            st.containerd_pid = new_pid
        return st

    node_writers(scene, rigs, state)
    emit(scene, root, "ml-prod")


def containerd_restart(st: RigState, when: dt.datetime, old_pid: int, new_pid: int,
                       shims: list[int]) -> dt.datetime:
    """``systemctl restart containerd`` after adding a drop-in: a clean stop (shims keep
    the running containers), then a fresh start that reads the new files."""
    j = st.containerd_journal
    unit = "containerd.service - containerd container runtime"
    j.systemd(when, f"Stopping {unit}...")
    for i, msg in enumerate(("Stop CRI service", "Stop CRI service", "Event monitor stopped",
                             "Stream server stopped")):
        tt = plus(when, 0.003 + 0.001 * i)
        j.daemon(tt, old_pid, journal.containerd_text(tt, "info", msg))
    for i, pid in enumerate(shims):
        j.systemd(plus(when, 0.04 + 0.001 * i), f"containerd.service: Unit process {pid} "
                  "(containerd-shim) remains running after unit stopped.", priority=5)
    j.systemd(plus(when, 0.046), "containerd.service: Deactivated successfully.")
    j.systemd(plus(when, 0.047), f"Stopped {unit}.", message_id=journal.MSG_STOPPED)
    start = plus(when, 0.05)
    journal.containerd_boot(j, start, new_pid)
    for pid in shims:
        j.systemd(plus(start, 0.0005), f"containerd.service: Found left-over process {pid} "
                  "(containerd-shim) in control group while starting unit. Ignoring.",
                  priority=4)
    return start


# -------------------------------------------------------------- helm-dropped-values

DRIVER_VERSION = "580.126.20"
DRIVER_IMAGE = f"nvcr.io/nvidia/driver:{DRIVER_VERSION}-ubuntu24.04"
MANAGER_IMAGE = "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.11.0"


def driver_template() -> Template:
    """The operator's ``nvidia-driver-daemonset`` (state-driver) for a container driver."""
    manager = container(
        "k8s-driver-manager",
        MANAGER_IMAGE,
        command=["driver-manager"],
        args=["uninstall_driver"],
        env={
            "NODE_NAME": "",
            "NVIDIA_VISIBLE_DEVICES": "void",
            "ENABLE_GPU_POD_EVICTION": "true",
            "ENABLE_AUTO_DRAIN": "false",
            "DRAIN_USE_FORCE": "false",
            "DRAIN_POD_SELECTOR_LABEL": "",
            "DRAIN_TIMEOUT_SECONDS": "0s",
            "DRAIN_DELETE_EMPTYDIR_DATA": "false",
            "OPERATOR_NAMESPACE": gpuop.NS,
        },
        privileged=True,
    )
    driver = container(
        "nvidia-driver-ctr",
        DRIVER_IMAGE,
        command=["nvidia-driver"],
        args=["init"],
        env={"KERNEL_MODULE_TYPE": "auto"},
        privileged=True,
    )
    spec = pod_spec(
        [driver],
        init_containers=[manager],
        service_account="nvidia-driver",
        priority_class="system-node-critical",
        node_selector={"nvidia.com/gpu.deploy.driver": "true"},
        tolerations=[dict(gpuop.GPU_TOLERATION)],
        host_pid=True,
    )
    selector = {"app": "nvidia-driver-daemonset"}
    return Template(
        name="nvidia-driver-daemonset",
        namespace=gpuop.NS,
        labels={**selector, **gpuop.OPERAND_LABELS},
        selector=selector,
        pod_labels={**selector, **gpuop.OPERAND_LABELS, "app.kubernetes.io/component":
                    "nvidia-driver"},
        spec=spec,
        annotations={"nvidia.com/last-applied-hash": str(number(10**9, 4 * 10**9, "driver"))},
    )


def manager_lines(start: dt.datetime) -> list[LogLine]:
    """The driver manager reading the operand deploy labels before it hands over."""
    texts = []
    for label in ("operator-validator", "container-toolkit", "device-plugin",
                  "gpu-feature-discovery", "dcgm-exporter", "dcgm", "mig-manager"):
        value = "" if label == "mig-manager" else "true"
        texts += [
            f"Getting current value of the 'nvidia.com/gpu.deploy.{label}' node label",
            f"Current value of 'nvidia.com/gpu.deploy.{label}={value}'",
        ]
    return oplogs.at_lines(start, texts, step=0.09)


def driver_run(start: dt.datetime, kernel: str) -> list[LogLine]:
    """One run of ``nvidia-driver init`` on a node whose host driver holds the GPUs:
    it cannot unload the loaded modules, exits 1, and its exit trap tries again."""
    texts = [
        "DRIVER_ARCH is x86_64",
        "",
        "========== NVIDIA Software Installer ==========",
        "",
        f"Starting installation of NVIDIA driver version {DRIVER_VERSION} for Linux kernel "
        f"version {kernel}",
        "",
        "Stopping NVIDIA persistence daemon...",
        "Unloading NVIDIA driver kernel modules...",
        "Could not unload NVIDIA driver kernel modules, driver is in use",
        "Stopping NVIDIA persistence daemon...",
        "Unloading NVIDIA driver kernel modules...",
        "Could not unload NVIDIA driver kernel modules, driver is in use",
    ]
    return oplogs.at_lines(start, texts, step=0.41)


RUN_S = 5.3  # how long one failing run of the driver container lasts


def crash_starts(first: dt.datetime, until: dt.datetime) -> list[dt.datetime]:
    """kubelet's CrashLoopBackOff: 10 s doubling up to 5 min between runs."""
    starts = [first]
    delay = 10.0
    while True:
        nxt = plus(starts[-1], RUN_S + delay)
        if nxt >= until:
            return starts
        starts.append(nxt)
        delay = min(delay * 2, 300.0)


def add_crashing_driver(scene: Scene, tpl: Template, rig: Rig, created: dt.datetime,
                        scheduled: dt.datetime) -> None:
    h = rig.host
    name = daemonset_pod_name(tpl, h.name)
    pod_uid = uid("Pod", gpuop.NS, name)
    spec = dict(tpl.spec, affinity=pin_to_node(h.name),
                tolerations=tpl.spec["tolerations"] + [dict(x) for x in DAEMONSET_TOLERATIONS])
    manager_run = (plus(scheduled, 2.3), plus(scheduled, 3.9))
    starts = crash_starts(plus(manager_run[1], 14.2), plus(scene.created_at, -3))
    last = starts[-1]
    restarts = len(starts) - 1
    full = f"{name}_{gpuop.NS}({pod_uid})"
    main_status = container_status(pod_uid, spec["containers"][0], waiting(
        "CrashLoopBackOff",
        f"back-off 5m0s restarting failed container=nvidia-driver-ctr pod={full}"),
        ready=False, restarts=restarts)
    cid = f"containerd://{hexid(64, 'ctr', pod_uid, 'nvidia-driver-ctr', restarts)}"
    main_status["containerID"] = cid
    main_status["imageID"] = image_id(DRIVER_IMAGE)
    main_status["lastState"] = terminated(last, plus(last, RUN_S), exit_code=1, reason="Error")
    main_status["lastState"]["terminated"]["containerID"] = cid
    init_status = container_status(pod_uid, spec["initContainers"][0],
                                   terminated(*manager_run), ready=True)
    ip = scene.pod_ip(h)
    status: Obj = {
        "conditions": [
            condition("PodReadyToStartContainers", True, plus(scheduled, 1.1)),
            condition("Initialized", True, manager_run[1]),
            condition("Ready", False, plus(manager_run[1], 20), "ContainersNotReady",
                      "containers with unready status: [nvidia-driver-ctr]"),
            condition("ContainersReady", False, plus(manager_run[1], 20), "ContainersNotReady",
                      "containers with unready status: [nvidia-driver-ctr]"),
            condition("PodScheduled", True, scheduled),
        ],
        "containerStatuses": [main_status],
        "hostIP": h.ip,
        "hostIPs": [{"ip": h.ip}],
        "initContainerStatuses": [init_status],
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "qosClass": "BestEffort",
        "startTime": plus(scheduled, 0.0).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    revision = k8s_suffix(10, "controller-revision", gpuop.NS, tpl.name, 1)
    metadata = meta(
        "Pod", name, gpuop.NS, created=scheduled,
        labels={**tpl.pod_labels, "controller-revision-hash": revision,
                "pod-template-generation": "1"},
        owners=[owner_ref("apps/v1", "DaemonSet", tpl.name, uid("DaemonSet", gpuop.NS,
                                                                 tpl.name))],
        generate_name=f"{tpl.name}-",
    )
    spec["nodeName"] = h.name
    pod = pod_obj(metadata, spec, status)
    scene.pods.append(pod)
    scene.events.append(event_scheduler(pod, "Scheduled", f"Successfully assigned "
                                        f"{gpuop.NS}/{name} to {h.name}", first=scheduled,
                                        action="Binding"))
    ctr = "spec.containers{nvidia-driver-ctr}"
    for reason, msg, offset in (
        ("Pulled", f'Container image "{DRIVER_IMAGE}" already present on machine', -0.2),
        ("Created", "Created container: nvidia-driver-ctr", -0.1),
        ("Started", "Started container nvidia-driver-ctr", 0.0),
    ):
        scene.events.append(event_core(pod, reason, msg, component="kubelet", host=h.name,
                                       first=plus(starts[0], offset), last=plus(last, offset),
                                       count=len(starts), field_path=ctr))
    scene.events.append(event_core(
        pod, "BackOff", f"Back-off restarting failed container nvidia-driver-ctr in pod {full}",
        component="kubelet", host=h.name, first=plus(starts[1], -9.0),
        last=plus(scene.created_at, -11.4), count=number(150, 190, "backoff", h.name),
        warning=True, field_path=ctr))
    scene.log(gpuop.NS, name, "k8s-driver-manager", manager_lines(manager_run[0]))
    scene.log(gpuop.NS, name, "nvidia-driver-ctr", driver_run(last, h.kernel))
    scene.logs.append(
        replace(scene.logs[-1], lines=driver_run(starts[-2], h.kernel), previous=True)
    )
    scene.sandbox_attempts.setdefault(h.name, []).append(
        SandboxAttempt(plus(scheduled, 0.6), name, gpuop.NS, pod_uid, "runc", ok=True,
                       containers=[("k8s-driver-manager", manager_run[0]),
                                   ("nvidia-driver-ctr", starts[0])])
    )


def helm_dropped_values(root: Path) -> None:
    """An upgrade without --reuse-values dropped driver.enabled=false: driver pods
    crash-loop on nodes whose host driver is loaded."""
    t = Timeline(
        cluster_init=at("2026-11-05T09:12:44Z"),
        helm_install=at("2026-11-05T11:40:18Z"),
        created=at("2026-11-26T15:02:00Z"),
    )
    upgrade = at("2026-11-26T14:05:12Z")
    boot = at("2026-11-05T08:52:31Z")
    cp = control_plane(boot)
    servers = [
        server(f"gpu-{i}", i, A10, 4, machine="ProLiant DL380 Gen11", boot_at=plus(boot, 29 * i),
               cpu_vendor="Intel", memory_ki=395_850_812)
        for i in range(1, 3)
    ]
    rigs = [cp, *servers]
    scene = fleet_scene(rigs, t)

    hosts = [r.host for r in rigs]
    ready = default_statuses()
    failing = ready | {"state-driver": "notReady"}
    op_log = oplogs.reconcile(at("2026-11-26T06:32:51Z"), hosts, ready)
    op_log += oplogs.reconcile(plus(upgrade, 4.1), hosts, failing)
    stack = Stack(
        policy_patch={"driver": {"enabled": True},
                      "dcgmExporter": {"serviceMonitor": {"enabled": True}}},
        helm=[
            gpuop.helm_revision(1, "superseded", t.helm_install, "Install complete",
                                install_values()),
            gpuop.helm_revision(2, "deployed", upgrade, "Upgrade complete",
                                {"dcgmExporter": {"serviceMonitor": {"enabled": True}}}),
        ],
        ready=False,
        not_ready=["state-driver"],
        since=plus(upgrade, 4.2),
        policy_generation=2,
        operator_log=op_log,
    )
    install_stack(scene, rigs, t, stack)

    tpl = driver_template()
    ds_created = plus(upgrade, 3.9)
    ds_meta = meta("DaemonSet", tpl.name, tpl.namespace, created=ds_created, labels=tpl.labels,
                   annotations={"deprecated.daemonset.template.generation": "1",
                                **tpl.annotations},
                   owners=gpuop.cluster_policy_owner(), generation=1)
    ds = daemonset_obj(ds_meta, selector=tpl.selector, template_labels=tpl.pod_labels,
                       spec=tpl.spec, desired=len(servers), ready=0)
    scene.daemonsets.append(ds)
    for i, r in enumerate(servers):
        scheduled = plus(ds_created, 0.08 + 0.03 * i)
        add_crashing_driver(scene, tpl, r, ds_created, scheduled)
        scene.events.append(event_core(ds, "SuccessfulCreate",
                                       f"Created pod: {daemonset_pod_name(tpl, r.name)}",
                                       component="daemonset-controller",
                                       first=plus(scheduled, -0.01)))

    add_nodes(scene, rigs, t, resources=gpu_resources(rigs))
    files = toolkit_config()

    def state(rig: Rig, now: dt.datetime) -> RigState:
        return base_state(scene, rig, files)

    node_writers(scene, rigs, state)
    emit(scene, root, "analytics-k8s")
