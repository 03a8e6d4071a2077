"""The runtime gate on distributions: facts (runtime, distribution), RT004 on units that
do not exist, RT001 on the distribution's files, RT008, RT009, RT010.

Wordings come from public threads: exit status 127 (NVIDIA/gpu-operator#1099), keys
cannot contain { character (rancher/rke2#3385, NVIDIA/gpu-operator#623), failed to find
runtime handler nvidia (NVIDIA/gpu-operator#2236).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from kit import analyse
from kit.bundles import write_dir
from kit.objects import (
    DUMP_WITH_NVIDIA,
    DUMP_WITHOUT_NVIDIA,
    NVIDIA_DROPIN,
    cluster_policy,
    event,
    lists,
    node,
    pod,
    runtime_class,
)

from analyzers.facts import Facts
from analyzers.results.models import Report
from bundle import open_bundle

K3S_DIR = "/var/lib/rancher/k3s/agent/etc/containerd"
K3S_FILES = "containerd/files" + K3S_DIR
K3S_CONFIG = K3S_DIR + "/config.toml"
NOT_FOUND = ("LoadState=not-found\nActiveState=inactive\nSubState=dead\nRestart=no\n"
             "NRestarts=0\nExecMainPID=0\n")
# k3s writes a complete version 2 config; this is the part the rules read.
K3S_GENERATED = DUMP_WITHOUT_NVIDIA
K3S_WITH_NVIDIA = DUMP_WITH_NVIDIA.replace(
    'imports = ["/etc/containerd/conf.d/99-nvidia.toml"]\n', "")
BASE_TEMPLATE = '{{ template "base" . }}\n\n[plugins."io.containerd.grpc.v1.cri".registry]\n' \
                '  config_path = "/var/lib/rancher/k3s/agent/etc/containerd/certs.d"\n'


def _journal(*messages: tuple[int, str, str, int]) -> str:
    lines = [orjson.dumps({"__REALTIME_TIMESTAMP": str((1_764_400_000 + seconds) * 10**6),
                           "SYSLOG_IDENTIFIER": ident, "MESSAGE": message,
                           "_PID": str(pid)}).decode()
             for seconds, ident, message, pid in messages]
    return "\n".join(lines) + "\n"


HUP_RESTART = _journal(
    (0, "containerd", "containerd successfully booted in 0.05s", 1234),
    (60, "systemd", "containerd.service: Main process exited, code=killed, status=1/HUP", 1),
    (65, "systemd", "Started containerd.service - containerd container runtime.", 1),
    (66, "containerd", "containerd successfully booted in 0.04s", 5678),
)
UNIT_ALWAYS = "Restart=always\nRestartUSec=5s\nNRestarts=1\nActiveState=active\nSubState=running\n"


def info(the_node: dict[str, Any], kubelet: str, runtime: str,
         **labels: str) -> dict[str, Any]:
    the_node["status"]["nodeInfo"] = {"kubeletVersion": kubelet,
                                      "containerRuntimeVersion": runtime}
    the_node["metadata"]["labels"].update(labels)
    return the_node


def k3s(name: str) -> dict[str, Any]:
    return info(node(name), "v1.30.4+k3s1", "containerd://1.7.20-k3s1")


def stock(name: str) -> dict[str, Any]:
    return info(node(name), "v1.30.4", "containerd://1.7.20")


def runtime_json(distribution: str, config: str = K3S_CONFIG) -> str:
    return json.dumps({"runtime": "containerd", "distribution": distribution,
                       "config_path": config, "socket": "/run/k3s/containerd/containerd.sock",
                       "binary": "/var/lib/rancher/k3s/data/current/bin/containerd",
                       "signals": ["/var/lib/rancher/k3s"]})


def bundle_files(nodes: list[dict[str, Any]], node_files: dict[str, dict[str, str]],
                 policy: dict[str, Any] | None = None, pods: list[dict[str, Any]] | None = None,
                 events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    files: dict[str, Any] = lists(nodes=nodes, runtimeclasses=[runtime_class("nvidia")],
                                  clusterpolicies=[policy or cluster_policy(True)],
                                  pods=pods or [], events=events or [])
    for name, found in node_files.items():
        for rel, text in found.items():
            files[f"nodes/{name}/{rel}"] = text
    return files


def run(tmp_path: Path, files: dict[str, Any],
        commands: dict[str, list[str]] | None = None) -> Report:
    path = write_dir(tmp_path / "bundle", files)
    if commands:
        manifest = json.loads((path / "manifest.json").read_text())
        for item in manifest["items"]:
            item["command"] = commands.get(item["path"], item["command"])
        (path / "manifest.json").write_text(json.dumps(manifest))
    return analyse(path)


def status(report: Report, rule_id: str) -> tuple[str, str | None]:
    result = next(r for r in report.rules if r.rule_id == rule_id)
    return result.status.value, result.reason


def policy_env(**env: str) -> dict[str, Any]:
    policy = cluster_policy(True)
    policy["spec"]["toolkit"]["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return policy


# -- facts ------------------------------------------------------------------------------


def test_distribution_from_runtime_json_node_info_and_labels(tmp_path: Path) -> None:
    nodes = [k3s("a-k3s"), info(node("b-rke2"), "v1.29.9+rke2r1", "containerd://1.7.21-k3s2"),
             info(node("c-k0s"), "v1.31.2+k0s", "containerd://1.7.22"),
             info(node("d-mk8s"), "v1.31.1", "containerd://1.6.28",
                  **{"microk8s.io/cluster": "true"}),
             info(node("e-ocp"), "v1.29.8+f10c92d", "cri-o://1.29.8-5.rhaos4.16.git7032128.el9",
                  **{"node.openshift.io/os_id": "rhcos"}),
             stock("f-plain"), node("g-bare"), stock("h-json")]
    files = bundle_files(nodes, {"h-json": {"runtime.json": runtime_json("k3s")}})
    path = write_dir(tmp_path / "bundle", files)
    with open_bundle(path) as bundle:
        found = Facts(bundle).node_runtimes
    got = {n: (r.runtime, r.distribution, r.source) for n, r in found.items()}
    assert got == {
        "a-k3s": ("containerd", "k3s", "nodeInfo"),
        "b-rke2": ("containerd", "rke2", "nodeInfo"),
        "c-k0s": ("containerd", "k0s", "nodeInfo"),
        "d-mk8s": ("containerd", "microk8s", "labels"),
        "e-ocp": ("cri-o", "openshift", "labels"),
        "f-plain": ("containerd", None, "nodeInfo"),
        "g-bare": (None, None, "none"),
        "h-json": ("containerd", "k3s", "runtime.json"),
    }
    assert found["a-k3s"].evidence is not None
    assert found["a-k3s"].evidence.pointer == "/items/0/status/nodeInfo/kubeletVersion"
    assert found["h-json"].config == K3S_CONFIG
    assert found["f-plain"].layout.stock and not found["a-k3s"].layout.stock


# -- RT004: never judge a unit that does not exist ---------------------------------------


def test_rt004_quiet_on_k3s_node_without_containerd_unit(tmp_path: Path) -> None:
    empty = _journal((0, "containerd", "containerd successfully booted", 99))
    files = bundle_files(
        [stock("gpu-a"), k3s("gpu-k3s"), k3s("gpu-old"), stock("gpu-gone")],
        {"gpu-a": {"journal/containerd.jsonl": HUP_RESTART,
                   "systemd/containerd.txt": UNIT_ALWAYS.replace("Restart=always",
                                                                 "Restart=on-failure")},
         # the 1.1 collector: LoadState says the unit does not exist
         "gpu-k3s": {"journal/containerd.jsonl": "", "systemd/containerd.txt": NOT_FOUND},
         # a collector before 1.1: no LoadState, only the missing unit's Restart=no
         "gpu-old": {"journal/containerd.jsonl": "",
                     "systemd/containerd.txt": "Restart=no\nActiveState=inactive\n"
                                               "SubState=dead\nNRestarts=0\n"},
         "gpu-gone": {"journal/containerd.jsonl": empty, "systemd/containerd.txt": NOT_FOUND}})
    found = run(tmp_path, files).by_id()
    assert sorted(k for k in found if k.startswith("RT004")) == ["RT004:gpu-a"]
    assert "Restart=on-failure" in found["RT004:gpu-a"].summary


def test_rt004_judges_the_distribution_unit_that_runs_containerd(tmp_path: Path) -> None:
    weak = "LoadState=loaded\nRestart=on-failure\nActiveState=active\nSubState=running\n"
    files = bundle_files(
        [stock("gpu-a"), k3s("gpu-k3s"), k3s("gpu-ok")],
        {"gpu-a": {"journal/containerd.jsonl": _journal(
            (0, "containerd", "containerd successfully booted", 99)),
            "systemd/containerd.txt": UNIT_ALWAYS},
         "gpu-k3s": {"systemd/containerd.txt": NOT_FOUND, "systemd/k3s.txt": NOT_FOUND,
                     "systemd/k3s-agent.txt": weak},
         "gpu-ok": {"systemd/k3s-agent.txt": weak.replace("on-failure", "always")}})
    found = run(tmp_path, files).by_id()
    assert sorted(k for k in found if k.startswith("RT004")) == ["RT004:gpu-k3s"]
    rt004 = found["RT004:gpu-k3s"]
    assert "the k3s-agent unit, which runs containerd, has Restart=on-failure" in rt004.summary
    assert rt004.evidence[-1].path == "nodes/gpu-k3s/systemd/k3s-agent.txt"
    assert "systemctl show k3s-agent" in rt004.remediation


def test_rt004_skipped_when_no_node_has_a_unit_to_judge(tmp_path: Path) -> None:
    files = bundle_files([k3s("gpu-k3s")], {"gpu-k3s": {"journal/containerd.jsonl": "",
                                                          "systemd/containerd.txt": NOT_FOUND}})
    report = run(tmp_path, files)
    assert status(report, "RT004") == (
        "skipped", "no GPU node runs containerd under a unit that exists: gpu-k3s runs k3s, "
                   "whose units (k3s, k3s-agent) were not collected")


# -- RT001 / RT008: the file the runtime really runs with --------------------------------


def test_rt008_default_toolkit_paths_on_k3s_explain_rt001(tmp_path: Path) -> None:
    files = bundle_files(
        [stock("gpu-a"), k3s("gpu-k3s"), k3s("gpu-auto")],
        {"gpu-a": {"containerd/config-dump.toml": DUMP_WITH_NVIDIA},
         "gpu-k3s": {"runtime.json": runtime_json("k3s"),
                     "containerd/config-dump.toml": K3S_GENERATED,
                     f"{K3S_FILES}/config.toml": K3S_GENERATED},
         # k3s found nvidia-container-runtime on this host and added the runtime itself
         "gpu-auto": {"containerd/config-dump.toml": K3S_WITH_NVIDIA,
                      f"{K3S_FILES}/config.toml": K3S_WITH_NVIDIA}})
    found = run(tmp_path, files).by_id()
    assert sorted(k for k in found if k[:5] in ("RT001", "RT008")) == [
        "RT001:gpu-k3s", "RT008:gpu-k3s"]
    rt008 = found["RT008:gpu-k3s"]
    assert ("the toolkit's default /etc/containerd/config.toml is in effect, but this node's "
            f"containerd runs with {K3S_CONFIG}") in rt008.summary
    assert "containerd listens on /run/k3s/containerd/containerd.sock" in rt008.summary
    assert f"#   CONTAINERD_CONFIG={K3S_DIR}/config.toml.tmpl" in rt008.remediation
    assert "#   CONTAINERD_SOCKET=/run/k3s/containerd/containerd.sock" in rt008.remediation
    assert rt008.evidence[-1].path == "nodes/gpu-k3s/runtime.json"
    rt001 = found["RT001:gpu-k3s"]
    assert rt001.caused_by == ["RT008:gpu-k3s"]
    assert f"containerd runs with {K3S_CONFIG}" in rt001.summary
    assert (f"/var/lib/rancher/k3s/data/current/bin/containerd --config {K3S_CONFIG} config dump"
            in rt001.remediation)


def test_rt008_quiet_when_the_policy_names_the_distribution_paths(tmp_path: Path) -> None:
    policy = policy_env(CONTAINERD_CONFIG=K3S_DIR + "/config.toml.tmpl",
                        CONTAINERD_SOCKET="/run/k3s/containerd/containerd.sock")
    files = bundle_files(
        [k3s("gpu-k3s"), stock("gpu-a"), stock("gpu-b")],
        {"gpu-k3s": {"containerd/config-dump.toml": K3S_WITH_NVIDIA},
         "gpu-a": {"containerd/config-dump.toml": DUMP_WITHOUT_NVIDIA},
         "gpu-b": {"containerd/config-dump.toml": DUMP_WITH_NVIDIA}}, policy=policy)
    report = run(tmp_path, files)
    found = report.by_id()
    # the stock nodes are judged too (explicit values): they use /etc/containerd; gpu-b
    # has the runtime anyway, so the values do not hurt it
    assert sorted(k for k in found if k[:5] in ("RT001", "RT008")) == [
        "RT001:gpu-a", "RT008:gpu-a"]
    assert found["RT001:gpu-a"].caused_by == ["RT008:gpu-a"]
    assert "ClusterPolicy cluster-policy sets CONTAINERD_CONFIG=" in found["RT008:gpu-a"].summary
    assert found["RT008:gpu-a"].evidence[0].pointer == "/items/0/spec/toolkit/env/0"


def test_rt008_toolkit_log_exit_status_127(tmp_path: Path) -> None:
    policy = policy_env(CONTAINERD_CONFIG=K3S_DIR + "/config.toml.tmpl",
                        CONTAINERD_SOCKET="/run/k3s/containerd/containerd.sock")
    toolkit = pod("nvidia-container-toolkit-daemonset-x1", "gpu-k3s",
                  app="nvidia-container-toolkit-daemonset", phase="Running")
    toolkit["spec"]["containers"][0]["name"] = "nvidia-container-toolkit-ctr"
    line = ('time="2024-11-01T10:00:02Z" level=error msg="error running nvidia-toolkit: unable '
            'to determine runtime options: unable to load containerd config: failed to load '
            'config: failed to run command chroot [/host containerd config dump]: '
            'exit status 127"\n')
    files = bundle_files([k3s("gpu-k3s")], {"gpu-k3s": {
        "containerd/config-dump.toml": K3S_GENERATED}}, policy=policy, pods=[toolkit])
    log = "logs/gpu-operator/nvidia-container-toolkit-daemonset-x1/nvidia-container-toolkit-ctr.log"
    files[log] = "level=info msg=Starting\n" + line
    found = run(tmp_path, files).by_id()
    rt008 = found["RT008:gpu-k3s"]
    assert "exit status 127" in rt008.summary and "wrong place" in rt008.summary
    assert (rt008.evidence[0].path, rt008.evidence[0].line) == (log, 2)
    assert f"#   RUNTIME_CONFIG_SOURCE=file={K3S_CONFIG}" in rt008.remediation
    assert found["RT001:gpu-k3s"].caused_by == ["RT008:gpu-k3s"]


def test_rt001_ignores_a_dump_of_the_wrong_file_on_k3s(tmp_path: Path) -> None:
    """A collector before 1.1 ran `containerd config dump` without --config on a k3s node:
    that shows /etc/containerd/config.toml (or defaults), not what k3s's containerd runs."""
    policy = policy_env(CONTAINERD_CONFIG=K3S_DIR + "/config.toml.tmpl",
                        CONTAINERD_SOCKET="/run/k3s/containerd/containerd.sock")
    files = bundle_files([k3s("gpu-k3s"), k3s("gpu-new")],
                         {"gpu-k3s": {"containerd/config-dump.toml": DUMP_WITHOUT_NVIDIA},
                          "gpu-new": {"containerd/config-dump.toml": DUMP_WITHOUT_NVIDIA}},
                         policy=policy)
    commands = {
        "nodes/gpu-k3s/containerd/config-dump.toml": ["containerd", "config", "dump"],
        "nodes/gpu-new/containerd/config-dump.toml": [
            "/host/var/lib/rancher/k3s/data/current/bin/containerd", "--config",
            "/host" + K3S_CONFIG, "config", "dump"]}
    found = run(tmp_path, files, commands).by_id()
    assert sorted(k for k in found if k.startswith("RT001")) == ["RT001:gpu-new"]


def test_rt003_ignores_k3s_templates_and_config(tmp_path: Path) -> None:
    template = K3S_WITH_NVIDIA  # a plain-TOML template that carries the runtime
    policy = policy_env(CONTAINERD_CONFIG=K3S_DIR + "/config.toml.tmpl",
                        CONTAINERD_SOCKET="/run/k3s/containerd/containerd.sock")
    files = bundle_files([k3s("gpu-k3s")], {"gpu-k3s": {
        "containerd/config-dump.toml": K3S_GENERATED, f"{K3S_FILES}/config.toml": K3S_GENERATED,
        f"{K3S_FILES}/config.toml.tmpl": template}}, policy=policy)
    found = run(tmp_path, files).by_id()
    assert not any(k.startswith(("RT002", "RT003", "RT009")) for k in found)
    assert found["RT001:gpu-k3s"].caused_by == []


# -- RT009: the template -----------------------------------------------------------------


def test_rt009_runtime_in_config_but_not_in_template(tmp_path: Path) -> None:
    policy = policy_env(CONTAINERD_CONFIG=K3S_CONFIG,
                        CONTAINERD_SOCKET="/run/k3s/containerd/containerd.sock")
    plain = K3S_GENERATED  # a copy of the generated file without the runtime
    files = bundle_files(
        [k3s("gpu-lost"), k3s("gpu-kept"), k3s("gpu-base")],
        {"gpu-lost": {"containerd/config-dump.toml": K3S_WITH_NVIDIA,
                      f"{K3S_FILES}/config.toml": K3S_WITH_NVIDIA,
                      f"{K3S_FILES}/config.toml.tmpl": plain},
         "gpu-kept": {"containerd/config-dump.toml": K3S_WITH_NVIDIA,
                      f"{K3S_FILES}/config.toml": K3S_WITH_NVIDIA,
                      f"{K3S_FILES}/config.toml.tmpl": K3S_WITH_NVIDIA},
         "gpu-base": {"containerd/config-dump.toml": K3S_WITH_NVIDIA,
                      f"{K3S_FILES}/config.toml": K3S_WITH_NVIDIA,
                      f"{K3S_FILES}/config.toml.tmpl": BASE_TEMPLATE}}, policy=policy)
    found = run(tmp_path, files).by_id()
    assert sorted(k for k in found if k.startswith("RT009")) == ["RT009:gpu-lost"]
    rt009 = found["RT009:gpu-lost"]
    assert rt009.severity.value == "high"
    assert f"{K3S_CONFIG} defines the nvidia runtime but {K3S_DIR}/config.toml.tmpl" \
        in rt009.summary
    assert rt009.evidence[0].path == f"nodes/gpu-lost/{K3S_FILES}/config.toml"
    assert rt009.evidence[0].line == 6
    assert not any(k.startswith("RT001") for k in found)


def test_rt009_go_template_handed_to_the_toolkit(tmp_path: Path) -> None:
    template = K3S_DIR + "/config.toml.tmpl"
    policy = policy_env(CONTAINERD_CONFIG=template,
                        CONTAINERD_SOCKET="/run/k3s/containerd/containerd.sock")
    toolkit = pod("nvidia-container-toolkit-daemonset-x1", "gpu-k3s",
                  app="nvidia-container-toolkit-daemonset", phase="Running")
    toolkit["spec"]["containers"][0]["name"] = "nvidia-container-toolkit-ctr"
    files = bundle_files([k3s("gpu-k3s")], {"gpu-k3s": {
        "containerd/config-dump.toml": K3S_GENERATED, f"{K3S_FILES}/config.toml": K3S_GENERATED,
        f"{K3S_FILES}/config.toml.tmpl": BASE_TEMPLATE}}, policy=policy, pods=[toolkit])
    log = "logs/gpu-operator/nvidia-container-toolkit-daemonset-x1/nvidia-container-toolkit-ctr.log"
    files[log] = ('time="2024-07-19T10:00:00Z" level=fatal msg="Error: unable to load config: '
                  'failed to load config: (1, 1): parsing error: keys cannot contain { '
                  'character"\n')
    found = run(tmp_path, files).by_id()
    rt009 = found["RT009:gpu-k3s"]
    assert rt009.severity.value == "critical"
    assert f"the toolkit is told to edit {template}, a Go template" in rt009.summary
    assert "keys cannot contain { character" in rt009.summary
    assert (rt009.evidence[0].path, rt009.evidence[0].line) == (
        f"nodes/gpu-k3s/{K3S_FILES}/config.toml.tmpl", 1)
    assert any(e.path == log and e.line == 1 for e in rt009.evidence)
    assert found["RT001:gpu-k3s"].caused_by == ["RT009:gpu-k3s"]
    assert "RT008:gpu-k3s" not in found


# -- RT010: CRI-O -----------------------------------------------------------------------

CRIO_DUMP = ('[crio.runtime]\ndefault_runtime = "crun"\n\n[crio.runtime.runtimes.crun]\n'
             'runtime_path = "/usr/bin/crun"\n\n[crio.runtime.runtimes.runc]\n'
             'runtime_path = "/usr/bin/runc"\n')
CRIO_NVIDIA = CRIO_DUMP + ('\n[crio.runtime.runtimes.nvidia]\n'
                           'runtime_path = "/usr/local/nvidia/toolkit/nvidia-container-runtime"\n')
REFUSED = ("Failed to create pod sandbox: rpc error: code = Unknown desc = failed to find runtime "
           "handler nvidia from runtime list map[crun:0xc000305680 runc:0xc000305980]")


def ocp(name: str) -> dict[str, Any]:
    return info(node(name), "v1.29.8+f10c92d", "cri-o://1.29.8",
                **{"node.openshift.io/os_id": "rhcos"})


def test_rt010_crio_without_nvidia_handler(tmp_path: Path) -> None:
    pods = [pod("cuda-a", "gpu-crio", namespace="ml", runtime_class="nvidia", phase="Pending"),
            pod("cuda-b", "gpu-ok", namespace="ml", runtime_class="nvidia")]
    files = bundle_files(
        [ocp("gpu-crio"), ocp("gpu-ok")],
        {"gpu-crio": {"crio/config-dump.toml": CRIO_DUMP},
         "gpu-ok": {"crio/config-dump.toml": CRIO_NVIDIA}},
        pods=pods, events=[event("cuda-a", "FailedCreatePodSandBox", REFUSED, namespace="ml")])
    found = run(tmp_path, files).by_id()
    assert sorted(k for k in found if k.startswith(("RT010", "RT001"))) == ["RT010:gpu-crio"]
    rt010 = found["RT010:gpu-crio"]
    assert ("CRI-O's loaded configuration has no 'nvidia' handler (handlers: crun, runc)"
            in rt010.summary)
    assert "1 sandbox failure event(s) confirm it" in rt010.summary
    assert rt010.evidence[0].path == "nodes/gpu-crio/crio/config-dump.toml"
    assert rt010.evidence[1].path == "cluster/events.json"


def test_rt010_names_the_oci_hook(tmp_path: Path) -> None:
    hook = '{"version": "1.0.0", "hook": {"path": "/usr/local/nvidia/toolkit/' \
           'nvidia-container-runtime-hook"}}'
    pods = [pod("cuda-a", "gpu-crio", namespace="ml", runtime_class="nvidia", phase="Pending")]
    files = bundle_files(
        [ocp("gpu-crio")],
        {"gpu-crio": {"crio/config-dump.toml": CRIO_DUMP,
                      "crio/files/usr/share/containers/oci/hooks.d/oci-nvidia-hook.json": hook}},
        pods=pods)
    found = run(tmp_path, files).by_id()
    assert ("the NVIDIA OCI hook is installed (/usr/share/containers/oci/hooks.d/"
            "oci-nvidia-hook.json)") in found["RT010:gpu-crio"].summary


# -- a cluster without the GPU Operator --------------------------------------------------

NO_CRD = 'error: the server doesn\'t have a resource type "clusterpolicies"'


def standalone_files(*, operator: bool) -> dict[str, Any]:
    nodes = [node("gpu-a", gpus=4, gpu_label=False), node("gpu-b", gpus=4, gpu_label=False)]
    plugins = [pod(f"nvidia-device-plugin-{n}", n, namespace="kube-system",
                   app="nvidia-device-plugin-ds") for n in ("gpu-a", "gpu-b")]
    deployments = []
    if operator:
        deployments = [{"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "gpu-operator", "namespace": "gpu-operator"},
                        "spec": {"template": {"metadata": {}, "spec": {"containers": []}}}}]
    files = lists(nodes=nodes, pods=plugins, events=[], runtimeclasses=[],
                  deployments=deployments)
    default_nvidia = DUMP_WITH_NVIDIA.replace('default_runtime_name = "runc"',
                                              'default_runtime_name = "nvidia"')
    for name in ("gpu-a", "gpu-b"):
        files[f"nodes/{name}/containerd/config-dump.toml"] = default_nvidia
    return files


def test_standalone_device_plugin_gets_no_operator_findings(tmp_path: Path) -> None:
    path = write_dir(tmp_path / "bundle", standalone_files(operator=False),
                     [{"path": "cluster/clusterpolicies.json", "error": NO_CRD}])
    report = analyse(path)
    assert sorted(f.id for f in report.findings) == ["BND001:not-found"]
    for rule_id in ("OP003", "OP006"):
        state, reason = status(report, rule_id)
        assert state == "skipped" and reason is not None
        assert reason.startswith("the GPU Operator is not installed")


def test_operator_meant_to_run_keeps_operator_findings(tmp_path: Path) -> None:
    path = write_dir(tmp_path / "bundle", standalone_files(operator=True),
                     [{"path": "cluster/clusterpolicies.json", "error": NO_CRD}])
    report = analyse(path)
    found = sorted(f.id for f in report.findings if f.rule_id in ("OP003", "OP006"))
    assert found == ["OP003:gpu-a", "OP003:gpu-b", "OP006:missing"]


# -- RT003 on distribution layouts -------------------------------------------------------

NVIDIA_DROPIN_FILE = "containerd/files/etc/containerd/conf.d/99-nvidia.toml"


def test_rt003_on_k3s_advises_the_template(tmp_path: Path) -> None:
    policy = policy_env(CONTAINERD_CONFIG=K3S_DIR + "/config.toml.tmpl",
                        CONTAINERD_SOCKET="/run/k3s/containerd/containerd.sock")
    files = bundle_files([k3s("gpu-k3s")], {"gpu-k3s": {
        "containerd/config-dump.toml": K3S_GENERATED, f"{K3S_FILES}/config.toml": K3S_GENERATED,
        NVIDIA_DROPIN_FILE: NVIDIA_DROPIN}}, policy=policy)
    found = run(tmp_path, files).by_id()
    rt003 = found["RT003:gpu-k3s"]
    assert rt003.evidence[0].path == f"nodes/gpu-k3s/{NVIDIA_DROPIN_FILE}"
    assert f"# add (or extend) at the top of {K3S_DIR}/config.toml.tmpl:" in rt003.remediation
    assert f"# ({K3S_CONFIG} is rebuilt from it at every start)" in rt003.remediation
    assert "systemctl restart containerd" not in rt003.remediation
    assert found["RT001:gpu-k3s"].caused_by == ["RT003:gpu-k3s"]


def test_rt003_on_k0s_moves_the_dropin_into_its_directory(tmp_path: Path) -> None:
    k0s_main = ('version = 2\nimports = ["/etc/k0s/containerd.d/*.toml"]\n'
                '[plugins."io.containerd.grpc.v1.cri".containerd]\n'
                '  default_runtime_name = "runc"\n')
    policy = policy_env(CONTAINERD_CONFIG="/etc/k0s/containerd.d/nvidia.toml",
                        CONTAINERD_SOCKET="/run/k0s/containerd.sock")
    files = bundle_files(
        [info(node("gpu-k0s"), "v1.31.2+k0s", "containerd://1.7.22")],
        {"gpu-k0s": {"containerd/config-dump.toml": DUMP_WITHOUT_NVIDIA.replace(
            "imports = []", 'imports = ["/etc/k0s/containerd.toml"]'),
            "containerd/files/etc/k0s/containerd.toml": k0s_main,
            NVIDIA_DROPIN_FILE: NVIDIA_DROPIN}}, policy=policy)
    found = run(tmp_path, files).by_id()
    rt003 = found["RT003:gpu-k0s"]
    assert ("# on gpu-k0s: /etc/k0s/containerd.toml is generated and imports "
            "/etc/k0s/containerd.d/*.toml") in rt003.remediation
    assert "cp /etc/containerd/conf.d/99-nvidia.toml /etc/k0s/containerd.d/" in rt003.remediation
    assert "RT008:gpu-k0s" not in found


def test_rt008_var_run_socket_is_the_run_socket(tmp_path: Path) -> None:
    policy = policy_env(CONTAINERD_CONFIG="/etc/containerd/config.toml",
                        CONTAINERD_SOCKET="/var/run/containerd/containerd.sock")
    files = bundle_files([stock("gpu-a")], {"gpu-a": {
        "containerd/config-dump.toml": DUMP_WITH_NVIDIA}}, policy=policy)
    found = run(tmp_path, files).by_id()
    assert not any(k.startswith(("RT001", "RT008")) for k in found)
    assert status(run(tmp_path / "again", files), "RT008")[0] == "passed"


def test_rt010_handler_in_a_dropin_crio_did_not_load(tmp_path: Path) -> None:
    pods = [pod("cuda-a", "gpu-crio", namespace="ml", runtime_class="nvidia", phase="Pending")]
    dropin = ('[crio.runtime.runtimes.nvidia]\nruntime_path = '
              '"/usr/local/nvidia/toolkit/nvidia-container-runtime"\n')
    files = bundle_files(
        [ocp("gpu-crio")],
        {"gpu-crio": {"crio/config-dump.toml": CRIO_DUMP,
                      "crio/files/etc/crio/crio.conf.d/99-nvidia.conf": dropin}},
        pods=pods)
    rt010 = run(tmp_path, files).by_id()["RT010:gpu-crio"]
    assert ("/etc/crio/crio.conf.d/99-nvidia.conf defines the handler but the running CRI-O "
            "has not loaded it") in rt010.summary
    assert "nodes/gpu-crio/crio/files/etc/crio/crio.conf.d/99-nvidia.conf" in [
        e.path for e in rt010.evidence]


def test_rt010_refused_dump_is_a_recorded_problem(tmp_path: Path) -> None:
    pods = [pod("cuda-a", "gpu-crio", namespace="ml", runtime_class="nvidia", phase="Pending")]
    refused = event("cuda-a", "FailedCreatePodSandBox", REFUSED, namespace="ml")
    files = bundle_files([ocp("gpu-crio")], {"gpu-crio": {"crio/config-dump.toml": "[crio\n"}},
                         pods=pods, events=[refused])
    report = run(tmp_path, files)
    rt010 = report.by_id()["RT010:gpu-crio"]
    assert "its loaded configuration was not collected" in rt010.summary
    assert [p.path for p in report.problems] == ["nodes/gpu-crio/crio/config-dump.toml"]


def test_rt007_reads_crio_handlers_on_crio_nodes(tmp_path: Path) -> None:
    files = bundle_files([ocp("gpu-crio")], {"gpu-crio": {"crio/config-dump.toml": CRIO_DUMP}})
    files.update(lists(runtimeclasses=[runtime_class("nvidia"), runtime_class("fast", "crun"),
                                       runtime_class("kata", "kata-qemu")]))
    found = run(tmp_path, files).by_id()
    assert sorted(k for k in found if k.startswith("RT007")) == ["RT007:handler/kata-qemu"]
    rt007 = found["RT007:handler/kata-qemu"]
    assert "no GPU node's loaded runtime configuration defines it (gpu-crio)" in rt007.summary
    assert rt007.evidence[1].path == "nodes/gpu-crio/crio/config-dump.toml"


def test_rt010_explains_the_stuck_operands(tmp_path: Path) -> None:
    plugin = pod("nvidia-device-plugin-daemonset-x1", "gpu-crio",
                 app="nvidia-device-plugin-daemonset", runtime_class="nvidia", phase="Pending",
                 init=1)
    refused = event("nvidia-device-plugin-daemonset-x1", "FailedCreatePodSandBox", REFUSED)
    files = bundle_files([ocp("gpu-crio")], {"gpu-crio": {"crio/config-dump.toml": CRIO_DUMP}},
                         pods=[plugin], events=[refused])
    found = run(tmp_path, files).by_id()
    assert found["RT010:gpu-crio"].causes == ["OP001:gpu-crio", "OP008:gpu-crio"]
    assert "RT010:gpu-crio" in found["OP001:gpu-crio"].caused_by
    assert "RT010:gpu-crio" in found["OP008:gpu-crio"].caused_by
    assert not any(k.startswith("RT001") for k in found)


def test_rt008_reads_helm_values_when_the_policy_has_no_env(tmp_path: Path) -> None:
    values = {"toolkit": {"env": [
        {"name": "CONTAINERD_CONFIG", "value": "/etc/containerd/config.toml"},
        {"name": "CONTAINERD_SOCKET", "value": "/run/containerd/containerd.sock"}]}}
    files = bundle_files([k3s("gpu-k3s")], {"gpu-k3s": {
        "containerd/config-dump.toml": K3S_GENERATED}})
    files["cluster/helm/gpu-operator.json"] = [
        {"revision": 1, "status": "superseded", "chart": "gpu-operator-v24.9.0",
         "app_version": "v24.9.0", "updated": "2026-11-01T00:00:00Z", "description": "x",
         "values": {}},
        {"revision": 2, "status": "deployed", "chart": "gpu-operator-v24.9.0",
         "app_version": "v24.9.0", "updated": "2026-11-02T00:00:00Z", "description": "y",
         "values": values}]
    rt008 = run(tmp_path, files).by_id()["RT008:gpu-k3s"]
    assert ("Helm release gpu-operator revision 2 sets CONTAINERD_CONFIG="
            "/etc/containerd/config.toml") in rt008.summary
    assert rt008.evidence[0].path == "cluster/helm/gpu-operator.json"
    assert rt008.evidence[0].pointer == "/1/values/toolkit/env/0"


def test_rt001_skipped_when_every_dump_is_of_the_wrong_file(tmp_path: Path) -> None:
    files = bundle_files([k3s("gpu-k3s")],
                         {"gpu-k3s": {"containerd/config-dump.toml": DUMP_WITHOUT_NVIDIA}})
    report = run(tmp_path, files, {
        "nodes/gpu-k3s/containerd/config-dump.toml": ["containerd", "config", "dump"]})
    assert status(report, "RT001") == (
        "skipped", "no GPU node's dump is of the file its containerd runs with; on gpu-k3s, the "
                   "dump was made with 'containerd config dump', which does not read "
                   f"{K3S_CONFIG}, the file this node's containerd runs with")


def test_hostile_config_path_from_runtime_json_is_never_offered(tmp_path: Path) -> None:
    hostile = K3S_CONFIG + "$(reboot)"
    files = bundle_files([k3s("gpu-k3s")], {"gpu-k3s": {
        "runtime.json": runtime_json("k3s", hostile),
        "containerd/config-dump.toml": K3S_GENERATED}})
    found = run(tmp_path, files).by_id()
    for finding_id in ("RT001:gpu-k3s", "RT008:gpu-k3s"):
        lines = found[finding_id].remediation.splitlines()
        assert any(line.startswith("# not offered: ") for line in lines)
        assert not any("$(reboot)" in line for line in lines if not line.startswith("#"))
