"""The collector's command line: --dry-run, --help, read-only guards, 3.8 syntax, modes, bounds."""

import ast
import json
import os
import re
import subprocess
import sys

import pytest
from collector_support import COLLECT_PY, NODE_IPS, NODEBIN, by_path, on_system_path, read_bundle

from collectors.collect import (
    Kubectl,
    Pseudonymizer,
    ReadOnlyViolation,
    helm_argv,
    parse_args,
    parse_steps_tsv,
)

needs_containerd = pytest.mark.skipif(not on_system_path("containerd"), reason="needs containerd")


def test_dry_run_runs_nothing_and_prints_every_command(cluster, capsys):
    code, path = cluster.collect("--dry-run")
    out = capsys.readouterr().out
    assert code == 0 and path is None
    assert cluster.invocations() == [] and list(cluster.out.iterdir()) == []
    for expected in (
        "kubectl version -o json   > cluster/version.json",
        "kubectl get pods -A -o json   > cluster/pods.json",
        "kubectl get clusterpolicies.nvidia.com -o json",
        "kubectl get configmaps -n '<operator-namespace>' -o json",
        "kubectl get secrets -n '<operator-namespace>' -l owner=helm -o json",
        "kubectl logs -n '<namespace>' '<pod>' -c '<container>' "
        "--timestamps --tail=5000 --previous",
        "kubectl debug 'node/<node>' -n default --image=busybox:1.36 --profile=sysadmin",
        "-- chroot /host env 'GPU_TRIAGE_RUN_ID=<run-id>' GPU_TRIAGE_SINCE=168h",
        "journalctl -u kubelet -o json --since -168h   > nodes/<node>/journal/kubelet.jsonl",
        "kubectl delete pod '<debug-pod>' -n default --ignore-not-found --wait=false",
    ):
        assert expected in out, expected


def test_dry_run_with_known_nodes_and_ssh(cluster, capsys):
    code, _path = cluster.collect(
        "--dry-run",
        "--node-mode",
        "ssh",
        "--nodes",
        "gpu-a",
        "--ssh-host",
        "gpu-a=bastion.example",
        "-n",
        "gpu-operator",
        "--since",
        "2d",
    )
    out = capsys.readouterr().out
    assert code == 0 and cluster.invocations() == []
    assert "ssh -T -o BatchMode=yes -o ConnectTimeout=15 bastion.example env" in out
    assert "kubectl get configmaps -n gpu-operator -o json" in out and "--since -2d" in out
    assert "kubectl debug" not in out


def test_help_explains_the_modes_and_exit_codes():
    proc = subprocess.run(
        [sys.executable, str(COLLECT_PY), "--help"], capture_output=True, text=True
    )
    assert proc.returncode == 0
    for word in (
        "debug-pod",
        "ssh",
        "local",
        "none",
        "--debug-image",
        "--pseudonymize",
        "--dry-run",
        "130",
    ):
        assert word in proc.stdout
    version = subprocess.run(
        [sys.executable, str(COLLECT_PY), "--version"], capture_output=True, text=True
    )
    assert version.stdout.strip() == "gpu-triage-collect 0.1.0 (bundle format 1)"


@pytest.mark.parametrize(
    "argv",
    [
        ["--since", "7 days"],
        ["--log-tail", "0"],
        ["--ssh-host", "nohost"],
        ["--node-mode", "local", "--nodes", "a,b"],
        ["--max-file-bytes", "lots"],
    ],
)
def test_bad_options_exit_2(argv, capsys):
    from collectors.collect import main

    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_option_parsing():
    opts = parse_args(
        ["--nodes", "a,b", "--nodes", "c", "--ssh-host", "a=10.0.0.1", "--max-file-bytes", "8Mi"]
    )
    assert opts.nodes == ["a", "b", "c"] and opts.ssh_hosts == {"a": "10.0.0.1"}
    assert opts.max_file_bytes == 8 << 20 and opts.redact is True and opts.pseudonymize is False
    defaults = parse_args([])
    assert (
        defaults.node_mode,
        defaults.debug_image,
        defaults.since,
        defaults.log_tail,
        defaults.parallel,
    ) == ("debug-pod", "busybox:1.36", "168h", 5000, 8)
    assert defaults.max_file_bytes == 50 << 20


@pytest.mark.parametrize(
    "verb, args",
    [
        ("apply", ["-f", "x.yaml"]),
        ("exec", ["pod", "--", "sh"]),
        ("edit", ["cm", "x"]),
        ("patch", ["node", "a"]),
        ("label", ["node", "a", "x=y"]),
        ("cordon", ["a"]),
        ("drain", ["a"]),
        ("cp", ["a:/x", "y"]),
        ("delete", ["pod", "gpu-operator-6b8f9c7d5-x2x9q"]),
        ("delete", ["node", "gpu-a"]),
        ("get", ["secrets", "-A", "-o", "json"]),
        ("config", ["current-context"]),
    ],
)
def test_kubectl_argv_refuses_anything_but_reads(verb, args):
    with pytest.raises(ReadOnlyViolation):
        Kubectl(None, None).argv(verb, *args)


def test_kubectl_argv_allows_reads_and_own_debug_pod_deletion():
    kubectl = Kubectl("prod", "/k/config")
    assert kubectl.argv("get", "pods", "-A") == [
        "kubectl",
        "get",
        "pods",
        "-A",
        "--context",
        "prod",
        "--kubeconfig",
        "/k/config",
    ]
    assert kubectl.argv("debug", "node/a", "--", "chroot", "/host")[-3:] == [
        "--",
        "chroot",
        "/host",
    ]
    with pytest.raises(ReadOnlyViolation):
        kubectl.argv("delete", "pod", "node-debugger-a-xyz12")
    kubectl.remember_debug_pod("node-debugger-a-xyz12")
    assert kubectl.argv("delete", "pod", "node-debugger-a-xyz12")[:4] == [
        "kubectl",
        "delete",
        "pod",
        "node-debugger-a-xyz12",
    ]
    opts = parse_args(["--context", "prod"])
    assert helm_argv(opts, "history", "r", "-o", "json")[-2:] == ["--kube-context", "prod"]
    for bad in (
        ("upgrade", "r"),
        ("rollback", "r", "1"),
        ("uninstall", "r"),
        ("get", "manifest", "r"),
    ):
        with pytest.raises(ReadOnlyViolation):
            helm_argv(opts, *bad)


def test_steps_tsv_unescaping():
    line = "a/b.txt\t1\t2026-01-01T00:00:00Z\t12\t3\t1\tx\\ty\\nz \\\\ \\u\tcat\x1f/p\\tq\x1f-n"
    row = parse_steps_tsv(line + "\n")[0]
    assert row["error"] == "x\ty\nz \\ \x1f" and row["command"] == ["cat", "/p\tq", "-n"]
    assert (row["exit_code"], row["duration_ms"], row["bytes"], row["truncated"]) == (
        1,
        12,
        3,
        True,
    )


SIBLINGS = ("redact", "fleet", "preflight", "collectors")


@pytest.mark.parametrize("path", [COLLECT_PY.with_name(f"{name}.py") for name in (
    "collect", "redact", "fleet", "preflight", "pyz")],
    ids=["collect.py", "redact.py", "fleet.py", "preflight.py", "pyz.py"])
def test_collect_py_is_python38_and_stdlib_only(path):
    source = path.read_text()
    tree = ast.parse(source, feature_version=(3, 8))
    for banned in (
        "removeprefix",
        "removesuffix",
        "cancel_futures",
        "BooleanOptionalAction",
        "is_relative_to",
        "zoneinfo",
        "functools.cache(",
        "@cache",
        "waitstatus_to_exitcode",
        "tomllib",
    ):
        assert banned not in source, banned
    assert not re.search(r"^\s*match .*:\s*$", source, re.M)
    assert not re.search(r"isinstance\([^)]*\|", source)
    modules = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    modules |= {
        node.module.split(".")[0] for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module  # `from . import x`: a sibling
    }
    # the sibling modules travel with collect.py (in the .pyz, or the collectors/ directory)
    assert modules <= set(sys.stdlib_module_names) | {"__future__", *SIBLINGS}, modules - set(
        sys.stdlib_module_names
    )


def test_pseudonymizer_is_stable_and_respects_word_edges():
    pseudo = Pseudonymizer([("gpu-b", ["gpu-b.corp.example"]), ("gpu-a", [])])
    text = b"gpu-a gpu-ab gpu-b.corp.example kube-apiserver-gpu-a 10.0.1.11 10.0.1.11. "
    text += b"127.0.0.1 570.195.03"
    assert pseudo.text(text) == (
        b"node-0001 gpu-ab node-0002 kube-apiserver-node-0001 10.255.0.1 10.255.0.1. "
        b"127.0.0.1 570.195.03"
    )
    assert pseudo.mapping()["names"]["gpu-b"] == "node-0002" and pseudo.mapping()["ips"] == {
        "10.0.1.11": "10.255.0.1"
    }


@needs_containerd
def test_pseudonymize_hides_host_names_and_ips_everywhere(cluster):
    code, path = cluster.collect("--pseudonymize")
    assert code == 0
    names, files, manifest = read_bundle(path)
    for name, data in list(files.items()) + [("<names>", "\n".join(names).encode())]:
        for secret in ["gpu-a", "gpu-b", "cp-1"] + list(NODE_IPS.values()):
            assert secret.encode() not in data, (secret, name)
    assert manifest["redaction"]["pseudonymized"] is True
    assert manifest["options"]["nodes"] == ["node-0002", "node-0003"]
    assert "nodes/node-0002/containerd/config-dump.toml" in by_path(manifest)
    mapping_path = path.parent / (path.name[:-4] + ".pseudonyms.json")
    mapping = json.loads(mapping_path.read_text())
    assert mapping["names"]["gpu-a"] == "node-0002" and mapping["ips"]["10.0.1.11"].startswith(
        "10.255."
    )
    assert oct(mapping_path.stat().st_mode & 0o777) == "0o600"
    assert not any(name.endswith("pseudonyms.json") for name in names)


@needs_containerd
def test_local_mode_with_size_bounds(cluster, monkeypatch):
    root = cluster.roots["gpu-a"]
    monkeypatch.setenv("GPU_TRIAGE_HOST_ROOT", str(root))
    monkeypatch.setenv(
        "PATH",
        os.pathsep.join(
            [str(cluster.bin), str(root / "fake" / "bin"), str(NODEBIN), os.environ["PATH"]]
        ),
    )
    cluster.scenario({"log_lines": {"gpu-operator/gpu-operator-6b8f9c7d5-x2x9q/gpu-operator": 50}})
    code, path = cluster.collect(
        "--node-mode",
        "local",
        "--nodes",
        "gpu-a",
        "--log-tail",
        "20",
        "--max-file-bytes",
        "8Ki",
        "--since",
        "2h",
    )
    assert code == 0
    names, files, manifest = read_bundle(path)
    items = by_path(manifest)
    log = items["logs/gpu-operator/gpu-operator-6b8f9c7d5-x2x9q/gpu-operator.log"]
    assert log["truncated"] is True and log["command"][-1] == "--tail=20"
    top = path.name[:-4]
    assert (
        files[top + "/logs/gpu-operator/gpu-operator-6b8f9c7d5-x2x9q/gpu-operator.log"].count(b"\n")
        == 20
    )
    pods = items["cluster/pods.json"]
    # A list over the cap keeps the pods that fit and stays valid JSON (never cut mid-list).
    kept = json.loads(files[top + "/cluster/pods.json"])
    assert pods["truncated"] is True and pods["bytes"] == len(files[top + "/cluster/pods.json"])
    assert 0 < pods["bytes"] <= 8192 and pods["items_total"] == 11
    assert pods["items_kept"] == len(kept["items"]) < 11
    assert kept["metadata"]["remainingItemCount"] == 11 - len(kept["items"])
    assert items["cluster/version.json"]["truncated"] is False
    assert items["nodes/gpu-a/journal/kubelet.jsonl"]["command"][-1] == "-2h"
    assert items["nodes/gpu-a/nvidia-smi.xml"]["error"] is None
    assert manifest["options"]["node_mode"] == "local"
    assert cluster.invocations("ssh") == [] and not any(
        a[0] == "debug" for a in cluster.invocations("kubectl")
    )


def test_node_mode_none_and_output_file_path(cluster, tmp_path):
    target = tmp_path / "tickets" / "case-42.tgz"
    target.parent.mkdir()
    from collectors.collect import main

    assert main(["--node-mode", "none", "-o", str(target), "-q"]) == 0
    names, _files, manifest = read_bundle(target)
    assert not any("/nodes/" in name for name in names)
    assert manifest["options"]["node_mode"] == "none" and manifest["options"]["nodes"] == []
    assert not any(argv[0] in ("debug", "delete") for argv in cluster.invocations("kubectl"))
