"""Tiny bundles in the layouts of other tools, built from their documented shapes:
the output directory of the GPU Operator's ``hack/must-gather.sh`` and a Replicated
troubleshoot support bundle (see ``bundle/layouts``)."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

from kit.bundles import kube_node

SEP = "_" * 44

POLICY = """apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata:
  name: cluster-policy
  creationTimestamp: "2026-11-20T08:30:00Z"
spec:
  toolkit:
    enabled: false
status:
  state: notReady
"""

OPERATOR_POD = """apiVersion: v1
kind: Pod
metadata:
  name: gpu-operator-7d9f-abcde
  namespace: gpu-operator
  labels: {app: gpu-operator}
spec:
  nodeName: cp-1
  containers:
  - name: gpu-operator
    image: nvcr.io/nvidia/gpu-operator:v26.3.3
status:
  phase: Running
"""

PLUGIN_POD = """- apiVersion: v1
  kind: Pod
  metadata:
    name: nvidia-device-plugin-daemonset-x7k2p
    namespace: gpu-operator
    labels: {app: nvidia-device-plugin-daemonset}
  spec:
    nodeName: gpu-a
    initContainers:
    - name: toolkit-validation
      image: nvcr.io/nvidia/gpu-operator:v26.3.3
    containers:
    - name: nvidia-device-plugin
      image: nvcr.io/nvidia/k8s-device-plugin:v0.18.0
  status:
    phase: Running
"""

DESCRIBE = """Name:               gpu-a
Roles:              <none>
Labels:             kubernetes.io/hostname=gpu-a
                    nvidia.com/gpu.present=true
Annotations:        node.alpha.kubernetes.io/ttl: 0
CreationTimestamp:  Fri, 20 Nov 2026 08:24:50 +0000
Taints:             nvidia.com/gpu=present:NoSchedule
                    node.kubernetes.io/unschedulable:NoSchedule
Unschedulable:      true
Conditions:
  Type    Status  LastHeartbeatTime                LastTransitionTime               Reason        Message
  ----    ------  -----------------                ------------------               ------        -------
  Ready   True    Fri, 20 Nov 2026 09:29:58 +0000  Fri, 20 Nov 2026 08:25:16 +0000  KubeletReady  kubelet is posting ready status
Addresses:
  InternalIP:  192.168.10.11
  Hostname:    gpu-a
Capacity:
  cpu:             16
  nvidia.com/gpu:  8
Allocatable:
  cpu:             16
  nvidia.com/gpu:  7
System Info:
  Kernel Version:             6.8.0-88-generic
  Container Runtime Version:  containerd://1.7.28
  Kubelet Version:            v1.37.1
Non-terminated Pods:          (1 in total)
  Namespace     Name                                  CPU Requests  Age
  ---------     ----                                  ------------  ---
  gpu-operator  nvidia-device-plugin-daemonset-x7k2p  0 (0%)        1h
Events:              <none>


Name:               gpu-b
Roles:              <none>
Labels:             nvidia.com/gpu.present=true
Annotations:        <none>
Taints:             <none>
Unschedulable:      false
Capacity:
  nvidia.com/gpu:  1
Allocatable:
  nvidia.com/gpu:  1
Events:              <none>
"""  # noqa: E501 - kubectl's table lines are as long as they are

XID = ("[ 4242.123456] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, "
       "GPU has fallen off the bus.")


def bug_report(dmesg: str = XID) -> bytes:
    text = (f"{SEP}\n\nStart of NVIDIA bug report log file.\n\nuname: Linux gpu-a "
            "6.8.0-88-generic #89-Ubuntu SMP x86_64 GNU/Linux\n\n"
            f"{SEP}\n\n*** /etc/os-release\n*** ls: -rw-r--r-- 1 root root 0 /etc/os-release\n"
            "ID=rhel\n\n"
            f"{SEP}\n\ndmesg:\n\n{dmesg}\n"
            f"{SEP}\n\n*** /proc/cmdline\n*** ls: -r--r--r-- 1 root root 0 /proc/cmdline\n"
            "BOOT_IMAGE=/vmlinuz root=/dev/sda1 quiet\n\n"
            f"{SEP}\n\n*** /proc/modules\n*** ls: -r--r--r-- 1 root root 0 /proc/modules\n"
            "nvidia_uvm 2076672 0 - Live 0x0 (PO)\nnvidia 9756672 1 nvidia_uvm, Live 0x0 (PO)\n"
            "ext4 1134592 1 - Live 0x0\n\n"
            f"{SEP}\n\nEnd of NVIDIA bug report log file.\n")
    # nvidia-bug-report.sh appends one gzip member per section
    parts = [SEP + part for part in text.split(SEP) if part]
    return b"".join(gzip.compress(part.encode(), mtime=0) for part in parts)


def must_gather_files() -> dict[str, str | bytes]:
    return {
        "must-gather.log": "Using ARTIFACT_DIR=/tmp/nvidia-gpu-operator_20261120_0930\n",
        "cluster_policy.yaml": POLICY,
        "gpu_nodes.labels": "gpu-a\n- nvidia.com/gpu.present=true\n\n",
        "gpu_nodes.status": "NAME    STATUS   ROLES    AGE   VERSION\ngpu-a   Ready    <none>  "
                            "1h    v1.37.1\n",
        "gpu_nodes.descr": DESCRIBE,
        "gpu_operator_pod.yaml": OPERATOR_POD,
        "gpu_operator_pod.log": "2026-11-20T09:27:58Z INFO starting manager\n",
        "gpu_operator_pod.previous.log": "",
        "gpu_operand_pods.yaml": "apiVersion: v1\nkind: List\nitems:\n"
                                 + "- " + OPERATOR_POD.replace("\n", "\n  ").rstrip() + "\n"
                                 + PLUGIN_POD,
        "gpu_operand_pod_nvidia-device-plugin-daemonset-x7k2p.log":
            "[pod/nvidia-device-plugin-daemonset-x7k2p/toolkit-validation] 2026-11-20T09:28:00Z "
            "waiting for nvidia container stack to be setup\n"
            "[pod/nvidia-device-plugin-daemonset-x7k2p/nvidia-device-plugin] 2026-11-20T09:29:00Z "
            "Starting FS watcher.\n"
            "[pod/nvidia-device-plugin-daemonset-x7k2p/nvidia-device-plugin] 2026-11-20T09:29:01Z "
            "Registered device plugin for 'nvidia.com/gpu' with Kubelet\n",
        "gpu_operand_pod_nvidia-device-plugin-daemonset-x7k2p.previous.log": "",
        "gpu_operand_ds.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n"
                               "  kind: DaemonSet\n  metadata:\n    name: nvidia-device-plugin-"
                               "daemonset\n    namespace: gpu-operator\n  spec: {}\n",
        "nvidia-bug-report_gpu-a.log.gz": bug_report(),
    }


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def tar(target: Path, top: str, files: dict[str, str | bytes],
        links: dict[str, str] | None = None) -> Path:
    """A .tar.gz of ``files`` under ``top``; ``links`` maps names to the targets of
    symbolic links, written as troubleshoot writes them (relative to the link)."""
    with tarfile.open(target, "w:gz") as archive:
        for name, content in files.items():
            data = content if isinstance(content, bytes) else content.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name, link in (links or {}).items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.type = tarfile.SYMTYPE
            info.linkname = link
            archive.addfile(info)
    return target


def symlink(root: Path, links: dict[str, str]) -> Path:
    """Symbolic links under ``root`` (name → target relative to the link)."""
    for name, link in links.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(link)
    return root


NODE = kube_node("gpu-a", 1, other={}, hostname=False)
PLUGIN = {"metadata": {"name": "nvidia-device-plugin-daemonset-x7k2p", "namespace": "gpu-operator",
                       "labels": {"app": "nvidia-device-plugin-daemonset"}},
          "spec": {"nodeName": "gpu-a", "containers": [{"name": "nvidia-device-plugin"}]},
          "status": {"phase": "Running"}}
OPERATOR = {"metadata": {"name": "gpu-operator-7d9f-abcde", "namespace": "gpu-operator",
                         "labels": {"app": "gpu-operator"}},
            "spec": {"containers": [{"name": "gpu-operator"}]}, "status": {"phase": "Running"}}
DUMP = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
"""


def troubleshoot_files() -> dict[str, str | bytes]:
    logs = "cluster-resources/pods/logs/gpu-operator/nvidia-device-plugin-daemonset-x7k2p"
    return {
        "version.yaml": "apiVersion: troubleshoot.sh/v1beta2\nkind: SupportBundle\n",
        "cluster-info/cluster_version.json": json.dumps(
            {"info": {"gitVersion": "v1.37.1", "major": "1"}, "string": "v1.37.1"}),
        "cluster-resources/nodes.json": json.dumps([NODE]),  # older versions: a bare array
        "cluster-resources/pods/gpu-operator.json": json.dumps(
            {"kind": "PodList", "apiVersion": "v1", "items": [PLUGIN, OPERATOR]}),
        "cluster-resources/pods/default.json": json.dumps({"kind": "PodList", "items": []}),
        "cluster-resources/events/gpu-operator.json": json.dumps({"kind": "EventList", "items": [
            {"metadata": {"name": "e1", "namespace": "gpu-operator"}, "reason": "Started",
             "involvedObject": {"kind": "Pod", "name": "gpu-operator-7d9f-abcde"}}]}),
        "cluster-resources/deployments-errors.json": json.dumps(
            ['deployments.apps is forbidden: User "support" cannot list resource']),
        "cluster-resources/custom-resources/clusterpolicies.nvidia.com.yaml": "- " +
            POLICY.replace("\n", "\n  ").rstrip() + "\n",
        f"{logs}/nvidia-device-plugin.log": "2026-11-20T09:29:01Z Registered device plugin\n",
        f"{logs}/nvidia-device-plugin-previous.log": "2026-11-20T09:20:00Z crashed\n",
        "helm/gpu-operator.json": json.dumps([{
            "releaseName": "gpu-operator", "chart": "gpu-operator", "chartVersion": "v26.3.3",
            "appVersion": "v26.3.3", "namespace": "gpu-operator", "releaseHistory": [
                {"revision": "2", "date": "2026-11-20T09:31:40Z", "status": "deployed",
                 "values": {"toolkit": {"enabled": False}}},
                {"revision": "1", "date": "2026-11-20T09:27:58Z", "status": "superseded"}]}]),
        "host-collectors/gpu-a/run-host/containerd-config.txt": DUMP,
        "host-collectors/gpu-a/run-host/containerd-config-info.json": json.dumps(
            {"command": "/usr/bin/containerd config dump", "exitCode": "0"}),
        "host-collectors/gpu-a/run-host/free.txt": "Mem: 64G\n",
        "host-collectors/gpu-a/run-host/free-info.json": json.dumps(
            {"command": "/usr/bin/free -h", "exitCode": "0"}),
        "host-collectors/gpu-a/journald/containerd.txt":
            '{"MESSAGE": "starting containerd", "__REALTIME_TIMESTAMP": "1763630411000000"}\n',
        "host-collectors/gpu-a/journald/containerd-info.json": json.dumps(
            {"command": "/usr/bin/journalctl -u containerd --output json --no-pager",
             "exitCode": "0"}),
    }
