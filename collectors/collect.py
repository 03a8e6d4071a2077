#!/usr/bin/env python3
"""gpu-triage collector: build a support bundle (format 1) of a Kubernetes cluster with NVIDIA GPUs.

The customer-side half of gpu-triage. It needs python3 (3.8 or newer, standard library only) and
a working kubectl, and it is read-only by construction:

* kubectl runs only with the verbs version, get, logs, debug and `auth can-i` (the pre-flight,
  preflight.py), plus `delete pod` for the debug pods this run created itself: Kubectl.argv
  builds every kubectl argv and refuses the rest.
* Node data comes from node.sh (next to this file, or inside gpu-triage-collect.pyz), run as
  root on each GPU node by the chosen node mode (a `kubectl debug node` pod, ssh, or this
  machine); it only reads.
* Secrets are never written. Helm release Secrets are decoded here and reduced to the release
  history with redacted user values; env values, ConfigMap data and Helm values under
  secret-looking keys become "<redacted>" (Redactor).

The result is one .tgz whose first member is manifest.json; every attempted step has a manifest
item, failed ones included. Layout: docs/bundle-format.md in gpu-triage; to run it: README.md here.

    python3 collect.py [options]        (the same as: gpu-triage collect [options])
"""

from __future__ import annotations

import argparse
import base64
import binascii
import concurrent.futures as futures
import contextlib
import datetime
import gzip
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Iterator
from typing import Any, NamedTuple

# redact.py travels with this file: imported as collectors.redact from the installed package,
# as a sibling module when run as `python3 collect.py` from its directory.
# Python 3.8's zipimport runs a module before setting __package__: the name tells the package.
PACKAGE = __package__ or __name__.rpartition(".")[0]
if PACKAGE:
    from . import fleet, preflight
    from .redact import REDACTED, Redactor  # noqa: F401 (REDACTED: re-exported)
else:  # pragma: no cover - exercised by running the file itself
    try:
        import fleet  # type: ignore[import-not-found,no-redef]
        import preflight  # type: ignore[import-not-found,no-redef]
        from redact import REDACTED, Redactor  # type: ignore[import-not-found,no-redef]  # noqa: F401
    except ImportError as missing:
        sys.exit(f"gpu-triage collect: {missing.name}.py must sit beside collect.py (with "
                 "redact.py, preflight.py, fleet.py and node.sh), or use the one file "
                 "gpu-triage-collect.pyz")

COLLECTOR_NAME = "gpu-triage-collect"
COLLECTOR_VERSION = "0.1.0"
FORMAT_VERSION = 1


DNS1123_RE = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
SAFE_SEGMENT_RE = re.compile(r"^[A-Za-z0-9._-]+$")
SINCE_RE = re.compile(r"^[0-9]+[smhdw]$")
SSH_HOST_RE = re.compile(r"^[A-Za-z0-9_.:\[\]@%-]+$")
CREATING_POD_RE = re.compile(rb"Creating debugging pod (\S+) with container \S+ on node \S+\.\r?\n")
IPV4_RE = re.compile(
    rb"(?<![\d.])((?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}"
    rb"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))(?!\.?\d)"
)

GPU_NODE_LABELS = (
    "nvidia.com/gpu.present",
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-0302_10de.present",
    "feature.node.kubernetes.io/pci-0300_10de.present",
)
OPERATOR_POD_LABELS = (("app", "gpu-operator"), ("app.kubernetes.io/component", "gpu-operator"))
# GPU components that also run without the operator (a standalone device plugin, GPU Feature
# Discovery, node-feature-discovery, the DCGM exporter): the last path segment of an image
# (nvcr.io/nvidia/k8s-device-plugin, nvcr.io/nvidia/k8s/dcgm-exporter,
# registry.k8s.io/nfd/node-feature-discovery, ...) or the app.kubernetes.io/name label of the
# projects' Helm charts. GFD ships in the k8s-device-plugin image since v0.15.
GPU_COMPONENT_IMAGES = frozenset(
    ("k8s-device-plugin", "gpu-feature-discovery", "node-feature-discovery", "dcgm-exporter")
)
GPU_COMPONENT_NAMES = frozenset(
    ("nvidia-device-plugin", "gpu-feature-discovery", "node-feature-discovery", "dcgm-exporter")
)
# The CustomResourceDefinitions of the GPU stack, read by name (absent ones are left out).
GPU_CRDS = ("clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com")
HELM_RELEASE_TYPE = "helm.sh/release.v1"
DEBUG_POD_PREFIX = "node-debugger-"
# Debug pods per run, at most: with --parallel 8 and nodes taking about a minute each, 50 nodes
# finish in well under the default 30-minute --deadline.
DEFAULT_MAX_NODES = 50

VERSION_STEP = ("cluster/version.json", ("version", "-o", "json"))
CLUSTER_LISTS = tuple(
    (f"cluster/{name}.json", ("get", resource, *scope, "-o", "json"))
    for name, resource, scope in (
        ("nodes", "nodes", ()),
        ("pods", "pods", ("-A",)),
        ("events", "events", ("-A",)),
        ("daemonsets", "daemonsets", ("-A",)),
        ("deployments", "deployments", ("-A",)),
        ("namespaces", "namespaces", ()),
        ("runtimeclasses", "runtimeclasses", ()),
        ("resourcequotas", "resourcequotas", ("-A",)),
        ("clusterpolicies", "clusterpolicies.nvidia.com", ()),
        ("nvidiadrivers", "nvidiadrivers.nvidia.com", ()),
    )
)
CRDS_STEP = ("cluster/crds.json",
             ("get", "customresourcedefinitions", *GPU_CRDS, "--ignore-not-found", "-o", "json"))

# What node.sh writes under nodes/<node>/: (path, command in words, always written).
# Used by --dry-run and for the failed items of a node that could not be reached.
# "Always" is for a containerd node (a CRI-O node has crio/ instead of containerd/).
NODE_STEPS = (
    ("runtime.json", "detect the runtime and distribution (/proc, unit files, config paths)", True),
    ("host/kubelet.txt", "kubelet (or k3s/rke2/kubelite/k0s) command line and config file", True),
    ("containerd/version.txt", "<distribution's containerd> --version", True),
    ("containerd/config-dump.toml", "<distribution's containerd> --config <its file> config dump",
     True),
    ("containerd/files/etc/containerd/config.toml", "cat /etc/containerd/config.toml", True),
    ("containerd/files/<file>", "cat <config file, template, imports, conf.d/*>", False),
    ("containerd/log.txt", "tail <k3s/RKE2 containerd.log>", False),
    ("crio/version.txt", "crio --version", False),
    ("crio/config-dump.toml", "crio status config (else crio config)", False),
    ("crio/files/<file>", "cat /etc/crio/crio.conf{,.d/*}, OCI hooks.d/*", False),
    ("docker/files/etc/docker/daemon.json", "cat /etc/docker/daemon.json", False),
    ("docker/info.json", "docker info --format '{{json .}}' (where a Docker daemon runs)", False),
    ("toolkit/files/<file>", "cat /etc/nvidia-container-runtime/config.toml, the operator's "
     "/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml", False),
    ("kubelet/files/<file>", "cat <kubelet root>/device-plugins/kubelet_internal_checkpoint, "
     "<kubelet root>/cpu_manager_state", False),
    ("journal/containerd.jsonl", "journalctl -u containerd -o json --since -<since>", True),
    ("journal/kubelet.jsonl", "journalctl -u kubelet -o json --since -<since>", True),
    ("journal/<file>", "journalctl -u <k3s, rke2-*, k0s*, microk8s, crio, ... where present>",
     False),
    ("systemd/containerd.txt", "systemctl show containerd -p LoadState,Restart,...", True),
    ("systemd/kubelet.txt", "systemctl show kubelet -p LoadState,Restart,...", True),
    ("systemd/<file>", "systemctl show <runtime/kubelet unit where present> -p ...", False),
    ("dmesg.txt", "dmesg --time-format iso (else dmesg)", True),
    ("nvidia-smi.xml", "nvidia-smi -q -x (else chroot /run/nvidia/driver nvidia-smi)", True),
    ("host/uname.txt", "uname -a", True),
    ("host/os-release", "cat /etc/os-release", True),
    ("host/cmdline", "cat /proc/cmdline", True),
    ("host/modules.txt", "cat /proc/modules", True),
    ("host/lspci.txt", "lspci -nnk -d 10de:", True),
    ("host/nvidia-driver-version.txt", "cat /proc/driver/nvidia/version", True),
    ("host/secureboot.txt", "mokutil --sb-state", True),
    ("host/nvidia-ctk.txt", "command -v nvidia-ctk && nvidia-ctk --version", True),
    ("host/unattended-upgrades.txt", "cat /etc/apt/apt.conf.d/*-upgrades", True),
    ("host/cgroup.txt", "stat -fc %T /sys/fs/cgroup; kubelet and runtime cgroup drivers", True),
    ("host/selinux.txt", "getenforce (where SELinux exists)", False),
    ("host/dev-nvidia.txt", "ls -l /dev/nvidia* /dev/char | grep nvidia", True),
    ("host/gpu-processes.txt", "nvidia-persistenced, nv-hostengine, ... from /proc", True),
    ("cdi/<file>", "cat /var/run/cdi/<file> /etc/cdi/<file>", False),
    ("links.txt", "readlink <each symbolic link met: recorded as a link, never followed>", False),
)

_print_lock = threading.Lock()


def eprint(message: str) -> None:
    with _print_lock:
        print(message, file=sys.stderr, flush=True)


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017 (datetime.UTC is 3.11+)


def iso(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def is_dns1123(name: Any) -> bool:
    return isinstance(name, str) and bool(DNS1123_RE.match(name))


def dump_json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def load_json(data: bytes) -> Any:
    """JSON from command output, or None when it is not JSON."""
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError:
        return None


# klog's prefix: severity, MMDD, time (`E1201 18:58:57.180923   23949 memcache.go:265] ...`).
KLOG_RE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d")
ERROR_TAIL_CHARS = 2000

# What a failed step's error means, for the manifest's error_kind; first match wins. Only
# errors of kubectl, helm and ssh are classified: node.sh's own steps are left to the analyzer.
ERROR_KINDS = (
    ("unauthorized", re.compile(
        r"must be logged in to the server|\bUnauthorized\b|provide credentials", re.I)),
    ("forbidden", re.compile(r"\(Forbidden\)|\bis forbidden\b|\bforbidden:", re.I)),
    ("unreachable", re.compile(
        r"connection to the server \S+ was refused|connection refused|no such host|"
        r"i/o timeout|tls handshake|x509:|no route to host|network is unreachable|"
        r"unable to connect to the server|connection reset|could not resolve hostname|"
        r"host key verification failed", re.I)),
    ("timeout", re.compile(r"^timed out after|timed out waiting for the condition|"
                           r"deadline exceeded", re.I)),
    ("previous-log-missing", re.compile(r"previous terminated container .* not found", re.I)),
    ("not-started", re.compile(r"is waiting to start|PodInitializing|ContainerCreating")),
    ("not-found", re.compile(r"\(NotFound\)|doesn't have a resource type|"
                             r"could not find the requested resource", re.I)),
)
CLASSIFIED_TOOLS = ("kubectl", "helm", "ssh")
# Kinds that mean nothing existed to collect: shown as "not collected: not present", not FAILED.
ABSENT_KINDS = frozenset(("previous-log-missing", "not-found", "not-started"))


def error_tail(data: bytes, limit: int = ERROR_TAIL_CHARS) -> str:
    """A failed command's own error: the tail of its stderr, klog lines dropped.

    kubectl prints its error last; before it come klog lines (discovery noise such as
    `E1201 ... memcache.go:265] couldn't get resource list for metrics.k8s.io/v1beta1`). When
    nothing but klog lines is there, the last one is kept. At most `limit` characters, starting
    at a whole line where the tail has several."""
    lines = [line.rstrip() for line in data.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line.strip()]
    kept = [line for line in lines if not KLOG_RE.match(line)] or lines[-1:]
    text = "\n".join(kept)
    if len(text) > limit:
        text = text[-limit:]
        cut = text.find("\n")
        text = text[cut + 1 :] if 0 <= cut < len(text) - 1 else text
    return text


def error_kind(error: str) -> str | None:
    """unauthorized, forbidden, unreachable, timeout, previous-log-missing, not-started,
    not-found, or None."""
    for kind, pattern in ERROR_KINDS:
        if pattern.search(error):
            return kind
    return None


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else text


# --- Redaction: collectors/redact.py (shared with `gpu-triage redact`) -------------------------


def _gunzip_limited(data: bytes, limit: int = 16 << 20) -> bytes:
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
        out = stream.read(limit + 1)
    if len(out) > limit:
        raise ValueError("decompressed data too large")
    return out


# --- Running commands: timeouts, the run deadline, Ctrl-C -----------------------------------


class Result(NamedTuple):
    """What one command did; rc is None when it never started."""

    argv: list[str]
    rc: int | None
    stdout: bytes
    stderr: bytes
    started_at: str
    duration_ms: int
    error: str | None


class Runner:
    """Runs commands with a per-step timeout inside the run's deadline; cancel() stops them."""

    def __init__(self, deadline_s: float) -> None:
        self.deadline = time.monotonic() + deadline_s
        self.cancelled = threading.Event()
        self._live: set[subprocess.Popen[bytes]] = set()

    def cancel(self) -> None:
        """Safe inside a signal handler: no locks, only kills."""
        self.cancelled.set()
        for proc in list(self._live):
            self._kill(proc)

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)

    def run(
        self,
        argv: list[str],
        timeout: float,
        stdin: bytes | None = None,
        stdout_path: str | None = None,
        cleanup: bool = False,
    ) -> Result:
        """Run argv. Cleanup commands (debug pod removal) still run after Ctrl-C or the deadline."""
        started = iso(utc_now())
        if not cleanup:
            remaining = self.deadline - time.monotonic()
            if self.cancelled.is_set() or remaining <= 0:
                why = "interrupted" if self.cancelled.is_set() else "the --deadline was reached"
                return Result(argv, None, b"", b"", started, 0, "not run: " + why)
            timeout = min(timeout, remaining)
        t0 = time.monotonic()
        out_file = open(stdout_path, "wb") if stdout_path else None  # noqa: SIM115 (closed below)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=out_file or subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            if out_file:
                out_file.close()
            missing = isinstance(exc, FileNotFoundError)
            why = "command not found" if missing else str(exc)
            return Result(argv, 127 if missing else 126, b"", b"", started, 0, f"{argv[0]}: {why}")
        if not cleanup:
            self._live.add(proc)
        timed_out = False
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            self._kill(proc)
            out, err = proc.communicate()
        finally:
            self._live.discard(proc)
            if out_file:
                out_file.close()
        rc = proc.returncode
        error = None
        if timed_out:
            error = f"timed out after {max(1, round(timeout))}s"
        elif rc != 0 and self.cancelled.is_set() and not cleanup:
            error = "interrupted"
        elif rc != 0:
            status = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
            error = error_tail(err or b"") or status
        duration = int((time.monotonic() - t0) * 1000)
        return Result(argv, rc, out or b"", err or b"", started, duration, error)


# --- Building argv: kubectl (read-only by construction), helm, node transports --------------


class ReadOnlyViolation(Exception):
    """A kubectl or helm invocation that could change the cluster was refused."""


class Kubectl:
    READ_VERBS = ("version", "get", "logs", "debug", "auth")

    def __init__(self, context: str | None, kubeconfig: str | None) -> None:
        self.global_flags = ["--context", context] if context else []
        self.global_flags += ["--kubeconfig", kubeconfig] if kubeconfig else []
        self._own_debug_pods: set[str] = set()

    def remember_debug_pod(self, name: str) -> None:
        """Only pods remembered here (this run's debug pods) may ever be deleted."""
        self._own_debug_pods.add(name)

    def argv(self, verb: str, *args: str) -> list[str]:
        """The only builder of kubectl argv: read verbs, and `delete pod` of our own debug pods."""
        rest = list(args)
        if verb == "delete":
            if len(rest) < 2 or rest[0] != "pod" or rest[1] not in self._own_debug_pods:
                raise ReadOnlyViolation("refusing kubectl delete " + " ".join(rest))
        elif verb not in self.READ_VERBS:
            raise ReadOnlyViolation(f"refusing kubectl verb {verb!r} (read-only collector)")
        if verb == "auth" and rest[:1] != ["can-i"]:
            raise ReadOnlyViolation("kubectl auth is only used as `auth can-i` (a question)")
        if verb == "get" and rest[:1] in (["secret"], ["secrets"]) and "owner=helm" not in rest:
            raise ReadOnlyViolation("Secrets are only read for Helm release records (owner=helm)")
        cut = rest.index("--") if "--" in rest else len(rest)
        return ["kubectl", verb, *rest[:cut], *self.global_flags, *rest[cut:]]


def helm_argv(opts: argparse.Namespace, *args: str) -> list[str]:
    if args[:1] not in (("list",), ("history",)) and args[:2] != ("get", "values"):
        raise ReadOnlyViolation("refusing helm " + " ".join(args))
    context = ["--kube-context", opts.context] if opts.context else []
    config = ["--kubeconfig", opts.kubeconfig] if opts.kubeconfig else []
    return ["helm", *args, *context, *config]


def log_argv(
    kubectl: Kubectl, ns: str, pod: str, container: str, tail: int, prev: bool,
    limit_bytes: int = 0,
) -> list[str]:
    flags = ["--timestamps", f"--tail={tail}", *(["--previous"] if prev else [])]
    flags += [f"--limit-bytes={limit_bytes}"] if limit_bytes else []
    return kubectl.argv("logs", "-n", ns, pod, "-c", container, *flags)


def node_transport_argv(
    opts: argparse.Namespace, kubectl: Kubectl, node: str, address: str | None, run_id: str,
    probe: bool = False,
) -> list[str]:
    """The command that runs node.sh (fed on stdin) on `node` and prints its tar on stdout.

    probe: the node was chosen without any GPU label; node.sh stops early when lspci shows
    no NVIDIA device there."""
    remote = [
        "env",
        f"GPU_TRIAGE_RUN_ID={run_id}",
        f"GPU_TRIAGE_SINCE={opts.since}",
        f"GPU_TRIAGE_MAX_FILE_BYTES={opts.max_file_bytes}",
        f"GPU_TRIAGE_STEP_TIMEOUT={max(1, int(opts.step_timeout))}",
        *(["GPU_TRIAGE_ONLY_IF_NVIDIA=1"] if probe else []),
        "sh",
        "-s",
    ]
    if opts.node_mode == "debug-pod":
        flags = [f"--image={opts.debug_image}"]
        flags += [f"--profile={opts.debug_profile}"] if opts.debug_profile else []
        return kubectl.argv(
            "debug", f"node/{node}", "-n", opts.debug_namespace, *flags,
            "--stdin=true", "--tty=false", "--", "chroot", "/host", *remote,
        )  # fmt: skip
    if opts.node_mode == "ssh":
        host = opts.ssh_hosts.get(node) or address or node
        if not SSH_HOST_RE.match(host) or host.startswith("-"):
            raise ValueError(f"refused ssh host {host!r}")
        user = ["-l", opts.ssh_user] if opts.ssh_user else []
        sudo = ["sudo", "-n"] if opts.ssh_sudo else []
        ssh = ["ssh", "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=15"]
        return [*ssh, *user, host, *sudo, *remote]
    return remote  # local


# --- The staging directory and the manifest items -------------------------------------------


def safe_relpath(rel: str) -> bool:
    parts = rel.split("/")
    return all(SAFE_SEGMENT_RE.match(p) and p not in (".", "..") for p in parts)


class Bundle:
    """Files staged under root (bundle-relative paths) and the manifest items describing them."""

    def __init__(self, root: str, max_bytes: int, quiet: bool) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.quiet = quiet
        self.items: list[dict[str, Any]] = []
        self.planned = 0
        self.done = 0
        self._lock = threading.Lock()

    def abspath(self, rel: str) -> str:
        if not safe_relpath(rel):
            raise ValueError(f"unsafe bundle path {rel!r}")
        path = os.path.join(self.root, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def write(self, rel: str, data: bytes) -> tuple[int, bool]:
        with open(self.abspath(rel), "wb") as handle:
            handle.write(data[: self.max_bytes])
        return min(len(data), self.max_bytes), len(data) > self.max_bytes

    def write_json(self, rel: str, obj: Any) -> tuple[int, bool, dict[str, Any]]:
        """Write obj as JSON, never cut in the middle: over the cap, a kubectl List keeps the
        items that fit (metadata.remainingItemCount says how many were left out) and a JSON
        list keeps its last entries; anything else is not written. Returns the bytes written,
        whether something was left out, and what to add to the manifest item."""
        data = dump_json(obj)
        if len(data) <= self.max_bytes:
            return self.write(rel, data) + ({},)
        if isinstance(obj, dict) and isinstance(obj.get("items"), list):
            items = obj["items"]
            meta: dict[str, Any] = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}

            def shortened(n: int) -> Any:
                return dict(obj, items=items[:n],
                            metadata=dict(meta, remainingItemCount=len(items) - n))

            envelope = len(dump_json(shortened(0)))
            return self._write_part(rel, shortened, fitting(items, self.max_bytes - envelope),
                                    len(items))
        if isinstance(obj, list):
            newest = fitting(obj[::-1], self.max_bytes - 4)
            return self._write_part(rel, lambda n: obj[len(obj) - n :], newest, len(obj))
        error = f"not written: {len(data)} bytes of JSON, over --max-file-bytes {self.max_bytes}"
        return 0, True, {"error": error}

    def _write_part(self, rel: str, part: Any, kept: int,
                    total: int) -> tuple[int, bool, dict[str, Any]]:
        """Write part(kept), with fewer entries while it is still over the cap (the estimate
        of fitting() is close, so this rarely loops); an empty list may exceed a tiny cap."""
        data = dump_json(part(kept))
        while len(data) > self.max_bytes and kept > 0:
            kept -= 1
            data = dump_json(part(kept))
        with open(self.abspath(rel), "wb") as handle:
            handle.write(data)
        return len(data), True, {"items_kept": kept, "items_total": total}

    def settle(self, rel: str, failed: bool) -> tuple[int, bool]:
        """Cap a file a command wrote straight into the staging area; drop it if failed+empty."""
        path = self.abspath(rel)
        size = os.path.getsize(path) if os.path.exists(path) else 0
        if failed and size == 0:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
            return 0, False
        if size > self.max_bytes:
            os.truncate(path, self.max_bytes)
            return self.max_bytes, True
        return size, False

    def plan(self, n: int) -> None:
        with self._lock:
            self.planned += n

    def add(
        self,
        path: str,
        command: list[str] | None,
        node: str | None,
        result: Result | None = None,
        nbytes: int = 0,
        truncated: bool = False,
        error: str | None = None,
        counted: bool = True,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Record one attempted step; `counted` steps show up in the progress on stderr.

        A failed kubectl, helm or ssh step gets error_kind (see ERROR_KINDS) when its error
        is recognised; `extra` adds fields such as items_kept/items_total or error_kind."""
        item: dict[str, Any] = {
            "path": path,
            "command": list(command) if command else None,
            "node": node,
            "exit_code": result.rc if result else None,
            "started_at": result.started_at if result else iso(utc_now()),
            "duration_ms": result.duration_ms if result else 0,
            "bytes": nbytes,
            "truncated": bool(truncated),
            "error": error,
        }
        tool = os.path.basename(command[0]) if command else ""
        kind = error_kind(error) if error and tool in CLASSIFIED_TOOLS else None
        if kind:
            item["error_kind"] = kind
        item.update(extra or {})
        with self._lock:
            self.items.append(item)
            if counted:
                self.done += 1
                line = f"[{self.done}/{max(self.planned, self.done)}] "
                absent = item.get("error_kind") in ABSENT_KINDS
                if absent:
                    line += f"not collected {path}: {REASONS[item['error_kind']]}"
                elif error:
                    line += f"FAILED {path}: {last_line(error)[:200]}"
                else:
                    line += f"ok {path}"
        if counted and ((error and not absent) or not self.quiet):
            eprint(line if error else f"{line} ({item['duration_ms']} ms)")
        return item


# How each kind of failed step reads at the end, in the admin's words. "not present" kinds are
# expected absences: nothing existed to collect.
REASONS = {
    "forbidden": "no permission (RBAC)",
    "unauthorized": "credentials refused (401)",
    "unreachable": "could not connect",
    "timeout": "timed out",
    "previous-log-missing": "not present: no earlier container log (the kubelet keeps none)",
    "not-found": "not present: not installed in this cluster",
    "not-started": "not present: the container has not started",
    "no-shell": "not visited: the node's OS has no host shell (Talos, Bottlerocket)",
}
ABSENT_ON_NODE_RE = re.compile(r"not found|no such file|not installed", re.I)


# kubectl debug's error when the API server refused to create the pod (RBAC, Pod Security
# admission, a webhook, a quota): no pod exists, so there is nothing to clean up.
CREATE_REFUSED_RE = re.compile(r"\bis forbidden\b|denied the request|exceeded quota", re.I)


def create_refused(error: str | None) -> bool:
    return bool(error) and bool(CREATE_REFUSED_RE.search(error or ""))


def reason_of(item: dict[str, Any]) -> str:
    kind = item.get("error_kind")
    if kind in REASONS:
        return REASONS[str(kind)]
    error = str(item.get("error") or "")
    if item.get("node") and ABSENT_ON_NODE_RE.search(error):
        return "not present on the node (no such file or command)"
    if error.startswith("not run: "):
        return error
    return "failed: " + last_line(error)[:160]


def gaps_by_reason(items: list[dict[str, Any]], nodes_gone: set[str]) -> dict[str, list[str]]:
    """reason -> paths of the failed items; the files of a node that was not reached at all
    are left to the one line that names those nodes."""
    found: dict[str, list[str]] = {}
    for item in sorted(items, key=lambda i: str(i["path"])):
        if not item["error"] or (item.get("node") in nodes_gone):
            continue
        found.setdefault(reason_of(item), []).append(str(item["path"]))
    return found


def fitting(entries: list[Any], budget: int) -> int:
    """How many of entries, from the first, fit in budget bytes of dump_json output."""
    used = kept = 0
    for entry in entries:
        # indent=1 inside a list inside an object: each line gets two more spaces, plus ",\n".
        text = json.dumps(entry, indent=1, ensure_ascii=False)
        used += len(text.encode("utf-8")) + 2 * (text.count("\n") + 1) + 2
        if used > budget:
            break
        kept += 1
    return kept


# --- Cluster objects: Helm releases, which logs, which nodes --------------------------------


def decode_helm_release(secret_data: str) -> dict[str, Any]:
    """Secret .data.release = base64(base64(gzip(JSON))): Kubernetes' base64 around Helm's."""
    raw = base64.b64decode(base64.b64decode(secret_data))
    raw = _gunzip_limited(raw, 256 << 20) if raw[:2] == b"\x1f\x8b" else raw
    release = json.loads(raw.decode("utf-8"))
    if not isinstance(release, dict):
        raise ValueError("release record is not a JSON object")
    return release


def reduce_release(release: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    info = release.get("info") or {}
    meta = (release.get("chart") or {}).get("metadata") or {}
    return {
        "revision": release.get("version"),
        "status": info.get("status"),
        "chart": f"{meta['name']}-{meta.get('version')}" if meta.get("name") else None,
        "app_version": meta.get("appVersion"),
        "updated": info.get("last_deployed"),
        "description": info.get("description"),
        "values": redactor.helm_values(release.get("config") or {}),
    }


def requests_gpu(pod: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        resources = container.get("resources") or {}
        for section in ("limits", "requests"):
            if any(str(k).startswith("nvidia.com/") for k in resources.get(section) or {}):
                return True
    return False


def is_gpu_component(pod: dict[str, Any]) -> bool:
    """A device plugin, GFD, NFD or DCGM exporter pod, by its images or its name label."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    if (meta.get("labels") or {}).get("app.kubernetes.io/name") in GPU_COMPONENT_NAMES:
        return True
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        image = str(container.get("image") or "").split("@")[0]
        name = image.rsplit("/", 1)[-1].split(":")[0]
        if name in GPU_COMPONENT_IMAGES:
            return True
    return False


def component_namespaces(pods: dict[str, Any] | None, operator_ns: str | None) -> list[str]:
    """The namespaces of GPU component pods, other than the operator namespace, sorted."""
    found = {str((p.get("metadata") or {}).get("namespace") or "")
             for p in (pods or {}).get("items") or [] if is_gpu_component(p)}
    return sorted(ns for ns in found if ns and ns != operator_ns)


def _started(pod: dict[str, Any], init: bool = True) -> Iterator[tuple[Any, int, dict[str, Any]]]:
    """(container name, restarts, state) of each container that has run (and so has a log)."""
    status, spec = pod.get("status") or {}, pod.get("spec") or {}
    statuses = status.get("initContainerStatuses") or []
    by_name = {st.get("name"): st for st in statuses + (status.get("containerStatuses") or [])}
    containers = (spec.get("initContainers") or []) if init else []
    for container in containers + (spec.get("containers") or []):
        st = by_name.get(container.get("name")) or {}
        restarts = st.get("restartCount") or 0
        state, last = st.get("state") or {}, st.get("lastState") or {}
        if "running" in state or "terminated" in state or "terminated" in last or restarts:
            yield container.get("name"), restarts, state


def log_targets(pods: dict[str, Any], operator_ns: str | None) -> Iterator[tuple[Any, ...]]:
    """(namespace, pod, container, previous) for operator pods, GPU component pods in any
    namespace, and GPU pods not Running.

    Containers that never started (no status, or waiting with no earlier run) have no log."""
    for pod in pods.get("items") or []:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        in_operator_ns = operator_ns is not None and meta.get("namespace") == operator_ns
        stuck_gpu_pod = requests_gpu(pod) and status.get("phase") != "Running"
        if not (in_operator_ns or stuck_gpu_pod or is_gpu_component(pod)):
            continue
        for name, restarts, _state in _started(pod):
            target = (meta.get("namespace"), meta.get("name"), name)
            yield (*target, False)
            if restarts:
                yield (*target, True)


def workload_targets(pods: dict[str, Any], operator_ns: str | None,
                     gpu_nodes: set[str] | None) -> list[tuple[Any, ...]]:
    """(namespace, pod, container) of the running containers of Running GPU-requesting pods
    on GPU nodes (any node when the nodes are unknown) whose logs log_targets does not take,
    sorted by namespace and pod."""
    found = []
    for pod in pods.get("items") or []:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        if not requests_gpu(pod) or status.get("phase") != "Running" or is_gpu_component(pod):
            continue
        if (operator_ns is not None and meta.get("namespace") == operator_ns) or (
                gpu_nodes is not None and node not in gpu_nodes):
            continue
        for name, _restarts, state in _started(pod, init=False):
            if "running" in state:
                found.append((meta.get("namespace"), meta.get("name"), name))
    return sorted(found, key=lambda t: (str(t[0]), str(t[1])))


def find_operator_namespace(pods: dict[str, Any] | None) -> str | None:
    for label, value in OPERATOR_POD_LABELS:
        for pod in (pods or {}).get("items") or []:
            meta = pod.get("metadata") or {}
            if (meta.get("labels") or {}).get(label) == value and meta.get("namespace"):
                return str(meta["namespace"])
    return None


def has_gpu_capacity(node: dict[str, Any]) -> bool:
    """`nvidia.com/*` in the node's capacity or allocatable with a count above zero."""
    status = node.get("status") or {}
    for field in ("capacity", "allocatable"):
        for name, value in (status.get(field) or {}).items():
            if str(name).startswith("nvidia.com/") and str(value) not in ("", "0"):
                return True
    return False


# Node images without a shell on the host for node.sh to run in, by the kubelet's osImage:
# Talos Linux is managed through its API (talosctl), Bottlerocket has a shell only inside its
# admin container. Such a node is not visited; it is judged from its pods, events and logs.
# osImage examples: "Talos (v1.7.4)", "Bottlerocket OS 1.19.4 (aws-k8s-1.27)".
NO_SHELL_IMAGES = (
    ("Talos Linux", re.compile(r"^Talos\b")),
    ("Bottlerocket", re.compile(r"^Bottlerocket\b")),
)


def no_shell_os(nodes: dict[str, Any] | None, name: str) -> str | None:
    """The name of the node's OS when it has no host shell (Talos, Bottlerocket), else None."""
    for node in (nodes or {}).get("items") or []:
        if (node.get("metadata") or {}).get("name") != name:
            continue
        image = str(((node.get("status") or {}).get("nodeInfo") or {}).get("osImage") or "")
        for os_name, pattern in NO_SHELL_IMAGES:
            if pattern.match(image):
                return os_name
    return None


def gpu_node_names(nodes: dict[str, Any]) -> list[str]:
    """Nodes with a GPU label (GPU Feature Discovery or NFD's PCI label) or NVIDIA capacity."""
    names = []
    for node in nodes.get("items") or []:
        meta = node.get("metadata") or {}
        labelled = any((meta.get("labels") or {}).get(x) == "true" for x in GPU_NODE_LABELS)
        if labelled or has_gpu_capacity(node):
            names.append(str(meta.get("name", "")))
    return names


def node_addresses(nodes: dict[str, Any] | None, name: str) -> dict[str, str]:
    for node in (nodes or {}).get("items") or []:
        if (node.get("metadata") or {}).get("name") == name:
            addresses = (node.get("status") or {}).get("addresses") or []
            return {a.get("type"): a.get("address") for a in addresses if a.get("address")}
    return {}


def parse_steps_tsv(text: str) -> list[dict[str, Any]]:
    """node.sh's steps.tsv: path, rc, started, duration_ms, bytes, truncated, error, command."""
    unescapes = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r", "u": "\x1f"}

    def unescape(field: str) -> str:
        return re.sub(r"\\(.)", lambda m: unescapes.get(m.group(1), m.group(0)), field, flags=re.S)

    def number(field: str) -> int | None:
        return int(field) if field.lstrip("-").isdigit() else None

    rows = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) != 8:
            continue
        path, rc, started, duration, nbytes, truncated, error, command = fields
        rows.append({
            "path": path, "exit_code": number(rc), "started_at": started,
            "duration_ms": number(duration) or 0, "bytes": number(nbytes) or 0,
            "truncated": truncated == "1", "error": unescape(error) or None,
            "command": [unescape(a) for a in command.split("\x1f")] if command else None,
        })  # fmt: skip
    return rows


# --- Pseudonyms for host names and IP addresses ---------------------------------------------


class Pseudonymizer:
    """Stable replacements in text and paths: node host names -> node-0001, IPv4 -> 10.255.x.y."""

    def __init__(self, hosts: list[tuple[str, list[str]]]) -> None:
        self.names: dict[str, str] = {}
        self.ips: dict[str, str] = {}
        for index, (name, aliases) in enumerate(sorted(hosts)):
            for alias in [name, *aliases]:
                short = alias.split(".")[0] if "." in alias and not alias[0].isdigit() else ""
                for form in (alias, short):
                    if len(form) >= 3 and ":" not in form:
                        self.names.setdefault(form, f"node-{index + 1:04d}")
        words = b"|".join(re.escape(n.encode()) for n in sorted(self.names, key=len, reverse=True))
        self._names_re = re.compile(rb"(?<![A-Za-z0-9])(?:" + words + rb")(?![A-Za-z0-9])")
        self._encoded = {n.encode(): p.encode() for n, p in self.names.items()}

    def _ip(self, match: Any) -> bytes:
        address = match.group(1).decode()
        if address.startswith("127.") or address in ("0.0.0.0", "255.255.255.255"):
            return bytes(match.group(0))
        if address not in self.ips:
            n = len(self.ips)
            self.ips[address] = f"10.255.{n // 250}.{n % 250 + 1}"
        return self.ips[address].encode()

    def text(self, data: bytes) -> bytes:
        if self.names:
            data = self._names_re.sub(lambda m: self._encoded[m.group(0)], data)
        return IPV4_RE.sub(self._ip, data)

    def apply_to_tree(self, root: str) -> None:
        """Rewrite every staged file and rename paths, in sorted order (stable numbering)."""
        for rel in sorted(walk_files(root)):
            path = os.path.join(root, *rel.split("/"))
            with open(path, "rb") as handle:
                data = self.text(handle.read())
            os.remove(path)
            new_path = os.path.join(root, *self.text(rel.encode()).decode().split("/"))
            os.makedirs(os.path.dirname(new_path), exist_ok=True)
            with open(new_path, "wb") as handle:
                handle.write(data)

    def mapping(self) -> dict[str, dict[str, str]]:
        return {"names": dict(sorted(self.names.items())), "ips": dict(sorted(self.ips.items()))}


def walk_files(root: str) -> list[str]:
    found = []
    for directory, _dirs, files in os.walk(root):
        for name in files:
            found.append(os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/"))
    return found


# --- The collection run ---------------------------------------------------------------------


class Collector:
    def __init__(self, opts: argparse.Namespace, node_script: bytes) -> None:
        self.opts = opts
        self.node_script = node_script
        self.started = utc_now()
        self.run_id = uuid.uuid4().hex[:12]
        self.runner = Runner(opts.deadline)
        self.kubectl = Kubectl(opts.context, opts.kubeconfig)
        self.redactor = Redactor(opts.redact)
        self.work = tempfile.mkdtemp(prefix="gpu-triage-")
        self.bundle = Bundle(os.path.join(self.work, "bundle"), opts.max_file_bytes, opts.quiet)
        self.context = opts.context or current_context(opts.kubeconfig)
        self.server_version: str | None = None
        self.operator_ns: str | None = opts.namespace
        self.nodes: dict[str, Any] | None = None
        self.selected_nodes: list[str] = []
        self.probing = False  # nodes chosen without a GPU label: node.sh checks lspci first
        self.interrupted = False
        self._debug_pods: dict[str, str] = {}  # pod name -> node
        self._deleted: set[str] = set()
        self._nodes_done = 0
        self._lock = threading.Lock()
        self.selected_nodes_started: list[str] = []  # those a debug pod / ssh was tried on
        self.answers: list[Any] = []  # the pre-flight's preflight.Answer list
        self.skipped: list[tuple[str, str]] = []  # (node, why it was not visited)
        self.not_collected: dict[str, str] = {}  # node -> why its files are missing

    def run(self) -> int:
        previous = self._install_signal_handlers()
        try:
            if not self._check_access():
                return 2
            self.answers = self._preflight()
            if self.opts.preflight:
                return 3 if preflight.missing(self.answers) else 0
            try:
                self._collect()
            except Exception:  # a collector bug must not lose what was already gathered
                eprint("gpu-triage collect: internal error; writing what was collected:\n"
                       + traceback.format_exc())  # fmt: skip
            finally:
                if self.opts.node_mode == "debug-pod" and self.selected_nodes_started:
                    self._cleanup_debug_pods(None)
            path, size = self._package()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            shutil.rmtree(self.work, ignore_errors=True)
        for line in self._outcome_lines(path, size):
            eprint(line)
        for line in closing_lines(path, self.redactor):
            eprint(line)
        for line in self._next_step_lines(path):
            eprint(line)
        return 130 if self.interrupted else 0

    # ---- the pre-flight and the story at the end ------------------------------------------

    def _preflight(self) -> list[Any]:
        """Ask `kubectl auth can-i` for every permission; print the table (stdout with
        --preflight, else stderr); the answers decide whether debug pods are started."""
        found = preflight.checks(self.opts)
        answers = preflight.ask(lambda argv: self.runner.run(argv, self.opts.step_timeout),
                                self.kubectl.argv, found, self.opts.parallel)  # fmt: skip
        out = sys.stdout if self.opts.preflight else sys.stderr
        where = f" (context {self.context})" if self.context else ""
        if all(a.allowed is None for a in answers):
            why = last_line(answers[0].error or "") if answers else ""
            say = [f"gpu-triage collect: pre-flight: could not check the permissions{where} "
                   f"(kubectl auth can-i: {why}); every step will be tried"]
        else:
            say = [f"gpu-triage collect: pre-flight{where}: kubectl auth can-i for each "
                   "permission the run needs:", *preflight.table(answers),
                   *("gpu-triage collect: " + line
                     for line in preflight.summary(answers, self.opts.node_mode))]
            rbac = preflight.rbac_yaml(answers)
            say += rbac.splitlines() if rbac else []
        if self.opts.preflight or not self.opts.quiet or preflight.missing(answers):
            with _print_lock:
                print("\n".join(say), file=out, flush=True)
        return answers

    def _outcome_lines(self, path: str, size: int) -> list[str]:
        """What was collected, what was not and why (by reason, in the admin's words)."""
        note = " (interrupted: partial bundle)" if self.interrupted else ""
        lines = [f"gpu-triage collect: wrote {path} ({size / 1024:.1f} KiB){note}"]
        ok = [str(i["path"]) for i in self.bundle.items if not i["error"] and i["command"]]
        lists = sum(1 for p in ok if p.startswith("cluster/") and p.endswith(".json"))
        logs = sum(1 for p in ok if p.startswith("logs/"))
        nodes = len(self.selected_nodes) + len(self.skipped)
        lines.append(f"gpu-triage collect: collected {lists} cluster object files, {logs} "
                     f"container logs, and the node files of {self._nodes_collected()} of "
                     f"{nodes} nodes")  # fmt: skip
        gone = set(self.not_collected) | {n for n, _w in self.skipped}
        for why, paths in sorted(gaps_by_reason(self.bundle.items, gone).items()):
            shown = ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4
                                             else "")  # fmt: skip
            lines.append(f"gpu-triage collect: not collected ({why}): {shown}")
        missed: dict[str, list[str]] = {}
        for node, why in sorted(self.not_collected.items()):
            missed.setdefault(why, []).append(node)
        for node, why in self.skipped:  # in priority order
            missed.setdefault(why.split(" (")[0], []).append(node)
        for why, names in missed.items():
            shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more"
                                             if len(names) > 20 else "")  # fmt: skip
            lines.append(f"gpu-triage collect: nodes not reached ({len(names)}, {why}): {shown}")
        return lines

    def _nodes_collected(self) -> int:
        return len([n for n in self.selected_nodes if n not in self.not_collected])

    def _next_step_lines(self, path: str) -> list[str]:
        if any("PodSecurity" in why for why in self.not_collected.values()):
            return ["gpu-triage collect: next: Pod Security admission refused the privileged "
                    f"debug pods in namespace {self.opts.debug_namespace}; rerun with "
                    "--debug-namespace NS, where NS is labelled "
                    "pod-security.kubernetes.io/enforce=privileged (ask your cluster admin), "
                    f"or send {os.path.basename(path)} as it is (no node files)"]
        refused = preflight.missing(self.answers)
        forbidden = [i for i in self.bundle.items if i.get("error_kind") == "forbidden"]
        if refused or forbidden:
            return ["gpu-triage collect: next: some data needs permissions this identity lacks; "
                    "ask your cluster admin for the RBAC printed by `--preflight` (run it: "
                    "python3 gpu-triage-collect.pyz --preflight), then rerun; or send "
                    f"{os.path.basename(path)} as it is"]
        return [f"gpu-triage collect: next: send {os.path.basename(path)} to support"]

    def _install_signal_handlers(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        return {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}

    def _on_signal(self, signum: int, frame: Any) -> None:
        message = ("\ngpu-triage collect: interrupted; stopping, removing debug pods, writing a "
                   "partial bundle\n" if not self.interrupted
                   else "gpu-triage collect: still cleaning up, please wait\n")  # fmt: skip
        self.interrupted = True
        os.write(2, message.encode())
        self.runner.cancel()

    def _check_access(self) -> bool:
        """`kubectl version` must reach the API server; otherwise one line and exit code 2."""
        path, args = VERSION_STEP
        self.bundle.plan(1)
        result = self.runner.run(self.kubectl.argv(*args), self.opts.step_timeout)
        if result.rc == 127:
            eprint("gpu-triage collect: kubectl not found on PATH")
            return False
        info = load_json(result.stdout)
        info = info if isinstance(info, dict) else {}
        self.server_version = (info.get("serverVersion") or {}).get("gitVersion")
        if result.rc != 0 or not self.server_version:
            reason = last_line(result.error or "kubectl version printed no server version")
            where = f" (context {self.context})" if self.context else ""
            kind = error_kind(reason)
            if kind == "unauthorized":
                eprint(f"gpu-triage collect: the Kubernetes API server{where} did not accept "
                       f"the credentials (401 Unauthorized; log in again or renew the token): "
                       + reason)  # fmt: skip
            elif kind == "forbidden":
                eprint(f"gpu-triage collect: the Kubernetes API server{where} refused access "
                       f"(RBAC): {reason}")  # fmt: skip
            else:
                eprint(f"gpu-triage collect: cannot reach the Kubernetes API server{where}: "
                       + reason)  # fmt: skip
            return False
        nbytes, truncated = self.bundle.write(path, dump_json(info))
        self.bundle.add(path, result.argv, None, result, nbytes, truncated)
        return True

    def _collect(self) -> None:
        with futures.ThreadPoolExecutor(max_workers=self.opts.parallel) as pool:
            self.bundle.plan(len(CLUSTER_LISTS) + 1)
            jobs = {p: pool.submit(self._guard, p, self._get_json, p, a) for p, a in CLUSTER_LISTS}
            crds = pool.submit(self._guard, CRDS_STEP[0], self._collect_crds)
            lists = {path: job.result() for path, job in jobs.items()}
            crds.result()
        self.nodes = lists["cluster/nodes.json"]
        pods = lists["cluster/pods.json"]
        self.operator_ns = self.operator_ns or find_operator_namespace(pods)
        if pods is None:
            self.bundle.plan(2 if self.operator_ns else 1)
            pods = self._guard("logs", self._pods_of_namespace)
        self.selected_nodes = self._select_nodes(pods, lists["cluster/events.json"])
        refused = preflight.nodes_refused(self.answers) if self.opts.node_mode == "debug-pod" \
            else []
        if refused:  # no debug pod is started where the pre-flight says it would be refused
            why = ("no debug pod started: the pre-flight found "
                   + " and ".join(preflight.describe(c) for c in refused) + " refused")
            for node in self.selected_nodes:
                self._node_missing(node, why, "forbidden")
            self.selected_nodes_started = []
        else:
            self.selected_nodes_started = self._shell_nodes(self.selected_nodes)
        targets = list(log_targets(pods, self.operator_ns)) if pods else []
        workloads = self._workload_logs(pods, lists["cluster/pods.json"] is not None)
        self.bundle.plan(len(targets) + len(workloads) + 2)
        with futures.ThreadPoolExecutor(max_workers=self.opts.parallel) as pool:
            for node in self.selected_nodes_started:  # the slowest first, by priority
                pool.submit(self._guard, "nodes", self._collect_node, node)
            pool.submit(self._guard, "cluster/configmaps.json", self._collect_configmaps,
                        component_namespaces(pods, self.operator_ns))  # fmt: skip
            pool.submit(self._guard, "cluster/helm", self._collect_helm)
            for target in targets:
                pool.submit(self._guard, "logs", self._collect_log, *target)
            for target in workloads:
                pool.submit(self._guard, "logs", self._collect_log, *target, False, True)

    def _shell_nodes(self, names: list[str]) -> list[str]:
        """The nodes node.sh can run on; each node without a host shell gets one item
        nodes/<node> (error_kind "no-shell") and the run says so once, on one line."""
        if self.opts.node_mode == "local":
            return list(names)
        started, shellless = [], []
        for node in names:
            os_name = no_shell_os(self.nodes, node)
            if os_name is None:
                started.append(node)
                continue
            shellless.append(node)
            self._node_missing(node, f"{os_name} has no shell on the host for the node script; "
                               "the analysis judges this node from its pods", "no-shell")
        if shellless:
            shown = ", ".join(shellless[:10]) + (f" and {len(shellless) - 10} more"
                                                  if len(shellless) > 10 else "")  # fmt: skip
            eprint(f"gpu-triage collect: {len(shellless)} node(s) run an OS without a host "
                   f"shell (Talos, Bottlerocket): no node files from {shown}; their pods, "
                   "events and logs are collected as usual")  # fmt: skip
        return started

    def _workload_logs(self, pods: dict[str, Any] | None, cluster_wide: bool) -> list[Any]:
        """The containers of the first --workload-pods Running GPU pods on GPU nodes; where
        there are any, one manifest item (logs/gpu-workloads) counts the pods found and those
        taken (truncated: some were left out)."""
        limit = self.opts.workload_pods
        if not pods or not cluster_wide or not limit:
            return []
        known = set(gpu_node_names(self.nodes)) | set(self.selected_nodes) \
            if self.nodes is not None else None
        found = workload_targets(pods, self.operator_ns, known)
        if not found:
            return []
        names = sorted({(str(ns), str(pod)) for ns, pod, _c in found})
        taken = set(names[:limit])
        chosen = [t for t in found if (str(t[0]), str(t[1])) in taken]
        extra = {"pods_total": len(names), "pods_collected": len(taken),
                 "log_tail_lines": self.opts.workload_log_tail,
                 "log_limit_bytes": self.opts.workload_log_bytes}  # fmt: skip
        self.bundle.add("logs/gpu-workloads", None, None, truncated=len(names) > limit,
                        counted=False, extra=extra)  # fmt: skip
        return chosen

    def _guard(self, path: str, func: Any, *args: Any) -> Any:
        """Run one step; a bug in it becomes a failed item, never an aborted run."""
        try:
            return func(*args)
        except Exception as exc:
            error = f"collector error: {type(exc).__name__}: {exc}"
            eprint(traceback.format_exc())
            self.bundle.add(path, None, None, error=error)
            return None

    # ---- cluster-wide --------------------------------------------------------------------

    def _get_json(self, path: str, args: tuple[str, ...], configmaps: bool = False) -> Any:
        """Run a kubectl get; write its JSON (redacted, never cut mid-list). Returns the whole
        object, also when the file keeps only part of it, or None when kubectl failed."""
        argv = self.kubectl.argv(*args)
        result = self.runner.run(argv, self.opts.step_timeout)
        obj, error, nbytes, truncated = None, result.error, 0, False
        extra: dict[str, Any] = {}
        if error is None:
            obj = load_json(result.stdout)
            error = None if isinstance(obj, dict) else "kubectl printed no JSON object"
        if error is None:
            self.redactor.kubernetes(obj, configmaps=configmaps)
            nbytes, truncated, extra = self.bundle.write_json(path, obj)
            error = extra.pop("error", None)
        self.bundle.add(path, argv, None, result, nbytes, truncated, error, extra=extra)
        return obj if isinstance(obj, dict) and result.error is None else None

    def _pods_of_namespace(self) -> Any:
        """`get pods -A` failed (a namespace-scoped identity, say): read the operator
        namespace's pods instead, for its logs, and record one failed step for the logs that
        could not even be tried. The list goes to cluster/namespace-pods/<ns>.json, not to
        cluster/pods.json, which stays a failed step: rules must not take it for all pods."""
        failed = [i for i in self.bundle.items if i["path"] == "cluster/pods.json" and i["error"]]
        why = last_line(failed[0]["error"]) if failed else "the step did not finish"
        kind = {"error_kind": failed[0]["error_kind"]} if failed and "error_kind" in failed[0] \
            else {}
        ns = self.operator_ns
        if not ns:
            error = (f"no log tried: pods could not be listed cluster-wide ({why}) and the "
                     "operator namespace is unknown; pass -n")
            self.bundle.add("logs", None, None, error=error, extra=kind)
            return None
        path = f"cluster/namespace-pods/{ns}.json"
        pods = self._get_json(path, ("get", "pods", "-n", ns, "-o", "json"))
        if pods is None:
            in_ns = [i for i in self.bundle.items if i["path"] == path and i["error"]]
            also = last_line(in_ns[0]["error"]) if in_ns else "the step did not finish"
            error = (f"no log tried: pods could not be listed cluster-wide ({why}) nor in "
                     f"namespace {ns} ({also})")
        else:
            error = (f"logs of GPU pods outside namespace {ns} not tried: pods could not be "
                     f"listed cluster-wide ({why})")
        self.bundle.add("logs", None, None, error=error, extra=kind)
        return pods

    def _no_namespace(self, path: str) -> None:
        error = "operator namespace not found (no readable pod labelled app=gpu-operator); pass -n"
        self.bundle.add(path, None, None, error=error)

    def _collect_crds(self) -> None:
        """The GPU stack's CRDs by name; --ignore-not-found: a cluster without the operator
        has none of them, which is an answer (an empty List), not a failure."""
        path, args = CRDS_STEP
        argv = self.kubectl.argv(*args)
        result = self.runner.run(argv, self.opts.step_timeout)
        error, nbytes, truncated = result.error, 0, False
        extra: dict[str, Any] = {}
        if error is None:
            obj = load_json(result.stdout) if result.stdout.strip() else {
                "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                "items": []}  # fmt: skip
            if isinstance(obj, dict) and obj.get("kind") == "CustomResourceDefinition":
                obj = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                       "items": [obj]}  # fmt: skip
            if isinstance(obj, dict):
                self.redactor.kubernetes(obj)
                nbytes, truncated, extra = self.bundle.write_json(path, obj)
                error = extra.pop("error", None)
            else:
                error = "kubectl printed no JSON object"
        self.bundle.add(path, argv, None, result, nbytes, truncated, error, extra=extra)

    def _collect_configmaps(self, others: list[str]) -> None:
        """ConfigMaps of the operator namespace and of the namespaces where GPU components run
        outside it, in one List; one manifest item, which names every namespace and command."""
        namespaces = ([self.operator_ns] if self.operator_ns else []) + others
        if not namespaces:
            return self._no_namespace("cluster/configmaps.json")
        if len(namespaces) == 1:
            args = ("get", "configmaps", "-n", namespaces[0], "-o", "json")
            self._get_json("cluster/configmaps.json", args, configmaps=True)
            return None
        merged: dict[str, Any] | None = None
        first: Result | None = None
        commands, errors = [], []
        for ns in namespaces:
            argv = self.kubectl.argv("get", "configmaps", "-n", ns, "-o", "json")
            result = self.runner.run(argv, self.opts.step_timeout)
            first = first or result
            commands.append(argv)
            obj = load_json(result.stdout) if result.error is None else None
            if not isinstance(obj, dict) or not isinstance(obj.get("items"), list):
                errors.append(f"namespace {ns}: {result.error or 'kubectl printed no JSON object'}")
                continue
            self.redactor.kubernetes(obj, configmaps=True)
            if merged is None:
                merged = obj
            else:
                merged["items"].extend(obj["items"])
        nbytes, truncated = 0, False
        extra: dict[str, Any] = {}
        if merged is not None:
            nbytes, truncated, extra = self.bundle.write_json("cluster/configmaps.json", merged)
            errors += [extra.pop("error")] if "error" in extra else []
        extra.update(namespaces=namespaces, commands=commands)
        self.bundle.add("cluster/configmaps.json", commands[0], None, first, nbytes, truncated,
                        "; ".join(errors) or None, extra=extra)  # fmt: skip
        return None

    def _collect_helm(self) -> None:
        if not self.operator_ns:
            return self._no_namespace("cluster/helm")
        if not (shutil.which("helm") and self._helm_via_cli(self.operator_ns)):
            self._helm_via_secrets(self.operator_ns)

    def _write_history(self, name: Any, argv: list[str], result: Result, entries: list[Any],
                       error: str | None = None) -> None:  # fmt: skip
        if not is_dns1123(name):
            error = f"refused: Helm release name {name!r} is not a DNS-1123 name"
            self.bundle.add("cluster/helm", argv, None, result, error=error)
            return
        path = f"cluster/helm/{name}.json"
        entries.sort(key=lambda e: e.get("revision") or 0)
        nbytes, truncated, extra = self.bundle.write_json(path, entries)
        self.bundle.add(path, argv, None, result, nbytes, truncated, error, counted=False,
                        extra=extra)

    def _helm_via_cli(self, ns: str) -> bool:
        """`helm history` and `helm get values` per revision; False to fall back to Secrets."""
        timeout = self.opts.step_timeout
        listed = self.runner.run(helm_argv(self.opts, "list", "-n", ns, "-a", "-ojson"), timeout)
        releases = load_json(listed.stdout) if listed.error is None else None
        if not isinstance(releases, list):
            eprint(f"gpu-triage collect: helm list failed ({listed.error or 'no JSON list'}); "
                   "reading the Helm release Secrets instead")  # fmt: skip
            return False
        for name in [str(r.get("name")) for r in releases]:
            argv = helm_argv(self.opts, "history", name, "-n", ns, "-o", "json")
            result = self.runner.run(argv, timeout)
            history = load_json(result.stdout) if result.error is None else None
            if not isinstance(history, list):
                error = result.error or "helm history printed no JSON list"
                self._write_history(name, argv, result, [], error)
                continue
            entries, errors = [], []
            for rev in history:
                revision = str(rev.get("revision"))
                args = ("get", "values", name, "-n", ns, "--revision", revision, "-o", "json")
                got = self.runner.run(helm_argv(self.opts, *args), timeout)
                values = load_json(got.stdout) if got.error is None else None
                ok = got.error is None and isinstance(values, (dict, type(None)))
                if not ok:
                    errors.append(f"revision {revision}: {got.error or 'helm printed no JSON'}")
                keys = ("revision", "status", "chart", "app_version", "updated", "description")
                entry = {key: rev.get(key) for key in keys}
                entry["values"] = self.redactor.helm_values(values or {}) if ok else None
                entries.append(entry)
            self._write_history(name, argv, result, entries, "; ".join(errors) or None)
        self.bundle.add("cluster/helm", listed.argv, None, listed)
        return True

    def _helm_via_secrets(self, ns: str) -> None:
        """Decode the release Secrets here; only history and redacted user values are kept."""
        argv = self.kubectl.argv("get", "secrets", "-n", ns, "-l", "owner=helm", "-o", "json")
        result = self.runner.run(argv, self.opts.step_timeout)
        listing = load_json(result.stdout) if result.error is None else None
        if not isinstance(listing, dict):
            error = result.error or "kubectl printed no JSON object"
            self.bundle.add("cluster/helm", argv, None, result, error=error)
            return
        histories: dict[str, list[Any]] = {}
        errors = []
        for secret in listing.get("items") or []:
            if secret.get("type") != HELM_RELEASE_TYPE:
                continue
            meta = secret.get("metadata") or {}
            try:
                release = decode_helm_release((secret.get("data") or {}).get("release") or "")
            except (ValueError, binascii.Error, OSError, EOFError) as exc:
                errors.append(f"cannot decode Secret {meta.get('name')}: {exc}")
                continue
            name = release.get("name") or (meta.get("labels") or {}).get("name")
            histories.setdefault(str(name), []).append(reduce_release(release, self.redactor))
        for name, entries in sorted(histories.items()):
            self._write_history(name, argv, result, entries)
        self.bundle.add("cluster/helm", argv, None, result, error="; ".join(errors) or None)

    def _collect_log(self, ns: Any, pod: Any, container: Any, previous: bool,
                     workload: bool = False) -> None:
        """One container's log; a GPU workload's (workload=True) with the smaller
        --workload-log-tail and a --workload-log-bytes limit."""
        for kind, name in (("namespace", ns), ("pod", pod), ("container", container)):
            if not is_dns1123(name):
                error = f"refused: {kind} name {name!r} is not a DNS-1123 name"
                self.bundle.add("logs", None, None, error=error)
                return
        tail = self.opts.workload_log_tail if workload else self.opts.log_tail
        limit = self.opts.workload_log_bytes if workload else 0
        path = f"logs/{ns}/{pod}/{container}{'.previous' if previous else ''}.log"
        argv = log_argv(self.kubectl, ns, pod, container, tail, previous, limit)
        result = self.runner.run(argv, self.opts.step_timeout, None, self.bundle.abspath(path))
        nbytes, truncated = self.bundle.settle(path, result.error is not None)
        if not truncated and nbytes:
            with open(self.bundle.abspath(path), "rb") as handle:
                lines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
            truncated = lines >= tail  # kubectl kept the last `tail` lines: there may be more
            truncated = truncated or (limit > 0 and nbytes >= limit)
        nbytes = self._redact_staged(path, nbytes)
        self.bundle.add(path, argv, None, result, nbytes, truncated, result.error)

    def _redact_staged(self, rel: str, nbytes: int) -> int:
        """A file a command wrote straight into the staging area (a log), redacted in place;
        returns its new size."""
        path = self.bundle.abspath(rel)
        if not self.redactor.enabled or not nbytes or not os.path.exists(path):
            return nbytes
        with open(path, "rb") as handle:
            data = handle.read()
        redacted = self.redactor.file(rel, data, "log-values")
        if redacted is None or redacted == data:
            return nbytes
        with open(path, "wb") as handle:
            handle.write(redacted)
        return len(redacted)

    # ---- nodes ---------------------------------------------------------------------------

    def _gpu_stack(self, pod: dict[str, Any]) -> bool:
        ns = (pod.get("metadata") or {}).get("namespace")
        return (self.operator_ns is not None and ns == self.operator_ns) or is_gpu_component(
            pod) or requests_gpu(pod)

    def _node_missing(self, node: str, why: str, kind: str | None = None) -> None:
        """A node whose files are not in the bundle: one item nodes/<node> with the reason."""
        with self._lock:
            self.not_collected[node] = why
        extra = {"error_kind": kind} if kind else {}
        self.bundle.add(f"nodes/{node}", None, node, error=f"node not collected: {why}",
                        counted=False, extra=extra)  # fmt: skip

    def _skip_nodes(self, left: list[tuple[str, str]]) -> None:
        for node, why in left:
            reason = f"left out by --max-nodes {self.opts.max_nodes} ({why})"
            self.skipped.append((node, reason))
            self.bundle.add(f"nodes/{node}", None, node, error=f"node not visited: {reason}",
                            counted=False, extra={"error_kind": "skipped"})  # fmt: skip

    def _prioritised(self, names: list[str], pods: Any, events: Any) -> list[str]:
        """Problems first, then one node of each kind, then the rest; --max-nodes of them."""
        ranked = fleet.order(names, self.nodes, pods, events, self._gpu_stack)
        chosen, left = ranked[: self.opts.max_nodes], ranked[self.opts.max_nodes :]
        self._skip_nodes(left)
        bad = [(n, why) for n, why in chosen if why.startswith("problem: ")]
        if bad:
            shown = "; ".join(f"{n} ({why[9:]})" for n, why in bad[:10])
            more = f"; {len(bad) - 10} more" if len(bad) > 10 else ""
            eprint(f"gpu-triage collect: nodes with problems, visited first: {shown}{more}")
        if left:
            eprint(f"gpu-triage collect: visiting {len(chosen)} of {len(names)} GPU nodes "
                   f"(--max-nodes {self.opts.max_nodes}): those with problems, then one of each "
                   f"kind (GPU, driver, OS, kernel, runtime), then the rest; {len(left)} left "
                   "out (raise --max-nodes or name them with --nodes)")  # fmt: skip
        return [n for n, _why in chosen]

    def _select_nodes(self, pods: Any = None, events: Any = None) -> list[str]:
        if self.opts.node_mode == "none":
            return []
        if self.opts.nodes:
            return list(self.opts.nodes)
        known = [(n.get("metadata") or {}).get("name") for n in self._node_objects()]
        if self.opts.node_mode == "local":
            host = socket.gethostname().lower()
            short = host.split(".")[0]
            return [short if short in known and host not in known else host]
        if self.nodes is None:
            error = "cannot choose GPU nodes: the node list was not collected; pass --nodes"
            self.bundle.add("nodes", None, None, error=error)
            return []
        names = gpu_node_names(self.nodes)
        if names:
            return self._prioritised(names, pods, events)
        # Labelling itself may be broken (no GFD, no NFD, no device plugin): try every node,
        # each stopping early where lspci shows no NVIDIA device.
        every = sorted(str(n) for n in known if n)
        self.probing = bool(every)
        chosen = every[: self.opts.max_nodes]
        extra = len(every) - len(chosen)
        self._skip_nodes([(n, "no GPU label anywhere: nodes tried in name order")
                          for n in every[self.opts.max_nodes :]])
        left = f"; {extra} more left out (--max-nodes)" if extra else ""
        eprint(f"gpu-triage collect: no node has an NVIDIA GPU label or nvidia.com capacity; "
               f"trying {len(chosen)} node(s), each stopping early without an NVIDIA PCI "
               f"device{left} (or choose nodes with --nodes)")  # fmt: skip
        return chosen

    def _collect_node(self, node: str) -> None:
        if not is_dns1123(node):
            error = f"refused: node name {node!r} is not a DNS-1123 name"
            self.bundle.add("nodes", None, node, error=error)
            return self._node_done(node, False)
        address = node_addresses(self.nodes, node).get("InternalIP")
        argv = node_transport_argv(
            self.opts, self.kubectl, node, address, self.run_id, probe=self.probing
        )
        tar_path = os.path.join(self.work, f"node-{node}.tar")
        debug = self.opts.node_mode == "debug-pod"
        result = self.runner.run(argv, self.opts.node_timeout, self.node_script, tar_path)
        steps, problem = 0, None
        try:
            offset = self._note_debug_pod(node, tar_path) if debug else 0
            steps = self._ingest_node_tar(node, tar_path, offset)
        except (tarfile.TarError, OSError, ValueError, EOFError) as exc:
            problem = f"no usable tar stream from the node script ({exc})"
        finally:
            if debug and result.rc is not None and not create_refused(result.error):
                self._cleanup_debug_pods(node)
            with contextlib.suppress(FileNotFoundError):
                os.remove(tar_path)
        if not steps:
            reason = result.error or problem or "the node script wrote nothing"
            error = f"node not collected (--node-mode {self.opts.node_mode}): {reason}"
            why = re.sub(r"node-debugger-[a-z0-9.-]+", "node-debugger-<node>-<id>",
                         last_line(reason))
            if debug and create_refused(reason):
                why = (f"the API server refused the debug pod in namespace "
                       f"{self.opts.debug_namespace}: {why}")
            with self._lock:
                self.not_collected[node] = why
            for rel, _command, always in NODE_STEPS:
                if always:
                    path = f"nodes/{node}/{rel}"
                    self.bundle.add(path, argv, node, result, error=error, counted=False)
        self._node_done(node, bool(steps))

    def _node_done(self, node: str, collected: bool) -> None:
        failed = sum(1 for i in self.bundle.items if i["node"] == node and i["error"])
        with self._lock:
            self._nodes_done += 1
            done = self._nodes_done
        if collected:
            absent = f"; {failed} files not on the node or failed" if failed else ""
            eprint(f"nodes {done}/{len(self.selected_nodes)}: {node} collected{absent}")
        else:
            why = self.not_collected.get(node, "see the manifest")
            eprint(f"nodes {done}/{len(self.selected_nodes)}: {node} NOT collected: {why}")

    def _ingest_node_tar(self, node: str, tar_path: str, offset: int) -> int:
        """Copy node.sh's files into nodes/<node>/, turn steps.tsv into items; returns #steps."""
        written: dict[str, int] = {}
        binary: list[str] = []
        rows = None
        with open(tar_path, "rb") as handle:
            handle.seek(offset)
            if not handle.read(512):
                raise ValueError("empty output")
            handle.seek(offset)
            with tarfile.open(fileobj=handle, mode="r|*") as archive:
                for member in archive:
                    name = member.name[2:] if member.name.startswith("./") else member.name
                    stream = archive.extractfile(member) if member.isfile() and name else None
                    if stream is None:
                        continue
                    if name == "steps.tsv":
                        rows = parse_steps_tsv(stream.read().decode("utf-8", "replace"))
                    elif safe_relpath(name):
                        category = ("containerd-values" if name.startswith(
                            ("containerd/", "crio/", "docker/")) else "node-values")
                        data = self.redactor.file(name, stream.read(), category)
                        if data is None:  # binary: listed in the manifest, never copied
                            binary.append(name)
                            continue
                        written[name] = self.bundle.write(f"nodes/{node}/{name}", data)[0]
                    else:
                        eprint(f"gpu-triage collect: {node}: ignored unsafe tar member {name!r}")
        if rows is None:
            raise ValueError("no steps.tsv in the tar stream")
        for row in rows:
            path = row["path"] if safe_relpath(row["path"]) else ""
            error = row["error"]
            if path in binary:
                error = "not copied: binary content (a NUL byte); only text files are copied"
            item = self.bundle.add(
                f"nodes/{node}/{path}".rstrip("/"), row["command"], node,
                nbytes=written.get(path, 0), truncated=row["truncated"], error=error,
                counted=False,
            )  # fmt: skip
            item.update(exit_code=row["exit_code"], started_at=row["started_at"],
                        duration_ms=row["duration_ms"])  # fmt: skip
        return len(rows)

    def _note_debug_pod(self, node: str, tar_path: str) -> int:
        """kubectl debug prints 'Creating debugging pod NAME ...' before the tar: remember NAME."""
        with open(tar_path, "rb") as handle:
            match = CREATING_POD_RE.match(handle.read(1024))
        if not match:
            return 0
        name = match.group(1).decode("utf-8", "replace")
        if name.startswith(f"{DEBUG_POD_PREFIX}{node}-"):
            with self._lock:
                self._debug_pods[name] = node
            self.kubectl.remember_debug_pod(name)
        return match.end()

    def _cleanup_debug_pods(self, node: str | None) -> None:
        """Find this run's debug pods (by name, and by the run id in their command); delete them."""
        ns = self.opts.debug_namespace
        prefix = DEBUG_POD_PREFIX + (f"{node}-" if node else "")
        marker = f"GPU_TRIAGE_RUN_ID={self.run_id}"
        with self._lock:
            names = {n for n, owner in self._debug_pods.items() if node in (None, owner)}
        argv = self.kubectl.argv("get", "pods", "-n", ns, "-o", "json")
        listed = self.runner.run(argv, 60, cleanup=True)
        pods = load_json(listed.stdout) if listed.error is None else None
        existing = {str((p.get("metadata") or {}).get("name"))
                    for p in (pods or {}).get("items") or []}
        if isinstance(pods, dict):  # only pods that exist: a refused create made none
            names &= existing
        elif names:
            eprint(f"gpu-triage collect: cannot list the pods in {ns} to find this run's debug "
                   f"pods: {last_line(listed.error or '')}")  # fmt: skip
        for pod in (pods or {}).get("items") or []:
            name = (pod.get("metadata") or {}).get("name") or ""
            containers = (pod.get("spec") or {}).get("containers") or []
            words = [w for c in containers for k in ("command", "args") for w in c.get(k) or []]
            if name.startswith(prefix) and marker in words:
                names.add(name)
                self.kubectl.remember_debug_pod(name)
        for name in sorted(names):
            with self._lock:
                if name in self._deleted:
                    continue
                self._deleted.add(name)
            flags = ("-n", ns, "--ignore-not-found", "--wait=false")
            argv = self.kubectl.argv("delete", "pod", name, *flags)
            result = self.runner.run(argv, 60, cleanup=True)
            if result.error is not None:
                eprint(f"gpu-triage collect: could not delete the debug pod {ns}/{name} this "
                       f"run started ({last_line(result.error)}); it has finished; remove it "
                       f"with: kubectl delete pod -n {ns} {name}")  # fmt: skip
            elif not self.opts.quiet:
                eprint(f"gpu-triage collect: deleted debug pod {ns}/{name}")

    # ---- packaging -----------------------------------------------------------------------

    def _node_objects(self) -> list[dict[str, Any]]:
        return list((self.nodes or {}).get("items") or [])

    def _hosts(self) -> list[tuple[str, list[str]]]:
        hosts: dict[str, list[str]] = {}
        for node in self._node_objects():
            name = (node.get("metadata") or {}).get("name")
            if name:
                addresses = node_addresses(self.nodes, name)
                kinds = ("Hostname", "InternalDNS", "ExternalDNS")
                hosts[name] = [a for kind, a in addresses.items() if kind in kinds]
        for name in self.selected_nodes:
            ssh_host = self.opts.ssh_hosts.get(name)
            hosts.setdefault(name, []).extend([ssh_host] if ssh_host else [])
        return sorted(hosts.items())

    def _manifest(self, pseudonymized: bool) -> dict[str, Any]:
        opts = self.opts
        options = {
            "since": opts.since, "log_tail_lines": opts.log_tail, "node_mode": opts.node_mode,
            "redact": opts.redact, "pseudonymize": opts.pseudonymize,
            "max_file_bytes": opts.max_file_bytes, "nodes": self.selected_nodes,
            "step_timeout_s": opts.step_timeout, "deadline_s": opts.deadline,
            "workload_pods": opts.workload_pods, "workload_log_tail_lines": opts.workload_log_tail,
            "workload_log_bytes": opts.workload_log_bytes,
        }  # fmt: skip
        counts = dict(sorted(self.redactor.counts.items()))
        return {
            "format": "gpu-triage-bundle",
            "format_version": FORMAT_VERSION,
            "collector": {"name": COLLECTOR_NAME, "version": COLLECTOR_VERSION},
            "created_at": iso(self.started),
            "cluster": {"context": self.context, "server_version": self.server_version},
            "operator_namespace": self.operator_ns,
            "options": options,
            "redaction": {"enabled": opts.redact, "counts": counts,
                          "kinds": dict(sorted(self.redactor.kinds.items())),
                          "pseudonymized": pseudonymized},
            "interrupted": self.interrupted,
            "items": sorted(self.bundle.items, key=lambda i: (i["path"], i["started_at"])),
        }

    def _package(self) -> tuple[str, int]:
        """Write <output>.tgz: one top directory, manifest.json first, then the staged files."""
        top = f"gpu-triage-{slug(self.context)}-{self.started.strftime('%Y%m%dT%H%M%SZ')}"
        out_path = resolve_output(self.opts.output, top)
        os.makedirs(self.bundle.root, exist_ok=True)
        pseudo = Pseudonymizer(self._hosts()) if self.opts.pseudonymize else None
        manifest = dump_json(self._manifest(pseudo is not None))
        if pseudo is not None:
            pseudo.apply_to_tree(self.bundle.root)
            manifest = pseudo.text(manifest)
        mtime = int(self.started.timestamp())

        def pack(out: Any) -> None:
            with tarfile.open(fileobj=out, mode="w:gz") as archive:
                add_bytes(archive, f"{top}/manifest.json", manifest, mtime)
                for rel in sorted(walk_files(self.bundle.root)):
                    with open(os.path.join(self.bundle.root, *rel.split("/")), "rb") as handle:
                        add_bytes(archive, f"{top}/{rel}", handle.read(), mtime)

        write_new(out_path, pack, 0o600)
        if pseudo is not None:
            base = out_path[:-4] if out_path.endswith(".tgz") else out_path
            mapping_path = base + ".pseudonyms.json"
            mapping = json.dumps(pseudo.mapping(), indent=1).encode()
            write_new(mapping_path, lambda out: out.write(mapping), 0o600)
            eprint(f"gpu-triage collect: pseudonym mapping (keep, never send): {mapping_path}")
        return out_path, os.path.getsize(out_path)


def closing_lines(path: str, redactor: Redactor) -> list[str]:
    """What was redacted (counts by kind, never a value), the bundle's SHA-256, and how to
    check it before sending."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    if not redactor.enabled:
        said = "redaction was OFF (--no-redact): secret values are in the bundle"
    elif redactor.kinds:
        total = sum(redactor.kinds.values())
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(redactor.kinds.items()))
        said = f"redacted {total} values ({kinds}); values are never shown"
    else:
        said = "redacted 0 values: nothing secret-looking was found"
    return [
        f"gpu-triage collect: {said}",
        f"gpu-triage collect: bundle {path} (mode 0600)",
        f"gpu-triage collect: sha256 {digest.hexdigest()}",
        "gpu-triage collect: you may open it and check it before sending "
        f"(tar -tzvf {shlex.quote(path)}; tar -xzf it to read every file); to remove more, "
        "`gpu-triage redact BUNDLE -o OUT --redact-file FILE`",
    ]


def write_new(path: str, fill: Any, mode: int = 0o666) -> None:
    """Write ``path`` without ever writing through a link there: ``fill`` writes into a new
    temporary file beside it (O_CREAT|O_EXCL|O_NOFOLLOW: never an existing file or link),
    which is then renamed over ``path`` (a rename replaces a link, it never follows it)."""
    directory = os.path.dirname(path) or "."
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(16):
        partial = os.path.join(directory, f".gpu-triage-{uuid.uuid4().hex[:16]}.part")
        try:
            fd = os.open(partial, flags, mode)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"no free temporary name in {directory}")
    try:
        with os.fdopen(fd, "wb") as handle:
            fill(handle)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def refused_output(output: str | None) -> str | None:
    """Why an explicit ``-o FILE`` must not be written (a link, not a regular file), or None."""
    if not output or output.endswith(os.sep) or os.path.isdir(output):
        return None
    if os.path.islink(output):
        return "it is a symbolic link; the collector never writes through a link"
    if os.path.lexists(output) and not os.path.isfile(output):
        return "it exists and is not a regular file"
    return None


def add_bytes(archive: tarfile.TarFile, name: str, data: bytes, mtime: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode, info.type = len(data), mtime, 0o644, tarfile.REGTYPE
    archive.addfile(info, io.BytesIO(data))


def slug(context: str | None) -> str:
    text = re.sub(r"[^a-z0-9.-]+", "-", (context or "").lower()).strip("-.")
    return text[:63].strip("-.") or "cluster"


def resolve_output(output: str | None, top: str) -> str:
    if not output:
        return os.path.abspath(top + ".tgz")
    if os.path.isdir(output) or output.endswith(os.sep):
        os.makedirs(output, exist_ok=True)
        return os.path.abspath(os.path.join(output, top + ".tgz"))
    return os.path.abspath(output)


def current_context(kubeconfig: str | None) -> str | None:
    """current-context from the kubeconfig, read as text (`kubectl config` is not a read verb)."""
    from_env = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    paths = [kubeconfig] if kubeconfig else from_env
    for path in paths or [os.path.join(os.path.expanduser("~"), ".kube", "config")]:
        with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                match = re.match(r"^current-context:\s*[\"']?([^\"'#\s]+)", line)
                if match:
                    return match.group(1)
    return None


# --- --dry-run ------------------------------------------------------------------------------


def print_plan(opts: argparse.Namespace, out: Any) -> None:
    """Print every command a real run would use; runs nothing, not even kubectl get."""
    kubectl = Kubectl(opts.context, opts.kubeconfig)
    ns = opts.namespace or "<operator-namespace>"

    def say(text: str) -> None:
        print(text, file=out)

    def show(argv: list[str], target: str = "", note: str = "") -> None:
        note = f"   # {note}" if note else ""
        say(shlex.join(argv) + (f"   > {target}" if target else "") + note)

    say("# gpu-triage collect --dry-run: nothing is run. A real run would use these commands.")
    say("# pre-flight (printed as a table; --preflight stops after it)")
    for check in preflight.checks(opts):
        show(preflight.can_i_argv(kubectl.argv, check))
    say("# cluster (cluster/*.json; secrets redacted by key and by shape: collectors/redact.py)")
    for path, args in (VERSION_STEP, *CLUSTER_LISTS):
        show(kubectl.argv(*args), path)
    show(kubectl.argv(*CRDS_STEP[1]), CRDS_STEP[0], "absent CRDs are left out")
    found = "" if opts.namespace else "namespace: that of the pod labelled app=gpu-operator"
    configmaps = kubectl.argv("get", "configmaps", "-n", ns, "-o", "json")
    show(configmaps, "cluster/configmaps.json", found)
    others = kubectl.argv("get", "configmaps", "-n", "<component-namespace>", "-o", "json")
    show(others, "cluster/configmaps.json", "each namespace of GPU component pods, merged")
    say(f"# helm release history of {ns} (cluster/helm/<release>.json, values redacted)")
    if shutil.which("helm"):
        show(helm_argv(opts, "list", "-n", ns, "-a", "-ojson"))
        show(helm_argv(opts, "history", "<release>", "-n", ns, "-o", "json"))
        show(helm_argv(opts, "get", "values", "<release>", "-n", ns, "--revision", "<n>", "-ojson"))
        say("#   if helm fails:")
    secrets = kubectl.argv("get", "secrets", "-n", ns, "-l", "owner=helm", "-o", "json")
    show(secrets, note="decoded here; only history and redacted user values are kept")
    say(f"# logs: every container of the pods in {ns}, of GPU component pods in any namespace "
        "(device plugin, GFD, NFD, DCGM exporter) and of GPU pods that are not Running")
    for previous in (False, True):
        argv = log_argv(kubectl, "<namespace>", "<pod>", "<container>", opts.log_tail, previous)
        target = f"logs/<namespace>/<pod>/<container>{'.previous' if previous else ''}.log"
        show(argv, target, "when restartCount > 0" if previous else "")
    if opts.workload_pods:
        say(f"# logs: a tail of the running containers of at most {opts.workload_pods} Running "
            "GPU-requesting pods on GPU nodes")
        argv = log_argv(kubectl, "<namespace>", "<pod>", "<container>", opts.workload_log_tail,
                        False, opts.workload_log_bytes)
        show(argv, "logs/<namespace>/<pod>/<container>.log")
    if opts.node_mode == "none":
        say("# nodes: none (--node-mode none)")
        return
    local = [socket.gethostname().lower()] if opts.node_mode == "local" else ["<node>"]
    nodes = opts.nodes or local
    labels = " or ".join(f"{x}=true" for x in GPU_NODE_LABELS)
    blind = f"; if none: up to {opts.max_nodes} nodes, each stopping early without lspci 10de:"
    chosen = ", ".join(nodes) if opts.nodes else f"{labels} or nvidia.com/* capacity{blind}"
    say(f"# nodes ({opts.node_mode}): {chosen}; node.sh goes to stdin, its tar comes on stdout")
    for node in nodes:
        address = "<InternalIP>" if opts.node_mode == "ssh" else None
        show(node_transport_argv(opts, kubectl, node, address, "<run-id>"), f"nodes/{node}/")
    for rel, command, always in NODE_STEPS:
        where = "" if always else "  (where present)"
        command = command.replace("<since>", opts.since)
        say(f"#   on the node: {command}   > nodes/<node>/{rel}{where}")
    if opts.node_mode == "debug-pod":
        dns = opts.debug_namespace
        listing = kubectl.argv("get", "pods", "-n", dns, "-o", "json")
        show(listing, note="find this run's debug pods: node-debugger-<node>-*, with the run id")
        kubectl.remember_debug_pod("<debug-pod>")
        delete = kubectl.argv("delete", "pod", "<debug-pod>", "-n", dns, "--ignore-not-found")
        show([*delete, "--wait=false"], note="only this run's debug pods, also after Ctrl-C")


# --- Command line ---------------------------------------------------------------------------

HELP_EPILOG = """\
node modes (how node.sh, next to this file, reaches each node as root):
  debug-pod  (default) kubectl debug node/<node> --profile=sysadmin --image <--debug-image>
             -- chroot /host sh -s. Its pods (node-debugger-<node>-*) are deleted afterwards,
             also after a failure or Ctrl-C. Use --debug-image for an air-gapped registry; any
             image with chroot and env works (busybox, ubi-minimal, ...).
  ssh        ssh <host> sh -s; host from --ssh-host NODE=HOST, else the node's InternalIP.
             BatchMode: keys or an agent, no password prompts. --ssh-sudo for non-root users.
  local      this machine is the node (run as root): sh -s here. Name it with --nodes.
  none       cluster objects and logs only.

Before anything runs, a pre-flight asks `kubectl auth can-i` for each permission the run
needs and prints what will and will not be collected (--preflight: only that).

Collected by default: nodes labelled nvidia.com/gpu.present=true, carrying an NVIDIA PCI
label from NFD, or with nvidia.com/* capacity; when none has any of these, up to --max-nodes
nodes, each stopping early where lspci shows no NVIDIA device; --nodes a,b chooses others.
Nothing in the cluster is changed: kubectl runs only version, get, logs and debug (and
deletes its own debug pods). Secrets are never written.

exit codes:
  0    bundle written (the last lines say what was not collected, why, and what to do);
       with --preflight: every permission the run needs is granted
  3    --preflight only: some permission is refused (the RBAC that grants it is printed)
  2    nothing collected: bad options, kubectl missing, or no access to the API server
  130  interrupted (Ctrl-C / SIGTERM): a partial bundle was still written
"""


def byte_size(text: str) -> int:
    match = re.match(r"^\s*(\d+)\s*([KMG]i?B?|B)?\s*$", text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 52428800, 50Mi, 1G)")
    unit = (match.group(2) or "B").upper()[:1]
    return int(match.group(1)) * {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit]


def since_value(text: str) -> str:
    if not SINCE_RE.match(text):
        raise argparse.ArgumentTypeError("takes a number and a unit s, m, h, d or w (e.g. 168h)")
    return text


def positive(kind: Any) -> Any:
    def parse(text: str) -> Any:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError("must be greater than 0")
        return value

    return parse


def not_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpu-triage collect",
        description="Collect a gpu-triage support bundle (.tgz) of the current Kubernetes cluster: "
        "cluster objects, GPU Operator logs, Helm history, and per-node containerd, journal, dmesg "
        "and nvidia-smi data. Read-only; secrets are redacted.",
        epilog=HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("-o", "--output", metavar="PATH", help="bundle file or directory (default: current dir)")
    add("--context", help="kubeconfig context (default: the current context)")
    add("--kubeconfig", metavar="FILE", help="kubeconfig file (default: kubectl's)")
    add("-n", "--namespace", help="GPU Operator namespace (default: of the app=gpu-operator pod)")
    add("--nodes", metavar="A,B", action="append", default=[],
        help="nodes to collect, comma-separated, repeatable (default: the GPU nodes)")  # fmt: skip
    add("--max-nodes", type=positive(int), default=DEFAULT_MAX_NODES, metavar="N",
        help="visit at most N nodes (debug pods), GPU nodes with problems first, then one of "
             "each kind, then the rest; the others are recorded as left out (default: "
             f"{DEFAULT_MAX_NODES}; --nodes is not capped)")  # fmt: skip
    add("--node-mode", choices=("debug-pod", "ssh", "local", "none"), default="debug-pod",
        help="how node.sh reaches the nodes (default: debug-pod; see below)")  # fmt: skip
    add("--debug-image", default="busybox:1.36", metavar="IMAGE", help="(default: busybox:1.36)")
    add("--debug-namespace", default="default", metavar="NS", help="(default: default)")
    add("--debug-profile", default="sysadmin", help="(default: sysadmin; '' omits --profile)")
    add("--ssh-host", action="append", default=[], metavar="NODE=HOST", help="repeatable")
    add("--ssh-user", metavar="USER", help="ssh login user")
    add("--ssh-sudo", action="store_true", help="run node.sh through sudo -n (ssh mode)")
    add("--node-script", metavar="FILE", default=None,
        help="(default: the node.sh inside the .pyz, or beside collect.py)")  # fmt: skip
    add("--since", type=since_value, default="168h", help="journal window (default: 168h)")
    add("--log-tail", type=positive(int), default=5000, metavar="LINES",
        help="log lines per container (default: 5000)")  # fmt: skip
    add("--workload-pods", type=not_negative, default=50, metavar="N",
        help="log tails of at most N Running GPU-requesting pods on GPU nodes; 0: none "
             "(default: 50)")  # fmt: skip
    add("--workload-log-tail", type=positive(int), default=200, metavar="LINES",
        help="log lines per container of those pods (default: 200)")  # fmt: skip
    add("--workload-log-bytes", type=byte_size, default=256 << 10, metavar="SIZE",
        help="bytes per container of those pods (default: 256Ki)")  # fmt: skip
    add("--max-file-bytes", type=byte_size, default=50 << 20, metavar="SIZE",
        help="cap per file; longer ones are cut and marked truncated (default: 50Mi)")  # fmt: skip
    add("--parallel", type=positive(int), default=8, metavar="N", help="concurrency (default: 8)")
    add("--step-timeout", type=positive(float), default=60.0, metavar="S", help="(default: 60)")
    add("--node-timeout", type=positive(float), default=600.0, metavar="S",
        help="per node, for the whole node script (default: 600)")  # fmt: skip
    add("--deadline", type=positive(float), default=1800.0, metavar="S",
        help="for the whole run; later steps are recorded as not run (default: 1800)")  # fmt: skip
    add("--no-redact", dest="redact", action="store_false", help="keep secret-looking values")
    add("--pseudonymize", action="store_true",
        help="replace node host names and IP addresses by stable pseudonyms; the mapping is "
             "written next to the bundle, never into it")  # fmt: skip
    add("--dry-run", action="store_true", help="print the commands a run would use; run nothing")
    add("--preflight", "--check", dest="preflight", action="store_true",
        help="only check the permissions (kubectl auth can-i), say what would be collected and "
             "print the RBAC that would grant the rest; collects nothing (this check also "
             "runs at the start of every collection)")  # fmt: skip
    add("-q", "--quiet", action="store_true", help="only failures and the summary on stderr")
    version = f"{COLLECTOR_NAME} {COLLECTOR_VERSION} (bundle format {FORMAT_VERSION})"
    add("--version", action="version", version=version)
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = build_parser()
    opts = parser.parse_args(argv)
    opts.nodes = [n.strip() for group in opts.nodes for n in group.split(",") if n.strip()]
    opts.ssh_hosts = {}
    for pair in opts.ssh_host:
        node, sep, host = pair.partition("=")
        if not (sep and node and host):
            parser.error(f"--ssh-host takes NODE=HOST, got {pair!r}")
        opts.ssh_hosts[node] = host
    if opts.node_mode == "local" and len(opts.nodes) > 1:
        parser.error("--node-mode local collects this machine only: give at most one --nodes name")
    return opts


def read_node_script(path: str | None) -> bytes:
    """--node-script FILE, else the node.sh that travels with this module: beside collect.py,
    inside the installed package, or inside gpu-triage-collect.pyz (read from the archive)."""
    if path:
        with open(path, "rb") as handle:
            return handle.read()
    if PACKAGE:
        import importlib.resources as resources

        if hasattr(resources, "files"):  # 3.9+
            return resources.files(PACKAGE).joinpath("node.sh").read_bytes()
        return resources.read_binary(PACKAGE, "node.sh")  # 3.8 (zipimport included)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "node.sh"), "rb") as handle:
        return handle.read()


def main(argv: list[str] | None = None) -> int:
    """`gpu-triage collect ARGS` and `python3 collect.py ARGS`; returns the exit code."""
    try:
        opts = parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if opts.dry_run:
        print_plan(opts, sys.stdout)
        return 0
    refusal = refused_output(opts.output)
    if refusal:
        eprint(f"gpu-triage collect: cannot write {opts.output!r}: {refusal}")
        return 2
    if shutil.which("kubectl") is None:
        eprint("gpu-triage collect: kubectl not found on PATH")
        return 2
    node_script = b""
    if opts.node_mode != "none" and not opts.preflight:
        try:
            node_script = read_node_script(opts.node_script)
        except OSError as exc:
            where = opts.node_script or "node.sh (inside the collector)"
            eprint(f"gpu-triage collect: cannot read {where}: {exc.strerror or exc}")
            return 2
    if opts.node_mode == "local" and hasattr(os, "geteuid") and os.geteuid() != 0:
        eprint("gpu-triage collect: warning: --node-mode local should run as root")
    return Collector(opts, node_script).run()


if __name__ == "__main__":
    sys.exit(main())
