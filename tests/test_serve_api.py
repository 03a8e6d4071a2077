"""``gpu-triage serve`` answers as the Kubernetes API would, over HTTPS, for the bundle
of tests/serve_kit.py: discovery in both forms, lists equal to the bundle's, selectors,
server-side tables, logs, node files, 404s that name what was not collected, 405s for
every write; and the hostile cases: traversal, links, escape sequences."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import serve_kit
from serve_kit import CONTAINER, INIT, NODE, POD, POD_NS, Client

from bundle import open_bundle
from gpu_triage.serve.session import Session

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;" \
        "g=meta.k8s.io,application/json"
V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;" \
     "g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList," \
          "application/json"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return serve_kit.build(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def client(bundle: Path) -> Iterator[Client]:
    with open_bundle(bundle) as opened, Session(opened) as session:
        yield Client(session.url, session.ca_pem, session.token)


def names(listed: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in listed["items"]]


# -- discovery ------------------------------------------------------------------------

def test_legacy_discovery(client: Client) -> None:
    assert client.json("/api") == (200, {"kind": "APIVersions", "versions": ["v1"],
                                         "serverAddressByClientCIDRs": []})
    code, groups = client.json("/apis")
    assert code == 200
    assert [(g["name"], [v["version"] for v in g["versions"]]) for g in groups["groups"]] == [
        ("apps", ["v1"]), ("node.k8s.io", ["v1"]), ("apiextensions.k8s.io", ["v1"]),
        ("nvidia.com", ["v1", "v1alpha1"])]
    code, core = client.json("/api/v1")
    assert [r["name"] for r in core["resources"]] == [
        "nodes", "namespaces", "pods", "pods/log", "events", "configmaps", "resourcequotas"]
    assert {r["name"]: r["verbs"] for r in core["resources"]}["pods"] == ["get", "list"]
    code, nvidia = client.json("/apis/nvidia.com/v1alpha1")
    assert [(r["name"], r["kind"], r["namespaced"]) for r in nvidia["resources"]] == [
        ("nvidiadrivers", "NVIDIADriver", False)]
    assert client.json("/apis/batch/v1")[0] == 404


@pytest.mark.parametrize(("accept", "version"), [(V2, "v2"), (V2BETA1, "v2beta1")])
def test_aggregated_discovery_when_asked(client: Client, accept: str, version: str) -> None:
    code, content_type, body = client.request("GET", "/apis", accept)
    assert code == 200
    assert content_type == (f"application/json;g=apidiscovery.k8s.io;v={version};"
                            "as=APIGroupDiscoveryList")
    found = json.loads(body)
    assert found["apiVersion"] == f"apidiscovery.k8s.io/{version}"
    nvidia = next(g for g in found["items"] if g["metadata"]["name"] == "nvidia.com")
    policies = nvidia["versions"][0]["resources"][0]
    assert policies == {"resource": "clusterpolicies", "responseKind": {
        "group": "nvidia.com", "version": "v1", "kind": "ClusterPolicy"}, "scope": "Cluster",
        "singularResource": "clusterpolicy", "verbs": ["get", "list"]}
    code, _, body = client.request("GET", "/api", accept)
    core = json.loads(body)["items"]
    assert [g["metadata"] for g in core] == [{}]
    pods = next(r for r in core[0]["versions"][0]["resources"] if r["resource"] == "pods")
    assert pods["subresources"] == [{"subresource": "log", "responseKind": {
        "group": "", "version": "v1", "kind": "Pod"}, "verbs": ["get"]}]
    assert pods["shortNames"] == ["po"] and pods["scope"] == "Namespaced"


# -- objects --------------------------------------------------------------------------

KINDS = [("/api/v1/nodes", "nodes.json"), ("/api/v1/namespaces", "namespaces.json"),
         ("/api/v1/pods", "pods.json"), ("/api/v1/events", "events.json"),
         ("/api/v1/configmaps", "configmaps.json"),
         ("/api/v1/resourcequotas", "resourcequotas.json"),
         ("/apis/apps/v1/daemonsets", "daemonsets.json"),
         ("/apis/apps/v1/deployments", "deployments.json"),
         ("/apis/node.k8s.io/v1/runtimeclasses", "runtimeclasses.json"),
         ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "crds.json"),
         ("/apis/nvidia.com/v1/clusterpolicies", "clusterpolicies.json"),
         ("/apis/nvidia.com/v1alpha1/nvidiadrivers", "nvidiadrivers.json")]


@pytest.mark.parametrize(("path", "file"), KINDS)
def test_lists_equal_the_bundle(client: Client, bundle: Path, path: str, file: str) -> None:
    code, listed = client.json(path)
    assert code == 200
    expected = serve_kit.objects(bundle, file)
    kind = listed["kind"].removesuffix("List")
    assert listed["items"] == [{"kind": kind, **item} if "kind" not in item else item
                               for item in expected]


def test_one_object_and_namespaces(client: Client, bundle: Path) -> None:
    pod = next(p for p in serve_kit.objects(bundle, "pods.json")
               if p["metadata"]["name"] == POD)
    assert client.json(f"/api/v1/namespaces/{POD_NS}/pods/{POD}") == (200, pod)
    code, found = client.json(f"/api/v1/namespaces/default/pods/{POD}")
    assert code == 404 and found["reason"] == "NotFound"
    assert found["message"] == (f'pods "{POD}" not found: the bundle did not collect it in '
                                'namespace "default"')
    code, in_default = client.json("/api/v1/namespaces/default/events")
    assert names(in_default) == [serve_kit.NODE_EVENT["metadata"]["name"]]
    assert client.json(f"/api/v1/namespaces/{POD_NS}")[1]["metadata"]["name"] == POD_NS
    # a cluster-scoped kind has no namespaced path
    assert client.json(f"/api/v1/namespaces/{POD_NS}/nodes")[0] == 404


def test_label_selectors(client: Client) -> None:
    dcgm = ["nvidia-dcgm-exporter-9pm9d", "nvidia-dcgm-exporter-w56fw"]
    for selector in ("app=nvidia-dcgm-exporter", "app==nvidia-dcgm-exporter",
                     "app in (nvidia-dcgm-exporter,nothing)",
                     "app=nvidia-dcgm-exporter,controller-revision-hash"):
        assert names(client.json(f"/api/v1/pods?labelSelector={selector}")[1]) == dcgm
    everything = names(client.json("/api/v1/pods")[1])
    others = names(client.json("/api/v1/pods?labelSelector=app!=nvidia-dcgm-exporter")[1])
    assert others == [n for n in everything if n not in dcgm] and others
    assert names(client.json("/api/v1/pods?labelSelector=app notin (nvidia-dcgm-exporter)")[
        1]) == others
    assert names(client.json("/api/v1/pods?labelSelector=!app")[1]) == [
        n for n in everything if n not in dcgm and n not in names(
            client.json("/api/v1/pods?labelSelector=app")[1])]
    code, bad = client.json("/api/v1/pods?labelSelector=app in nvidia")
    assert code == 400 and "unable to parse requirement" in bad["message"]


def test_field_selectors(client: Client) -> None:
    on_node = names(client.json(f"/api/v1/pods?fieldSelector=spec.nodeName={NODE}")[1])
    assert POD in on_node and "nvidia-dcgm-exporter-w56fw" not in on_node
    running = names(client.json(f"/api/v1/pods?fieldSelector=spec.nodeName={NODE},"
                                "status.phase!=Running")[1])
    assert running == []
    assert names(client.json(f"/api/v1/pods?fieldSelector=metadata.name={POD}")[1]) == [POD]
    events = client.json(f"/api/v1/events?fieldSelector=involvedObject.name={POD},"
                         "involvedObject.kind=Pod")[1]["items"]
    assert [e["reason"] for e in events] == ["Pulled", "Created", "Started", "BackOff"]
    # kubectl describe node: the node's own events, involvedObject.namespace empty
    node = client.json(f"/api/v1/events?fieldSelector=involvedObject.name={NODE},"
                       f"involvedObject.namespace=,involvedObject.kind=Node,"
                       f"involvedObject.uid={NODE}")[1]
    assert [e["reason"] for e in node["items"]] == ["Starting"]
    assert client.json(f"/api/v1/events?fieldSelector=metadata.namespace={POD_NS}")[1][
        "items"] == client.json(f"/api/v1/namespaces/{POD_NS}/events")[1]["items"]
    code, bad = client.json("/api/v1/pods?fieldSelector=spec.hostname=x")
    assert (code, bad["message"]) == (400, "field label not supported: spec.hostname")


# -- tables ---------------------------------------------------------------------------

def cells(client: Client, path: str) -> tuple[list[str], dict[str, list[Any]]]:
    code, found = client.json(path, TABLE)
    assert code == 200 and found["kind"] == "Table"
    return ([c["name"] for c in found["columnDefinitions"]],
            {row["object"]["metadata"]["name"]: row["cells"] for row in found["rows"]})


def test_tables_print_the_usual_columns(client: Client) -> None:
    columns, rows = cells(client, f"/api/v1/namespaces/{POD_NS}/pods")
    assert columns == ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node",
                       "Nominated Node", "Readiness Gates"]
    # collected at 09:15:00, last restart finished at 09:13:25
    assert rows[POD] == [POD, "0/1", "CrashLoopBackOff", "80 (95s ago)", "7h6m", "10.244.2.6",
                         NODE, "<none>", "<none>"]
    assert rows["nvidia-dcgm-exporter-w56fw"][1:4] == ["1/1", "Running", "0"]
    columns, rows = cells(client, "/api/v1/nodes")
    assert columns[:5] == ["Name", "Status", "Roles", "Age", "Version"]
    assert rows["cp-1"][1:3] == ["Ready", "control-plane"] and rows[NODE][2] == "<none>"
    columns, rows = cells(client, "/apis/nvidia.com/v1/clusterpolicies")
    assert columns == ["Name", "Status", "Age"]  # the CRD's printer columns
    columns, rows = cells(client, "/api/v1/resourcequotas")
    assert rows["gpu-quota"][2:] == ["requests.nvidia.com/gpu: 1/4", ""]
    columns, rows = cells(client, "/apis/nvidia.com/v1alpha1/nvidiadrivers")
    assert columns == ["Name", "Age"] and rows == {}
    columns, rows = cells(client, f"/api/v1/namespaces/{POD_NS}/events")
    assert columns[:4] == ["Last Seen", "Type", "Reason", "Object"]
    backoff = next(r for r in rows.values() if r[2] == "BackOff")
    assert backoff[3] == f"pod/{POD}" and backoff[5] == f"kubelet, {NODE}"


def test_table_rows_carry_metadata_object_or_nothing(client: Client) -> None:
    path = f"/api/v1/namespaces/{POD_NS}/pods/{POD}"
    row = client.json(path, TABLE)[1]["rows"][0]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["uid"] == "697e9cea-1e33-5fc1-8de8-337a83bc9936"
    assert client.json(path + "?includeObject=Object", TABLE)[1]["rows"][0]["object"] == \
        client.json(path)[1]
    assert "object" not in client.json(path + "?includeObject=None", TABLE)[1]["rows"][0]


# -- logs -----------------------------------------------------------------------------

def log(client: Client, query: str) -> tuple[int, str]:
    code, _, body = client.request("GET", f"/api/v1/namespaces/{POD_NS}/pods/{POD}/log?{query}")
    return code, body.decode()


def test_logs(client: Client, bundle: Path) -> None:
    folder = bundle / "logs" / POD_NS / POD
    current = (folder / f"{CONTAINER}.log").read_text().splitlines(keepends=True)
    previous = (folder / f"{CONTAINER}.previous.log").read_text().splitlines(keepends=True)
    assert log(client, f"container={CONTAINER}&timestamps=true") == (200, "".join(current))
    assert log(client, f"container={CONTAINER}&previous=true&tailLines=2&timestamps=true") == (
        200, "".join(previous[-2:]))
    code, text = log(client, f"container={CONTAINER}&tailLines=1")
    assert text == current[-1].split(" ", 1)[1]  # the collector's timestamp taken off
    assert log(client, "tailLines=1") == (code, text)  # the one container by default
    assert len(current) == 6
    assert log(client, f"container={CONTAINER}&limitBytes=10")[1] == current[0].split(" ", 1)[
        1][:10]
    last = current[-1].split(" ", 1)[0]
    assert log(client, f"container={CONTAINER}&sinceTime={last}")[1] == text


def test_log_refusals_say_why(client: Client) -> None:
    code, text = log(client, "container=nope")
    assert code == 400
    assert json.loads(text)["message"] == f"container nope is not valid for pod {POD}"
    code, text = log(client, f"container={INIT}&previous=true")
    assert code == 404 and json.loads(text)["message"] == (
        f'the bundle did not collect the previous log of container "{INIT}" in pod "{POD}" '
        f'(namespace "{POD_NS}")')
    assert log(client, f"container={CONTAINER}&tailLines=x")[0] == 400


def test_escape_sequences_in_a_log_are_made_inert(client: Client) -> None:
    code, text = log(client, f"container={INIT}")
    assert code == 200
    assert text == "clipboard  colour red end\n"
    assert "\x1b" not in log(client, f"container={INIT}&timestamps=true")[1]


# -- node files -----------------------------------------------------------------------

def test_node_files(client: Client, bundle: Path) -> None:
    code, listing = client.json(f"/gpu-triage/v1/nodes/{NODE}")
    assert code == 200 and "dmesg.txt" in listing["files"]
    assert "host/passwd" not in listing["files"]  # the link was refused by the reader
    assert client.json("/gpu-triage/v1/nodes")[1] == {"nodes": ["gpu-1", NODE]}
    code, _, body = client.request("GET", f"/gpu-triage/v1/nodes/{NODE}/dmesg.txt", "*/*")
    assert (code, body) == (200, (bundle / "nodes" / NODE / "dmesg.txt").read_bytes())
    code, _, body = client.request("GET", f"/gpu-triage/v1/nodes/{NODE}/journal/kubelet.jsonl")
    assert body == (bundle / "nodes" / NODE / "journal" / "kubelet.jsonl").read_bytes()


@pytest.mark.parametrize("path", [
    f"/gpu-triage/v1/nodes/{NODE}/../../manifest.json",
    f"/gpu-triage/v1/nodes/{NODE}/%2e%2e/%2e%2e/manifest.json",
    f"/gpu-triage/v1/nodes/{NODE}/%2E%2E%2F%2E%2E%2Fmanifest.json",
    f"/gpu-triage/v1/nodes/{NODE}/host/..%2f..%2f..%2fmanifest.json",
    f"/gpu-triage/v1/nodes/{NODE}//etc/passwd",
    "/gpu-triage/v1/nodes/%2fetc/passwd",
    f"/gpu-triage/v1/nodes/{NODE}/host/%ff",
])
def test_traversal_is_refused(client: Client, path: str) -> None:
    code, _, body = client.request("GET", path)
    assert code == 400
    assert json.loads(body)["message"].startswith("the request path is not a clean path")


@pytest.mark.parametrize("path", [
    f"/gpu-triage/v1/nodes/{NODE}/host/passwd",  # a link in the bundle: refused when read
    f"/gpu-triage/v1/nodes/{NODE}/%252e%252e/manifest.json",  # decoded once: a plain name
    "/gpu-triage/v1/nodes/etc/passwd",
    f"/gpu-triage/v1/nodes/{NODE}/manifest.json",
])
def test_nothing_outside_a_node_is_served(client: Client, path: str) -> None:
    code, _, body = client.request("GET", path)
    assert code == 404 and json.loads(body)["reason"] == "NotFound"
    assert b"root:" not in body


# -- what is not there, and what is never done ----------------------------------------

def test_what_the_bundle_lacks_is_a_404_naming_it(tmp_path: Path) -> None:
    sample = serve_kit.SAMPLE.parent / "incident-toolkit-disabled"
    with open_bundle(sample) as opened, Session(opened) as session:
        client = Client(session.url, session.ca_pem, session.token)
        code, found = client.json("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        assert code == 404 and found["reason"] == "NotFound"
        assert found["message"] == (
            "the bundle did not collect customresourcedefinitions.apiextensions.k8s.io "
            f"(cluster/crds.json is not in gpu-triage v1 bundle {sample})")
        assert client.json("/api/v1/pods")[0] == 200
        assert client.json("/api/v1/secrets")[0] == 404


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_every_write_is_refused(client: Client, method: str) -> None:
    code, _, body = client.request(method, f"/api/v1/namespaces/{POD_NS}/pods/{POD}")
    status = json.loads(body)
    assert (code, status["reason"], status["kind"]) == (405, "MethodNotAllowed", "Status")
    assert status["message"].startswith("gpu-triage serve is read-only")


@pytest.mark.parametrize(("method", "path"), [
    ("POST", f"/api/v1/namespaces/{POD_NS}/pods/{POD}/exec?command=sh"),
    ("GET", f"/api/v1/namespaces/{POD_NS}/pods/{POD}/exec?command=sh"),
    ("POST", f"/api/v1/namespaces/{POD_NS}/pods/{POD}/attach"),
    ("POST", f"/api/v1/namespaces/{POD_NS}/pods/{POD}/portforward"),
    ("GET", f"/api/v1/namespaces/{POD_NS}/pods/{POD}/proxy/metrics"),
    ("GET", f"/api/v1/nodes/{NODE}/proxy/logs/"),
])
def test_exec_attach_portforward_proxy_are_refused(client: Client, method: str,
                                                   path: str) -> None:
    code, _, body = client.request(method, path)
    assert code == 405
    assert "is not served by gpu-triage serve" in json.loads(body)["message"]


def test_watch_is_refused(client: Client) -> None:
    code, status = client.json("/api/v1/pods?watch=true")
    assert code == 405 and status["message"].startswith("watch is not served")


@pytest.mark.parametrize("layout", ["must-gather", "troubleshoot"])
def test_foreign_layouts_are_served(tmp_path: Path, layout: str) -> None:
    import layouts_kit

    if layout == "must-gather":
        root = layouts_kit.write(tmp_path / "mg", layouts_kit.must_gather_files())
        pod, container = "nvidia-device-plugin-daemonset-x7k2p", "nvidia-device-plugin"
    else:
        root = layouts_kit.tar(tmp_path / "sb.tar.gz", "support-bundle",
                               layouts_kit.troubleshoot_files())
        pod, container = "nvidia-device-plugin-daemonset-x7k2p", "nvidia-device-plugin"
    with open_bundle(root) as opened, Session(opened) as session:
        client = Client(session.url, session.ca_pem, session.token)
        listed = client.json("/api/v1/namespaces/gpu-operator/pods")[1]
        assert pod in names(listed)
        code, _, body = client.request(
            "GET", f"/api/v1/namespaces/gpu-operator/pods/{pod}/log?container={container}")
        assert code == 200 and b"Registered device plugin" in body
        policies = client.json("/apis/nvidia.com/v1/clusterpolicies")[1]
        assert names(policies) == ["cluster-policy"]
        assert policies["items"][0]["status"] == {"state": "notReady"}


def test_namespaced_paths_of_a_group(client: Client, bundle: Path) -> None:
    listed = client.json(f"/apis/apps/v1/namespaces/{POD_NS}/daemonsets")[1]
    assert names(listed) == [d["metadata"]["name"] for d in serve_kit.objects(
        bundle, "daemonsets.json") if d["metadata"]["namespace"] == POD_NS]
    assert client.json(f"/apis/apps/v1/namespaces/{POD_NS}/daemonsets/nvidia-dcgm-exporter")[
        1]["kind"] == "DaemonSet"


def test_replicasets_are_empty_with_a_warning(client: Client) -> None:
    connection = client.connect()
    connection.request("GET", f"/apis/apps/v1/namespaces/{POD_NS}/replicasets",
                       headers={"Authorization": f"Bearer {client.token}"})
    response = connection.getresponse()
    assert json.loads(response.read())["items"] == []
    assert response.getheader("Warning") == ('299 - "gpu-triage bundles do not collect '
                                             'replicasets.apps: this list is empty"')
    connection.close()
    code, found = client.json(f"/apis/apps/v1/namespaces/{POD_NS}/replicasets/gpu-operator-1")
    assert code == 404 and found["message"].endswith("gpu-triage bundles do not collect "
                                                     "replicasets.apps")


@pytest.mark.parametrize(("body", "code", "allowed"), [
    (b'{"spec": {"resourceAttributes": {"verb": "list", "resource": "pods"}}}', 201, True),
    (b'{"spec": {"resourceAttributes": {"verb": "patch", "resource": "nodes"}}}', 201, False),
    (b'{"spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}}', 400, None),
    (b"k8s\x00\x12\xff\xff\xff\xff\x0f", 400, None),  # a length past the end
    (b"k8s\x00" + b"\x80" * 20, 400, None),  # a varint that never ends
    (b"not json", 400, None),
])
def test_access_reviews_are_questions(client: Client, body: bytes, code: int,
                                      allowed: bool | None) -> None:
    connection = client.connect()
    connection.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                       body=body, headers={"Authorization": f"Bearer {client.token}",
                                           "Content-Type": "application/json"})
    response = connection.getresponse()
    found = json.loads(response.read())
    connection.close()
    assert response.status == code
    if allowed is not None:
        assert found["status"]["allowed"] is allowed
