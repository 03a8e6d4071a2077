"""What a kubeadm cluster with flannel runs besides the GPU stack."""

from __future__ import annotations

import datetime as dt

from .core import plus, uid
from .k8s import Obj, container, meta, namespace_obj, owner_ref, pod_spec
from .scene import Scene
from .workloads import Ran, Template, add_daemonset, add_deployment, place_pod

K8S = "v1.37.1"


def ran(start: dt.datetime, *, inits: int = 0, boot: float = 2.0) -> Ran:
    """A pod that started normally ``boot`` seconds after being scheduled."""
    sandbox = plus(start, 0.4)
    runs = tuple((plus(sandbox, 0.3 + i * 1.2), plus(sandbox, 1.2 + i * 1.2)) for i in range(inits))
    main = plus(sandbox, boot + inits * 1.2)
    return Ran(
        scheduled=start, sandbox=sandbox, init_runs=runs, main_start=main, ready=plus(main, 1)
    )


def version_json() -> Obj:
    def info(minor: str, commit: str, built: str, go: str, server: bool) -> Obj:
        out: Obj = {"major": "1", "minor": minor}
        if server:
            out.update(
                emulationMajor="1",
                emulationMinor="37",
                minCompatibilityMajor="1",
                minCompatibilityMinor="36",
            )
        out.update(
            gitVersion=K8S,
            gitCommit=commit,
            gitTreeState="clean",
            buildDate=built,
            goVersion=go,
            compiler="gc",
            platform="linux/amd64",
        )
        return out

    commit = "5f1d3e0c2b6a4d8e9f7a1c3b5d7e9f0a2c4e6b8d"
    return {
        "clientVersion": info("37", commit, "2026-11-10T18:41:07Z", "go1.26.3", False),
        "kustomizeVersion": "v5.7.1",
        "serverVersion": info("37", commit, "2026-11-10T18:32:51Z", "go1.26.3", True),
    }


def namespaces(
    scene: Scene, created: dt.datetime, operator_installed: dt.datetime, flannel: dt.datetime
) -> None:
    privileged = {"pod-security.kubernetes.io/enforce": "privileged"}
    scene.namespaces += [
        namespace_obj(n, created)
        for n in ("default", "kube-node-lease", "kube-public", "kube-system")
    ]
    scene.namespaces.append(namespace_obj("kube-flannel", flannel, privileged))
    scene.namespaces.append(namespace_obj(scene.operator_namespace, operator_installed, privileged))


def control_plane(scene: Scene, created: dt.datetime) -> None:
    """Static pods on the control-plane node, and CoreDNS."""
    host = next(h for h in scene.hosts if h.control_plane)
    for comp, image, tier in (
        ("etcd", "registry.k8s.io/etcd:3.6.6-0", "control-plane"),
        ("kube-apiserver", f"registry.k8s.io/kube-apiserver:{K8S}", "control-plane"),
        (
            "kube-controller-manager",
            f"registry.k8s.io/kube-controller-manager:{K8S}",
            "control-plane",
        ),
        ("kube-scheduler", f"registry.k8s.io/kube-scheduler:{K8S}", "control-plane"),
    ):
        name = f"{comp}-{host.name}"
        spec = pod_spec(
            [container(comp, image, command=[comp])],
            priority_class="system-node-critical",
            host_network=True,
            tolerations=[{"effect": "NoExecute", "operator": "Exists"}],
        )
        metadata = meta(
            "Pod",
            name,
            "kube-system",
            created=created,
            labels={"component": comp, "tier": tier},
            annotations={"kubernetes.io/config.source": "file"},
            owners=[owner_ref("v1", "Node", host.name, uid("Node", "", host.name))],
        )
        place_pod(
            scene,
            host,
            metadata=metadata,
            spec=spec,
            outcome=ran(created, boot=0.5),
            via_scheduler=False,
        )

    dns = container(
        "coredns",
        "registry.k8s.io/coredns/coredns:v1.12.4",
        args=["-conf", "/etc/coredns/Corefile"],
        resources={"limits": {"memory": "170Mi"}, "requests": {"cpu": "100m", "memory": "70Mi"}},
        ports=[{"containerPort": 53, "name": "dns", "protocol": "UDP"}],
    )
    spec = pod_spec(
        [dns],
        service_account="coredns",
        priority_class="system-cluster-critical",
        node_selector={"kubernetes.io/os": "linux"},
        tolerations=[
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
            {"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"},
        ],
    )
    spec["dnsPolicy"] = "Default"
    tpl = Template(
        name="coredns",
        namespace="kube-system",
        labels={"k8s-app": "kube-dns"},
        selector={"k8s-app": "kube-dns"},
        pod_labels={"k8s-app": "kube-dns"},
        spec=spec,
    )
    start = plus(created, 95)
    add_deployment(
        scene, tpl, created=created, pods=[(host.name, ran(start)), (host.name, ran(start))]
    )


def node_daemonsets(scene: Scene, created: dt.datetime, joined: dict[str, dt.datetime]) -> None:
    """kube-proxy and flannel on every node, started when each node joined."""
    proxy = container(
        "kube-proxy",
        f"registry.k8s.io/kube-proxy:{K8S}",
        command=[
            "/usr/local/bin/kube-proxy",
            "--config=/var/lib/kube-proxy/config.conf",
            "--hostname-override=$(NODE_NAME)",
        ],
        privileged=True,
    )
    spec = pod_spec(
        [proxy],
        service_account="kube-proxy",
        priority_class="system-node-critical",
        node_selector={"kubernetes.io/os": "linux"},
        host_network=True,
        tolerations=[{"operator": "Exists"}],
    )
    tpl = Template(
        name="kube-proxy",
        namespace="kube-system",
        labels={"k8s-app": "kube-proxy"},
        selector={"k8s-app": "kube-proxy"},
        pod_labels={"k8s-app": "kube-proxy"},
        spec=spec,
    )
    add_daemonset(scene, tpl, created=created, pods={n: ran(plus(t, 1)) for n, t in joined.items()})

    image = "ghcr.io/flannel-io/flannel:v0.27.4"
    cni = "ghcr.io/flannel-io/flannel-cni-plugin:v1.8.0-flannel1"
    flannel = container(
        "kube-flannel",
        image,
        command=["/opt/bin/flanneld"],
        args=["--ip-masq", "--kube-subnet-mgr"],
        resources={"requests": {"cpu": "100m", "memory": "50Mi"}},
    )
    inits = [
        container(
            "install-cni-plugin",
            cni,
            command=["cp"],
            args=["-f", "/flannel", "/opt/cni/bin/flannel"],
        ),
        container(
            "install-cni",
            image,
            command=["cp"],
            args=["-f", "/etc/kube-flannel/cni-conf.json", "/etc/cni/net.d/10-flannel.conflist"],
        ),
    ]
    spec = pod_spec(
        [flannel],
        init_containers=inits,
        service_account="flannel",
        priority_class="system-node-critical",
        host_network=True,
        tolerations=[{"effect": "NoSchedule", "operator": "Exists"}],
    )
    labels = {"app": "flannel", "k8s-app": "flannel", "tier": "node"}
    tpl = Template(
        name="kube-flannel-ds",
        namespace="kube-flannel",
        labels=labels,
        selector={"app": "flannel", "k8s-app": "flannel"},
        pod_labels=labels,
        spec=spec,
    )
    add_daemonset(
        scene,
        tpl,
        created=plus(created, 80),
        pods={n: ran(max(plus(t, 1), plus(created, 80)), inits=2) for n, t in joined.items()},
    )
