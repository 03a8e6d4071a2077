"""Inline bundles for the report tests: an incident across four GPU nodes, a healthy
cluster, a hostile bundle (the XSS corpus) and a large cluster for size bounds.

The incident: on gpu-a and gpu-b a registry drop-in (``zz-registry.toml``) sorts after the
toolkit's ``99-nvidia.toml`` on containerd 1.7 and drops the nvidia runtime, so the device
plugin there is stuck in Init with sandbox errors; gpu-c is healthy and busy; gpu-d logged
an Xid 79 and has one unhealthy GPU, and runs a different containerd and driver.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson
from kit.bundles import kube_list, kube_node, smi_log
from kit.objects import DUMP_WITH_NVIDIA, SANDBOX

CREATED = dt.datetime(2026, 11, 29, 14, 0, 0, tzinfo=dt.UTC)
NS = "gpu-operator"

CONFIG_TOML = """version = 2
imports = ["/etc/containerd/conf.d/*.toml"]

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
"""

DROPIN_NVIDIA = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
"""

DROPIN_REGISTRY = """version = 2
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"
"""

DUMP_BROKEN = """version = 2
imports = ["/etc/containerd/conf.d/99-nvidia.toml", "/etc/containerd/conf.d/zz-registry.toml"]

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"
"""

DUMP_OK = DUMP_WITH_NVIDIA

OPERANDS = (
    ("nvidia-container-toolkit-daemonset", None),
    ("nvidia-device-plugin-daemonset", "nvidia"),
    ("gpu-feature-discovery", "nvidia"),
    ("nvidia-dcgm-exporter", "nvidia"),
    ("nvidia-operator-validator", "nvidia"),
)


def at(minutes: float) -> str:
    """A timestamp ``minutes`` before the bundle was created."""
    return (CREATED - dt.timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def micros(minutes: float) -> str:
    return str(int((CREATED - dt.timedelta(minutes=minutes)).timestamp() * 1_000_000))


def node(name: str, *, gpus: int | None, allocatable: int | None = None,
         product: str = "NVIDIA-L40S", runtime: str = "containerd://1.7.27",
         labels: dict[str, str] | None = None, ready: bool = True,
         gpu: bool = True) -> dict[str, Any]:
    gpu_labels = {"feature.node.kubernetes.io/pci-10de.present": "true",
                  "nvidia.com/gpu.product": product, "nvidia.com/gpu.count": "1",
                  "nvidia.com/mig.capable": "false"} if gpu else {}
    ready_condition = {"type": "Ready", "status": "True" if ready else "False",
                       "reason": "KubeletReady" if ready else "KubeletNotReady",
                       "lastTransitionTime": "2026-11-20T08:00:00Z"}
    return kube_node(
        name, gpus, allocatable, other={"cpu": "32", "memory": "263746560Ki", "pods": "110"},
        labels={**gpu_labels, **(labels or {})}, gpu_label=gpu, created="2026-10-01T08:00:00Z",
        conditions=[ready_condition],
        node_info={"containerRuntimeVersion": runtime, "kernelVersion": "6.8.0-88-generic",
                   "kubeletVersion": "v1.37.1", "osImage": "Ubuntu 24.04.3 LTS"})


def operand(app: str, node_name: str, *, runtime_class: str | None, stuck: bool,
            suffix: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": node_name,
                            "containers": [{"name": app.split("-")[1], "image": "nvcr.io/x:1"}],
                            "initContainers": [{"name": "toolkit-validation",
                                                "image": "nvcr.io/nvidia/gpu-operator:v26.3.1"}]}
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    if stuck:
        status: dict[str, Any] = {
            "phase": "Pending",
            "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                            "lastTransitionTime": at(39)}],
            "initContainerStatuses": [{"name": "toolkit-validation", "ready": False,
                                       "restartCount": 0,
                                       "state": {"waiting": {"reason": "PodInitializing"}}}],
        }
    else:
        status = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True",
                            "lastTransitionTime": "2026-11-20T08:05:00Z"}],
            "initContainerStatuses": [{"name": "toolkit-validation", "ready": True,
                                       "restartCount": 0,
                                       "state": {"terminated": {"exitCode": 0,
                                                                "reason": "Completed"}}}],
            "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                                   "state": {"running": {"startedAt": "2026-11-20T08:05:00Z"}}}],
        }
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{app}-{suffix}", "namespace": NS, "labels": {"app": app}},
            "spec": spec, "status": status}


def workload(name: str, node_name: str | None, gpus: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{
        "name": "main", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if node_name:
        spec["nodeName"] = node_name
    phase = "Running" if node_name else "Pending"
    conditions = [{"type": "PodScheduled", "status": "True" if node_name else "False",
                   "reason": None if node_name else "Unschedulable",
                   "lastTransitionTime": at(30)}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "labels": {"app": "train"}},
            "spec": spec, "status": {"phase": phase, "conditions": conditions}}


def event(name: str, kind: str, namespace: str | None, obj: str, reason: str, message: str, *,
          minutes: float, warning: bool = True, count: int = 1,
          host: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace or "default"},
            "involvedObject": {"kind": kind, "namespace": namespace, "name": obj},
            "reason": reason, "message": message, "type": "Warning" if warning else "Normal",
            "count": count, "firstTimestamp": at(minutes + 5), "lastTimestamp": at(minutes),
            "source": {"component": "kubelet", "host": host}}


def nvidia_smi(driver: str, products: list[str]) -> str:
    gpus = "".join(
        f'<gpu id="00000000:{0x3b + i:02X}:00.0"><product_name>{p}</product_name>'
        f"<product_brand>NVIDIA</product_brand><uuid>GPU-{i:08d}-0000-0000-0000-000000000000"
        f"</uuid><minor_number>{i}</minor_number><fb_memory_usage><total>46068 MiB</total>"
        "<used>1 MiB</used></fb_memory_usage><utilization><gpu_util>0 %</gpu_util>"
        "</utilization><processes></processes></gpu>"
        for i, p in enumerate(products))
    return smi_log([gpus], driver=driver, cuda="12.8", attached=len(products), indent="",
                   newline="", doctype=False)


def journal(*lines: tuple[float, str, str]) -> str:
    """(minutes before creation, identifier, message) as journalctl -o json lines."""
    out = []
    for minutes, ident, message in lines:
        pid = "1" if ident == "systemd" else "48211"
        out.append(orjson.dumps({"__REALTIME_TIMESTAMP": micros(minutes),
                                 "_SYSTEMD_UNIT": "containerd.service", "_PID": pid,
                                 "SYSLOG_IDENTIFIER": ident, "MESSAGE": message}).decode())
    return "\n".join(out) + "\n"


SIGHUP_RESTART = (
    (40.0, "systemd", "Sent signal SIGHUP to main process 47102 (containerd) on client request."),
    (39.99, "systemd", "containerd.service: Main process exited, code=killed, status=1/HUP"),
    (39.9, "systemd", "containerd.service: Scheduled restart job, restart counter is at 1."),
    (39.88, "systemd", "Started containerd.service - containerd container runtime."),
)


def containerd_node(name: str, *, broken: bool, version: str = "1.7.27",
                    restarts: bool = False) -> dict[str, Any]:
    base = f"nodes/{name}/containerd"
    files: dict[str, Any] = {
        f"{base}/version.txt": f"containerd github.com/containerd/containerd v{version} "
                               "05044ec0a9a75232cad458027ca83437aae3f4da\n",
        f"{base}/config-dump.toml": DUMP_BROKEN if broken else DUMP_OK,
        f"{base}/files/etc/containerd/config.toml": CONFIG_TOML,
        f"{base}/files/etc/containerd/conf.d/99-nvidia.toml": DROPIN_NVIDIA,
    }
    if broken:
        files[f"{base}/files/etc/containerd/conf.d/zz-registry.toml"] = DROPIN_REGISTRY
    if restarts:
        files[f"nodes/{name}/journal/containerd.jsonl"] = journal(*SIGHUP_RESTART)
    return files


def _cluster(nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
             events: list[dict[str, Any]]) -> dict[str, Any]:
    operator = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "gpu-operator", "namespace": NS},
        "spec": {"template": {"metadata": {"labels": {"app": "gpu-operator"}},
                              "spec": {"containers": [{
                                  "name": "gpu-operator",
                                  "image": "nvcr.io/nvidia/gpu-operator:v26.3.1"}]}}},
        "status": {"readyReplicas": 1},
    }
    policy = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
              "metadata": {"name": "cluster-policy", "creationTimestamp": "2026-10-01T08:00:00Z"},
              "spec": {"driver": {"enabled": False}, "toolkit": {"enabled": True}},
              "status": {"state": "notReady"}}
    helm = [{"revision": 1, "status": "superseded", "chart": "gpu-operator-v26.3.1",
             "app_version": "v26.3.1", "updated": "2026-10-01T08:00:00Z",
             "description": "Install complete", "values": {"driver": {"enabled": False}}},
            {"revision": 2, "status": "deployed", "chart": "gpu-operator-v26.3.1",
             "app_version": "v26.3.1", "updated": "2026-11-29T13:19:00Z",
             "description": "Upgrade complete",
             "values": {"driver": {"enabled": False},
                        "devicePlugin": {"config": {"name": "time-slicing"}}}}]
    return {
        "cluster/version.json": {"serverVersion": {"gitVersion": "v1.37.1"}},
        "cluster/nodes.json": kube_list(*nodes),
        "cluster/pods.json": kube_list(*pods),
        "cluster/events.json": kube_list(*events),
        "cluster/deployments.json": kube_list(operator),
        "cluster/daemonsets.json": kube_list(),
        "cluster/runtimeclasses.json": kube_list({
            "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": "nvidia"}, "handler": "nvidia"}),
        "cluster/clusterpolicies.json": kube_list(policy),
        "cluster/helm/gpu-operator.json": helm,
    }


def incident_files() -> dict[str, Any]:
    nodes = [node("cp-1", gpus=None, gpu=False), node("gpu-a", gpus=None),
             node("gpu-b", gpus=None), node("gpu-c", gpus=1),
             node("gpu-d", gpus=1, allocatable=0, runtime="containerd://2.0.4")]
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "gpu-operator-7c9f8d6b5-x2x4k", "namespace": NS,
                          "labels": {"app": "gpu-operator"}},
             "spec": {"nodeName": "cp-1", "containers": [
                 {"name": "gpu-operator", "image": "nvcr.io/nvidia/gpu-operator:v26.3.1"}]},
             "status": {"phase": "Running"}}]
    for index, name in enumerate(("gpu-a", "gpu-b", "gpu-c", "gpu-d")):
        stuck = name in ("gpu-a", "gpu-b")
        for app, runtime_class in OPERANDS:
            pods.append(operand(app, name, runtime_class=runtime_class,
                                stuck=stuck and runtime_class is not None,
                                suffix=f"{'abcd'[index] * 5}"))
    pods += [workload("trainer-0", None, 1), workload("infer-0", "gpu-c", 1)]
    events = [
        event("dp-a.1", "Pod", NS, "nvidia-device-plugin-daemonset-aaaaa",
              "FailedCreatePodSandBox", SANDBOX, minutes=1, count=42, host="gpu-a"),
        event("dp-b.1", "Pod", NS, "nvidia-device-plugin-daemonset-bbbbb",
              "FailedCreatePodSandBox", SANDBOX, minutes=2, count=40, host="gpu-b"),
        event("trainer-0.1", "Pod", "ml", "trainer-0", "FailedScheduling",
              "0/5 nodes are available: 1 node(s) had untolerated taint "
              "{node-role.kubernetes.io/control-plane: }, 4 Insufficient nvidia.com/gpu. "
              "preemption: 0/5 nodes are available: 5 No preemption victims found for "
              "incoming pod.", minutes=3, count=12),
        event("infer-0.1", "Pod", "ml", "infer-0", "Scheduled",
              "Successfully assigned ml/infer-0 to gpu-c", minutes=30, warning=False),
        event("gpu-d.1", "Node", None, "gpu-d", "GPUUnhealthy",
              "Xid 79 reported on GPU 00000000:3B:00.0; marking device unhealthy",
              minutes=19.5, host="gpu-d"),
    ]
    files = _cluster(nodes, pods, events)
    files |= containerd_node("gpu-a", broken=True, restarts=True)
    files |= containerd_node("gpu-b", broken=True)
    files |= containerd_node("gpu-c", broken=False)
    files |= containerd_node("gpu-d", broken=False, version="2.0.4")
    for name, driver in (("gpu-a", "570.172.08"), ("gpu-b", "570.172.08"),
                         ("gpu-c", "570.172.08"), ("gpu-d", "570.195.03")):
        files[f"nodes/{name}/nvidia-smi.xml"] = nvidia_smi(driver, ["NVIDIA L40S"])
    files["nodes/gpu-d/dmesg.txt"] = (
        "2026-11-29T08:00:04,512377+00:00 NVRM: loading NVIDIA UNIX x86_64 Kernel Module  "
        "570.195.03  Fri Sep 19 00:19:41 UTC 2025\n"
        "2026-11-29T13:40:12,004411+00:00 NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
        "name=<unknown>, GPU has fallen off the bus.\n"
        "2026-11-29T13:40:12,104411+00:00 NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n")
    files["nodes/gpu-a/dmesg.txt"] = (
        "2026-11-29T08:00:04,512377+00:00 NVRM: loading NVIDIA UNIX x86_64 Kernel Module  "
        "570.172.08  Fri Sep 19 00:19:41 UTC 2025\n")
    return files


INCIDENT_GAPS = [{"path": "nodes/gpu-c/dmesg.txt",
                  "error": "dmesg: read kernel buffer failed: Operation not permitted"}]


def healthy_files() -> dict[str, Any]:
    nodes = [node("cp-1", gpus=None, gpu=False), node("gpu-a", gpus=1), node("gpu-b", gpus=1)]
    pods = []
    for index, name in enumerate(("gpu-a", "gpu-b")):
        for app, runtime_class in OPERANDS:
            pods.append(operand(app, name, runtime_class=runtime_class, stuck=False,
                                suffix="abcd"[index] * 5))
    pods.append(workload("infer-0", "gpu-a", 1))
    events = [event("infer-0.1", "Pod", "ml", "infer-0", "Scheduled",
                    "Successfully assigned ml/infer-0 to gpu-a", minutes=30, warning=False)]
    files = _cluster(nodes, pods, events)
    for name in ("gpu-a", "gpu-b"):
        files |= containerd_node(name, broken=False)
        files[f"nodes/{name}/nvidia-smi.xml"] = nvidia_smi("570.172.08", ["NVIDIA L40S"])
    return files


# -- the XSS corpus -------------------------------------------------------------------------

SCRIPT = "<script>window.__xss = 'script'</script>"
TEXTAREA = "</textarea><img src=x onerror=\"window.__xss='img'\">"
TEMPLATE = "{{ 7*7 }}{% raw %}"
JS_URL = "javascript:window.__xss='url'"
ANSI = "\x1b[31mred-alert\x1b[0m\x1b]8;;http://evil.example/\x07link\x1b]8;;\x07"
BIDI = "\u202eevil\u202c"
HOSTILE = [SCRIPT, TEXTAREA, TEMPLATE, JS_URL]
# Text that must show up verbatim (as text) in the rendered page.
VISIBLE = ["<script>window.__xss = 'script'</script>", "</textarea><img src=x onerror=",
           "{{ 7*7 }}{% raw %}", "javascript:window.__xss='url'", "red-alert"]
HOSTILE_NODE = "gpu-<img src=x onerror=\"window.__xss='node'\">"


def hostile_files() -> dict[str, Any]:
    """Every field a reader shows, filled with markup, template syntax, escapes and junk."""
    files = incident_files()
    long_line = "A" * 100_000
    payload = " ".join(HOSTILE) + " " + ANSI + " " + BIDI
    nodes = orjson.loads(orjson.dumps(files["cluster/nodes.json"]))
    nodes["items"][1]["metadata"]["labels"]["nvidia.com/gpu.product"] = payload
    nodes["items"][1]["metadata"]["annotations"] = {"note": payload}
    nodes["items"].append(node(HOSTILE_NODE, gpus=1, product=SCRIPT,
                               labels={"x": TEXTAREA}, runtime=JS_URL))
    files["cluster/nodes.json"] = nodes
    events = files["cluster/events.json"]
    events["items"] += [
        event("evil.1", "Pod", NS, "nvidia-device-plugin-daemonset-aaaaa",
              "FailedCreatePodSandBox", f"{SANDBOX} {payload}", minutes=0.5, host="gpu-a"),
        event("evil.2", "Pod", NS, f"evil-{SCRIPT}", f"Bad{TEXTAREA}", payload, minutes=0.6),
        event("evil.3", "Node", None, HOSTILE_NODE, "Long", long_line, minutes=0.7),
        event("evil.4", "Pod", NS, "nvidia-device-plugin-daemonset-aaaaa",
              "FailedCreatePodSandBox", f"{SANDBOX} {long_line}", minutes=0.8, host="gpu-a"),
    ]
    pods = files["cluster/pods.json"]
    pods["items"].append({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": f"evil-{SCRIPT}", "namespace": NS,
                                       "labels": {"app": "nvidia-device-plugin-daemonset"},
                                       "annotations": {"a": payload}},
                          "spec": {"nodeName": HOSTILE_NODE, "runtimeClassName": "nvidia",
                                   "containers": [{"name": "c", "image": JS_URL}]},
                          "status": {"phase": "Pending", "reason": TEXTAREA}})
    files["nodes/gpu-a/journal/containerd.jsonl"] += orjson.dumps({
        "__REALTIME_TIMESTAMP": micros(0.4), "_PID": "1", "SYSLOG_IDENTIFIER": "systemd",
        "MESSAGE": list(b"Started containerd.service \xff\xfe " + SCRIPT.encode())}).decode() + "\n"
    files["nodes/gpu-d/dmesg.txt"] = (
        files["nodes/gpu-d/dmesg.txt"].encode()
        + b"2026-11-29T13:41:00,000000+00:00 NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name="
        + SCRIPT.encode() + b" \xff\xfe\x1b[31m" + long_line.encode() + b"\n")
    files["nodes/gpu-a/containerd/files/etc/containerd/conf.d/zz-registry.toml"] = (
        DROPIN_REGISTRY + f"# {payload}\n# {long_line}\n")
    files[f"logs/{NS}/nvidia-device-plugin-daemonset-aaaaa/toolkit-validation.log"] = (
        f"2026-11-29T13:59:00Z {payload}\n".encode() + b"\xff\xfe\xfd invalid utf-8\n")
    return files


# -- a big cluster --------------------------------------------------------------------------


def big_files(count: int) -> dict[str, Any]:
    """``count`` GPU nodes, every one with the clobbered drop-in and a stuck device plugin."""
    names = [f"gpu-{i:04d}" for i in range(count)]
    nodes = [node("cp-1", gpus=None, gpu=False)] + [node(n, gpus=None) for n in names]
    pods = []
    events = []
    for name in names:
        for app, runtime_class in OPERANDS:
            pods.append(operand(app, name, runtime_class=runtime_class,
                                stuck=runtime_class is not None, suffix=name[-4:]))
        events.append(event(f"dp-{name}.1", "Pod", NS,
                            f"nvidia-device-plugin-daemonset-{name[-4:]}",
                            "FailedCreatePodSandBox", SANDBOX, minutes=1, count=20, host=name))
    files = _cluster(nodes, pods, events)
    for name in names:
        files |= containerd_node(name, broken=True, restarts=True)
    return files
