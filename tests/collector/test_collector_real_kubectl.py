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
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from apiserver import IDENTITY, ApiServer, have_openssl
from collector_support import COLLECT_PY, by_path, read_bundle, secrets_list

from analyzers.engine import analyze
from analyzers.plugins import discover
from bundle import open_bundle
from collectors.collect import Bundle, dump_json, error_kind, error_tail

CLOUD_SDK_BIN = Path("/usr/lib/google-cloud-sdk/bin")


def _version(path: Path) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", path.name.split("kubectl")[-1]))


def kubectl_binaries() -> list[Path]:
    """GPU_TRIAGE_TEST_KUBECTLS (paths joined by ':') if set; else the Cloud SDK's versioned
    kubectl binaries; else the kubectl on PATH (Debian's kubernetes-client, say)."""
    chosen = os.environ.get("GPU_TRIAGE_TEST_KUBECTLS")
    if chosen:
        return [Path(p) for p in chosen.split(os.pathsep) if p]
    versioned = sorted(CLOUD_SDK_BIN.glob("kubectl.1.*"), key=_version)
    if versioned:
        return versioned
    plain = shutil.which("kubectl")
    return [Path(plain)] if plain else []


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
                  token: str | None = None, url: str | None = None) -> tuple[int, str, Path | None]:
    """Run collect.py (a subprocess, as a customer would) with `kubectl` first on PATH."""
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
           "KUBECONFIG": str(config), "LANG": "C.UTF-8"}
    proc = subprocess.run([sys.executable, str(COLLECT_PY), "-o", str(out), "--node-mode",
                           "none", "--step-timeout", "60", *args],
                          env=env, capture_output=True, timeout=300)
    made = sorted(out.glob("*.tgz"))
    return proc.returncode, proc.stderr.decode("utf-8", "replace"), made[0] if made else None


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
        methods = {method for method, _path, _query in api.requests}
    assert code == 0 and path is not None, stderr
    assert methods == {"GET"}  # read-only, as the server saw it
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
