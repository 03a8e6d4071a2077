"""The collector through real kubectl binaries, against a loopback API server (apiserver.py).

Every kubectl found (the Cloud SDK ships kubectl.1.27 ... kubectl.1.33; else the one on PATH)
runs the main scenario: an aggregated API that is down (klog noise before kubectl's error), an
RBAC refusal, a previous log the kubelet no longer has, and a pods list over --max-file-bytes.
The other scenarios (401, unreachable, namespace-scoped access) run with the newest kubectl.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from apiserver import IDENTITY, SSAR_PATH, ApiServer, have_openssl
from collector_support import COLLECT_PY, by_path, read_bundle, secrets_list
from kubectl_kit import kubectl_binaries

from analyzers.engine import analyze
from analyzers.engine.plugins import discover
from bundle import open_bundle
from collectors.collect import Bundle, dump_json, error_kind, error_tail

KUBECTLS = kubectl_binaries()
NEEDS = pytest.mark.skipif(
    not KUBECTLS or not have_openssl(),
    reason="needs a kubectl binary (Cloud SDK kubectl.1.*, or Debian's kubectl / "
    "kubernetes-client: .ci/setup --system) and openssl for the loopback server's certificate",
)
ALL_VERSIONS = [pytest.param(k, id=k.name if k.name != "kubectl" else str(k))
                for k in KUBECTLS] or [pytest.param(None, id="none")]
NEWEST = KUBECTLS[-1] if KUBECTLS else None

OPERATOR_POD = "gpu-operator/gpu-operator-6b8f9c7d5-x2x9q"
DCGM = "gpu-operator/nvidia-dcgm-exporter-5kq2n/nvidia-dcgm-exporter"
EVENTS_FORBIDDEN = (
    f'Error from server (Forbidden): events is forbidden: User "{IDENTITY}" cannot list '
    'resource "events" in API group "" at the cluster scope'
)
PREVIOUS_LOST = (
    'Error from server (BadRequest): previous terminated container "nvidia-dcgm-exporter" in '
    'pod "nvidia-dcgm-exporter-5kq2n" not found'
)


def run_collector(kubectl: Path, tmp: Path, api: ApiServer | None, *args: str,
                  token: str | None = None, url: str | None = None,
                  env_extra: dict[str, str] | None = None,
                  program: list[str] | None = None,
                  stdout: bool = False) -> tuple[int, str, Path | None]:
    """Run collect.py (a subprocess, as a customer would) with `kubectl` first on PATH;
    `program` runs another form of it instead (["python3.8", "gpu-triage-collect.pyz"]);
    `stdout`: return what it printed on stdout instead of stderr (--preflight's table)."""
    bin_dir, out = tmp / "bin", tmp / "out"
    bin_dir.mkdir(exist_ok=True)
    out.mkdir(exist_ok=True)
    link = bin_dir / "kubectl"
    if not link.exists():
        link.symlink_to(kubectl)
    config = tmp / "kubeconfig"
    if api is not None:
        api.kubeconfig(config, token=token)
    if url is not None:  # a server that is gone: same kubeconfig shape, nobody listening
        config.write_text(re.sub(r"server: \S+", f"server: {url}", config.read_text()))
    # No helm on PATH: Helm history comes from the release Secrets through kubectl.
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not os.path.exists(os.path.join(d, "helm"))]
    env = {"PATH": os.pathsep.join([str(bin_dir), *keep]), "HOME": str(tmp / "home"),
           "KUBECONFIG": str(config), "LANG": "C.UTF-8", **(env_extra or {})}
    program = program or [sys.executable, str(COLLECT_PY)]
    proc = subprocess.run([*program, "-o", str(out), "--node-mode",
                           "none", "--step-timeout", "60", *args],
                          env=env, capture_output=True, timeout=300)
    made = sorted(out.glob("*.tgz"))
    said = proc.stdout if stdout else proc.stderr
    return proc.returncode, said.decode("utf-8", "replace"), made[0] if made else None


def bundle_files(path: Path) -> tuple[dict[str, bytes], dict, dict]:
    names, files, manifest = read_bundle(path)
    top = names[0].split("/")[0]
    return {n[len(top) + 1:]: data for n, data in files.items()}, manifest, by_path(manifest)


# ---- without kubectl: the error text and its kind ------------------------------------------

KLOG_NOISE = (
    "E1201 18:58:57.180923   23949 memcache.go:265] couldn't get resource list for "
    "metrics.k8s.io/v1beta1: the server is currently unable to handle the request\n"
)


def test_the_error_is_the_tail_of_stderr_without_klog_lines() -> None:
    stderr = (KLOG_NOISE * 30 + "Warning: v1 thing is deprecated\n" + EVENTS_FORBIDDEN + "\n")
    assert error_tail(stderr.encode()) == "Warning: v1 thing is deprecated\n" + EVENTS_FORBIDDEN
    only_noise = error_tail((KLOG_NOISE * 3).encode())
    assert only_noise == KLOG_NOISE.strip()  # nothing else: the last klog line, not nothing
    long = "\n".join(f"line {n:04d} " + "x" * 80 for n in range(100)).encode()
    tail = error_tail(long)
    assert len(tail) <= 2000 and tail.endswith("x" * 80) and tail.startswith("line 00")
    assert tail.splitlines()[-1].startswith("line 0099")


@pytest.mark.parametrize(("text", "kind"), [
    ("error: You must be logged in to the server (Unauthorized)", "unauthorized"),
    (EVENTS_FORBIDDEN, "forbidden"),
    ("The connection to the server 127.0.0.1:1 was refused - did you specify the right host "
     "or port?", "unreachable"),
    ("Unable to connect to the server: dial tcp: lookup api.example: no such host",
     "unreachable"),
    ("Unable to connect to the server: net/http: TLS handshake timeout", "unreachable"),
    ("Unable to connect to the server: dial tcp 10.0.0.1:6443: i/o timeout", "unreachable"),
    ("timed out after 60s", "timeout"),
    (PREVIOUS_LOST, "previous-log-missing"),
    ('error: the server doesn\'t have a resource type "nvidiadrivers"', "not-found"),
    ('Error from server (NotFound): pods "x" not found', "not-found"),
    ("exit status 3", None),
])
def test_error_kinds(text: str, kind: str | None) -> None:
    assert error_kind(text) == kind


def test_json_over_the_cap_is_shortened_never_cut(tmp_path: Path) -> None:
    bundle = Bundle(str(tmp_path), 2000, quiet=True)
    pods = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "7"},
            "items": [{"metadata": {"name": f"pod-{n}"}, "spec": {"x": "é" * 50}}
                      for n in range(40)]}
    nbytes, truncated, extra = bundle.write_json("cluster/pods.json", pods)
    written = (tmp_path / "cluster" / "pods.json").read_bytes()
    kept = json.loads(written)
    assert truncated and nbytes == len(written) <= 2000
    assert extra == {"items_kept": len(kept["items"]), "items_total": 40}
    assert kept["items"] == pods["items"][:len(kept["items"])]
    # as many as fit: one more would not
    one_more = dict(kept, items=pods["items"][:len(kept["items"]) + 1])
    assert len(dump_json(one_more)) > 2000
    assert kept["metadata"] == {"resourceVersion": "7", "remainingItemCount": 40 - extra[
        "items_kept"]}

    history = [{"revision": n, "values": {"k": "v" * 100}} for n in range(1, 41)]
    nbytes, truncated, extra = bundle.write_json("cluster/helm/r.json", history)
    newest = json.loads((tmp_path / "cluster" / "helm" / "r.json").read_bytes())
    assert truncated and nbytes <= 2000 and newest[-1]["revision"] == 40
    assert extra == {"items_kept": len(newest), "items_total": 40}

    one = {"kind": "Thing", "data": "x" * 5000}
    assert bundle.write_json("cluster/thing.json", one) == (0, True, {
        "error": f"not written: {len(dump_json(one))} bytes of JSON, over --max-file-bytes 2000"})
    assert not (tmp_path / "cluster" / "thing.json").exists()
    assert bundle.write_json("cluster/small.json", {"items": []}) == (17, False, {})


# ---- the main scenario, through every kubectl version -------------------------------------


@NEEDS
@pytest.mark.parametrize("kubectl", ALL_VERSIONS)
def test_noise_refusals_lost_previous_log_and_a_list_over_the_cap(kubectl: Path,
                                                                  tmp_path: Path) -> None:
    with ApiServer(secrets=secrets_list()["items"]) as api:
        api.metrics_down = True
        api.forbidden = {"events"}
        api.previous_lost = {DCGM}
        code, stderr, path = run_collector(kubectl, tmp_path, api, "--max-file-bytes", "16Ki")
        methods = {(m, p if m != "GET" else "") for m, p, _query in api.requests}
    assert code == 0 and path is not None, stderr
    # read-only, as the server saw it: the only POSTs are the pre-flight's questions
    assert methods == {("GET", ""), ("POST", SSAR_PATH)}
    files, manifest, items = bundle_files(path)
    assert manifest["cluster"]["server_version"] == "v1.31.4"

    # kubectl's own error, not the memcache.go noise it printed first
    events = items["cluster/events.json"]
    assert (events["error"], events["error_kind"]) == (EVENTS_FORBIDDEN, "forbidden")
    assert f"FAILED cluster/events.json: {EVENTS_FORBIDDEN[:200]}" in stderr
    previous = items[f"logs/{DCGM}.previous.log"]
    assert (previous["error"], previous["error_kind"]) == (PREVIOUS_LOST, "previous-log-missing")
    failed = sorted(item["path"] for item in manifest["items"] if item["error"])
    assert failed == ["cluster/events.json", f"logs/{DCGM}.previous.log"]
    assert not any("memcache" in json.dumps(item) for item in manifest["items"])

    # pods.json is over 16 KiB: the pods that fit, as valid JSON, and the count left out
    pods_item = items["cluster/pods.json"]
    pods = json.loads(files["cluster/pods.json"])
    assert pods_item["truncated"] is True and pods_item["items_total"] == 11
    assert pods_item["items_kept"] == len(pods["items"]) and 0 < len(pods["items"]) < 11
    assert pods["metadata"]["remainingItemCount"] == 11 - len(pods["items"])
    assert pods_item["bytes"] == len(files["cluster/pods.json"]) <= 16 << 10
    assert "error_kind" not in pods_item and "items_kept" not in items["cluster/nodes.json"]
    # ... and the logs were still chosen from the whole list
    log = files[f"logs/{OPERATOR_POD}/gpu-operator.log"].decode()
    assert log.splitlines()[0].endswith(f"log line 0 of {OPERATOR_POD}/gpu-operator")
    assert json.loads(files["cluster/nvidiadrivers.json"])["items"] == []
    history = json.loads(files["cluster/helm/gpu-operator.json"])
    assert [entry["revision"] for entry in history] == [1, 2]


@NEEDS
def test_the_analyzer_files_each_gap_under_its_own_kind(tmp_path: Path) -> None:
    assert NEWEST is not None
    with ApiServer(secrets=secrets_list()["items"]) as api:
        api.metrics_down = True
        api.forbidden = {"events"}
        api.previous_lost = {DCGM}
        code, stderr, path = run_collector(NEWEST, tmp_path, api)
    assert code == 0 and path is not None, stderr
    with open_bundle(path) as bundle:
        report = analyze(bundle, discover().rules)
    gaps = {f.id: f for f in report.findings if f.rule_id == "BND001"}
    assert sorted(gaps) == ["BND001:forbidden", "BND001:previous-log-missing"]
    assert [e.excerpt for e in gaps["BND001:forbidden"].evidence] == [
        f"cluster/events.json: {EVENTS_FORBIDDEN}"]
    previous = gaps["BND001:previous-log-missing"]
    assert previous.severity.value == "info" and "Rules left" not in previous.summary
    assert [f.id for f in report.findings if f.rule_id == "BND002"] == []  # all of it parses


# ---- one version: credentials, reachability, namespace-scoped access ----------------------


@NEEDS
def test_a_refused_token_is_not_an_unreachable_server(tmp_path: Path) -> None:
    assert NEWEST is not None
    with ApiServer() as api:
        code, stderr, path = run_collector(NEWEST, tmp_path, api, token="expired-token")
    assert (code, path) == (2, None)
    (line,) = [line for line in stderr.splitlines() if line.strip()]
    assert line == ("gpu-triage collect: the Kubernetes API server (context loopback) did not "
                    "accept the credentials (401 Unauthorized; log in again or renew the "
                    "token): error: You must be logged in to the server (the server has asked "
                    "for the client to provide credentials)")
    assert "cannot reach" not in stderr


@NEEDS
def test_a_server_that_is_gone_is_unreachable(tmp_path: Path) -> None:
    assert NEWEST is not None
    with ApiServer() as api:
        api.kubeconfig(tmp_path / "kubeconfig")
        gone = api.url
    code, stderr, path = run_collector(NEWEST, tmp_path, None, url=gone)  # nobody listens
    assert (code, path) == (2, None)
    (line,) = [line for line in stderr.splitlines() if line.strip()]
    port = gone.rsplit(":", 1)[1]
    assert line.startswith("gpu-triage collect: cannot reach the Kubernetes API server "
                           "(context loopback): ")
    assert f"127.0.0.1:{port}" in line and "refused" in line


@NEEDS
def test_namespace_scoped_access_collects_the_namespace_and_says_what_was_not_tried(
        tmp_path: Path) -> None:
    assert NEWEST is not None
    with ApiServer(secrets=secrets_list()["items"]) as api:
        api.only_namespace = "gpu-operator"
        code, stderr, path = run_collector(NEWEST, tmp_path, api, "-n", "gpu-operator")
    assert code == 0 and path is not None, stderr
    files, manifest, items = bundle_files(path)
    pods_refused = (f'Error from server (Forbidden): pods is forbidden: User "{IDENTITY}" cannot '
                    'list resource "pods" in API group "" at the cluster scope')
    assert (items["cluster/pods.json"]["error"], items["cluster/pods.json"]["error_kind"]) == (
        pods_refused, "forbidden")
    assert "cluster/pods.json" not in files  # never a namespace's pods taken for all pods
    in_ns = json.loads(files["cluster/namespace-pods/gpu-operator.json"])
    assert len(in_ns["items"]) == 7
    assert items["logs"]["error"] == ("logs of GPU pods outside namespace gpu-operator not "
                                      f"tried: pods could not be listed cluster-wide "
                                      f"({pods_refused})")
    assert items["logs"]["error_kind"] == "forbidden"
    assert f"logs/{OPERATOR_POD}/gpu-operator.log" in files
    assert "cluster/configmaps.json" in files and "cluster/helm/gpu-operator.json" in files
    ok = sorted(item["path"] for item in manifest["items"] if not item["error"])
    assert [p for p in ok if p.startswith("cluster/") and not p.startswith("cluster/helm")] == [
        "cluster/configmaps.json", "cluster/namespace-pods/gpu-operator.json",
        "cluster/version.json"]
    refused = [item for item in manifest["items"]
               if item["path"].startswith("cluster/") and item["error"]]
    assert {item["error_kind"] for item in refused} == {"forbidden"}


@NEEDS
def test_namespace_scoped_access_without_a_namespace_names_the_missing_option(
        tmp_path: Path) -> None:
    assert NEWEST is not None
    with ApiServer() as api:
        api.only_namespace = "gpu-operator"
        code, stderr, path = run_collector(NEWEST, tmp_path, api)
    assert code == 0 and path is not None, stderr
    files, _manifest, items = bundle_files(path)
    assert items["logs"]["error"].startswith("no log tried: pods could not be listed "
                                             "cluster-wide (Error from server (Forbidden)")
    assert items["logs"]["error"].endswith("and the operator namespace is unknown; pass -n")
    assert not any(name.startswith("logs/") for name in files)


@NEEDS
def test_no_pods_readable_anywhere_is_one_step_naming_both_refusals(tmp_path: Path) -> None:
    assert NEWEST is not None
    with ApiServer() as api:
        api.forbidden = {"pods"}
        code, stderr, path = run_collector(NEWEST, tmp_path, api, "-n", "gpu-operator")
    assert code == 0 and path is not None, stderr
    files, _manifest, items = bundle_files(path)
    refused = (f'Error from server (Forbidden): pods is forbidden: User "{IDENTITY}" cannot list '
               'resource "pods" in API group ""')
    assert items["logs"]["error"] == (
        f"no log tried: pods could not be listed cluster-wide ({refused} at the cluster scope) "
        f'nor in namespace gpu-operator ({refused} in the namespace "gpu-operator")')
    assert items["cluster/namespace-pods/gpu-operator.json"]["error_kind"] == "forbidden"
    assert not any(name.startswith("logs/") for name in files)


# ---- 1.1: GPU components outside the operator namespace, GPU workloads, CRDs -------------

# A standalone device plugin as its static manifest deploys it (kube-system, container
# nvidia-device-plugin-ctr; https://github.com/NVIDIA/k8s-device-plugin nvidia-device-plugin.yml),
# crash-looping on a node whose runtime does not inject the driver. The log lines are from
# https://github.com/NVIDIA/k8s-device-plugin/issues/655.
STANDALONE_PLUGIN = "kube-system/nvidia-device-plugin-daemonset-7wq4d/nvidia-device-plugin-ctr"
NVML_LOG = (
    "I0417 07:12:59.758922       1 factory.go:107] Detected non-NVML platform: could not load "
    "NVML library: libnvidia-ml.so.1: cannot open shared object file: No such file or "
    "directory\n"
    "E0417 07:12:59.758986       1 factory.go:115] Incompatible platform detected\n"
)
MONITORING_DCGM = "monitoring/dcgm-exporter-q8x7k/exporter"
GFD_MIRRORED = "kube-system/gpu-feature-discovery-2jz6m/gpu-feature-discovery"


def _pod(ns: str, name: str, node: str | None, phase: str, containers: list[dict],
         labels: dict[str, str] | None = None, statuses: list[dict] | None = None) -> dict:
    return {"metadata": {"namespace": ns, "name": name, "labels": labels or {},
                         "uid": f"uid-{name}", "creationTimestamp": "2026-12-01T09:00:00Z"},
            "spec": {"nodeName": node, "containers": containers} if node else
            {"containers": containers},
            "status": {"phase": phase, "containerStatuses": statuses or []}}


def _running(name: str, restarts: int = 0) -> dict:
    return {"name": name, "ready": True, "restartCount": restarts,
            "state": {"running": {"startedAt": "2026-12-01T09:01:00Z"}}}


def _gpu(name: str, image: str = "nvcr.io/nvidia/pytorch:25.10-py3") -> dict:
    return {"name": name, "image": image, "resources": {"limits": {"nvidia.com/gpu": "1"}}}


def component_cluster() -> tuple[list[dict], list[dict]]:
    """The fixture cluster plus components outside the operator namespace and GPU workloads."""
    fixture = json.loads((Path(__file__).parent / "fixtures" / "cluster" / "pods.json")
                         .read_text())["items"]
    crash = {"name": "nvidia-device-plugin-ctr", "ready": False, "restartCount": 4,
             "state": {"waiting": {"reason": "CrashLoopBackOff"}},
             "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}
    never = {"name": "nfd-worker", "ready": False, "restartCount": 0,
             "state": {"waiting": {"reason": "ContainerCreating"}}}
    extra = [
        _pod("kube-system", "nvidia-device-plugin-daemonset-7wq4d", "gpu-b", "Running",
             [{"name": "nvidia-device-plugin-ctr",
               "image": "nvcr.io/nvidia/k8s-device-plugin:v0.14.5"}],
             {"name": "nvidia-device-plugin-ds"}, [crash]),
        # a mirrored image: recognised by its chart's name label
        _pod("kube-system", "gpu-feature-discovery-2jz6m", "gpu-b", "Running",
             [{"name": "gpu-feature-discovery", "image": "mirror.example/gfd:v0.14.5"}],
             {"app.kubernetes.io/name": "gpu-feature-discovery"},
             [_running("gpu-feature-discovery")]),
        _pod("monitoring", "dcgm-exporter-q8x7k", "gpu-b", "Running",
             [{"name": "exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:"
               "4.2.3-4.1.3-ubuntu22.04"}],
             {"app.kubernetes.io/name": "dcgm-exporter"}, [_running("exporter")]),
        # never started: no log to ask for
        _pod("nfd", "nfd-worker-5c7dx", "gpu-b", "Pending",
             [{"name": "nfd-worker",
               "image": "registry.k8s.io/nfd/node-feature-discovery:v0.17.3"}], {}, [never]),
        _pod("monitoring", "prometheus-0", "cp-1", "Running",
             [{"name": "prometheus", "image": "quay.io/prometheus/prometheus:v3.1.0"}], {},
             [_running("prometheus")]),
        # GPU workloads: two containers, a second pod, a third beyond --workload-pods 2, one
        # on a node without GPUs (not a GPU node), one not Running (its log is taken anyway)
        _pod("ml", "bert-train-0", "gpu-a", "Running",
             [_gpu("trainer"), {"name": "metrics", "image": "busybox:1.36"}], {},
             [_running("trainer"), _running("metrics")]),
        _pod("ml", "bert-train-1", "gpu-b", "Running", [_gpu("trainer")], {},
             [_running("trainer")]),
        _pod("ml", "llm-serve-0", "gpu-b", "Running", [_gpu("server")], {},
             [_running("server")]),
        _pod("ml", "odd-0", "cp-1", "Running", [_gpu("main")], {}, [_running("main")]),
    ]
    configmaps = json.loads((Path(__file__).parent / "fixtures" / "cluster" /
                             "configmaps.json").read_text())["items"]
    configmaps = configmaps + [
        {"metadata": {"namespace": ns, "name": name}, "data": data}
        for ns, name, data in (
            ("kube-system", "nvidia-device-plugin-configs",
             {"config.yaml": "version: v1\nflags:\n  migStrategy: none\n"}),
            ("monitoring", "dcgm-exporter-metrics", {"dcp-metrics.csv": "DCGM_FI_DEV_GPU_UTIL, "
                                                     "gauge, GPU utilization.\n"}),
            ("ml", "bert-hparams", {"lr": "3e-4"}),
        )
    ]
    return fixture + extra, configmaps


def run_components(kubectl: Path, tmp_path: Path, *args: str,
                   crds: list[dict] | None = None) -> tuple[ApiServer, str, Path]:
    pods, configmaps = component_cluster()
    objects = {"pods": pods, "configmaps": configmaps}
    if crds is not None:
        objects["customresourcedefinitions"] = crds
    with ApiServer(objects=objects, secrets=secrets_list()["items"]) as api:
        api.log_text[f"{STANDALONE_PLUGIN}.previous"] = NVML_LOG
        api.log_text[f"{STANDALONE_PLUGIN}"] = NVML_LOG
        api.log_text["ml/bert-train-0/trainer"] = "".join(
            f"2026-12-01T10:{n // 60:02d}:{n % 60:02d}.000000000Z step {n} loss 0.{n:04d}\n"
            for n in range(500))
        code, stderr, path = run_collector(kubectl, tmp_path, api, *args)
    assert code == 0 and path is not None, stderr
    return api, stderr, path


OLDEST_AND_NEWEST = [pytest.param(k, id=k.name if k.name != "kubectl" else str(k))
                     for k in dict.fromkeys(KUBECTLS[:1] + KUBECTLS[-1:])] or [
    pytest.param(None, id="none")]


@NEEDS
@pytest.mark.parametrize("kubectl", OLDEST_AND_NEWEST)
def test_components_in_any_namespace_workload_tails_and_crds(kubectl: Path,
                                                            tmp_path: Path) -> None:
    api, _stderr, path = run_components(kubectl, tmp_path, "--workload-pods", "2")
    files, manifest, items = bundle_files(path)
    assert {(m, p) for m, p, _query in api.requests if m != "GET"} == {("POST", SSAR_PATH)}
    assert sorted(item["path"] for item in manifest["items"] if item["error"]) == []

    # CRDs by name, whole (the schema is what a CRD-skew rule compares)
    crds = json.loads(files["cluster/crds.json"])
    assert [c["metadata"]["name"] for c in crds["items"]] == [
        "clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"]
    assert crds["items"][0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"] == "object"
    assert items["cluster/crds.json"]["command"][:6] == [
        "kubectl", "get", "customresourcedefinitions", "clusterpolicies.nvidia.com",
        "nvidiadrivers.nvidia.com", "--ignore-not-found"]

    logs = sorted(name for name in files if name.startswith("logs/"))
    assert f"logs/{OPERATOR_POD}/gpu-operator.log" in logs  # the operator namespace, as before
    assert [name for name in logs if not name.startswith(("logs/gpu-operator/",
                                                          "logs/default/"))] == sorted([
        # GPU components elsewhere, Running or not, with the previous run where restarted
        f"logs/{STANDALONE_PLUGIN}.log", f"logs/{STANDALONE_PLUGIN}.previous.log",
        f"logs/{GFD_MIRRORED}.log", f"logs/{MONITORING_DCGM}.log",
        # GPU workloads: the first two pods by name, every running container
        "logs/ml/bert-train-0/trainer.log", "logs/ml/bert-train-0/metrics.log",
        "logs/ml/bert-train-1/trainer.log",
    ])
    assert files[f"logs/{STANDALONE_PLUGIN}.previous.log"].decode() == NVML_LOG

    # workload tails: 200 lines at most, bytes capped, counted in the manifest
    workloads = items["logs/gpu-workloads"]
    assert (workloads["pods_total"], workloads["pods_collected"], workloads["truncated"]) == (
        3, 2, True)
    assert (workloads["log_tail_lines"], workloads["log_limit_bytes"]) == (200, 256 << 10)
    trainer = files["logs/ml/bert-train-0/trainer.log"].decode().splitlines()
    assert len(trainer) == 200 and trainer[-1].endswith("step 499 loss 0.0499")
    assert items["logs/ml/bert-train-0/trainer.log"]["truncated"] is True
    assert items["logs/ml/bert-train-0/trainer.log"]["command"][-2:] == [
        "--tail=200", "--limit-bytes=262144"]
    log_queries = {f"{p.split('/')[4]}/{p.split('/')[6]}/{q['container'][0]}":
                   (q.get("tailLines"), q.get("limitBytes"))
                   for _m, p, q in api.requests if p.endswith("/log") and "previous" not in q}
    assert log_queries["ml/bert-train-1/trainer"] == (["200"], ["262144"])
    assert log_queries[STANDALONE_PLUGIN] == (["5000"], None)
    assert not [key for key in log_queries if key.startswith(("nfd/", "monitoring/prom",
                                                              "ml/llm-serve", "ml/odd"))]

    # ConfigMaps of the operator namespace and of the components' namespaces, in one List
    configmaps = json.loads(files["cluster/configmaps.json"])
    assert sorted((c["metadata"]["namespace"], c["metadata"]["name"])
                  for c in configmaps["items"]) == [
        ("gpu-operator", "kube-root-ca.crt"), ("gpu-operator", "registry-settings"),
        ("gpu-operator", "time-slicing-config"),
        ("kube-system", "nvidia-device-plugin-configs"),
        ("monitoring", "dcgm-exporter-metrics")]
    cm_item = items["cluster/configmaps.json"]
    # (nfd has a component pod that never started, and no ConfigMap; ml has only workloads)
    assert cm_item["namespaces"] == ["gpu-operator", "kube-system", "monitoring", "nfd"]
    assert [c[:5] for c in cm_item["commands"]] == [
        ["kubectl", "get", "configmaps", "-n", ns] for ns in cm_item["namespaces"]]
    assert cm_item["bytes"] == len(files["cluster/configmaps.json"])


@NEEDS
def test_a_standalone_device_plugin_cluster_without_the_operator(tmp_path: Path) -> None:
    """No operator pod, no GPU CRD: an empty crds.json (an answer, not a failure), the
    components' ConfigMaps and logs, and the analyzer reads the standalone plugin's log."""
    assert NEWEST is not None
    pods, _configmaps = component_cluster()
    standalone = [p for p in pods if p["metadata"]["namespace"] not in ("gpu-operator",)]
    objects: dict[str, list[dict]] = {"pods": standalone, "customresourcedefinitions": []}
    with ApiServer(objects=objects) as api:
        api.log_text[f"{STANDALONE_PLUGIN}.previous"] = NVML_LOG
        api.log_text[STANDALONE_PLUGIN] = NVML_LOG
        code, stderr, path = run_collector(NEWEST, tmp_path, api)
    assert code == 0 and path is not None, stderr
    files, manifest, items = bundle_files(path)
    assert manifest["operator_namespace"] is None
    assert json.loads(files["cluster/crds.json"])["items"] == []
    assert items["cluster/crds.json"]["error"] is None
    failed = sorted(item["path"] for item in manifest["items"] if item["error"])
    assert failed == ["cluster/helm"]  # there is no operator namespace to read Helm from
    assert items["cluster/configmaps.json"]["namespaces"] == ["kube-system", "monitoring", "nfd"]
    assert files[f"logs/{STANDALONE_PLUGIN}.log"].decode() == NVML_LOG

    with open_bundle(path) as bundle:
        report = analyze(bundle, discover().rules)
    op008 = {f.id: f for f in report.findings if f.rule_id == "OP008"}
    # gpu-b runs the standalone plugin; its NVML failure is read from kube-system's log
    evidence = [(e.path, e.line, e.excerpt) for e in op008["OP008:gpu-b"].evidence]
    assert op008["OP008:gpu-b"].summary.startswith(
        "On gpu-b, the device plugin nvidia-device-plugin-daemonset-7wq4d (CrashLoopBackOff): "
        "it cannot load NVML (libnvidia-ml.so.1)")
    plugin_log = f"logs/{STANDALONE_PLUGIN}.log"
    lines = NVML_LOG.splitlines()
    assert [(path, line, text) for path, line, text in evidence if path == plugin_log] == [
        (plugin_log, 1, lines[0]), (plugin_log, 2, lines[1])]


@NEEDS
def test_one_gpu_crd_of_two_and_no_workload_tails(tmp_path: Path) -> None:
    """An absent CRD is left out of the List, not a failed step; --workload-pods 0 takes no
    workload log and writes no logs/gpu-workloads item."""
    assert NEWEST is not None
    crds = json.loads((Path(__file__).parent / "fixtures" / "cluster" /
                       "customresourcedefinitions.json").read_text())["items"]
    _api, _stderr, path = run_components(NEWEST, tmp_path, "--workload-pods", "0",
                                         crds=crds[:1])
    files, manifest, items = bundle_files(path)
    listed = json.loads(files["cluster/crds.json"])
    assert [c["metadata"]["name"] for c in listed["items"]] == ["clusterpolicies.nvidia.com"]
    assert listed["items"][0]["apiVersion"] == "apiextensions.k8s.io/v1"
    assert items["cluster/crds.json"]["error"] is None
    assert "logs/gpu-workloads" not in items
    assert not [name for name in files if name.startswith("logs/ml/")]
    assert manifest["options"]["workload_pods"] == 0
