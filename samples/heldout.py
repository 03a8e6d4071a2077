"""Bundles rebuilt from the held-out known-issue threads (issue 28's fifth, measured for
issue 25's precision work): one bundle per thread of
``tests/fixtures/known_issues_heldout/threads.toml``.

Each bundle starts from a healthy cluster of the look-alike matrix
(``tests/lookalikes_kit.py``: the GPU Operator on a host driver, or a standalone device
plugin, Docker nodes, Bottlerocket where the thread's context says so) and places the
thread's evidence lines verbatim where the thread's ``source`` says they appear, with the
object in the state the thread describes (a crash-looping pod, a pod waiting on an image).
Nothing else is added: no clue the thread did not show. The URL of each thread is in the
TOML; the wordings come from there and nowhere else.

    python samples/heldout.py --out DIR     # keep the 31 bundles in DIR
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from kit import lookalikes as kit  # noqa: E402

THREADS = ROOT / "tests" / "fixtures" / "known_issues_heldout" / "threads.toml"
NODE = "gpu-a"
NS = kit.OPERATOR_NS
AT = "2026-11-20T10:58:00.000000000Z"
# Thread 75's evidence opens with the issue's title; only the part after it is a line the
# cluster printed (the bundle holds that part).
TITLE_PREFIX = {75: "enable gpu fails on 20.04 (focal) and MicroK8s 1.21 - "}
# A journal line as journalctl prints it: "identifier[pid]: message".
SYSLOG_LINE = re.compile(r"^([\w.-]+)\[(\d+)\]: (.*)$")
# A row of `kubectl describe` Events: type, reason, age, source, then the message.
DESCRIBE_ROW = re.compile(r"^\s*(?:Warning|Normal)\s+\w+\s+.*?\s+kubelet\s+")


@dataclass(frozen=True)
class Thread:
    order: int
    url: str
    component: str
    source: str
    evidence: tuple[str, ...]
    cause: str

    @property
    def lines(self) -> tuple[str, ...]:
        """The evidence as the bundle holds it: a title prefix removed, and of a
        ``kubectl describe`` event row only the message column (the event's message)."""
        cut = TITLE_PREFIX.get(self.order, "")
        return tuple(DESCRIBE_ROW.sub("", line.removeprefix(cut)) for line in self.evidence)


@dataclass(frozen=True)
class Placed:
    """Where a bundle holds a thread's evidence: a file under the bundle root, or
    ``manifest:<path>`` for a collection step's recorded error (kubectl logs refused)."""

    where: str


def load_threads(path: Path = THREADS) -> list[Thread]:
    data = tomllib.loads(path.read_text())
    return [Thread(t["order"], t["url"], t["component"], t["source"], tuple(t["evidence"]),
                   t["cause"]) for t in data["thread"]]


# -- edits on a bundle ----------------------------------------------------------------------

def _pods(bundle: kit.Bundle) -> list[dict[str, Any]]:
    return bundle.items("pods")


def _find(pods: list[dict[str, Any]], prefix: str, node: str = NODE) -> dict[str, Any]:
    return next(p for p in pods if p["metadata"]["name"].startswith(prefix)
                and p["spec"].get("nodeName") == node)


def _log(bundle: kit.Bundle, ns: str, pod: str, container: str, lines: tuple[str, ...]) -> str:
    rel = f"logs/{ns}/{pod}/{container}.log"
    path = bundle.root / rel
    before = path.read_text() if path.exists() else ""
    bundle.write(rel, before + "".join(f"{AT} {line}\n" for line in lines))
    return rel


def _crashloop(status: dict[str, Any], pod: dict[str, Any], exit_code: int = 1,
               restarts: int = 6) -> None:
    meta = pod["metadata"]
    full = f"{meta['name']}_{meta['namespace']}({meta.get('uid', '')})"  # kubelet's form
    status.update(ready=False, started=False, restartCount=restarts)
    status["state"] = {"waiting": {"reason": "CrashLoopBackOff", "message":
                                   f"back-off 5m0s restarting failed container={status['name']}"
                                   f" pod={full}"}}
    status["lastState"] = {"terminated": {"exitCode": exit_code, "reason": "Error",
                                          "startedAt": "2026-11-20T10:55:10Z",
                                          "finishedAt": "2026-11-20T10:55:12Z"}}


def _not_ready(pod: dict[str, Any]) -> None:
    for cond in pod["status"].get("conditions", []):
        if cond["type"] in ("Ready", "ContainersReady"):
            cond["status"] = "False"


def _clone(bundle: kit.Bundle, template_prefix: str, *, name: str, namespace: str,
           container: str, image: str, owner: str, node: str = NODE,
           labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A new DaemonSet pod on ``node`` shaped like an existing one (one container)."""
    template = _find(_pods(bundle), template_prefix, node)
    pod = kit._pod_from(template, name=name, namespace=namespace, node=node,
                        labels=labels or {"app": owner}, owner=owner, container=container,
                        image=image, runtime_class=template["spec"].get("runtimeClassName"))
    pod["metadata"]["uid"] = f"uid-{name}"
    return pod


def _put(bundle: kit.Bundle, pod: dict[str, Any], image: str) -> None:
    meta = pod["metadata"]
    owner = meta["ownerReferences"][0]["name"]
    bundle.set_items("pods", [*_pods(bundle), pod])
    if not any(d["metadata"]["name"] == owner for d in bundle.items("daemonsets")):
        ds = kit._daemonset(owner, meta["namespace"], meta["labels"], 1, image)
        ds["status"]["numberReady"] = ds["status"]["numberAvailable"] = 0
        bundle.set_items("daemonsets", [*bundle.items("daemonsets"), ds])


def _replace(bundle: kit.Bundle, pod: dict[str, Any]) -> None:
    name = pod["metadata"]["name"]
    bundle.set_items("pods", [pod if p["metadata"]["name"] == name else p
                              for p in _pods(bundle)])


def _failing(bundle: kit.Bundle, prefix: str, lines: tuple[str, ...],
             container: str | None = None) -> Placed:
    """An existing pod on gpu-a crash-loops and its log ends with the evidence."""
    pod = _find(_pods(bundle), prefix)
    status = pod["status"]["containerStatuses"][0]
    _crashloop(status, pod)
    _not_ready(pod)
    _replace(bundle, pod)
    meta = pod["metadata"]
    return Placed(_log(bundle, meta["namespace"], meta["name"], container or status["name"],
                       lines))


def _running_log(bundle: kit.Bundle, prefix: str, lines: tuple[str, ...]) -> Placed:
    pod = _find(_pods(bundle), prefix)
    meta = pod["metadata"]
    return Placed(_log(bundle, meta["namespace"], meta["name"],
                       pod["status"]["containerStatuses"][0]["name"], lines))


DRIVER_IMAGE = "nvcr.io/nvidia/driver:570.195.03-ubuntu24.04"


def _driver_enabled(bundle: kit.Bundle) -> None:
    """The ClusterPolicy deploys the driver container (the operator's default)."""
    policies = bundle.items("clusterpolicies")
    for policy in policies:
        policy["spec"]["driver"]["enabled"] = True
    bundle.set_items("clusterpolicies", policies)


def _no_host_driver(bundle: kit.Bundle, node: str = NODE) -> None:
    """The node has no NVIDIA module loaded (the driver container never got one in)."""
    path = bundle.root / f"nodes/{node}/host/modules.txt"
    if path.exists():
        path.write_text("".join(line for line in path.read_text().splitlines(True)
                                if not line.startswith("nvidia")))
    dmesg = bundle.root / f"nodes/{node}/dmesg.txt"
    if dmesg.exists():
        dmesg.write_text("".join(line for line in dmesg.read_text().splitlines(True)
                                 if "nvidia" not in line.lower()))
    bundle.remove(f"nodes/{node}/nvidia-smi.xml")


def _driver_pod(bundle: kit.Bundle, *, image: str = DRIVER_IMAGE,
                container: str = "nvidia-driver-ctr", name: str = "nvidia-driver-daemonset-dx6l5",
                host_driver: bool = False) -> dict[str, Any]:
    _driver_enabled(bundle)
    if not host_driver:
        _no_host_driver(bundle)
    return _clone(bundle, "nvidia-container-toolkit-daemonset-", name=name, namespace=NS,
                  container=container, image=image, owner="nvidia-driver-daemonset",
                  labels={"app": "nvidia-driver-daemonset",
                          "app.kubernetes.io/component": "nvidia-driver"})


def _driver_failing(bundle: kit.Bundle, lines: tuple[str, ...], *,
                    host_driver: bool = False) -> Placed:
    pod = _driver_pod(bundle, host_driver=host_driver)
    _crashloop(pod["status"]["containerStatuses"][0], pod)
    _not_ready(pod)
    _put(bundle, pod, DRIVER_IMAGE)
    return Placed(_log(bundle, NS, pod["metadata"]["name"], "nvidia-driver-ctr", lines))


def _os(bundle: kit.Bundle, pretty: str, release: str, version_id: str,
        kernel: str | None = None, node: str = NODE) -> None:
    """The node's OS (and kernel) as the thread reports them."""
    path = bundle.root / f"nodes/{node}/host/os-release"
    if path.exists():
        path.write_text(f'PRETTY_NAME="{pretty}"\nNAME="{release}"\nVERSION_ID="{version_id}"\n')
    uname = bundle.root / f"nodes/{node}/host/uname.txt"
    if kernel and uname.exists():
        uname.write_text(f"Linux {node} {kernel} #1 SMP x86_64 x86_64 x86_64 GNU/Linux\n")

    _node_info(bundle, node, osImage=pretty, **({"kernelVersion": kernel} if kernel else {}))


def _node_info(bundle: kit.Bundle, node: str = NODE, **fields: str) -> None:
    """Fields of the node's ``status.nodeInfo`` as the thread reports them."""
    def change(obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == node:
            obj["status"]["nodeInfo"].update(fields)
    bundle.edit_nodes(change)


def _object_event(bundle: kit.Bundle, kind: str, api_version: str, name: str, namespace: str,
                  reason: str, message: str, source: str, type_: str = "Warning",
                  count: int = 12, uid: str | None = None, host: str | None = None) -> Placed:
    """An event ``source`` recorded on an object (``host``: the node of a kubelet's)."""
    event: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Event", "type": type_, "reason": reason,
        "message": message, "count": count,
        "firstTimestamp": "2026-11-20T10:50:00Z", "lastTimestamp": "2026-11-20T11:04:00Z",
        "involvedObject": {"apiVersion": api_version, "kind": kind, "name": name,
                           "namespace": namespace,
                           "uid": f"uid-{name}" if uid is None else uid},
        "metadata": {"name": f"{name}.18e9bba6acaf{len(bundle.items('events')):04x}",
                     "namespace": namespace, "uid": f"ev-{name}-{reason}",
                     "creationTimestamp": "2026-11-20T10:50:00Z"},
        "reportingComponent": source,
    }
    if host is not None:
        event["reportingInstance"] = host
    event["source"] = {"component": source, **({"host": host} if host is not None else {})}
    bundle.set_items("events", [*bundle.items("events"), event])
    return Placed("cluster/events.json")


def _event(bundle: kit.Bundle, pod: dict[str, Any], reason: str, message: str,
           kind: str = "Warning", count: int = 7) -> Placed:
    """An event the kubelet of the pod's node recorded on the pod."""
    meta = pod["metadata"]
    return _object_event(bundle, "Pod", "v1", meta["name"], meta["namespace"], reason,
                         message, "kubelet", type_=kind, count=count, uid=meta.get("uid", ""),
                         host=pod["spec"].get("nodeName", ""))


def _waiting(pod: dict[str, Any], reason: str, message: str | None = None,
             index: int = 0) -> None:
    status = pod["status"]["containerStatuses"][index]
    status.update(ready=False, started=False)
    status["state"] = {"waiting": {"reason": reason, **({"message": message} if message else {})}}
    _not_ready(pod)


def _creating(bundle: kit.Bundle, prefix: str) -> dict[str, Any]:
    """A pod on gpu-a whose sandbox was never created (ContainerCreating)."""
    pod = _find(_pods(bundle), prefix)
    pod["status"].pop("podIP", None)
    pod["status"].pop("podIPs", None)
    _waiting(pod, "ContainerCreating")
    _replace(bundle, pod)
    return pod


def _status_message(bundle: kit.Bundle, prefix: str, message: str,
                    reason: str = "RunContainerError", node: str = NODE) -> Placed:
    pod = _find(_pods(bundle), prefix, node)
    _waiting(pod, reason, message)
    pod["status"]["containerStatuses"][0]["restartCount"] = 4
    _replace(bundle, pod)
    return Placed("cluster/pods.json")


def _journal(bundle: kit.Bundle, unit: str, identifier: str, lines: tuple[str, ...],
             node: str = NODE) -> Placed:
    rel = f"nodes/{node}/journal/{unit}.jsonl"
    path = bundle.root / rel
    before = path.read_text() if path.exists() else ""
    entries = ""
    for i, line in enumerate(lines):
        # a line journalctl printed as "identifier[pid]: message" keeps its own fields
        shown = SYSLOG_LINE.match(line)
        ident, pid, message = shown.groups() if shown else (identifier, "3228", line)
        entries += json.dumps({
            "__REALTIME_TIMESTAMP": str(1795172280000000 + i * 1000), "PRIORITY": "3",
            "_TRANSPORT": "stdout", "SYSLOG_IDENTIFIER": ident, "_PID": pid,
            "_SYSTEMD_UNIT": f"{unit}.service", "_HOSTNAME": node, "MESSAGE": message}) + "\n"
    bundle.write(rel, before + entries)
    return Placed(rel)


def _strip_nvidia_runtimes(bundle: kit.Bundle, node: str = NODE) -> None:
    """containerd's live configuration on ``node`` has no nvidia* runtime tables."""
    path = bundle.root / f"nodes/{node}/containerd/config-dump.toml"
    out: list[str] = []
    skipping = False
    for line in path.read_text().splitlines(True):
        head = line.strip()
        if head.startswith("["):
            skipping = ".runtimes.nvidia" in head
        if not skipping:
            out.append(line)
    path.write_text("".join(out))


def _docker_operator(root: Path) -> kit.Bundle:
    """The GPU Operator's cluster whose kubelets still use dockershim (Docker 19.03)."""
    bundle = kit.base(root)
    kit._node_info(bundle, containerRuntimeVersion="docker://19.3.15", kubeletVersion="v1.21.5")
    kit._docker_nodes(bundle, "--container-runtime=docker --network-plugin=cni")
    return bundle


def _docker_host(root: Path) -> kit.Bundle:
    """Docker nodes with a standalone plugin (the nvidia-docker era hosts)."""
    return kit.Bundle(kit.docker_dockershim(root))


# kubelet's FailedCreatePodSandBox message (as in thread 50's own evidence,
# https://github.com/containerd/containerd/issues/6389)
SANDBOX = "Failed to create pod sandbox: rpc error: code = Unknown desc = "
# containerd's task error around a failing prestart hook (runc's part as in
# https://github.com/ggml-org/llama.cpp/issues/9665), ahead of the CLI's own line
HOOK = ("Error: failed to create containerd task: failed to create shim task: OCI runtime "
        "create failed: runc create failed: unable to start container process: error during "
        "container init: error running hook #0: error running hook: exit status 1, stdout: , "
        "stderr: ")


def _workload_failed(bundle: kit.Bundle, message: str) -> Placed:
    """The user's CUDA pod (default/cuda-test on gpu-b) cannot start its container."""
    return _status_message(bundle, "cuda-test", message, node="gpu-b")


# -- one builder per thread -----------------------------------------------------------------

Builder = Callable[[Path, Thread], Placed]


def t5(root: Path, t: Thread) -> Placed:
    bundle = kit.base(root)
    kit._without_operator(bundle)  # a static plugin; containerd's default stays runc
    kit.add_plugin(bundle)
    placed = _failing(bundle, "nvidia-device-plugin-daemonset-", t.lines)
    bundle.save()
    return placed


def _on_base(edit: Callable[[kit.Bundle, Thread], Placed]) -> Builder:
    def build(root: Path, t: Thread) -> Placed:
        bundle = kit.base(root)
        placed = edit(bundle, t)
        bundle.save()
        return placed
    return build


def _on(make: Callable[[Path], kit.Bundle],
        edit: Callable[[kit.Bundle, Thread], Placed]) -> Builder:
    def build(root: Path, t: Thread) -> Placed:
        bundle = make(root)
        placed = edit(bundle, t)
        bundle.save()
        return placed
    return build


def e10(b: kit.Bundle, t: Thread) -> Placed:
    pod = _find(_pods(b), "cuda-test", "gpu-b")
    status = pod["status"]["containerStatuses"][0]
    status.update(ready=False, started=False)
    status["state"] = {"terminated": {"exitCode": 255, "reason": "Error",
                                      "startedAt": "2026-11-20T10:58:00Z",
                                      "finishedAt": "2026-11-20T10:58:01Z"}}
    pod["status"]["phase"] = "Failed"
    _replace(b, pod)
    return Placed(_log(b, "default", "cuda-test", status["name"], t.lines))


def _new_failing(b: kit.Bundle, t: Thread, *, name: str, namespace: str, container: str,
                 image: str, owner: str) -> Placed:
    pod = _clone(b, "nvidia-container-toolkit-daemonset-", name=name, namespace=namespace,
                 container=container, image=image, owner=owner)
    _crashloop(pod["status"]["containerStatuses"][0], pod)
    _not_ready(pod)
    _put(b, pod, image)
    return Placed(_log(b, namespace, name, container, t.lines))


def e15(b: kit.Bundle, t: Thread) -> Placed:
    return _new_failing(b, t, name="nvidia-mig-manager-7tq2x", namespace=NS,
                        container="nvidia-mig-manager", owner="nvidia-mig-manager",
                        image="nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.12.3-ubuntu20.04")


def e20(b: kit.Bundle, t: Thread) -> Placed:
    return _running_log(b, "gpu-feature-discovery-", t.lines)


def e25(b: kit.Bundle, t: Thread) -> Placed:
    image = "nvcr.io/nvidia/driver:460.73.01-ubuntu21.10"
    _os(b, "Ubuntu 21.10", "Ubuntu", "21.10")
    pod = _driver_pod(b, image=image)
    _waiting(pod, "ImagePullBackOff", f'Back-off pulling image "{image}"')
    _put(b, pod, image)
    return _event(b, pod, "Failed", t.lines[0])


def e30(b: kit.Bundle, t: Thread) -> Placed:
    return _status_message(b, "nvidia-device-plugin-daemonset-", t.lines[0])


def e35(b: kit.Bundle, t: Thread) -> Placed:
    pod = _creating(b, "nvidia-device-plugin-daemonset-")
    return _event(b, pod, "FailedCreatePodSandBox", SANDBOX + t.lines[0])


def e40(b: kit.Bundle, t: Thread) -> Placed:
    pod = _find(_pods(b), "cuda-test", "gpu-b")
    _waiting(pod, "RunContainerError", HOOK + t.lines[0] + ": unknown")
    _replace(b, pod)
    return _event(b, pod, "Failed", HOOK + t.lines[0] + ": unknown")


def e45(b: kit.Bundle, t: Thread) -> Placed:
    b.write(f"nodes/{NODE}/host/secureboot.txt", "SecureBoot enabled\n")
    return _driver_failing(b, t.lines)


def e50(b: kit.Bundle, t: Thread) -> Placed:
    _strip_nvidia_runtimes(b)
    pod = _creating(b, "nvidia-device-plugin-daemonset-")
    return _event(b, pod, "FailedCreatePodSandBox", t.lines[0])


def e55(b: kit.Bundle, t: Thread) -> Placed:
    return _journal(b, "nvidia-fabricmanager", "nv-fabricmanager", t.lines)


def e65(b: kit.Bundle, t: Thread) -> Placed:
    return _failing(b, "nvidia-device-plugin-daemonset-", t.lines)


def e70(b: kit.Bundle, t: Thread) -> Placed:
    # OS, kernel and image tag as the thread's debug information gives them
    _os(b, "Amazon Linux 2", "Amazon Linux", "2", "5.10.210-201.852.amzn2.x86_64")
    image = "nvcr.io/nvidia/driver:550.54.14-amzn2"
    pod = _driver_pod(b, image=image)
    _waiting(pod, "ImagePullBackOff", f'Back-off pulling image "{image}"')
    _put(b, pod, image)
    rel = f"logs/{NS}/{pod['metadata']['name']}/nvidia-driver-ctr.log"
    b.failed(rel, t.lines[0])
    return Placed(f"manifest:{rel}")


def e75(b: kit.Bundle, t: Thread) -> Placed:
    pod = _creating(b, "nvidia-device-plugin-daemonset-")
    _strip_nvidia_runtimes(b)
    return _event(b, pod, "FailedCreatePodSandBox", SANDBOX + t.lines[0])


def e80(b: kit.Bundle, t: Thread) -> Placed:
    pod = _driver_pod(b, host_driver=True)
    peermem = copy.deepcopy(pod["spec"]["containers"][0])
    peermem["name"] = "nvidia-peermem-ctr"
    pod["spec"]["containers"].append(peermem)
    status = copy.deepcopy(pod["status"]["containerStatuses"][0])
    status["name"] = "nvidia-peermem-ctr"
    _crashloop(status, pod)
    pod["status"]["containerStatuses"].append(status)
    _not_ready(pod)
    _put(b, pod, DRIVER_IMAGE)
    kit._node_info(b, kernelVersion="6.8.0-1059-azure")
    return Placed(_log(b, NS, pod["metadata"]["name"], "nvidia-peermem-ctr", t.lines))


def e85(b: kit.Bundle, t: Thread) -> Placed:
    pod = _find(_pods(b), "nvidia-cuda-validator-")
    status = pod["status"]["containerStatuses"][0]
    status["state"] = {"terminated": {"exitCode": 1, "reason": "Error",
                                      "startedAt": "2026-11-20T10:58:00Z",
                                      "finishedAt": "2026-11-20T10:58:02Z"}}
    pod["status"]["phase"] = "Failed"
    _replace(b, pod)
    return Placed(_log(b, NS, pod["metadata"]["name"], status["name"], t.lines))


def e90(b: kit.Bundle, t: Thread) -> Placed:
    b.write(f"nodes/{NODE}/docker/files/etc/docker/daemon.json",
            json.dumps({"exec-opts": ["native.cgroupdriver=systemd"]}, indent=4) + "\n")
    return _journal(b, "docker", "dockerd", t.lines)


def e95(b: kit.Bundle, t: Thread) -> Placed:
    return _failing(b, "nvidia-container-toolkit-daemonset-", t.lines)


def e100(b: kit.Bundle, t: Thread) -> Placed:
    pod = _driver_pod(b, host_driver=True)
    _put(b, pod, DRIVER_IMAGE)
    return Placed(_log(b, NS, pod["metadata"]["name"], "nvidia-driver-ctr", t.lines))


def e105(b: kit.Bundle, t: Thread) -> Placed:
    _os(b, "Amazon Linux 2", "Amazon Linux", "2", "4.14.232-177.418.amzn2.x86_64")
    return _driver_failing(b, t.lines)


def e110(b: kit.Bundle, t: Thread) -> Placed:
    return _failing(b, "nvidia-dcgm-exporter-", t.lines)


def e115(b: kit.Bundle, t: Thread) -> Placed:
    return _journal(b, "docker", "dockerd", t.lines)


def e120(b: kit.Bundle, t: Thread) -> Placed:
    return _driver_failing(b, t.lines, host_driver=True)


def e125(b: kit.Bundle, t: Thread) -> Placed:
    _no_host_driver(b)
    return _journal(b, "nvidia-driver-installer", "install-gpu-driver", t.lines)


def e130(b: kit.Bundle, t: Thread) -> Placed:
    return _driver_failing(b, t.lines)


def e135(b: kit.Bundle, t: Thread) -> Placed:
    return _new_failing(b, t, name="nvidia-dra-driver-gpu-kubelet-plugin-4nq8c",
                        namespace="nvidia-dra-driver-gpu", container="gpus",
                        owner="nvidia-dra-driver-gpu-kubelet-plugin",
                        image="nvcr.io/nvidia/k8s-dra-driver-gpu:v25.3.0")


def e140(b: kit.Bundle, t: Thread) -> Placed:
    return _workload_failed(b, t.lines[0])


def e145(b: kit.Bundle, t: Thread) -> Placed:
    return _workload_failed(b, t.lines[0])


def e150(b: kit.Bundle, t: Thread) -> Placed:
    return _journal(b, "nvidia-dcgm", "nv-hostengine", t.lines)


def e155(b: kit.Bundle, t: Thread) -> Placed:
    pod = _driver_pod(b, name="nvidia-gpu-driver-ubuntu24.04-tzq5l")
    manager = {"name": "k8s-driver-manager",
               "image": "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.8.0"}
    pod["spec"]["initContainers"] = [manager]
    init = {"name": "k8s-driver-manager", "image": manager["image"], "imageID": "",
            "ready": False, "started": False}
    _crashloop(init, pod)
    pod["status"]["initContainerStatuses"] = [init]
    _waiting(pod, "PodInitializing")
    pod["status"]["phase"] = "Pending"
    _put(b, pod, DRIVER_IMAGE)
    return Placed(_log(b, NS, pod["metadata"]["name"], "k8s-driver-manager", t.lines))


def e160(b: kit.Bundle, t: Thread) -> Placed:
    return _workload_failed(b, t.lines[0])


# -- orders 205 to 240 (the second mining round) ----------------------------------------------


def _cli_refused(b: kit.Bundle, t: Thread) -> Placed:
    """The user's CUDA pod cannot start: the toolkit's prestart hook fails (event)."""
    pod = _find(_pods(b), "cuda-test", "gpu-b")
    _waiting(pod, "RunContainerError")
    _replace(b, pod)
    return _event(b, pod, "Failed", HOOK + t.lines[0])


def e210(b: kit.Bundle, t: Thread) -> Placed:
    return _failing(b, "gpu-feature-discovery-", t.lines)


def e215(b: kit.Bundle, t: Thread) -> Placed:
    """The kernel refuses the GPU at probe time; the lines as the journal shows them."""
    _no_host_driver(b)
    path = b.root / f"nodes/{NODE}/dmesg.txt"
    kept = path.read_text() if path.exists() else ""
    lines = [line.removeprefix("kernel: ") for line in t.lines]
    stamped = "".join(f"2026-11-20T10:58:0{i},000000+00:00 {line}\n"
                      for i, line in enumerate(lines))
    b.write(f"nodes/{NODE}/dmesg.txt", kept + stamped)
    return Placed(f"nodes/{NODE}/dmesg.txt")


def e225(b: kit.Bundle, t: Thread) -> Placed:
    return _failing(b, "nvidia-dcgm-exporter-", t.lines)


def t230(root: Path, t: Thread) -> Placed:
    bundle = kit.base(root)
    kit._without_operator(bundle)  # the standalone chart's plugin
    kit.add_plugin(bundle)
    placed = _failing(bundle, "nvidia-device-plugin-daemonset-", t.lines)
    bundle.save()
    return placed


def e235(b: kit.Bundle, t: Thread) -> Placed:
    return _driver_failing(b, t.lines)


def e240(b: kit.Bundle, t: Thread) -> Placed:
    return _new_failing(b, t, name="nvidia-kubevirt-gpu-dp-daemonset-x7k2p",
                        namespace="kube-system", container="nvidia-kubevirt-gpu-dp-ctr",
                        owner="nvidia-kubevirt-gpu-dp-daemonset",
                        image="nvcr.io/nvidia/kubevirt-gpu-device-plugin:v1.2.3")


# -- orders 305 onwards (the third mining round, NVIDIA components) ---------------------------


def e305(b: kit.Bundle, t: Thread) -> Placed:
    """The standalone dcgm-exporter chart's pod, started without the nvidia runtime class."""
    name = "dcgm-exporter-dxcfj"
    image = "nvcr.io/nvidia/k8s/dcgm-exporter:4.8.4"
    pod = _clone(b, "nvidia-container-toolkit-daemonset-", name=name, namespace="monitoring",
                 container="exporter", image=image, owner="dcgm-exporter",
                 labels={"app.kubernetes.io/name": "dcgm-exporter"})
    pod["spec"].pop("runtimeClassName", None)
    _crashloop(pod["status"]["containerStatuses"][0], pod)
    _not_ready(pod)
    _put(b, pod, image)
    return Placed(_log(b, "monitoring", name, "exporter", t.lines))


def e310(b: kit.Bundle, t: Thread) -> Placed:
    return _failing(b, "gpu-feature-discovery-", t.lines)


# -- orders 505 to 550 (distributions, managed clouds, kubelet, kernel) -----------------------


def _managed(make: Callable[[Path], Path]) -> Callable[[Path], kit.Bundle]:
    def open_(root: Path) -> kit.Bundle:
        return kit.Bundle(make(root))
    return open_


def e505(b: kit.Bundle, t: Thread) -> Placed:
    """Bottlerocket: the dcgm-exporter chart's pod, without a GPU request, finds no NVML."""
    kit.add_plugin(b, namespace="monitoring", ds_name="dcgm-exporter",
                   labels={"app.kubernetes.io/name": "dcgm-exporter"}, container="exporter",
                   image="nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04", log=False)
    return _failing(b, "dcgm-exporter-", t.lines)


def _plugin_failing(b: kit.Bundle, t: Thread) -> Placed:
    return _failing(b, "nvidia-device-plugin-daemonset-", t.lines)


def e515(b: kit.Bundle, t: Thread) -> Placed:
    """kind: the user's pod cannot start; kubelet's event carries containerd's error."""
    pod = _find(_pods(b), "cuda-test", "gpu-b")
    _waiting(pod, "RunContainerError")
    _replace(b, pod)
    return _event(b, pod, "Failed", "Error: failed to create containerd task: " + t.lines[0])


def e530(b: kit.Bundle, t: Thread) -> Placed:
    return _journal(b, "kubelet", "kubelet", t.lines)


def e535(b: kit.Bundle, t: Thread) -> Placed:
    """kubelet admission rejects the pod: the pod's own status holds the message."""
    pod = _find(_pods(b), "cuda-test", "gpu-b")
    pod["status"] = {"phase": "Failed", "reason": "UnexpectedAdmissionError",
                     "message": t.lines[0], "startTime": "2026-11-20T10:58:00Z"}
    _replace(b, pod)
    return Placed("cluster/pods.json")


def e540(b: kit.Bundle, t: Thread) -> Placed:
    return _workload_failed(b, t.lines[0])


# -- orders 705 onwards (mine5: dcgm-exporter, MIG, GFD/NFD, DRA, networking, FM, vGPU) -----


def e705(b: kit.Bundle, t: Thread) -> Placed:
    """EKS g4dn.metal: the standalone dcgm-exporter DaemonSet crash-loops in the Go runtime."""
    return e505(b, t)


def e710(b: kit.Bundle, t: Thread) -> Placed:
    """The standalone dcgm-exporter chart: the exporter keeps running on its default CSV."""
    kit.add_plugin(b, namespace="monitoring", ds_name="dcgm-exporter",
                   labels={"app.kubernetes.io/name": "dcgm-exporter"}, container="exporter",
                   image="nvcr.io/nvidia/k8s/dcgm-exporter:2.3.1-2.6.1-ubuntu20.04", log=False)
    return _running_log(b, "dcgm-exporter-", t.lines)


def e715(b: kit.Bundle, t: Thread) -> Placed:
    """A vGPU host: the vGPU manager daemon's journal refuses the guest's driver."""
    return _journal(b, "nvidia-vgpu-mgr", "nvidia-vgpu-mgr", t.lines)


def e720(b: kit.Bundle, t: Thread) -> Placed:
    """A pod with a DRA GPU claim cannot start: kubelet's event carries the hook's refusal."""
    pod = _find(_pods(b), "cuda-test", "gpu-b")
    _waiting(pod, "RunContainerError")
    _replace(b, pod)
    return _event(b, pod, "Failed", t.lines[0])


def _standalone(root: Path) -> kit.Bundle:
    """A static device plugin, no operator (a cloud's own driver installer on the node)."""
    return kit.Bundle(kit.standalone_plugin(root))


def _bottlerocket(root: Path) -> kit.Bundle:
    return kit.Bundle(kit.bottlerocket_no_node_files(root))


# -- orders 605 onwards (the fourth NVIDIA-components pass) --------------------------------


def e625(b: kit.Bundle, t: Thread) -> Placed:
    """Debian 13 node: the driver pod waits on a tag that was never published."""
    image = "nvcr.io/nvidia/driver:580.105.08-debian13"
    _os(b, "Debian GNU/Linux 13 (trixie)", "Debian GNU/Linux", "13")
    pod = _driver_pod(b, image=image)
    _waiting(pod, "ImagePullBackOff", f'Back-off pulling image "{image}"')
    _put(b, pod, image)
    return _event(b, pod, "Failed", t.lines[0])


# -- orders 805 onwards (round 6: kubelet, runtimes, distributions, managed clouds) -----------


def e805(b: kit.Bundle, t: Thread) -> Placed:
    """GKE: the device plugin's hostPath mount of the driver directory fails (event)."""
    pod = _creating(b, "nvidia-gpu-device-plugin-small-cos-")
    return _event(b, pod, "FailedMount", t.lines[0])


def e810(b: kit.Bundle, t: Thread) -> Placed:
    """K3s v1.21 agent: its own journal holds the template error it exits on."""
    _node_info(b, kubeletVersion="v1.21.5+k3s2",
               containerRuntimeVersion="containerd://1.4.11-k3s1")
    return _journal(b, "k3s", "k3s", t.lines)


def e820(b: kit.Bundle, t: Thread) -> Placed:
    """The cluster autoscaler, running and healthy, logs why the empty GPU group cannot grow."""
    name = "cluster-autoscaler-6b7d9c5f4d-q2x8m"
    image = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.1.2"
    pod = _clone(b, "nvidia-container-toolkit-daemonset-", name=name, namespace="kube-system",
                 container="cluster-autoscaler", image=image, owner="cluster-autoscaler")
    pod["spec"].pop("runtimeClassName", None)
    _put(b, pod, image)
    ready = [dict(d, status={**d["status"], "numberReady": 1, "numberAvailable": 1})
             if d["metadata"]["name"] == "cluster-autoscaler" else d
             for d in b.items("daemonsets")]
    b.set_items("daemonsets", ready)
    return Placed(_log(b, "kube-system", name, "cluster-autoscaler", t.lines))


ROUND6: dict[int, Builder] = {
    805: _on(_managed(kit.gke_managed), e805), 810: _on_base(e810),
    815: _on(_managed(kit.eks_managed), _plugin_failing), 820: _on_base(e820),
}


# -- orders 905 onwards (mine9: NVIDIA components) --------------------------------------------


def e910(b: kit.Bundle, t: Thread) -> Placed:
    """The operator's dcgm-exporter keeps running and logs the field it cannot map."""
    return _running_log(b, "nvidia-dcgm-exporter-", t.lines)


def e915(b: kit.Bundle, t: Thread) -> Placed:
    """The operator's toolkit container keeps running; its log names where it wrote the
    containerd drop-in."""
    return _running_log(b, "nvidia-container-toolkit-daemonset-", t.lines)


def e920(b: kit.Bundle, t: Thread) -> Placed:
    """The dcgm-exporter DaemonSet from the project's manifest crash-loops at start."""
    kit.add_plugin(b, namespace="default", ds_name="dcgm-exporter",
                   labels={"app.kubernetes.io/name": "dcgm-exporter"}, container="dcgm-exporter",
                   image="nvidia/dcgm-exporter", log=False)
    return _failing(b, "dcgm-exporter-", t.lines)


def e930(b: kit.Bundle, t: Thread) -> Placed:
    """A ComputeDomain IMEX daemon pod of the DRA driver never passes its startup probe."""
    name = "imex-channel-injection-8j4x2-q7m2d"
    image = "nvcr.io/nvidia/k8s-dra-driver-gpu"
    pod = _clone(b, "nvidia-container-toolkit-daemonset-", name=name,
                 namespace="nvidia-dra-driver-gpu", container="compute-domain-daemon",
                 image=image, owner="imex-channel-injection-8j4x2")
    pod["spec"].pop("runtimeClassName", None)
    _not_ready(pod)
    _put(b, pod, image)
    return _event(b, pod, "Unhealthy", t.lines[0])


def e935(b: kit.Bundle, t: Thread) -> Placed:
    """A GPU pod cannot start: nvidia-container-runtime aborts while generating CDI edits and
    its Go stack trace is the container's waiting message."""
    pod = _find(_pods(b), "cuda-test", "gpu-b")
    message = ("Error: failed to create containerd task: failed to create shim task: OCI runtime "
               "create failed: nvidia-container-runtime did not terminate successfully: exit "
               "status 2: free(): invalid pointer\nSIGABRT: abort\n" + t.lines[0] + "\n")
    _waiting(pod, "RunContainerError", message)
    _replace(b, pod)
    return Placed("cluster/pods.json")


ROUND9: dict[int, Builder] = {
    905: _on_base(e215), 910: _on_base(e910), 915: _on_base(e915),
    920: _on(_standalone, e920), 925: _on_base(e235), 930: _on_base(e930),
    935: _on_base(e935),
}


# -- orders 1005 onwards (round 10: distributions, runtimes, managed clouds, kernel) ---------


def _by_container(bundle: kit.Bundle, container: str, node: str) -> dict[str, Any]:
    """The pod on ``node`` whose first container has this name."""
    return next(p for p in _pods(bundle) if p["spec"].get("nodeName") == node
                and p["spec"]["containers"][0]["name"] == container)


def e1005(b: kit.Bundle, t: Thread) -> Placed:
    """The operator itself crash-loops on the control-plane node and logs why."""
    pod = _by_container(b, "gpu-operator", "cp-1")
    status = pod["status"]["containerStatuses"][0]
    _crashloop(status, pod)
    _not_ready(pod)
    _replace(b, pod)
    meta = pod["metadata"]
    return Placed(_log(b, meta["namespace"], meta["name"], status["name"], t.lines))


def e1010(b: kit.Bundle, t: Thread) -> Placed:
    """AKS: the user's CUDA pod keeps running but its nvidia-smi calls now fail."""
    pod = _find(_pods(b), "cuda-test", "gpu-b")
    meta = pod["metadata"]
    return Placed(_log(b, meta["namespace"], meta["name"],
                       pod["status"]["containerStatuses"][0]["name"], t.lines))


def e1015(b: kit.Bundle, t: Thread) -> Placed:
    """NFD's master keeps running and retrying; its own log holds the RBAC refusal."""
    pod = _by_container(b, "master", "cp-1")
    meta = pod["metadata"]
    return Placed(_log(b, meta["namespace"], meta["name"],
                       pod["status"]["containerStatuses"][0]["name"], t.lines))


def e1025(b: kit.Bundle, t: Thread) -> Placed:
    """GKE: new pods on the GPU node never get a sandbox network; kubelet's event says why."""
    pod = _creating(b, "nvidia-gpu-device-plugin-small-cos-")
    return _event(b, pod, "FailedCreatePodSandBox", t.lines[0])


ROUND10: dict[int, Builder] = {
    1005: _on_base(e1005), 1010: _on(_managed(kit.aks_managed), e1010),
    1015: _on_base(e1015), 1020: _on(_managed(kit.eks_managed), _plugin_failing),
    1025: _on(_managed(kit.gke_managed), e1025),
}


# -- orders 1205 onwards (round 12, mine12a: managed clouds and their node images) ------------


def e1205(b: kit.Bundle, t: Thread) -> Placed:
    """GKE: the KubeRay operator cannot create the RayCluster's GPU worker pods; the
    refusal is the message of its event on the RayCluster."""
    return _object_event(b, "RayCluster", "ray.io/v1", "raycluster-gpu", "default",
                         "FailedToCreateWorkerPod", t.lines[0], "raycluster-controller")


def e1215(b: kit.Bundle, t: Thread) -> Placed:
    """GKE: the user's GPU pod is Pending, unscheduled; the cluster autoscaler's event on it
    says the GPU group is in back-off after a failed scale-up."""
    pod = _find(_pods(b), "cuda-test", "gpu-b")
    pod["spec"].pop("nodeName", None)
    pod["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "lastTransitionTime": "2026-11-20T10:50:00Z"}]}
    _replace(b, pod)
    meta = pod["metadata"]
    return _object_event(b, "Pod", "v1", meta["name"], meta["namespace"], "NotTriggerScaleUp",
                         t.lines[0], "cluster-autoscaler", type_="Normal")


ROUND12: dict[int, Builder] = {
    1205: _on(_managed(kit.gke_managed), e1205),
    1210: _on(_managed(kit.eks_managed), _plugin_failing),
    1215: _on(_managed(kit.gke_managed), e1215),
}


# -- orders 1305 onwards (round 13: distributions, runtimes, kubelet device manager) ---------


def e1305(b: kit.Bundle, t: Thread) -> Placed:
    """RKE2 v1.24.9 node: after containerd restarts, the toolkit pod's sandbox is recreated."""
    _node_info(b, kubeletVersion="v1.24.9+rke2r1", kubeProxyVersion="v1.24.9+rke2r1")
    pod = _find(_pods(b), "nvidia-container-toolkit-daemonset-")
    return _event(b, pod, "SandboxChanged", t.lines[0], kind="Normal", count=31)


def e1310(b: kit.Bundle, t: Thread) -> Placed:
    """KubeVirt v1.9.0: a GPU VM's virt-launcher pod on gpu-a never gets its container created."""
    name = "virt-launcher-win11-gpu-7xq2d"
    image = "quay.io/kubevirt/virt-launcher:v1.9.0"
    pod = _clone(b, "nvidia-container-toolkit-daemonset-", name=name, namespace="default",
                 container="compute", image=image, owner="win11-gpu",
                 labels={"kubevirt.io": "virt-launcher", "vm.kubevirt.io/name": "win11-gpu"})
    pod["metadata"]["ownerReferences"] = [{
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance", "name": "win11-gpu",
        "uid": "uid-vmi-win11-gpu", "controller": True, "blockOwnerDeletion": True}]
    gpu = {"nvidia.com/GA102GL_A10": "1", "devices.kubevirt.io/kvm": "1"}
    pod["spec"]["containers"][0]["resources"] = {"limits": dict(gpu), "requests": dict(gpu)}
    pod["status"].pop("podIP", None)
    pod["status"].pop("podIPs", None)
    _waiting(pod, "CreateContainerError", "failed to generate container spec: failed to "
             "generate spec: " + t.lines[0])
    b.set_items("pods", [*_pods(b), pod])
    _event(b, pod, "Failed", "Error: failed to generate container spec: failed to generate "
           "spec: " + t.lines[0], count=12)
    return Placed("cluster/pods.json")


ROUND13: dict[int, Builder] = {
    1305: _on_base(e1305), 1310: _on_base(e1310),
}


# -- orders 1405 onwards (mine12c: NVIDIA components around the operator) --------------------


def _daemon_pod(b: kit.Bundle, *, name: str, container: str, image: str, owner: str,
                namespace: str = NS) -> dict[str, Any]:
    """A running, ready DaemonSet pod on gpu-a (an operand the base bundle does not deploy)."""
    pod = _clone(b, "nvidia-container-toolkit-daemonset-", name=name, namespace=namespace,
                 container=container, image=image, owner=owner)
    _put(b, pod, image)
    ready = [dict(d, status={**d["status"], "numberReady": 1, "numberAvailable": 1})
             if d["metadata"]["name"] == owner else d for d in b.items("daemonsets")]
    b.set_items("daemonsets", ready)
    return pod


def e1405(b: kit.Bundle, t: Thread) -> Placed:
    """The operator's MIG manager keeps running and logs why it refused the requested profile."""
    name = "nvidia-mig-manager-q4w8n"
    _daemon_pod(b, name=name, container="nvidia-mig-manager", owner="nvidia-mig-manager",
                image="nvcr.io/nvidia/cloud-native/k8s-mig-manager")
    return Placed(_log(b, NS, name, "nvidia-mig-manager", t.lines))


def e1410(b: kit.Bundle, t: Thread) -> Placed:
    """A user's GPU pod keeps running while its CUDA allocations fail; its own log says so."""
    return e1010(b, t)


ROUND14: dict[int, Builder] = {
    1405: _on_base(e1405), 1410: _on_base(e1410), 1415: _on_base(e1405),
}


BUILDERS: dict[int, Builder] = {
    5: t5, 10: _on_base(e10), 15: _on_base(e15), 20: _on_base(e20), 25: _on_base(e25),
    30: _on_base(e30), 35: _on(_docker_operator, e35), 40: _on_base(e40),
    45: _on_base(e45), 50: _on_base(e50), 55: _on_base(e55), 65: _on_base(e65),
    70: _on_base(e70), 75: _on_base(e75), 80: _on_base(e80), 85: _on_base(e85),
    90: _on(_docker_host, e90), 95: _on_base(e95), 100: _on_base(e100),
    105: _on_base(e105), 110: _on_base(e110), 115: _on(_docker_host, e115),
    120: _on_base(e120), 125: _on(_standalone, e125), 130: _on_base(e130), 135: _on_base(e135),
    140: _on(_docker_operator, e140), 145: _on(_bottlerocket, e145), 150: _on_base(e150),
    155: _on_base(e155), 160: _on_base(e160),
    205: _on_base(_cli_refused), 210: _on_base(e210), 215: _on_base(e215),
    220: _on_base(_cli_refused), 225: _on_base(e225), 230: t230, 235: _on_base(e235),
    240: _on_base(e240),
    305: _on_base(e305), 310: _on_base(e310), 315: _on_base(_cli_refused),
    320: _on_base(e155),
    505: _on(_managed(kit.bottlerocket_no_node_files), e505),
    510: _on(_managed(kit.eks_managed), _plugin_failing),
    515: _on_base(e515), 520: _on(_managed(kit.aks_managed), _plugin_failing),
    525: _on(_managed(kit.talos_no_node_files), _cli_refused),
    530: _on(_managed(kit.bottlerocket_no_node_files), e530), 535: _on_base(e535),
    540: _on(_managed(kit.talos_no_node_files), e540),
    545: _on(_managed(kit.gke_managed), e10), 550: _on_base(e235),
    705: _on(_managed(kit.eks_managed), e705), 710: _on(_standalone, e710),
    715: _on_base(e715), 720: _on_base(e720), 725: _on_base(e215),
    # orders 605 onwards (the fourth NVIDIA-components pass)
    605: _on_base(e10), 610: _on_base(e160), 615: _on_base(e160), 620: _on_base(e160),
    625: _on_base(e625), 630: _on_base(e160),
    **ROUND6,
    **ROUND9,
    **ROUND10,
    **ROUND12,
    **ROUND13,
    **ROUND14,
}


def build(thread: Thread, out: Path) -> tuple[Path, Placed]:
    """Write the bundle of ``thread`` under ``out``; return its root and the evidence's place."""
    root = out / f"heldout-{thread.order:03d}"
    if root.exists():  # a kept bundle of an earlier run is rebuilt, not reused
        shutil.rmtree(root)
    placed = BUILDERS[thread.order](root, thread)
    return root, placed


def build_all(out: Path) -> list[tuple[Thread, Path, Placed]]:
    return [(t, *build(t, out)) for t in load_threads()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="keep the bundles in this directory")
    args = parser.parse_args(argv)
    if args.out is None:
        with tempfile.TemporaryDirectory() as tmp:
            built = build_all(Path(tmp))
            print(f"built {len(built)} bundles (discarded; use --out DIR to keep them)")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for thread, root, placed in build_all(args.out):
        print(f"{thread.order:3d} {root} {placed.where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
