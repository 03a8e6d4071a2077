"""Builders for the hostile-input tests: a valid bundle that exercises every parser, raw
tar members of any kind and name, and decompression bombs. Nothing here is a stored blob;
every archive is built by the test that uses it.
"""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from kit.bundles import encode, kube_list, kube_node
from kit.objects import DUMP_WITH_NVIDIA

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from analyzers.results.models import Report
from bundle import Limits, open_bundle

ROOT = Path(__file__).resolve().parents[2]

# Hypothesis settings of every property here: a short deterministic run in CI, a long
# random one with GPU_TRIAGE_FUZZ_EXAMPLES=<examples per property>.
_FUZZ = int(os.environ.get("GPU_TRIAGE_FUZZ_EXAMPLES", "0") or 0)
HOSTILE = settings(max_examples=_FUZZ or 25, deadline=None, derandomize=not _FUZZ,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.function_scoped_fixture])
MANIFEST = b'{"format": "gpu-triage-bundle", "format_version": 1, "items": []}'

DUMP = DUMP_WITH_NVIDIA
DROPIN = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
"""
SMI = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
\t<driver_version>570.195.03</driver_version>
\t<cuda_version>12.8</cuda_version>
\t<attached_gpus>1</attached_gpus>
\t<gpu id="00000000:3B:00.0">
\t\t<product_name>NVIDIA A100-SXM4-80GB</product_name>
\t\t<uuid>GPU-5f1c0a7e-0000-0000-0000-000000000001</uuid>
\t\t<minor_number>0</minor_number>
\t\t<pci><pci_bus_id>00000000:3B:00.0</pci_bus_id></pci>
\t\t<fb_memory_usage><total>81920 MiB</total><used>1024 MiB</used></fb_memory_usage>
\t\t<utilization><gpu_util>3 %</gpu_util></utilization>
\t\t<processes><process_info><pid>4242</pid><process_name>python</process_name>
\t\t\t<used_memory>1000 MiB</used_memory></process_info></processes>
\t</gpu>
</nvidia_smi_log>
"""
DMESG = (
    "2026-11-29T13:58:01,123456+00:00 NVRM: loading NVIDIA UNIX x86_64 Kernel Module"
    "  570.195.03\n"
    "2026-11-29T13:59:02,000001+00:00 NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>',"
    " name=<unknown>, GPU has fallen off the bus.\n"
    "2026-11-29T13:59:03,000001+00:00 pcieport 0000:3a:00.0: AER: Uncorrected (Fatal)"
    " error received: 0000:3b:00.0\n"
)
JOURNAL = (
    '{"MESSAGE": "starting containerd", "__REALTIME_TIMESTAMP": "1795960000000000",'
    ' "_PID": "812", "_SYSTEMD_UNIT": "containerd.service"}\n'
    '{"MESSAGE": "failed to create shim task: OCI runtime create failed", '
    '"__REALTIME_TIMESTAMP": "1795960100000000", "_PID": "812"}\n'
)
KUBELET = (
    '{"MESSAGE": "Failed to create pod sandbox: no runtime for \\"nvidia\\" is configured",'
    ' "__REALTIME_TIMESTAMP": "1795960200000000", "_PID": "901"}\n'
)
SYSTEMD = ("Restart=always\nRestartUSec=5s\nNRestarts=3\nActiveState=active\nSubState=running\n"
           "ExecMainPID=812\nExecMainStartTimestamp=Sun 2026-11-29 13:50:00 UTC\n")
CDI = """cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
"""


def _node(name: str, gpus: int | None) -> dict[str, Any]:
    return kube_node(name, gpus, other={"cpu": "64", "pods": "110"},
                     gpu_label=gpus is not None,
                     taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
                     conditions=[{"type": "Ready", "status": "True"}],
                     node_info={"containerRuntimeVersion": "containerd://1.7.27",
                                "kernelVersion": "6.8.0-88-generic",
                                "osImage": "Ubuntu 22.04.5 LTS", "kubeletVersion": "v1.31.4"})


def _pod(name: str, node: str, app: str, *, namespace: str = "gpu-operator", gpus: int = 0,
         phase: str = "Running", runtime_class: str | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": f"nvcr.io/nvidia/{app}:v1",
                                 "env": [{"name": "LOG_LEVEL", "value": "info"}]}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec: dict[str, Any] = {"nodeName": node, "containers": [container],
                            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    ready = phase == "Running"
    status = {"phase": phase, "containerStatuses": [{
        "name": "main", "ready": ready, "restartCount": 0 if ready else 7, "image": "x",
        "state": {"running": {}} if ready else {"waiting": {"reason": "CrashLoopBackOff"}}}]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": app},
                         "ownerReferences": [{"kind": "DaemonSet", "name": app}]},
            "spec": spec, "status": status}


def _event(pod: str, reason: str, message: str, namespace: str = "gpu-operator") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{pod}.1", "namespace": namespace},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod},
            "reason": reason, "message": message, "type": "Warning", "count": 5,
            "lastTimestamp": "2026-11-29T13:59:00Z", "source": {"component": "kubelet"}}


def valid_files() -> dict[str, Any]:
    """A small bundle that reaches every parser of the reader (format v1 paths)."""
    pods = [
        _pod("nvidia-driver-daemonset-abcde", "gpu-a", "nvidia-driver-daemonset"),
        _pod("nvidia-container-toolkit-daemonset-fghij", "gpu-a",
             "nvidia-container-toolkit-daemonset"),
        _pod("nvidia-device-plugin-daemonset-klmno", "gpu-a", "nvidia-device-plugin-daemonset",
             phase="Pending"),
        _pod("trainer-0", "gpu-a", "trainer", namespace="ml", gpus=2, runtime_class="nvidia"),
    ]
    policy = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
              "metadata": {"name": "cluster-policy", "creationTimestamp": "2026-11-01T00:00:00Z"},
              "spec": {"driver": {"enabled": True}, "toolkit": {"enabled": True}},
              "status": {"state": "notReady", "namespace": "gpu-operator"}}
    daemonset = {"apiVersion": "apps/v1", "kind": "DaemonSet",
                 "metadata": {"name": "nvidia-device-plugin-daemonset",
                              "namespace": "gpu-operator"},
                 "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "x"}]}}},
                 "status": {"desiredNumberScheduled": 1, "currentNumberScheduled": 1,
                            "numberReady": 0, "numberAvailable": 0}}
    helm = [{"revision": 1, "status": "superseded", "chart": "gpu-operator-v25.3.0",
             "app_version": "v25.3.0", "updated": "2026-11-01T00:00:00Z",
             "description": "Install complete", "values": {"toolkit": {"enabled": True}}},
            {"revision": 2, "status": "deployed", "chart": "gpu-operator-v25.3.1",
             "app_version": "v25.3.1", "updated": "2026-11-20T00:00:00Z",
             "description": "Upgrade complete",
             "values": {"toolkit": {"enabled": True}, "driver": {"enabled": True}}}]
    node = "nodes/gpu-a/"
    return {
        "cluster/version.json": {"serverVersion": {"gitVersion": "v1.31.4"}},
        "cluster/nodes.json": kube_list(_node("gpu-a", 8), _node("cpu-b", None)),
        "cluster/pods.json": kube_list(*pods),
        "cluster/events.json": kube_list(
            _event("nvidia-device-plugin-daemonset-klmno", "BackOff",
                   "Back-off restarting failed container"),
            _event("trainer-0", "FailedCreatePodSandBox",
                   'Failed to create pod sandbox: no runtime for "nvidia" is configured', "ml")),
        "cluster/daemonsets.json": kube_list(daemonset),
        "cluster/deployments.json": kube_list(),
        "cluster/namespaces.json": kube_list(),
        "cluster/runtimeclasses.json": kube_list(
            {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
             "metadata": {"name": "nvidia"}, "handler": "nvidia"}),
        "cluster/resourcequotas.json": kube_list(),
        "cluster/clusterpolicies.json": kube_list(policy),
        "cluster/nvidiadrivers.json": kube_list(),
        "cluster/configmaps.json": kube_list(
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "default-mig-parted-config", "namespace": "gpu-operator"},
             "data": {"config.yaml": "version: v1\n"}}),
        "cluster/helm/gpu-operator.json": helm,
        "logs/gpu-operator/nvidia-device-plugin-daemonset-klmno/main.log":
            "2026-11-29T13:59:00.000000000Z E1129 failed to initialize NVML: "
            "Driver/library version mismatch\n",
        node + "containerd/config-dump.toml": DUMP,
        node + "containerd/version.txt": "containerd github.com/containerd/containerd v1.7.27\n",
        node + "containerd/files/etc/containerd/config.toml":
            'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n',
        node + "containerd/files/etc/containerd/conf.d/99-nvidia.toml": DROPIN,
        node + "journal/containerd.jsonl": JOURNAL,
        node + "journal/kubelet.jsonl": KUBELET,
        node + "dmesg.txt": DMESG,
        node + "nvidia-smi.xml": SMI,
        node + "systemd/containerd.txt": SYSTEMD,
        node + "host/uname.txt": "Linux gpu-a 6.8.0-88-generic #89-Ubuntu SMP x86_64 GNU/Linux\n",
        node + "host/os-release": 'NAME="Ubuntu"\nVERSION_ID="22.04"\n',
        node + "host/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro\n",
        node + "host/modules.txt": "nvidia_uvm 1867776 0 - Live 0x0000000000000000\n",
        node + "host/secureboot.txt": "SecureBoot disabled\n",
        node + "host/nvidia-ctk.txt": "/usr/bin/nvidia-ctk\nNVIDIA Container Toolkit CLI 1.17.4\n",
        node + "cdi/nvidia.yaml": CDI,
    }


def valid_members() -> dict[str, bytes]:
    """The valid bundle as encoded member bytes, manifest first."""
    return encode(valid_files())


# -- raw tar building ------------------------------------------------------------------


@dataclass
class Member:
    """One tar member written exactly as given (no name checks, any type)."""

    name: str | bytes
    data: bytes = b""
    type: bytes = tarfile.REGTYPE
    linkname: str = ""
    size: int | None = None  # declared size; defaults to len(data)
    pax: dict[str, str] = field(default_factory=dict)


def header(member: Member) -> bytes:
    info = tarfile.TarInfo("x")
    info.type = member.type
    info.linkname = member.linkname
    info.size = len(member.data) if member.size is None else member.size
    info.mtime = 1_700_000_000
    info.mode = 0o644
    info.pax_headers = dict(member.pax)
    if isinstance(member.name, bytes):
        # A raw byte name (for instance not UTF-8) goes into the ustar field as it is.
        info.name = member.name.decode("utf-8", "surrogateescape")
        return info.tobuf(format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape")
    info.name = member.name
    fmt = tarfile.PAX_FORMAT if member.pax else tarfile.GNU_FORMAT
    return info.tobuf(format=fmt)


def tar_bytes(members: Iterable[Member], *, end: bool = True) -> bytes:
    out = io.BytesIO()
    for member in members:
        out.write(header(member))
        out.write(member.data + b"\0" * (-len(member.data) % 512))
    if end:
        out.write(b"\0" * 1024)
        out.write(b"\0" * (-out.tell() % 10240))
    return out.getvalue()


def manifest_member(top: str = "b") -> Member:
    return Member(f"{top}/manifest.json" if top else "manifest.json", MANIFEST)


def valid_tar(*, top: str = "gpu-triage-test") -> bytes:
    return tar_bytes(Member(f"{top}/{path}", data) for path, data in valid_members().items())


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# -- decompression bombs -----------------------------------------------------------------

_MIB = 1 << 20


def zero_bomb(path: Path, sizes: list[int]) -> Path:
    """A .tgz whose members are ``sizes`` bytes of zeros, written as concatenated gzip
    members (valid gzip) so that building a 10 GiB bomb takes no time: a 1 MiB block
    of zeros compresses to about 1 KiB and is repeated."""
    block = gz(b"\0" * _MIB)
    with path.open("wb") as out:
        out.write(gz(tar_bytes([manifest_member()], end=False)))
        for index, size in enumerate(sizes):
            out.write(gz(header(Member(f"b/logs/ns/p/c{index}.log", size=size))))
            padded = size + (-size % 512)
            whole, rest = divmod(padded, _MIB)
            for _ in range(whole):
                out.write(block)
            if rest:
                out.write(gz(b"\0" * rest))
        out.write(gz(b"\0" * 1024))
    return path


def many_members(path: Path, count: int) -> Path:
    """A .tgz with ``count`` tiny files after the manifest."""
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        for name, data in [("b/manifest.json", MANIFEST)] + [
                (f"b/cdi/f{i}.json", b"{}") for i in range(count)]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


MEASURE = """
import json, resource, sys, time
from bundle import Limits, open_bundle
start = time.perf_counter()
cpu = resource.getrusage(resource.RUSAGE_SELF)
with open_bundle(sys.argv[1], Limits(**json.loads(sys.argv[2]))) as b:
    paths = len(b.paths)
    problems = [[p.path, p.kind, p.message] for p in b.problems]
end = resource.getrusage(resource.RUSAGE_SELF)
peak = end.ru_maxrss  # KiB; inherited from the parent across fork, so prefer VmHWM
try:
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except (OSError, StopIteration):
    pass
print(json.dumps({"wall_s": time.perf_counter() - start,
                  "cpu_s": end.ru_utime + end.ru_stime - cpu.ru_utime - cpu.ru_stime,
                  "peak_rss_mib": peak / 1024, "paths": paths, "problems": problems}))
"""


@dataclass(frozen=True)
class Measured:
    wall_s: float
    cpu_s: float
    peak_rss_mib: float
    paths: int
    problems: list[tuple[str, str, str]]


def measure_open(path: Path, **limits: int) -> Measured:
    """Open a bundle in a fresh interpreter; return its time, peak memory and problems."""
    import json

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", MEASURE, str(path), json.dumps(limits)],
                          capture_output=True, text=True, timeout=300, env=env, check=True)
    raw = json.loads(done.stdout)
    raw["problems"] = [tuple(p) for p in raw["problems"]]
    return Measured(**raw)


def analyze_path(path: Path, limits: Limits | None = None) -> Report:
    with open_bundle(path, limits) as opened:
        return analyze(opened, discover().rules)


# -- reports of the CLI, for the work-budget tests -----------------------------------------


def analyse_json(path: Path, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    """``gpu-triage analyze PATH -f json --fail-on critical``: its exit code and report."""
    import orjson

    from gpu_triage.cli import main

    out = tmp_path / f"{path.name}.report.json"
    code = main(["analyze", str(path), "-f", "json", "-o", str(out), "--fail-on", "critical"])
    return code, orjson.loads(out.read_bytes())


def problems_of(report: dict[str, Any]) -> list[tuple[str, str, str | None, str]]:
    return [(p["path"], p["kind"], p["where"], p["message"]) for p in report["problems"]]


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {r["rule_id"]: r["status"] for r in report["rules"]}


def assert_no_rule_errors(report: dict[str, Any]) -> None:
    assert [(r["rule_id"], r["reason"]) for r in report["rules"] if r["status"] == "error"] == []
