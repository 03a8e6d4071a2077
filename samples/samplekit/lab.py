"""The lab of the second write-up (domain.md §5), shared by its samples.

Five nodes: ``cp-1`` (control plane, no GPU) and ``gpu-a``..``gpu-d`` with
GeForce GPUs, host driver 570.195.03, Ubuntu 24.04, Kubernetes v1.37.1 with
containerd 1.6 and flannel, and GPU Operator v26.3.3 installed by Helm with
``driver.enabled=false toolkit.enabled=false``. Scenarios start from
``lab_scene`` and add what differs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

from . import gpuop, host, journal, kubeadm, oplogs
from .core import Bundle, at, number, plus
from .k8s import DEFAULT_TOLERATIONS, Obj, container, meta, node_obj, pod_spec
from .model import Gpu, Host
from .scene import LogLine, Scene, write_scene
from .workloads import Ran, Stuck, add_daemonset, add_deployment, place_pod

CLUSTER_INIT = at("2026-11-20T08:21:10Z")  # kubeadm init after containerd was reinstalled
FLANNEL = at("2026-11-20T08:22:30Z")
HELM_INSTALL = at("2026-11-20T09:27:58Z")  # --set driver.enabled=false --set toolkit.enabled=false
HELM_UPGRADE = at("2026-11-20T09:31:40Z")  # --reuse-values --set toolkit.enabled=true
OPERANDS_CREATED = plus(HELM_INSTALL, 17.2)


def gpu_uuid(seed: str) -> str:
    h = f"{number(0, 2**128 - 1, 'gpu-uuid', seed):032x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


RTX_3090 = Gpu(
    product="NVIDIA GeForce RTX 3090", architecture="Ampere", memory_mib=24576, reserved_mib=309,
    compute=(8, 6), pci_device_id="2204", pci_subsystem_id="38801462", pci_class="0300",
    vbios="94.02.42.40.5E", power_limit_w=350.0, power_min_w=100.0, power_max_w=366.0,
    idle_power_w=21.35, temp_c=34, max_clocks_mhz=(2100, 2100, 9751, 1950), pcie_gen=4,
    fan_percent=30, uuid=gpu_uuid("gpu-a"),
)  # fmt: skip
RTX_5090 = Gpu(
    product="NVIDIA GeForce RTX 5090", architecture="Blackwell", memory_mib=32607, reserved_mib=467,
    compute=(12, 0), pci_device_id="2B85", pci_subsystem_id="416F1458", pci_class="0300",
    vbios="98.02.2E.00.B4", power_limit_w=575.0, power_min_w=400.0, power_max_w=600.0,
    idle_power_w=12.72, temp_c=31, max_clocks_mhz=(3090, 3090, 14001, 3090), pcie_gen=5,
    fan_percent=0, uuid=gpu_uuid("gpu-b"),
)  # fmt: skip
# the laptops' GPU is a 3D controller (class 0302), so GFD reports mode "compute"
RTX_4070_LAPTOP = Gpu(
    product="NVIDIA GeForce RTX 4070 Laptop GPU", architecture="Ada Lovelace", memory_mib=8188,
    reserved_mib=252, compute=(8, 9), pci_device_id="2820", pci_subsystem_id="8C2F103C",
    pci_class="0302", vbios="95.06.32.00.61", power_limit_w=115.0, power_min_w=5.0,
    power_max_w=140.0, idle_power_w=3.06, temp_c=42, max_clocks_mhz=(2175, 2175, 8001, 1950),
    pcie_gen=4, fan_percent=None, uuid=gpu_uuid("gpu-c"),
)  # fmt: skip
LAPTOP = "Victus by HP Gaming Laptop 16-r0xxx"

HOSTS = [
    Host(name="cp-1", ip="192.168.10.10", pod_cidr_index=0, cpus=4, memory_ki=16311216,
         storage_ki=98831908, machine_product="OptiPlex 7070", cpu_vendor="Intel",
         boot_at=at("2026-11-20T07:58:12Z"), containerd_pid=812, kubelet_pid=1044,
         control_plane=True, extra_pci_vendors=("8086",)),
    Host(name="gpu-a", ip="192.168.10.11", pod_cidr_index=1, cpus=16, memory_ki=65759124,
         storage_ki=479079112, machine_product="MS-7C56", cpu_vendor="AMD",
         boot_at=at("2026-11-20T08:00:03Z"), containerd_pid=1234, kubelet_pid=1876,
         extra_pci_vendors=("10ec",), gpu=RTX_3090),
    Host(name="gpu-b", ip="192.168.10.12", pod_cidr_index=2, cpus=24, memory_ki=98654432,
         storage_ki=958158224, machine_product="B650M AORUS ELITE AX", cpu_vendor="AMD",
         boot_at=at("2026-11-20T08:00:05Z"), containerd_pid=1187, kubelet_pid=1822,
         extra_pci_vendors=("10ec",), gpu=RTX_5090),
    Host(name="gpu-c", ip="192.168.10.13", pod_cidr_index=3, cpus=20, memory_ki=32524612,
         storage_ki=479079112, machine_product=LAPTOP, cpu_vendor="Intel",
         boot_at=at("2026-11-20T08:01:10Z"), containerd_pid=1302, kubelet_pid=1957,
         extra_pci_vendors=("8086", "10ec"), gpu=RTX_4070_LAPTOP),
    Host(name="gpu-d", ip="192.168.10.14", pod_cidr_index=4, cpus=20, memory_ki=32524612,
         storage_ki=479079112, machine_product=LAPTOP, cpu_vendor="Intel",
         boot_at=at("2026-11-20T08:01:14Z"), containerd_pid=1298, kubelet_pid=1949,
         extra_pci_vendors=("8086", "10ec"),
         gpu=replace(RTX_4070_LAPTOP, idle_power_w=3.21, temp_c=44, uuid=gpu_uuid("gpu-d"))),
]  # fmt: skip

JOINED = {
    h.name: plus(CLUSTER_INIT, 0 if h.control_plane else 170 + 50 * i) for i, h in enumerate(HOSTS)
}
NODE_READY = {n: plus(t, 26) for n, t in JOINED.items()}
CUDA_IMAGE = "nvidia/cuda:12.8.0-base-ubuntu24.04"


def lab_scene(created_at: dt.datetime) -> Scene:
    """The cluster before the GPU Operator: kubeadm, flannel, containerd 1.6."""
    scene = Scene(hosts=HOSTS, created_at=created_at, version=kubeadm.version_json())
    kubeadm.namespaces(scene, CLUSTER_INIT, plus(HELM_INSTALL, 0.5), FLANNEL)
    kubeadm.control_plane(scene, CLUSTER_INIT)
    kubeadm.node_daemonsets(scene, CLUSTER_INIT, JOINED)
    return scene


def install_operator(scene: Scene) -> None:
    """Helm release gpu-operator: NFD (worker on every node, master, gc) and the
    RuntimeClasses and ConfigMaps the install creates."""
    nfd = gpuop.nfd_templates()
    worker_pods: dict[str, Ran | Stuck] = {}
    worker_logs: dict[str, dict[str, list[LogLine]]] = {}
    for i, h in enumerate(scene.hosts):
        start = plus(HELM_INSTALL, 2.1 + 0.4 * i)
        outcome = kubeadm.ran(start, boot=5.2)
        worker_pods[h.name] = outcome
        worker_logs[h.name] = {"worker": oplogs.nfd("worker", outcome.main_start, h.name)}
    add_daemonset(
        scene, nfd["worker"], created=plus(HELM_INSTALL, 2), pods=worker_pods, logs=worker_logs
    )
    cp = next(h for h in scene.hosts if h.control_plane)
    master = kubeadm.ran(plus(HELM_INSTALL, 2.0), boot=4.8)
    add_deployment(
        scene,
        nfd["master"],
        created=plus(HELM_INSTALL, 1.9),
        pods=[(cp.name, master)],
        logs=[{"master": oplogs.nfd("master", master.main_start, cp.name)}],
    )
    gc = kubeadm.ran(plus(HELM_INSTALL, 2.0), boot=5.5)
    add_deployment(
        scene,
        nfd["gc"],
        created=plus(HELM_INSTALL, 1.9),
        pods=[("gpu-a", gc)],
        logs=[{"gc": oplogs.nfd("gc", gc.main_start, "gpu-a")}],
    )
    scene.runtimeclasses += gpuop.runtime_classes(plus(HELM_INSTALL, 16.4))
    scene.configmaps += gpuop.configmaps(plus(HELM_INSTALL, 0.8))


def add_operator_pod(scene: Scene, log: list[LogLine]) -> None:
    outcome = kubeadm.ran(plus(HELM_INSTALL, 2.0), boot=8.0)
    cp = next(h for h in scene.hosts if h.control_plane)
    add_deployment(
        scene,
        gpuop.operator_template(),
        created=plus(HELM_INSTALL, 1.9),
        pods=[(cp.name, outcome)],
        logs=[{"gpu-operator": log}],
    )


def add_nodes(
    scene: Scene, *, gfd_at: dict[str, dt.datetime] | None, heartbeat: dt.datetime
) -> None:
    """Nodes; ``gfd_at`` (GFD ran, plugin registered) adds product labels and nvidia.com/gpu."""
    for h in scene.hosts:
        labels = {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": h.name,
            "kubernetes.io/os": "linux",
        }
        if h.control_plane:
            labels["node-role.kubernetes.io/control-plane"] = ""
            labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
        labels |= gpuop.nfd_labels(h) | gpuop.operator_labels(h)
        if gfd_at and h.gpu:
            labels |= gpuop.gfd_labels(h, gfd_at[h.name])
        mac = ":".join(f"{number(0, 255, 'vtep', h.name, i):02x}" for i in range(6))
        annotations = {
            "flannel.alpha.coreos.com/backend-data": f'{{"VNI":1,"VtepMAC":"{mac}"}}',
            "flannel.alpha.coreos.com/backend-type": "vxlan",
            "flannel.alpha.coreos.com/kube-subnet-manager": "true",
            "flannel.alpha.coreos.com/public-ip": h.ip,
            "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///var/run/containerd/containerd.sock",
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        }
        gpus = 1 if (gfd_at and h.gpu) else None
        scene.nodes.append(
            node_obj(
                h,
                created=JOINED[h.name],
                labels=labels,
                annotations=annotations,
                gpus=gpus,
                ready_at=NODE_READY[h.name],
                heartbeat=heartbeat,
            )
        )


def cuda_test_spec() -> Obj:
    c = container(
        "cuda",
        CUDA_IMAGE,
        command=["nvidia-smi"],
        resources={"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}},
    )
    return pod_spec([c], restart_policy="Never", tolerations=[dict(t) for t in DEFAULT_TOLERATIONS])


NodeStateOf = Callable[[Host, dt.datetime], host.NodeState]


def node_writer(scene: Scene, state_of: NodeStateOf) -> None:
    """Collect each GPU node's artifacts when the bundle reaches that node, so
    time-stamped output (nvidia-smi) carries the collection clock."""
    for h in scene.gpu_hosts():
        scene.node_writers[h.name] = partial(_write_node, state_of, h)


def _write_node(state_of: NodeStateOf, h: Host, bundle: Bundle) -> None:
    host.write_node(bundle, state_of(h, bundle.now()))


def containerd_started(h: Host) -> dt.datetime:
    """containerd starts with the machine (unit enabled)."""
    return plus(h.boot_at, 8.6)


def base_journals(scene: Scene, h: Host) -> tuple[journal.Journal, journal.Journal]:
    ctd = journal.Journal(h, "containerd.service")
    journal.containerd_boot(ctd, containerd_started(h), h.containerd_pid)
    kubelet = journal.Journal(h, "kubelet.service")
    journal.kubelet_start(kubelet, JOINED[h.name])
    return ctd, kubelet


def new_bundle(root: Path, created: dt.datetime) -> Bundle:
    return Bundle(
        root,
        created_at=created,
        context="lab-k8s",
        server_version=kubeadm.K8S,
        operator_namespace=gpuop.NS,
        options={"since": "168h", "log_tail_lines": 5000, "node_mode": "debug-pod", "redact": True},
        redaction_counts={"env-values": 0, "configmap-values": 0, "helm-values": 0},
    )


def emit(scene: Scene, root: Path) -> None:
    bundle = new_bundle(root, scene.created_at)
    write_scene(scene, bundle)
    bundle.write_manifest()


# ------------------------------------------------------------------------- scenarios

GPU_OPERANDS = (
    "nvidia-operator-validator",
    "nvidia-device-plugin-daemonset",
    "nvidia-dcgm-exporter",
    "gpu-feature-discovery",
)
STUCK_STATES = [
    "state-operator-validation",
    "state-device-plugin",
    "state-dcgm-exporter",
    "gpu-feature-discovery",
]


def enabled_statuses(not_ready: list[str], toolkit: str | None) -> dict[str, str]:
    out = {
        s: "ready"
        for s in (
            "pre-requisites",
            "state-operator-metrics",
            "state-operator-validation",
            "state-device-plugin",
            "state-mps-control-daemon",
            "state-dcgm-exporter",
            "gpu-feature-discovery",
            "state-mig-manager",
        )
    }
    if toolkit:
        out["state-container-toolkit"] = toolkit
    out.update({s: "notReady" for s in not_ready})
    return out


def add_cuda_validator(scene: Scene, h: Host, name: str, run: Ran) -> None:
    """The pod the validator's cuda-validation creates: nodeName set directly,
    owned like the validator DaemonSet (by the ClusterPolicy)."""
    init = container(
        "cuda-validation",
        gpuop.IMG_OPERATOR,
        command=["sh", "-c"],
        args=["vectorAdd"],
        env={"NVIDIA_VISIBLE_DEVICES": "all"},
        privileged=True,
    )
    main = container(
        "nvidia-cuda-validator",
        gpuop.IMG_OPERATOR,
        command=["sh", "-c"],
        args=["echo cuda workload validation is successful"],
        privileged=True,
    )
    spec = pod_spec(
        [main],
        init_containers=[init],
        service_account="nvidia-operator-validator",
        runtime_class="nvidia",
        restart_policy="OnFailure",
        tolerations=[dict(gpuop.GPU_TOLERATION)] + [dict(t) for t in DEFAULT_TOLERATIONS],
    )
    metadata = meta(
        "Pod",
        name,
        gpuop.NS,
        created=run.scheduled,
        labels={"app": "nvidia-cuda-validator"},
        annotations={
            "nvidia.cdi.k8s.io/container.cuda-validation": "management.nvidia.com/gpu=all"
        },
        owners=gpuop.cluster_policy_owner(),
        generate_name="nvidia-cuda-validator-",
    )
    place_pod(
        scene,
        h,
        metadata=metadata,
        spec=spec,
        outcome=run,
        via_scheduler=False,
        logs={
            "cuda-validation": oplogs.vector_add(run.init_runs[0][0]),
            "nvidia-cuda-validator": [
                LogLine(run.main_start, "cuda workload validation is successful")
            ],
        },
    )
