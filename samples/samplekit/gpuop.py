"""The NVIDIA GPU Operator stack as Helm chart v26.3.3 deploys it.

Templates follow the operator's assets (``assets/state-*/0500_daemonset.yaml``)
after its transforms: validator image for the ``*-validation`` init containers,
``runtimeClassName: nvidia`` on every operand except the toolkit, the chart's
operand labels. Log generators write the lines each component prints.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from .core import hexid, number, uid
from .k8s import Obj, configmap_obj, container, meta, owner_ref, pod_spec, runtime_class_obj
from .model import Gpu, Host
from .workloads import Template

NS = "gpu-operator"
VERSION = "v26.3.3"
CHART = f"gpu-operator-{VERSION}"
IMG_OPERATOR = f"nvcr.io/nvidia/gpu-operator:{VERSION}"  # also the validator since 25.10
IMG_PLUGIN = "nvcr.io/nvidia/k8s-device-plugin:v0.19.3"  # device plugin and GFD
IMG_TOOLKIT = "nvcr.io/nvidia/k8s/container-toolkit:v1.19.1"
IMG_DCGM_EXPORTER = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless"
IMG_MIG_MANAGER = "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.14.2"
IMG_NFD = "registry.k8s.io/nfd/node-feature-discovery:v0.18.3"

OPERAND_LABELS = {"app.kubernetes.io/managed-by": "gpu-operator", "helm.sh/chart": CHART}
GPU_TOLERATION = {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}
CONTROL_PLANE_TOLERATION = {
    "effect": "NoSchedule",
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
}
WAIT_FOR_TOOLKIT = (
    "until [ -f /run/nvidia/validations/toolkit-ready ]; do echo waiting for nvidia "
    "container stack to be setup; sleep 5; done"
)


def cluster_policy_uid() -> str:
    return uid("ClusterPolicy", "", "cluster-policy")


def cluster_policy_owner() -> list[Obj]:
    return [owner_ref("nvidia.com/v1", "ClusterPolicy", "cluster-policy", cluster_policy_uid())]


# ------------------------------------------------------------------------- operands


def _validation(name: str, **env: str) -> Obj:
    return container(
        name,
        IMG_OPERATOR,
        command=["sh", "-c"],
        args=["nvidia-validator"],
        env=env,
        privileged=True,
    )


def _wait_for_toolkit() -> Obj:
    return container(
        "toolkit-validation",
        IMG_OPERATOR,
        command=["sh", "-c"],
        args=[WAIT_FOR_TOOLKIT],
        privileged=True,
    )


def _operand(
    name: str,
    containers: list[Obj],
    inits: list[Obj],
    selector_labels: dict[str, str],
    node_selector: dict[str, str],
    service_account: str,
    *,
    runtime_class: bool = True,
    host_pid: bool = False,
) -> Template:
    pod_labels = {**selector_labels, **OPERAND_LABELS}
    spec = pod_spec(
        containers,
        init_containers=inits,
        service_account=service_account,
        priority_class="system-node-critical",
        runtime_class="nvidia" if runtime_class else None,
        node_selector=node_selector,
        tolerations=[dict(GPU_TOLERATION)],
        host_pid=host_pid,
    )
    return Template(
        name=name,
        namespace=NS,
        labels={**selector_labels, **OPERAND_LABELS},
        selector=selector_labels,
        pod_labels=pod_labels,
        spec=spec,
        annotations={
            "nvidia.com/last-applied-hash": str(number(10**9, 4 * 10**9, name)),
            "openshift.io/scc": "hostmount-anyuid",
        },
    )


def operand_templates() -> dict[str, Template]:
    """The operand DaemonSets of a ClusterPolicy with CDI on and MIG strategy single."""
    deploy = "nvidia.com/gpu.deploy."
    validator_env = {
        "VALIDATOR_IMAGE": IMG_OPERATOR,
        "VALIDATOR_IMAGE_PULL_POLICY": "IfNotPresent",
        "VALIDATOR_RUNTIME_CLASS": "nvidia",
    }
    t = [
        _operand(
            "nvidia-operator-validator",
            [
                container(
                    "nvidia-operator-validator",
                    IMG_OPERATOR,
                    command=["sh", "-c"],
                    args=["echo all validations are successful; while true; do sleep 86400; done"],
                    privileged=True,
                )
            ],
            [
                _validation("driver-validation", WITH_WAIT="true", COMPONENT="driver"),
                _validation(
                    "toolkit-validation",
                    NVIDIA_VISIBLE_DEVICES="all",
                    WITH_WAIT="false",
                    COMPONENT="toolkit",
                ),
                _validation(
                    "cuda-validation", WITH_WAIT="false", COMPONENT="cuda", **validator_env
                ),
                _validation(
                    "plugin-validation",
                    COMPONENT="plugin",
                    WITH_WAIT="false",
                    WITH_WORKLOAD="false",
                    MIG_STRATEGY="single",
                    **validator_env,
                ),
            ],
            {"app": "nvidia-operator-validator", "app.kubernetes.io/part-of": "gpu-operator"},
            {deploy + "operator-validator": "true"},
            "nvidia-operator-validator",
        ),
        _operand(
            "nvidia-container-toolkit-daemonset",
            [
                container(
                    "nvidia-container-toolkit-ctr",
                    IMG_TOOLKIT,
                    command=["/bin/sh", "-c"],
                    args=["/bin/entrypoint.sh"],
                    privileged=True,
                    env={
                        "ROOT": "/usr/local/nvidia",
                        "NVIDIA_CONTAINER_RUNTIME_MODES_CDI_DEFAULT_KIND": (
                            "management.nvidia.com/gpu"
                        ),
                        "NVIDIA_VISIBLE_DEVICES": "void",
                        "TOOLKIT_PID_FILE": "/run/nvidia/toolkit/toolkit.pid",
                        "CDI_ENABLED": "true",
                        "NVIDIA_RUNTIME_SET_AS_DEFAULT": "false",
                        "NVIDIA_CONTAINER_RUNTIME_MODE": "cdi",
                        "RUNTIME": "containerd",
                        "CONTAINERD_RUNTIME_CLASS": "nvidia",
                        "RUNTIME_CONFIG": "/runtime/config-dir/config.toml",
                        "CONTAINERD_CONFIG": "/runtime/config-dir/config.toml",
                        "RUNTIME_DROP_IN_CONFIG": "/runtime/config-dir.d/99-nvidia.toml",
                        "RUNTIME_DROP_IN_CONFIG_HOST_PATH": "/etc/containerd/conf.d/99-nvidia.toml",
                        "RUNTIME_SOCKET": "/runtime/sock-dir/containerd.sock",
                        "CONTAINERD_SOCKET": "/runtime/sock-dir/containerd.sock",
                    },
                )
            ],
            [_validation("driver-validation", WITH_WAIT="true", COMPONENT="driver")],
            {"app": "nvidia-container-toolkit-daemonset"},
            {deploy + "container-toolkit": "true"},
            "nvidia-container-toolkit",
            runtime_class=False,
            host_pid=True,
        ),
        _operand(
            "nvidia-device-plugin-daemonset",
            [
                container(
                    "nvidia-device-plugin",
                    IMG_PLUGIN,
                    command=["/bin/sh", "-c"],
                    args=["/bin/entrypoint.sh"],
                    privileged=True,
                    env={
                        "PASS_DEVICE_SPECS": "true",
                        "FAIL_ON_INIT_ERROR": "true",
                        "DEVICE_LIST_STRATEGY": "cdi-annotations,cdi-cri",
                        "DEVICE_ID_STRATEGY": "uuid",
                        "NVIDIA_VISIBLE_DEVICES": "all",
                        "NVIDIA_DRIVER_CAPABILITIES": "all",
                        "MPS_ROOT": "/run/nvidia/mps",
                        "MIG_STRATEGY": "single",
                        "NVIDIA_MIG_MONITOR_DEVICES": "all",
                        "CDI_ANNOTATION_PREFIX": "nvidia.cdi.k8s.io/",
                        "NVIDIA_CDI_HOOK_PATH": "/usr/local/nvidia/toolkit/nvidia-cdi-hook",
                    },
                )
            ],
            [_wait_for_toolkit()],
            {"app": "nvidia-device-plugin-daemonset"},
            {deploy + "device-plugin": "true"},
            "nvidia-device-plugin",
        ),
        _operand(
            "nvidia-device-plugin-mps-control-daemon",
            [
                container(
                    "mps-control-daemon-ctr",
                    IMG_PLUGIN,
                    command=["mps-control-daemon"],
                    privileged=True,
                    env={"NODE_NAME": "", "MIG_STRATEGY": "single"},
                )
            ],
            [
                _wait_for_toolkit(),
                container(
                    "mps-control-daemon-mounts",
                    IMG_PLUGIN,
                    command=["mps-control-daemon", "mount-shm"],
                    privileged=True,
                ),
            ],
            {"app": "nvidia-device-plugin-mps-control-daemon"},
            {deploy + "device-plugin": "true", "nvidia.com/mps.capable": "true"},
            "nvidia-device-plugin",
            host_pid=True,
        ),
        _operand(
            "nvidia-dcgm-exporter",
            [
                container(
                    "nvidia-dcgm-exporter",
                    IMG_DCGM_EXPORTER,
                    privileged=True,
                    env={
                        "DCGM_EXPORTER_LISTEN": ":9400",
                        "DCGM_EXPORTER_KUBERNETES": "true",
                        "DCGM_EXPORTER_COLLECTORS": "/etc/dcgm-exporter/dcp-metrics-included.csv",
                    },
                    ports=[{"containerPort": 9400, "name": "metrics", "protocol": "TCP"}],
                )
            ],
            [_wait_for_toolkit()],
            {"app": "nvidia-dcgm-exporter"},
            {deploy + "dcgm-exporter": "true"},
            "nvidia-dcgm-exporter",
        ),
        _operand(
            "gpu-feature-discovery",
            [
                container(
                    "gpu-feature-discovery",
                    IMG_PLUGIN,
                    command=["/bin/sh", "-c"],
                    args=["/bin/entrypoint.sh"],
                    privileged=True,
                    env={
                        "GFD_SLEEP_INTERVAL": "60s",
                        "GFD_FAIL_ON_INIT_ERROR": "true",
                        "MIG_STRATEGY": "single",
                        "NVIDIA_MIG_MONITOR_DEVICES": "all",
                    },
                )
            ],
            [_wait_for_toolkit()],
            {"app": "gpu-feature-discovery", "app.kubernetes.io/part-of": "nvidia-gpu"},
            {deploy + "gpu-feature-discovery": "true"},
            "nvidia-gpu-feature-discovery",
        ),
        _operand(
            "nvidia-mig-manager",
            [
                container(
                    "nvidia-mig-manager",
                    IMG_MIG_MANAGER,
                    privileged=True,
                    env={
                        "CONFIG_FILE": "/mig-parted-config/config.yaml",
                        "DEFAULT_GPU_CLIENTS_NAMESPACE": NS,
                    },
                )
            ],
            [_wait_for_toolkit()],
            {"app": "nvidia-mig-manager"},
            {deploy + "mig-manager": "true"},
            "nvidia-mig-manager",
            host_pid=True,
        ),
    ]
    return {tpl.name: tpl for tpl in t}


def operator_template() -> Template:
    selector = {"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"}
    chart_labels = {
        "app.kubernetes.io/instance": "gpu-operator",
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/name": "gpu-operator",
        "app.kubernetes.io/version": VERSION,
        "helm.sh/chart": CHART,
    }
    labels = {
        **chart_labels,
        "app.kubernetes.io/component": "gpu-operator",
        "nvidia.com/gpu-driver-upgrade-drain.skip": "true",
    }
    c = container(
        "gpu-operator",
        IMG_OPERATOR,
        command=["gpu-operator"],
        args=["--leader-elect", "--zap-time-encoding=epoch", "--zap-log-level=info"],
        env={
            "WATCH_NAMESPACE": "",
            "DRIVER_MANAGER_IMAGE": "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.11.0",
        },
        resources={
            "limits": {"cpu": "500m", "memory": "350Mi"},
            "requests": {"cpu": "200m", "memory": "100Mi"},
        },
        ports=[{"containerPort": 8080, "name": "metrics", "protocol": "TCP"}],
    )
    spec = pod_spec(
        [c],
        service_account="gpu-operator",
        priority_class="system-node-critical",
        tolerations=[dict(CONTROL_PLANE_TOLERATION)],
    )
    return Template(
        name="gpu-operator",
        namespace=NS,
        labels=labels,
        selector=selector,
        pod_labels={**labels, "app": "gpu-operator"},
        spec=spec,
        annotations={
            "meta.helm.sh/release-name": "gpu-operator",
            "meta.helm.sh/release-namespace": NS,
        },
    )


def nfd_templates() -> dict[str, Template]:
    """The node-feature-discovery sub-chart (0.18.3) under release gpu-operator."""
    base = {
        "app.kubernetes.io/instance": "gpu-operator",
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/name": "node-feature-discovery",
        "app.kubernetes.io/version": "v0.18.3",
        "helm.sh/chart": "node-feature-discovery-0.18.3",
    }
    out = {}
    for role, args, res, tolerate in (
        (
            "master",
            ["-crd-controller=true", "-metrics=8081", "-grpc-health=8082"],
            ({"memory": "4Gi"}, {"cpu": "100m", "memory": "128Mi"}),
            True,
        ),
        (
            "worker",
            ["-feature-gates=NodeFeatureGroupAPI=false", "-metrics=8081", "-grpc-health=8082"],
            ({"memory": "512Mi"}, {"cpu": "5m", "memory": "64Mi"}),
            True,
        ),
        ("gc", ["-gc-interval=1h"], ({"memory": "1Gi"}, {"cpu": "10m", "memory": "128Mi"}), False),
    ):
        name = f"gpu-operator-node-feature-discovery-{role}"
        selector = {
            "app.kubernetes.io/instance": "gpu-operator",
            "app.kubernetes.io/name": "node-feature-discovery",
            "role": role,
        }
        c = container(
            role,
            IMG_NFD,
            command=[f"nfd-{role}"],
            args=args,
            resources={"limits": res[0], "requests": res[1]},
            env={"NODE_NAME": "", "POD_NAMESPACE": NS} if role != "gc" else {"NODE_NAME": ""},
        )
        tolerations = [dict(CONTROL_PLANE_TOLERATION), dict(GPU_TOLERATION)] if tolerate else None
        spec = pod_spec(
            [c],
            service_account=name
            if role != "worker"
            else "gpu-operator-node-feature-discovery-worker",
            tolerations=tolerations,
        )
        out[role] = Template(
            name=name,
            namespace=NS,
            labels={**base, "role": role},
            selector=selector,
            pod_labels={**selector, "role": role},
            spec=spec,
            annotations={
                "meta.helm.sh/release-name": "gpu-operator",
                "meta.helm.sh/release-namespace": NS,
            },
        )
    return out


# ------------------------------------------------------------- cluster-scoped objects


def runtime_classes(created: dt.datetime) -> list[Obj]:
    return [
        runtime_class_obj(n, n, created, cluster_policy_owner())
        for n in ("nvidia", "nvidia-cdi", "nvidia-legacy")
    ]


def cluster_policy(
    *,
    created: dt.datetime,
    toolkit: bool,
    generation: int,
    ready: bool,
    since: dt.datetime,
    not_ready_states: list[str] | None = None,
) -> Obj:
    def component(enabled: bool, repository: str, image: str, version: str, **extra: Any) -> Obj:
        return {
            "enabled": enabled,
            "repository": repository,
            "image": image,
            "version": version,
            "imagePullPolicy": "IfNotPresent",
            **extra,
        }

    spec = {
        "operator": {"defaultRuntime": "containerd", "runtimeClass": "nvidia", "initContainer": {}},
        "daemonsets": {
            "labels": dict(OPERAND_LABELS),
            "priorityClassName": "system-node-critical",
            "tolerations": [dict(GPU_TOLERATION)],
            "updateStrategy": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "1"},
        },
        "validator": {
            "repository": "nvcr.io/nvidia",
            "image": "gpu-operator",
            "version": VERSION,
            "imagePullPolicy": "IfNotPresent",
            "plugin": {"env": []},
        },
        "mig": {"strategy": "single"},
        "psa": {"enabled": False},
        "cdi": {"enabled": True, "default": True, "nriPluginEnabled": False},
        "driver": component(
            False,
            "nvcr.io/nvidia",
            "driver",
            "580.126.20",
            useNvidiaDriverCRD=False,
            kernelModuleType="auto",
            usePrecompiled=False,
            rdma={"enabled": False, "useHostMofed": False},
            manager={
                "repository": "nvcr.io/nvidia/cloud-native",
                "image": "k8s-driver-manager",
                "version": "v0.11.0",
            },
            upgradePolicy={"autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": "25%"},
        ),
        "toolkit": component(
            toolkit,
            "nvcr.io/nvidia/k8s",
            "container-toolkit",
            "v1.19.1",
            installDir="/usr/local/nvidia",
        ),
        "devicePlugin": component(
            True,
            "nvcr.io/nvidia",
            "k8s-device-plugin",
            "v0.19.3",
            config={"name": "", "default": ""},
        ),
        "dcgm": component(False, "nvcr.io/nvidia/cloud-native", "dcgm", "4.5.2-1-ubuntu22.04"),
        "dcgmExporter": component(
            True,
            "nvcr.io/nvidia/k8s",
            "dcgm-exporter",
            "4.5.3-4.8.2-distroless",
            serviceMonitor={"enabled": False},
        ),
        "gfd": component(True, "nvcr.io/nvidia", "k8s-device-plugin", "v0.19.3"),
        "migManager": component(
            True,
            "nvcr.io/nvidia/cloud-native",
            "k8s-mig-manager",
            "v0.14.2",
            config={"name": "default-mig-parted-config", "default": "all-disabled"},
        ),
        "nodeStatusExporter": component(False, "nvcr.io/nvidia", "gpu-operator", VERSION),
        "gds": {"enabled": False},
        "gdrcopy": {"enabled": False},
        "sandboxWorkloads": {"enabled": False, "defaultWorkload": "container", "mode": "kubevirt"},
        "vgpuManager": {"enabled": False},
        "vgpuDeviceManager": {"enabled": True},
        "vfioManager": {"enabled": True},
        "sandboxDevicePlugin": {"enabled": True},
        "kataManager": {"enabled": False},
        "ccManager": {"enabled": False, "defaultMode": "off"},
        "hostPaths": {"rootFS": "/", "driverInstallDir": "/run/nvidia/driver"},
    }
    states = not_ready_states or []
    if ready:
        conditions = [
            _condition(
                "Ready",
                True,
                since,
                "Reconciled",
                "ClusterPolicy is ready as all resources have been successfully reconciled",
            ),
            _condition("Error", False, since, "Ready", ""),
        ]
    else:
        conditions = [
            _condition("Ready", False, since, "Error", ""),
            _condition(
                "Error",
                True,
                since,
                "OperandNotReady",
                f"ClusterPolicy is not ready, states not ready: [{' '.join(states)}]",
            ),
        ]
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": meta(
            "ClusterPolicy",
            "cluster-policy",
            created=created,
            generation=generation,
            labels={
                "app.kubernetes.io/component": "gpu-operator",
                "app.kubernetes.io/instance": "gpu-operator",
                "app.kubernetes.io/managed-by": "Helm",
                "app.kubernetes.io/name": "gpu-operator",
                "app.kubernetes.io/version": VERSION,
                "helm.sh/chart": CHART,
            },
            annotations={
                "meta.helm.sh/release-name": "gpu-operator",
                "meta.helm.sh/release-namespace": NS,
            },
        ),
        "spec": spec,
        "status": {
            "conditions": conditions,
            "namespace": NS,
            "state": "ready" if ready else "notReady",
        },
    }


def _condition(kind: str, ok: bool, since: dt.datetime, reason: str, message: str) -> Obj:
    return {
        "lastTransitionTime": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "message": message,
        "reason": reason,
        "status": "True" if ok else "False",
        "type": kind,
    }


def helm_revision(
    revision: int, status: str, updated: dt.datetime, description: str, values: dict[str, Any]
) -> dict[str, Any]:
    return {
        "revision": revision,
        "status": status,
        "chart": CHART,
        "app_version": VERSION,
        "updated": updated.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "description": description,
        "values": values,
    }


def configmaps(created: dt.datetime) -> list[Obj]:
    ca = (
        "-----BEGIN CERTIFICATE-----\n"
        + "\n".join(hexid(64, "ca", i) for i in range(6))
        + "\n-----END CERTIFICATE-----\n"
    )
    worker_conf = (
        'sources:\n  pci:\n    deviceClassWhitelist:\n    - "02"\n    - "0200"\n    - "0207"\n'
        '    - "0300"\n    - "0302"\n    deviceLabelFields:\n    - vendor\n'
    )
    chart = {
        "app.kubernetes.io/instance": "gpu-operator",
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/name": "node-feature-discovery",
        "app.kubernetes.io/version": "v0.18.3",
        "helm.sh/chart": "node-feature-discovery-0.18.3",
    }
    return [
        configmap_obj(
            "kube-root-ca.crt",
            NS,
            {"ca.crt": ca},
            created,
            annotations={
                "kubernetes.io/description": "Contains a CA bundle that can be used to "
                "verify the kube-apiserver when using internal endpoints such as the "
                "internal service IP or kubernetes.default.svc. No other usage is "
                "guaranteed across distributions of Kubernetes clusters."
            },
        ),
        configmap_obj(
            "gpu-operator-node-feature-discovery-master-conf",
            NS,
            {"nfd-master.conf": "extraLabelNs:\n- nvidia.com\n"},
            created,
            labels=chart,
        ),
        configmap_obj(
            "gpu-operator-node-feature-discovery-worker-conf",
            NS,
            {"nfd-worker.conf": worker_conf},
            created,
            labels=chart,
        ),
    ]


# ------------------------------------------------------------------------ node labels


def nfd_labels(host: Host) -> dict[str, str]:
    major, minor, rev = host.kernel.split("-")[0].split(".")
    labels = {
        "feature.node.kubernetes.io/cpu-model.vendor_id": host.cpu_vendor,
        "feature.node.kubernetes.io/cpu-cpuid.AVX2": "true",
        "feature.node.kubernetes.io/kernel-version.full": host.kernel,
        "feature.node.kubernetes.io/kernel-version.major": major,
        "feature.node.kubernetes.io/kernel-version.minor": minor,
        "feature.node.kubernetes.io/kernel-version.revision": rev,
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "24.04",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.major": "24",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.minor": "04",
    }
    for vendor in host.extra_pci_vendors:
        labels[f"feature.node.kubernetes.io/pci-{vendor}.present"] = "true"
    if host.gpu:
        labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
    return labels


def operator_labels(host: Host) -> dict[str, str]:
    if not host.gpu:
        return {}
    deploy = (
        "driver",
        "gpu-feature-discovery",
        "container-toolkit",
        "device-plugin",
        "dcgm",
        "dcgm-exporter",
        "node-status-exporter",
        "operator-validator",
    )
    return {
        "nvidia.com/gpu.present": "true",
        **{f"nvidia.com/gpu.deploy.{d}": "true" for d in deploy},
    }


def gfd_labels(host: Host, at: dt.datetime) -> dict[str, str]:
    gpu = host.gpu
    assert gpu is not None
    drv_major, drv_minor, drv_rev = ["570", "195", "03"]
    return {
        "nvidia.com/cuda.driver-version.full": "570.195.03",
        "nvidia.com/cuda.driver-version.major": drv_major,
        "nvidia.com/cuda.driver-version.minor": drv_minor,
        "nvidia.com/cuda.driver-version.revision": drv_rev,
        "nvidia.com/cuda.driver.major": drv_major,
        "nvidia.com/cuda.driver.minor": drv_minor,
        "nvidia.com/cuda.driver.rev": drv_rev,
        "nvidia.com/cuda.runtime-version.full": "12.8",
        "nvidia.com/cuda.runtime-version.major": "12",
        "nvidia.com/cuda.runtime-version.minor": "8",
        "nvidia.com/cuda.runtime.major": "12",
        "nvidia.com/cuda.runtime.minor": "8",
        "nvidia.com/gfd.timestamp": str(int(at.timestamp())),
        "nvidia.com/gpu.compute.major": str(gpu.compute[0]),
        "nvidia.com/gpu.compute.minor": str(gpu.compute[1]),
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.family": gpu_family(gpu),
        "nvidia.com/gpu.machine": sanitise(host.machine_product),
        "nvidia.com/gpu.memory": str(gpu.memory_mib),
        "nvidia.com/gpu.mode": "graphics" if gpu.pci_class == "0300" else "compute",
        "nvidia.com/gpu.product": sanitise(gpu.product),
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "false",
        "nvidia.com/mps.capable": "false",
    }


def gpu_family(gpu: Gpu) -> str:
    major, minor = gpu.compute
    if major == 8:
        return "ampere" if minor < 9 else "ada-lovelace"
    return {7: "turing", 9: "hopper", 10: "blackwell", 12: "blackwell"}.get(major, "undefined")


def sanitise(text: str) -> str:
    kept = "".join(c for c in text if c.isalnum() or c in "-_. ")
    return "-".join(kept.split())
