"""Container log lines of the GPU Operator stack (``kubectl logs`` content).

Messages the reference quotes from source are used verbatim; the surrounding
lines are composed in each component's log format. Periodic output (operator
requeues every 5 s while not ready) is thinned to keep samples small.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from typing import Any

from .core import ctime, epoch_us, klog_text, plus
from .gpuop import NS
from .model import Gpu, Host
from .scene import LogLine
from .smi import CUDA, DRIVER

# ------------------------------------------------------------------------ log formats


Line = str | Callable[[dt.datetime], str]


def at_lines(start: dt.datetime, texts: Sequence[Line], step: float = 0.0004) -> list[LogLine]:
    """Consecutive lines ``step`` seconds apart; a callable gets its line's time
    (for formats that carry their own timestamp)."""
    out = []
    for i, text in enumerate(texts):
        t = plus(start, i * step)
        out.append(LogLine(t, text(t) if callable(text) else text))
    return out


def logrus_lines(start: dt.datetime, messages: list[str], step: float = 0.01) -> list[LogLine]:
    """Lines of a logrus text logger with full timestamps (validator, toolkit)."""
    out = []
    for i, m in enumerate(messages):
        t = plus(start, i * step)
        out.append(LogLine(t, f'time="{t:%Y-%m-%dT%H:%M:%SZ}" level=info msg={json.dumps(m)}'))
    return out


def klog_plain(t: dt.datetime, source: str, msg: str) -> str:
    """A klog line of a process running as PID 1 in its container."""
    return klog_text(t, "I", 1, source, msg)


def zap(
    t: dt.datetime,
    level: str,
    msg: str,
    logger: str | None = "controllers.ClusterPolicy",
    **fields: Any,
) -> str:
    """A controller-runtime zap JSON line with ``--zap-time-encoding=epoch``."""
    us = epoch_us(t)
    ts = f"{us // 1_000_000}.{us % 1_000_000:06d}".rstrip("0").rstrip(".")
    record: dict[str, Any] = {"level": level, "ts": 0}
    if logger:
        record["logger"] = logger
    record.update(msg=msg, **fields)
    text = json.dumps(record, separators=(",", ":"))
    return text.replace('"ts":0', f'"ts":{ts}', 1)


def zap_line(
    level: str, msg: str, logger: str | None = "controllers.ClusterPolicy", **fields: Any
) -> Callable[[dt.datetime], str]:
    return lambda t: zap(t, level, msg, logger, **fields)


def klog_line(source: str, msg: str) -> Callable[[dt.datetime], str]:
    return lambda t: klog_plain(t, source, msg)


STATES = [
    "pre-requisites",
    "state-operator-metrics",
    "state-driver",
    "state-container-toolkit",
    "state-operator-validation",
    "state-device-plugin",
    "state-mps-control-daemon",
    "state-dcgm",
    "state-dcgm-exporter",
    "gpu-feature-discovery",
    "state-mig-manager",
    "state-node-status-exporter",
    "state-vgpu-manager",
    "state-vgpu-device-manager",
    "state-sandbox-validation",
    "state-vfio-manager",
    "state-sandbox-device-plugin",
    "state-kata-device-plugin",
    "state-kata-manager",
    "state-cc-manager",
]
STATE_DAEMONSET = {
    "state-container-toolkit": "nvidia-container-toolkit-daemonset",
    "state-operator-validation": "nvidia-operator-validator",
    "state-device-plugin": "nvidia-device-plugin-daemonset",
    "state-mps-control-daemon": "nvidia-device-plugin-mps-control-daemon",
    "state-dcgm-exporter": "nvidia-dcgm-exporter",
    "gpu-feature-discovery": "gpu-feature-discovery",
    "state-mig-manager": "nvidia-mig-manager",
}


# ------------------------------------------------------------------------- operator


def operator_startup(t: dt.datetime) -> list[LogLine]:
    msgs = [
        zap_line("info", f"version: {VERSION_STRING}", logger=None),
        zap_line("info", "Starting metrics server", logger="controller-runtime.metrics"),
        zap_line("info", "starting manager", logger="setup"),
        zap_line(
            "info",
            "attempting to acquire leader lease gpu-operator/53822513.nvidia.com...",
            logger=None,
        ),
        zap_line(
            "info", "successfully acquired lease gpu-operator/53822513.nvidia.com", logger=None
        ),
        zap_line("info", "Starting Controller", logger=None, controller="clusterpolicy-controller"),
        zap_line(
            "info",
            "Starting workers",
            logger=None,
            controller="clusterpolicy-controller",
            **{"worker count": 1},
        ),
    ]
    return at_lines(t, msgs, step=0.05)


VERSION_STRING = "v26.3.3"


def reconcile(
    t: dt.datetime,
    hosts: list[Host],
    statuses: dict[str, str],
    *,
    first: bool = False,
    creating: tuple[str, ...] = (),
) -> list[LogLine]:
    """One ClusterPolicy reconcile; ``statuses`` gives the step status of every
    enabled state (others log ``disabled``)."""
    out: list[Line] = []
    log = out.append
    if first:
        log(zap_line("info", "Kubernetes version detected", version="v1.37.1"))
        log(zap_line("info", "Operator metrics initialized."))
    log(zap_line("info", "Sandbox workloads", Enabled=False, DefaultWorkload="container"))
    for h in hosts:
        log(
            zap_line(
                "info",
                "GPU workload configuration",
                NodeName=h.name,
                GpuWorkloadConfig="container",
            )
        )
        if h.gpu is None:
            continue
        if first:
            log(zap_line("info", "Node has GPU(s)", NodeName=h.name))
            log(
                zap_line(
                    "info",
                    "Setting node label",
                    NodeName=h.name,
                    Label="nvidia.com/gpu.present",
                    Value="true",
                )
            )
        log(zap_line("info", "Checking GPU state labels on the node", NodeName=h.name))
        if first:
            log(zap_line("info", "Applying correct GPU state labels to the node", NodeName=h.name))
    log(
        zap_line("info", "Number of nodes with GPU label", NodeCount=sum(1 for h in hosts if h.gpu))
    )
    log(zap_line("info", "Using container runtime: containerd"))
    not_ready = []
    for state in STATES:
        status = statuses.get(state, "disabled")
        ds = STATE_DAEMONSET.get(state)
        if ds and status != "disabled":
            if first or ds in creating:
                log(
                    zap_line(
                        "info",
                        "DaemonSet not found, creating",
                        DaemonSet=ds,
                        Namespace=NS,
                        Name=ds,
                    )
                )
            else:
                log(
                    zap_line(
                        "info",
                        "DaemonSet identical, skipping update",
                        DaemonSet=ds,
                        Namespace=NS,
                        name=ds,
                    )
                )
            if status == "notReady":
                log(zap_line("info", "daemonset not ready", name=ds))
        if status == "notReady":
            not_ready.append(state)
        log(zap_line("info", "ClusterPolicy step completed", **{"state:": state, "status": status}))
    if not_ready:
        log(
            zap_line(
                "error",
                "ClusterPolicy not yet ready",
                error=f"ClusterPolicy is not ready, states not ready: [{' '.join(not_ready)}]",
            )
        )
    else:
        log(
            zap_line(
                "info",
                "ClusterPolicy is ready as all resources have been successfully reconciled",
            )
        )
    return at_lines(t, out, step=0.0021)


# ------------------------------------------------------------------------ validator


def _cells(a: str, b: str, c: str) -> str:
    return f"|{a:<41}|{b:<24}|{c:<22}|"


def smi_table(gpu: Gpu, t: dt.datetime) -> list[str]:
    """Default ``nvidia-smi`` output of driver 570 for one idle GPU (91 columns)."""
    bar = "+" + "-" * 89 + "+"
    cells = "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+"
    fan = f"{gpu.fan_percent}%" if gpu.fan_percent is not None else "N/A"
    power = f"{int(gpu.idle_power_w)}W / {int(gpu.power_limit_w):>4}W"
    name = gpu.product if len(gpu.product) <= 28 else gpu.product[:23] + " ..."
    row1 = f"|   0  {name:<31}On  |   {gpu.bus_id} Off |{'N/A':>21} |"
    row2 = (
        f"| {fan:>3}   {gpu.temp_c}C    P8 {power:>23} |"
        f"{'2MiB':>11} / {str(gpu.memory_mib) + 'MiB':>9} |      0%      Default |"
    )
    lines = [
        ctime(t) + "       ",
        bar,
        f"| NVIDIA-SMI {DRIVER:<23}Driver Version: {DRIVER:<15}CUDA Version: {CUDA:<9}|",
        cells.replace("+", "|", 1)[:-1] + "+",
        _cells(
            " GPU  Name                 Persistence-M",
            " Bus-Id          Disp.A",
            " Volatile Uncorr. ECC",
        ),
        _cells(
            " Fan  Temp   Perf          Pwr:Usage/Cap",
            "           Memory-Usage",
            " GPU-Util  Compute M.",
        ),
        _cells("", "", "               MIG M."),
        "|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|",
        row1,
        row2,
        _cells("", "", f"{'N/A':>21}"),
        cells,
        " " * 91,
        bar,
        f"| {'Processes:':<88}|",
        f"|{'  GPU   GI   CI              PID   Type   Process name':<78}GPU Memory |",
        f"|{'        ID   ID':<78}Usage      |",
        "|" + "=" * 89 + "|",
        f"|  {'No running processes found':<87}|",
        bar,
    ]
    assert all(len(line) == 91 for line in lines[1:]), [len(x) for x in lines]
    return lines


def driver_install_until_build(kernel: str) -> list[str]:
    """What ``nvidia-driver init`` prints from its start to the module build, for the
    driver version of the samples on ``kernel`` (no precompiled modules)."""
    return [
        "DRIVER_ARCH is x86_64",
        f"Creating directory NVIDIA-Linux-x86_64-{DRIVER}",
        "Verifying archive integrity... OK",
        f"Uncompressing NVIDIA Accelerated Graphics Driver for Linux-x86_64 {DRIVER}"
        "..................",
        "",
        "========== NVIDIA Software Installer ==========",
        "",
        f"Starting installation of NVIDIA driver version {DRIVER} for Linux kernel version "
        f"{kernel}",
        "",
        "Stopping NVIDIA persistence daemon...",
        "Unloading NVIDIA driver kernel modules...",
        "Unmounting NVIDIA driver rootfs...",
        "Checking NVIDIA driver packages...",
        "Updating the package cache...",
        "Resolving Linux kernel version...",
        f"Proceeding with Linux kernel version {kernel}",
        "Installing Linux kernel headers...",
        "Installing Linux kernel module files...",
        "Generating Linux kernel version string...",
        "Compiling NVIDIA driver kernel modules...",
    ]


def driver_validation(start: dt.datetime, gpu: Gpu) -> list[LogLine]:
    lines = logrus_lines(
        start,
        [
            "Attempting to validate a pre-installed driver on the host",
            "running command chroot with args [/host nvidia-smi]",
        ],
    )
    lines += at_lines(plus(start, 0.25), smi_table(gpu, plus(start, 0.25)))
    lines += logrus_lines(
        plus(start, 0.31),
        [
            "Detected a pre-installed driver on the host",
            "creating symlinks under /dev/char that correspond to NVIDIA character devices",
        ],
    )
    return lines


def toolkit_validation(start: dt.datetime, gpu: Gpu) -> list[LogLine]:
    return at_lines(start, smi_table(gpu, start))


def cuda_validation(start: dt.datetime, cuda_pod: str) -> list[LogLine]:
    return logrus_lines(start, [f"pod {cuda_pod} is curently in Pending phase"]) + logrus_lines(
        plus(start, 5), [f"pod {cuda_pod} have run successfully"]
    )


def plugin_validation(start: dt.datetime) -> list[LogLine]:
    return logrus_lines(start, ["GPU resources are not yet discovered by the node, retry: 1"])


def wait_for_toolkit(start: dt.datetime, until: dt.datetime) -> list[LogLine]:
    out = []
    t = start
    while t < until:
        out.append(LogLine(t, "waiting for nvidia container stack to be setup"))
        t = plus(t, 5.004)
    return out


def vector_add(start: dt.datetime) -> list[LogLine]:
    return at_lines(
        start,
        [
            "[Vector addition of 50000 elements]",
            "Copy input data from the host memory to the CUDA device",
            "CUDA kernel launch with 196 blocks of 256 threads",
            "Copy output data from the CUDA device to the host memory",
            "Test PASSED",
            "Done",
        ],
        step=0.04,
    )


# ------------------------------------------------------------------------ operands


def toolkit_ctr(start: dt.datetime) -> tuple[list[LogLine], dt.datetime]:
    """The toolkit container's setup; returns its lines and the SIGHUP time."""
    before = [
        "Starting nvidia-ctk-installer",
        "Initializing",
        "Installing NVIDIA container toolkit to '/usr/local/nvidia/toolkit'",
        "Removing existing NVIDIA container toolkit installation",
        "Creating directory '/usr/local/nvidia/toolkit'",
        "Installing NVIDIA container toolkit config "
        "'/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml'",
        "Generating CDI spec for management containers",
        "Starting 'setup' for containerd",
        "Using config version 2",
        'Using CRI runtime plugin name "io.containerd.grpc.v1.cri"',
        "Flushing config to /runtime/config-dir.d/99-nvidia.toml",
        "Sending SIGHUP signal to containerd",
    ]
    lines = logrus_lines(start, before, step=0.12)
    sighup = plus(start, (len(before) - 1) * 0.12 + 0.004)
    lines += logrus_lines(
        plus(sighup, 0.01),
        [
            "Successfully signaled containerd",
            "Completed 'setup' for containerd",
            "Waiting for signal",
        ],
    )
    return lines, sighup


def device_plugin(start: dt.datetime) -> list[LogLine]:
    config = {
        "version": "v1",
        "flags": {
            "migStrategy": "single",
            "failOnInitError": True,
            "mpsRoot": "/run/nvidia/mps",
            "nvidiaDriverRoot": "/",
            "nvidiaDevRoot": "/",
            "gdsEnabled": False,
            "mofedEnabled": False,
            "useNodeFeatureAPI": None,
            "deviceDiscoveryStrategy": "auto",
            "plugin": {
                "passDeviceSpecs": True,
                "deviceListStrategy": ["cdi-annotations", "cdi-cri"],
                "deviceIDStrategy": "uuid",
                "cdiAnnotationPrefix": "nvidia.cdi.k8s.io/",
                "nvidiaCTKPath": "/usr/local/nvidia/toolkit/nvidia-ctk",
                "containerDriverRoot": "/driver-root",
            },
        },
        "resources": {"gpus": [{"pattern": "*", "name": "nvidia.com/gpu"}]},
        "sharing": {"timeSlicing": {}},
        "imex": {},
    }
    cfg_lines = json.dumps(config, indent=2).splitlines()
    msgs: list[Line] = [
        klog_line("main.go:250", "Starting FS watcher for /var/lib/kubelet/device-plugins"),
        klog_line("main.go:257", "Starting OS watcher."),
        klog_line("main.go:272", "Starting Plugins."),
        klog_line("main.go:329", "Loading configuration."),
        klog_line("main.go:355", "Updating config with default resource matching patterns."),
        klog_line("main.go:366", ""),
        "Running with config:",
        *cfg_lines,
        klog_line("main.go:369", "Retrieving plugins."),
        klog_line(
            "cdi.go:177", "Generating CDI spec for resource: k8s.device-plugin.nvidia.com/gpu"
        ),
        klog_line("server.go:198", "Starting GRPC server for 'nvidia.com/gpu'"),
        klog_line(
            "server.go:142",
            "Starting to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock",
        ),
        klog_line("server.go:149", "Registered device plugin for 'nvidia.com/gpu' with Kubelet"),
    ]
    return at_lines(start, msgs, step=0.002)


GFD_PERIOD = 60.32  # 60 s sleep plus the labelling run


def gfd(start: dt.datetime, end: dt.datetime, keep: int = 2) -> list[LogLine]:
    """GFD relabels every minute; only the first ``keep`` rounds and the last one
    are kept (thinned for size)."""
    lines = at_lines(
        start,
        [
            klog_line("main.go:163", "Starting OS watcher."),
            klog_line("main.go:168", "Loading configuration."),
            klog_line("main.go:214", "Start running"),
        ],
        step=0.003,
    )
    rounds = []
    t = plus(start, 0.05)
    while t < end:
        rounds.append(t)
        t = plus(t, GFD_PERIOD)
    for t in rounds[:keep] + rounds[keep:][-1:]:
        lines.append(LogLine(t, klog_plain(t, "main.go:281", "Creating Labels")))
        s = plus(t, 0.31)
        lines.append(LogLine(s, klog_plain(s, "main.go:294", "Sleeping for 1m0s")))
    return lines


def dcgm_exporter(start: dt.datetime) -> list[LogLine]:
    msgs = [
        'level=INFO msg="Starting dcgm-exporter" Version=4.5.3-4.8.2',
        'level=INFO msg="DCGM successfully initialized!"',
        'level=INFO msg="Collecting DCP Metrics"',
        'level=INFO msg="Falling back to metric file '
        "'/etc/dcgm-exporter/dcp-metrics-included.csv'\"",
        "level=INFO msg=\"Initializing system entities of type 'GPU'\"",
        'level=INFO msg="Kubernetes metrics collection enabled!"',
        'level=INFO msg="Starting webserver"',
        'level=INFO msg="Listening on" address=[::]:9400',
        'level=INFO msg="TLS is disabled." http2=false address=[::]:9400',
    ]
    out = []
    for i, m in enumerate(msgs):
        t = plus(start, i * 0.35)
        out.append(LogLine(t, f"time={t:%Y-%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}Z {m}"))
    return out


def nfd(role: str, start: dt.datetime, node: str) -> list[LogLine]:
    """NFD v0.18 start-up (klog with structured values)."""

    def k(src: str, msg: str, **kv: str) -> Line:
        extra = "".join(f" {a}={json.dumps(b)}" for a, b in kv.items())
        return klog_line(src, json.dumps(msg) + extra)

    conf = f"/etc/kubernetes/node-feature-discovery/nfd-{role}.conf"
    if role == "master":
        msgs = [
            k("main.go:97", "-> Node Feature Discovery Master", version="v0.18.3"),
            k(
                "nfd-master.go:283",
                "Node Feature Discovery Master",
                version="v0.18.3",
                nodeName=node,
                namespace=NS,
            ),
            k("nfd-master.go:1366", "configuration file parsed", path=conf),
            k("nfd-master.go:360", "starting the nfd api controller"),
            k("metrics.go:44", "metrics server starting", port=":8081"),
            k("nfd-master.go:403", "gRPC health server serving", port="8082"),
        ]
    elif role == "worker":
        msgs = [
            k("main.go:66", "-> Node Feature Discovery Worker", version="v0.18.3"),
            k(
                "nfd-worker.go:258",
                "Node Feature Discovery Worker",
                version="v0.18.3",
                nodeName=node,
                namespace=NS,
            ),
            k("nfd-worker.go:568", "configuration file parsed", path=conf),
            k("nfd-worker.go:599", "worker (re-)configuration successfully completed"),
            k("metrics.go:44", "metrics server starting", port=":8081"),
            k("nfd-worker.go:303", "starting feature discovery..."),
            k("nfd-worker.go:315", "feature discovery completed"),
            k("nfd-worker.go:694", "creating NodeFeature object", nodefeature=node),
        ]
    else:
        msgs = [
            k("main.go:64", "-> Node Feature Discovery Garbage Collector", version="v0.18.3"),
            k("nfd-gc.go:232", "starting NFD garbage collector"),
        ]
    return at_lines(start, msgs, step=0.07)
