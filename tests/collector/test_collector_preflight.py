"""The pre-flight (kubectl auth can-i before anything runs) and the messages an admin reads,
through real kubectl against the loopback API server (apiserver.py answers the
SelfSubjectAccessReviews: JSON from kubectl up to 1.32, protobuf from 1.33)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from apiserver import SSAR_PATH, ApiServer
from collector_support import secrets_list
from test_collector_real_kubectl import (
    DCGM,
    NEEDS,
    NEWEST,
    OLDEST_AND_NEWEST,
    bundle_files,
    run_collector,
)

DEBUG = ("--node-mode", "debug-pod", "--step-timeout", "20")


def _rbac(stdout: str) -> list[dict]:
    """The YAML documents printed after the pre-flight's last line."""
    marker = "then rerun with --preflight to check:\n"
    assert marker in stdout, stdout
    return list(yaml.safe_load_all(stdout.split(marker, 1)[1]))


@NEEDS
@pytest.mark.parametrize("kubectl", OLDEST_AND_NEWEST)
def test_preflight_names_what_is_missing_and_the_rbac_that_grants_it(kubectl: Path,
                                                                     tmp_path: Path) -> None:
    with ApiServer() as api:
        api.denied = {"create pods", "list events"}
        code, stdout, path = run_collector(kubectl, tmp_path, api, *DEBUG, "--preflight",
                                           stdout=True)
        posts = {p for m, p, _q in api.requests if m != "GET"}
        reviews = [(r.get("verb"), r.get("resource"), r.get("subresource", ""),
                    r.get("namespace", "")) for r in api.reviews]
    assert (code, path) == (3, None), stdout  # 3: something is missing; nothing collected
    assert posts == {SSAR_PATH}
    assert ("create", "pods", "", "default") in reviews
    assert ("create", "pods", "attach", "default") in reviews
    assert ("get", "pods", "log", "") in reviews and ("list", "events", "", "") in reviews
    lines = stdout.splitlines()
    assert any(line.startswith("  NO   list events in all namespaces ") and
               "recent warnings" in line for line in lines), stdout
    assert any(line.startswith("  NO   create pods in namespace default ") and
               "no node files: the runtime gate" in line for line in lines), stdout
    assert any(line.startswith("  yes  list nodes ") for line in lines)
    assert not any(line.startswith("  NO   list nodes") for line in lines)
    assert ("gpu-triage collect: pre-flight: node files will NOT be collected (no debug pod will "
            "be started): create pods in namespace default refused") in lines
    assert _rbac(stdout) == [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "gpu-triage-collect"},
         "rules": [{"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "gpu-triage-collect", "namespace": "default"},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]},
    ]


@NEEDS
def test_preflight_with_every_permission_says_so_and_exits_0(tmp_path: Path) -> None:
    assert NEWEST is not None
    with ApiServer() as api:
        code, stdout, path = run_collector(NEWEST, tmp_path, api, *DEBUG, "--preflight",
                                           stdout=True)
    assert (code, path) == (0, None)
    assert "gpu-triage collect: pre-flight: every permission the run needs is granted" in stdout
    assert "  NO " not in stdout and "kind: ClusterRole" not in stdout


@NEEDS
def test_a_create_refused_in_the_preflight_starts_no_debug_pod(tmp_path: Path) -> None:
    assert NEWEST is not None
    with ApiServer(secrets=secrets_list()["items"]) as api:
        api.denied = {"create pods"}
        api.previous_lost = {DCGM}
        code, stderr, path = run_collector(NEWEST, tmp_path, api, *DEBUG)
        writes = [(m, p) for m, p, _q in api.requests if m != "GET" and p != SSAR_PATH]
    assert code == 0 and path is not None, stderr
    assert writes == []  # no pod create, no delete: nothing was started, nothing to clean
    _files, _manifest, items = bundle_files(path)
    why = ("node not collected: no debug pod started: the pre-flight found create pods in "
           "namespace default refused")
    for node in ("gpu-a", "gpu-b"):
        assert (items[f"nodes/{node}"]["error"], items[f"nodes/{node}"]["error_kind"]) == (
            why, "forbidden")
    assert "could not delete" not in stderr and "by hand" not in stderr
    assert ("gpu-triage collect: nodes not reached (2, no debug pod started: the pre-flight "
            "found create pods in namespace default refused): gpu-a, gpu-b") in stderr
    # a container without an earlier log is an absence, not a failure
    assert f"not collected logs/{DCGM}.previous.log: not present: no earlier container log" \
        in stderr
    assert "FAILED logs/" not in stderr
    assert stderr.rstrip().splitlines()[-1].startswith(
        "gpu-triage collect: next: some data needs permissions this identity lacks; ask your "
        "cluster admin for the RBAC printed by `--preflight`")
    assert "steps failed" not in stderr


@NEEDS
def test_a_pod_security_refusal_is_explained_and_nothing_is_deleted(tmp_path: Path) -> None:
    """RBAC allows the create (can-i says yes), admission refuses it: kubectl debug printed
    the pod's name, but no pod exists, so none is deleted and none is 'left behind'."""
    assert NEWEST is not None
    with ApiServer() as api:
        api.refuse_create = True
        code, stderr, path = run_collector(NEWEST, tmp_path, api, *DEBUG)
        writes = sorted((m, p) for m, p, _q in api.requests if m != "GET" and p != SSAR_PATH)
    assert code == 0 and path is not None, stderr
    assert writes == [("POST", "/api/v1/namespaces/default/pods")] * 2
    assert "by hand" not in stderr and "could not delete" not in stderr
    _files, _manifest, items = bundle_files(path)
    assert items["nodes/gpu-a/dmesg.txt"]["error"].startswith(
        "node not collected (--node-mode debug-pod): Error from server (Forbidden): pods "
        '"node-debugger-gpu-a-')
    assert ('nodes not reached (2, the API server refused the debug pod in namespace default: '
            'Error from server (Forbidden): pods "node-debugger-<node>-<id>" is forbidden: '
            'violates PodSecurity "baseline:latest"') in stderr
    assert stderr.rstrip().splitlines()[-1].startswith(
        "gpu-triage collect: next: Pod Security admission refused the privileged debug pods "
        "in namespace default; rerun with --debug-namespace NS")
