"""Real kubectl binaries against ``gpu-triage serve``: three versions spread over what
this machine has (the Cloud SDK ships kubectl 1.27 ... 1.33; else the kubectl on PATH;
``GPU_TRIAGE_TEST_KUBECTLS`` chooses others). Each runs ``get`` of every served kind,
``-o wide``, ``-o json`` and ``-o yaml`` (equal to the bundle's objects), ``describe
node``, ``describe pod``, ``logs`` with ``--previous``, ``--tail`` and ``-c``, ``get
events --field-selector``, ``get --raw`` of a node file, and writes that must be refused;
and a kubeconfig with another token is refused."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import serve_kit
import yaml
from kubectl_kit import kubectl_binaries
from serve_kit import CONTAINER, NODE, POD, POD_NS

from bundle import open_bundle
from gpu_triage.serve.session import Session


def _spread(found: list[Path]) -> list[Path]:
    return found if len(found) <= 3 else [found[0], found[len(found) // 2], found[-1]]


KUBECTLS = _spread(kubectl_binaries())
pytestmark = pytest.mark.skipif(not KUBECTLS, reason="needs a kubectl binary (Cloud SDK "
                                "kubectl.1.*, or Debian's kubectl / kubernetes-client)")
VERSIONS = [pytest.param(k, id=k.name) for k in KUBECTLS] or [pytest.param(None, id="none")]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return serve_kit.build(tmp_path_factory.mktemp("serve-kubectl"))


class Served:
    def __init__(self, session: Session, kubeconfig: Path) -> None:
        self.session = session
        self.kubeconfig = kubeconfig
        self.requests: list[tuple[str, str, str]] = []
        answer = session.server.api.answer

        def recorded(method: str, target: str, accept: str, body: bytes = b"") -> Any:
            self.requests.append((method, target, accept))
            return answer(method, target, accept, body)

        session.server.api.answer = recorded  # type: ignore[method-assign]


@pytest.fixture(scope="module")
def served(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with open_bundle(bundle) as opened, Session(opened) as session:
        yield Served(session, session.write_kubeconfig(
            tmp_path_factory.mktemp("kubeconfig") / "config"))


def kubectl(binary: Path, served: Served, tmp: Path, *args: str,
            kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    home = tmp / "home"  # no discovery cache shared between versions or tests
    home.mkdir(exist_ok=True)
    return subprocess.run([str(binary), "--kubeconfig", str(kubeconfig or served.kubeconfig),
                           "--cache-dir", str(tmp / "cache"), *args], capture_output=True,
                          text=True, timeout=60, env={"HOME": str(home), "PATH": "/usr/bin:/bin"})


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def table(text: str) -> tuple[list[str], list[list[str]]]:
    rows = [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line.strip()]
    return rows[0], rows[1:]


# kind, namespaced, bundle file, the header kubectl prints
GETS = [("nodes", False, "nodes.json", ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]),
        ("namespaces", False, "namespaces.json", ["NAME", "STATUS", "AGE"]),
        ("pods", True, "pods.json", ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]),
        ("configmaps", True, "configmaps.json", ["NAMESPACE", "NAME", "DATA", "AGE"]),
        ("resourcequotas", True, "resourcequotas.json",
         ["NAMESPACE", "NAME", "AGE", "REQUEST", "LIMIT"]),
        ("daemonsets.apps", True, "daemonsets.json",
         ["NAMESPACE", "NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE",
          "NODE SELECTOR", "AGE"]),
        ("deployments.apps", True, "deployments.json",
         ["NAMESPACE", "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]),
        ("runtimeclasses", False, "runtimeclasses.json", ["NAME", "HANDLER", "AGE"]),
        ("customresourcedefinitions", False, "crds.json", ["NAME", "CREATED AT"]),
        ("clusterpolicies.nvidia.com", False, "clusterpolicies.json", ["NAME", "STATUS", "AGE"])]


@pytest.mark.parametrize("binary", VERSIONS)
def test_get_every_served_kind(binary: Path, served: Served, bundle: Path,
                               tmp_path: Path) -> None:
    for kind, namespaced, file, header in GETS:
        out = ok(kubectl(binary, served, tmp_path, "get", kind, *(["-A"] if namespaced else [])))
        columns, rows = table(out)
        assert columns == header, kind
        expected = [(o["metadata"].get("namespace"), o["metadata"]["name"])
                    for o in serve_kit.objects(bundle, file)]
        assert [((r[0], r[1]) if namespaced else (None, r[0])) for r in rows] == expected, kind
    # events: one row per event, the kubelet's on the node among them
    columns, rows = table(ok(kubectl(binary, served, tmp_path, "get", "events", "-A")))
    assert columns[:5] == ["NAMESPACE", "LAST SEEN", "TYPE", "REASON", "OBJECT"]
    assert len(rows) == len(serve_kit.objects(bundle, "events.json"))
    assert ["default", "8h", "Normal", "Starting", f"node/{NODE}", "Starting kubelet."] in rows
    empty = kubectl(binary, served, tmp_path, "get", "nvidiadrivers")
    assert empty.returncode == 0 and "No resources found" in empty.stderr


@pytest.mark.parametrize("binary", VERSIONS)
def test_wide_json_and_yaml(binary: Path, served: Served, bundle: Path, tmp_path: Path) -> None:
    columns, rows = table(ok(kubectl(binary, served, tmp_path, "get", "pods", "-n", POD_NS,
                                     "-o", "wide")))
    assert columns == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                       "NOMINATED NODE", "READINESS GATES"]
    assert [POD, "0/1", "CrashLoopBackOff", "80 (95s ago)", "7h6m", "10.244.2.6", NODE,
            "<none>", "<none>"] in rows
    columns, rows = table(ok(kubectl(binary, served, tmp_path, "get", "nodes", "-o", "wide")))
    assert columns[5:] == ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION",
                           "CONTAINER-RUNTIME"]
    pod = next(p for p in serve_kit.objects(bundle, "pods.json") if p["metadata"]["name"] == POD)
    assert json.loads(ok(kubectl(binary, served, tmp_path, "get", "pod", "-n", POD_NS, POD,
                                 "-o", "json"))) == pod
    assert yaml.safe_load(ok(kubectl(binary, served, tmp_path, "get", "pod", "-n", POD_NS, POD,
                                     "-o", "yaml"))) == pod
    nodes = json.loads(ok(kubectl(binary, served, tmp_path, "get", "nodes", "-o", "json")))
    assert nodes["items"] == serve_kit.objects(bundle, "nodes.json")
    _, rows = table(ok(kubectl(binary, served, tmp_path, "get", "ds", "-n", POD_NS, "-o",
                               "wide")))
    dcgm = next(r for r in rows if r[0] == "nvidia-dcgm-exporter")
    assert dcgm[:6] == ["nvidia-dcgm-exporter", "2", "2", "1", "2", "1"]
    found = ok(kubectl(binary, served, tmp_path, "get", "pods", "-A", "-l",
                       "app=nvidia-dcgm-exporter", "-o", "name"))
    assert found.split() == ["pod/nvidia-dcgm-exporter-9pm9d", "pod/nvidia-dcgm-exporter-w56fw"]


@pytest.mark.parametrize("binary", VERSIONS)
def test_describe_node_and_pod(binary: Path, served: Served, tmp_path: Path) -> None:
    node = ok(kubectl(binary, served, tmp_path, "describe", "node", NODE))
    assert re.search(rf"^Name:\s+{NODE}$", node, re.M)
    assert re.search(rf"^\s+{POD_NS}\s+{POD}\s", node, re.M)  # its non-terminated pods
    assert re.search(r"Normal\s+Starting\s+.*kubelet\s+Starting kubelet\.", node)
    pod = ok(kubectl(binary, served, tmp_path, "describe", "pod", "-n", POD_NS, POD))
    assert re.search(r"State:\s+Waiting\n\s+Reason:\s+CrashLoopBackOff", pod)
    assert re.search(r"Restart Count:\s+80", pod)
    assert "Back-off restarting failed container nvidia-dcgm-exporter" in pod


@pytest.mark.parametrize("binary", VERSIONS)
def test_logs(binary: Path, served: Served, bundle: Path, tmp_path: Path) -> None:
    folder = bundle / "logs" / POD_NS / POD
    current = [line.split(" ", 1)[1] for line in
               (folder / f"{CONTAINER}.log").read_text().splitlines()]
    previous = (folder / f"{CONTAINER}.previous.log").read_text().splitlines()
    assert ok(kubectl(binary, served, tmp_path, "logs", "-n", POD_NS, POD, "-c", CONTAINER)) \
        .splitlines() == current
    assert ok(kubectl(binary, served, tmp_path, "logs", "-n", POD_NS, POD, "--tail", "2")) \
        .splitlines() == current[-2:]
    assert ok(kubectl(binary, served, tmp_path, "logs", "-n", POD_NS, POD, "--previous",
                      "--tail=3", "--timestamps", "-c", CONTAINER)).splitlines() == previous[-3:]
    missing = kubectl(binary, served, tmp_path, "logs", "-n", POD_NS, POD, "--previous", "-c",
                      "toolkit-validation")
    assert missing.returncode == 1
    assert "the bundle did not collect the previous log of container" in missing.stderr


@pytest.mark.parametrize("binary", VERSIONS)
def test_events_by_field_selector_and_raw_node_files(binary: Path, served: Served,
                                                     bundle: Path, tmp_path: Path) -> None:
    columns, rows = table(ok(kubectl(binary, served, tmp_path, "get", "events", "-n", POD_NS,
                                     "--field-selector", f"involvedObject.name={POD}")))
    assert [r[2] for r in rows] == ["Pulled", "Created", "Started", "BackOff"]
    assert {r[3] for r in rows} == {f"pod/{POD}"}
    _, rows = table(ok(kubectl(binary, served, tmp_path, "get", "events", "-A",
                               "--field-selector", "involvedObject.kind=Node,type=Normal")))
    assert [r[4] for r in rows] == [f"node/{NODE}"]
    raw = ok(kubectl(binary, served, tmp_path, "get", "--raw",
                     f"/gpu-triage/v1/nodes/{NODE}/dmesg.txt"))
    assert raw == (bundle / "nodes" / NODE / "dmesg.txt").read_text()


@pytest.mark.parametrize("binary", VERSIONS)
def test_writes_are_refused(binary: Path, served: Served, tmp_path: Path) -> None:
    served.requests.clear()
    for args in (("delete", "pod", "-n", POD_NS, POD),
                 ("label", "node", NODE, "triaged=yes"),
                 ("create", "configmap", "triage", "--from-literal=a=b")):
        refused = kubectl(binary, served, tmp_path, *args)
        assert refused.returncode == 1, args
        assert "gpu-triage serve is read-only: " in refused.stderr, args
    refused = kubectl(binary, served, tmp_path, "exec", "-n", POD_NS, POD, "--", "true")
    assert refused.returncode == 1 and "exec is not served by gpu-triage serve" in refused.stderr
    assert {m for m, _, _ in served.requests} >= {"DELETE", "PATCH", "POST"}
    # the objects are as they were
    assert ok(kubectl(binary, served, tmp_path, "get", "pod", "-n", POD_NS, POD, "-o", "name"))\
        .strip() == f"pod/{POD}"


@pytest.mark.parametrize("binary", VERSIONS)
def test_auth_can_i_says_read_only(binary: Path, served: Served, tmp_path: Path) -> None:
    assert ok(kubectl(binary, served, tmp_path, "auth", "can-i", "list", "pods", "-A")) == \
        "yes\n"
    assert ok(kubectl(binary, served, tmp_path, "auth", "can-i", "get", "pods/log", "-n",
                      POD_NS)) == "yes\n"
    for args, why in ((("delete", "pods"), "is read-only"),
                      (("create", "deployments.apps"), "is read-only"),
                      (("create", "pods/exec"), "is read-only"),
                      (("get", "secrets"), "does not answer for this resource")):
        denied = kubectl(binary, served, tmp_path, "auth", "can-i", *args)
        assert (denied.returncode, denied.stdout) == (1, f"no - gpu-triage serve {why}\n"), args


@pytest.mark.parametrize("binary", VERSIONS)
def test_discovery_is_aggregated_where_kubectl_asks(binary: Path, served: Served,
                                                    tmp_path: Path) -> None:
    served.requests.clear()
    ok(kubectl(binary, served, tmp_path, "get", "ds", "-A"))
    discovery = [(target.split("?")[0], accept) for _, target, accept in served.requests
                 if target.split("?")[0] in ("/api", "/apis", "/api/v1", "/apis/apps/v1")]
    assert [target for target, _ in discovery] == ["/api", "/apis"]  # no per-group fetches
    assert all("as=APIGroupDiscoveryList" in accept for _, accept in discovery)


@pytest.mark.parametrize("binary", VERSIONS)
def test_another_token_is_refused(binary: Path, served: Served, tmp_path: Path) -> None:
    other = tmp_path / "other-token"
    other.write_text(served.session.kubeconfig(token="not-the-token"))
    refused = kubectl(binary, served, tmp_path, "get", "pods", "-A", kubeconfig=other)
    assert refused.returncode == 1
    assert "error: You must be logged in to the server" in refused.stderr
    assert POD not in refused.stdout
