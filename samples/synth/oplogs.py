"""Container logs of the operator's pods (``logs/<ns>/<pod>/<container>.log``).

``kubectl logs --timestamps`` of every container, init containers included. A
container that never started has no log: the collector keeps kubectl's error in the
manifest instead (``... is waiting to start: PodInitializing``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from samples.synth.nodefiles import DRIVER, gpu_uuid
from samples.synth.plan import BUS_IDS, NodePlan, Role, plus

Obj = dict[str, Any]


def _stamp(t: dt.datetime, n: int) -> str:
    return f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}{n % 1000:03d}Z"


def _lines(start: dt.datetime, texts: list[str], step: float = 0.002) -> str:
    out = []
    for i, text in enumerate(texts):
        t = plus(start, i * step)
        out.append(f"{_stamp(t, i * 7)} {text}\n")
    return "".join(out)


def _klog(t: dt.datetime, source: str, text: str, severity: str = "I") -> str:
    return f"{severity}{t:%m%d %H:%M:%S}.{t.microsecond:06d}       1 {source}] {text}"


def _logrus(t: dt.datetime, text: str, level: str = "info") -> str:
    return f'time="{t:%Y-%m-%dT%H:%M:%SZ}" level={level} msg="{text}"'


def smi_table(n: NodePlan, seed: int, at: dt.datetime) -> list[str]:
    """``nvidia-smi`` as the driver validation prints it."""
    rows = [
        f"{at:%a %b %d %H:%M:%S %Y}       ",
        "+" + "-" * 89 + "+",
        f"| NVIDIA-SMI {DRIVER}             Driver Version: {DRIVER}     CUDA Version: 12.8"
        "     |",
        "|-----------------------------------------+------------------------+------------------"
        "----+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. "
        "ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute"
        " M. |",
        "|=========================================+========================+=================="
        "====|",
    ]
    for i, bus in enumerate(BUS_IDS):
        if n.role is Role.GPU_LOST and i == n.fault_gpu:
            continue
        rows += [
            f"|   {i}  NVIDIA H100 80GB HBM3          On  |   0000{bus[:-2].upper()}.0 Off |"
            "                    0 |",
            "| N/A   34C    P0             71W /  700W |       1MiB /  81559MiB |      0%      "
            "Default |",
            "+-----------------------------------------+------------------------+-------------"
            "---------+",
        ]
    del seed
    return rows


def container_log(pod: Obj, container: str, n: NodePlan, seed: int) -> str:
    start = plus(dt.datetime.fromisoformat(pod["metadata"]["creationTimestamp"]), 30)
    app = pod["metadata"].get("labels", {}).get("app", "")
    if container == "toolkit-validation" and app != "nvidia-operator-validator":
        return _lines(start, ["waiting for nvidia container stack to be setup"] * 2, 5.0)
    if container == "nvidia-device-plugin":
        texts = [_klog(start, "main.go:250", "Starting FS watcher for "
                       "/var/lib/kubelet/device-plugins"),
                 _klog(start, "main.go:257", "Starting OS watcher."),
                 _klog(start, "main.go:272", "Starting Plugins."),
                 _klog(start, "main.go:329", "Loading configuration."),
                 _klog(start, "main.go:369", "Retrieving plugins."),
                 _klog(start, "server.go:198", "Starting GRPC server for 'nvidia.com/gpu'"),
                 _klog(start, "server.go:142", "Starting to serve 'nvidia.com/gpu' on "
                       "/var/lib/kubelet/device-plugins/nvidia-gpu.sock"),
                 _klog(start, "server.go:149", "Registered device plugin for 'nvidia.com/gpu' "
                       "with Kubelet")]
        if n.role is Role.GPU_LOST:
            lost = gpu_uuid(seed, n.name, n.fault_gpu)
            at = plus(start, 5 * 86400)
            texts += [_klog(at, "health.go:185", f"XidCriticalError: Xid=79 on Device={lost}; "
                            "marking device as unhealthy."),
                      _klog(at, "server.go:292", f"'nvidia.com/gpu' device marked unhealthy: "
                            f"{lost}")]
        return _lines(start, texts)
    if container == "gpu-feature-discovery":
        return _lines(start, [_klog(start, "main.go:163", "Starting OS watcher."),
                              _klog(start, "main.go:183", "Loading configuration."),
                              _klog(start, "main.go:245", "Start running"),
                              _klog(start, "main.go:290", "Creating Labels"),
                              _klog(start, "output.go:82", "Writing labels to output file "
                                    "/etc/kubernetes/node-feature-discovery/features.d/gfd"),
                              _klog(start, "main.go:307", "Sleeping for 60000000000")])
    if container == "nvidia-dcgm-exporter":
        return _lines(start, [_logrus(start, "Starting dcgm-exporter"),
                              _logrus(start, "DCGM successfully initialized!"),
                              _logrus(start, "Collecting DCP Metrics"),
                              _logrus(start, "Falling back to metric file "
                                      "'/etc/dcgm-exporter/dcp-metrics-included.csv'"),
                              _logrus(start, "Initializing system entities of type 'GPU'"),
                              _logrus(start, "Pipeline starting"),
                              _logrus(start, "Starting webserver")])
    if container == "driver-validation":
        texts = [_logrus(start, "Attempting to validate a pre-installed driver on the host"),
                 _logrus(start, "running command chroot with args [/host nvidia-smi]")]
        return _lines(start, texts + smi_table(n, seed, start), 0.0004)
    if container == "toolkit-validation":
        return _lines(start, [_logrus(start, "version: 1.20.0, commit: 5f2b1e0"),
                              _logrus(start, "running command nvidia-smi"),
                              _logrus(start, "validation successful")])
    if container == "cuda-validation":
        if app == "nvidia-cuda-validator":
            return _lines(start, ["[Vector addition of 50000 elements]",
                                  "Copy input data from the host memory to the CUDA device",
                                  "CUDA kernel launch with 196 blocks of 256 threads",
                                  "Copy output data from the CUDA device to the host memory",
                                  "Test PASSED", "Done"])
        return _lines(start, [_logrus(start, "pod nvidia-cuda-validator is curently in "
                                             "Succeeded phase"),
                              _logrus(start, "cuda workload validation is successful")])
    if container == "plugin-validation":
        return _lines(start, [_logrus(start, "GPU resources are not yet discovered by the node, "
                                             "retry: 1"),
                              _logrus(start, "device-plugin workload validation is successful")],
                      5.0)
    if container == "worker":
        return _lines(start, [_klog(start, "main.go:66", "\"-server is deprecated, will be "
                                    "removed in a future release along with the deprecated gRPC "
                                    "API\""),
                              _klog(start, "nfd-worker.go:307", "\"Node Feature Discovery "
                                    "Worker\" version=\"v0.19.0\" nodeName=\"" + n.name + "\""),
                              _klog(start, "nfd-worker.go:580", "\"starting feature "
                                    "discovery...\""),
                              _klog(start, "nfd-worker.go:593", "\"feature discovery "
                                    "completed\""),
                              _klog(start, "nfd-worker.go:714", "\"creating NodeFeature object\" "
                                    "nodefeature=\"gpu-operator/" + n.name + "\"")])
    return _lines(start, ["all validations are successful" if "validator" in container
                          else "cuda workload validated"])


def pod_logs(pod: Obj, n: NodePlan, seed: int) -> Iterator[tuple[str, str | None, str | None]]:
    """(container, log text or None, kubectl's error or None) for each container."""
    spec = pod["spec"]
    started = pod["status"].get("phase") != "Pending"
    name = pod["metadata"]["name"]
    for c in [*spec.get("initContainers", []), *spec["containers"]]:
        if started:
            yield c["name"], container_log(pod, c["name"], n, seed), None
        else:
            yield c["name"], None, (f'container "{c["name"]}" in pod "{name}" is waiting to '
                                    "start: PodInitializing")
