"""The runtime gate on bundles built from real public configurations and log lines.

One test per distribution (k3s, RKE2, k0s, MicroK8s, CRI-O): a failing node whose files
and log lines are short excerpts of a public issue thread or of the project's own
documentation (the URL stands beside each excerpt), and a healthy node of the same
distribution beside it. Each test asserts the exact runtime-gate findings of the whole
bundle: the root cause on the failing node, nothing of the gate on the healthy one, and
no RT004 anywhere (none of these nodes runs a ``containerd`` systemd unit).

Node names and versions are the threads' own where they give them, and differ from the
distribution samples (``samples/scenarios_distro.py``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kit import analyse
from kit.bundles import kube_node
from kit.objects import cluster_policy, event, lists, pod, runtime_class

from analyzers.results.models import Finding, Report

GRPC = 'plugins."io.containerd.grpc.v1.cri"'
NOT_FOUND_UNIT = ("LoadState=not-found\nActiveState=inactive\nSubState=dead\nRestart=no\n"
                  "NRestarts=0\nExecMainPID=0\n")
TOOLKIT_POD = "nvidia-container-toolkit-daemonset-r7x2k"
TOOLKIT_CTR = "nvidia-container-toolkit-ctr"


def gpu_node(name: str, kubelet: str, runtime: str, **labels: str) -> dict[str, Any]:
    return kube_node(name, 1, labels=labels,
                     node_info={"kubeletVersion": kubelet, "containerRuntimeVersion": runtime})


def detected(distribution: str, config: str, socket: str, runtime: str = "containerd",
             binary: str | None = None) -> str:
    """``runtime.json`` as the 1.1 node collector writes it."""
    return json.dumps({"runtime": runtime, "distribution": distribution, "config_path": config,
                       "socket": socket, "binary": binary, "signals": []})


def policy(toolkit: bool = True, **env: str) -> dict[str, Any]:
    found = cluster_policy(toolkit)
    if env:
        found["spec"]["toolkit"]["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return found


def analyze_bundle(tmp_path: Path, nodes: list[dict[str, Any]],
                   node_files: dict[str, dict[str, str]], *,
                   the_policy: dict[str, Any] | None, pods: list[dict[str, Any]],
                   events: list[dict[str, Any]] | None = None,
                   logs: dict[str, str] | None = None) -> Report:
    kinds: dict[str, list[dict[str, Any]]] = {
        "nodes": nodes, "pods": pods, "events": events or [],
        "runtimeclasses": [runtime_class("nvidia")]}
    if the_policy is not None:
        kinds["clusterpolicies"] = [the_policy]
    files: dict[str, Any] = lists(**kinds)
    for name, found in node_files.items():
        # the 1.1 collector's journal of a unit that does not exist is empty: RT004 is
        # judged (not skipped) and must stay quiet
        for rel, text in {"journal/containerd.jsonl": "", **found}.items():
            files[f"nodes/{name}/{rel}"] = text
    for where, text in (logs or {}).items():
        files[f"logs/{where}.log"] = text
    return analyse(files, tmp=tmp_path)


def gate(report: Report) -> dict[str, Finding]:
    """Every runtime-gate finding of the report, by id. RT004 judges no unit on these
    nodes: none runs containerd under a unit that exists (their containerd.txt says
    LoadState=not-found), or containerd is not their CRI at all (CRI-O)."""
    rt004 = next(r for r in report.rules if r.rule_id == "RT004")
    assert rt004.status.value == "skipped"
    assert (rt004.reason or "").startswith(
        ("no GPU node runs containerd under a unit that exists: ",
         "no GPU node runs containerd as its CRI: "))
    return {f.id: f for f in report.findings if f.rule_id.startswith("RT")}


def toolkit_pod(node_name: str, suffix: str) -> dict[str, Any]:
    found = pod(f"{TOOLKIT_POD}-{suffix}", node_name, app="nvidia-container-toolkit-daemonset")
    found["spec"]["containers"][0]["name"] = TOOLKIT_CTR
    return found


Dumper = Callable[[str], str]
_IMPORTS = re.compile(r"^imports = .*$", re.M)


@pytest.fixture(params=["as-written", "containerd-dump"])
def dumper(request: pytest.FixtureRequest) -> Dumper:
    """``containerd/config-dump.toml`` of a version 2 configuration: the text itself, or
    what the real containerd binary dumps of it (defaults filled in, its own formatting),
    as the node collector records it. Imports are left out of the file handed to the
    binary (they name files of the node)."""
    if request.param == "as-written":
        return lambda text: text
    binary = shutil.which("containerd")
    if binary is None:
        pytest.skip("containerd is not on PATH: the real binary's dump is not checked")

    def dump(text: str) -> str:
        with tempfile.TemporaryDirectory() as root:
            config = Path(root, "config.toml")
            config.write_text(_IMPORTS.sub("", text))
            done = subprocess.run([binary, "--config", str(config), "config", "dump"],
                                  capture_output=True, text=True, cwd=root, timeout=60,
                                  check=True)
        return done.stdout
    return dump


# -- k3s with containerd 2.0: the toolkit edits Docker's containerd ------------------------
# https://github.com/NVIDIA/nvidia-container-toolkit/issues/982 (comment of 2025-06-10):
# Ubuntu 24.04 with docker-ce (containerd.io 1.7.27) and k3s v1.32.5+k3s1, which embeds
# containerd v2.0.5-k3s1.32; gpu-operator v25.3.0 with only
#   - name: CONTAINERD_SOCKET
#     value: /run/k3s/containerd/containerd.sock
# The toolkit then edits /etc/containerd/config.toml, the file of Docker's containerd.

K3S_DIR = "/var/lib/rancher/k3s/agent/etc/containerd"
K3S_SOCKET = "/run/k3s/containerd/containerd.sock"
CRI_V1 = "plugins.'io.containerd.cri.v1.runtime'"
# k3s renders a version 3 configuration for containerd 2.0 (config-v3.toml.tmpl,
# https://docs.k3s.io/advanced#configuring-containerd); table names are single-quoted.
K3S_V3 = (
    "# File generated by k3s. DO NOT EDIT. Use config-v3.toml.tmpl instead.\n"
    "version = 3\n"
    'root = "/var/lib/rancher/k3s/agent/containerd"\n'
    'state = "/run/k3s/containerd"\n\n'
    "[grpc]\n"
    f'  address = "{K3S_SOCKET}"\n\n'
    f"[{CRI_V1}]\n"
    "  enable_selinux = false\n"
    "  enable_unprivileged_ports = true\n\n"
    f"[{CRI_V1}.containerd]\n"
    '  default_runtime_name = "runc"\n\n'
    f"[{CRI_V1}.containerd.runtimes.'runc']\n"
    '  runtime_type = "io.containerd.runc.v2"\n\n'
    f"[{CRI_V1}.containerd.runtimes.'runc'.options]\n"
    "  SystemdCgroup = true\n"
)
# k3s finds nvidia-container-runtime at start and renders the runtime itself
# (https://docs.k3s.io/advanced#nvidia-container-runtime-support).
K3S_V3_NVIDIA = K3S_V3 + (
    f"\n[{CRI_V1}.containerd.runtimes.'nvidia']\n"
    '  runtime_type = "io.containerd.runc.v2"\n\n'
    f"[{CRI_V1}.containerd.runtimes.'nvidia'.options]\n"
    '  BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"\n'
    "  SystemdCgroup = true\n"
)
# What the toolkit wrote for Docker's containerd 1.7 (the same thread).
TOOLKIT_TOP = 'imports = ["/etc/containerd/conf.d/*.toml"]\nversion = 2\n'
TOOLKIT_DROPIN = (f"version = 2\n\n[{GRPC}.containerd.runtimes.nvidia]\n"
                  '  runtime_type = "io.containerd.runc.v2"\n\n'
                  f"[{GRPC}.containerd.runtimes.nvidia.options]\n"
                  '  BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"\n')
# containerd's refusal, as in https://github.com/NVIDIA/gpu-operator/issues/413
NO_RUNTIME = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get '
              'sandbox runtime: no runtime for "nvidia" is configured')


def k3s_files(dump: str, toolkit_wrote: bool) -> dict[str, str]:
    found = {"runtime.json": detected("k3s", f"{K3S_DIR}/config.toml", K3S_SOCKET,
                                      binary="/var/lib/rancher/k3s/data/current/bin/containerd"),
             "containerd/config-dump.toml": dump,
             f"containerd/files{K3S_DIR}/config.toml": dump,
             "systemd/containerd.txt": NOT_FOUND_UNIT}
    if toolkit_wrote:
        found["containerd/files/etc/containerd/config.toml"] = TOOLKIT_TOP
        found["containerd/files/etc/containerd/conf.d/99-nvidia.toml"] = TOOLKIT_DROPIN
    return found


def test_k3s_containerd2_toolkit_edits_dockers_containerd(tmp_path: Path) -> None:
    nodes = [gpu_node(n, "v1.32.5+k3s1", "containerd://2.0.5-k3s1.32")
             for n in ("augmodo-gpu-1", "augmodo-gpu-2")]
    plugin = pod("nvidia-device-plugin-daemonset-5qk8d", "augmodo-gpu-1",
                 app="nvidia-device-plugin-daemonset", runtime_class="nvidia", phase="Pending",
                 init=1)
    report = analyze_bundle(
        tmp_path, nodes,
        {"augmodo-gpu-1": k3s_files(K3S_V3, toolkit_wrote=True),
         # the admin restarted k3s after the toolkit installed its runtime binaries
         "augmodo-gpu-2": k3s_files(K3S_V3_NVIDIA, toolkit_wrote=True)},
        the_policy=policy(CONTAINERD_SOCKET=K3S_SOCKET),
        pods=[plugin, toolkit_pod("augmodo-gpu-1", "a"), toolkit_pod("augmodo-gpu-2", "b")],
        events=[event(plugin["metadata"]["name"], "FailedCreatePodSandBox", NO_RUNTIME)])
    found = gate(report)
    assert sorted(found) == ["RT001:augmodo-gpu-1", "RT008:augmodo-gpu-1"]
    assert found["RT001:augmodo-gpu-1"].caused_by == ["RT008:augmodo-gpu-1"]
    rt008 = found["RT008:augmodo-gpu-1"]
    assert ("the toolkit's default /etc/containerd/config.toml is in effect, but this node's "
            f"containerd runs with {K3S_DIR}/config.toml") in rt008.summary
    # containerd 2.x: the template the toolkit must be told to edit is the v3 one
    assert f"#   CONTAINERD_CONFIG={K3S_DIR}/config-v3.toml.tmpl" in rt008.remediation


# -- RKE2: a Go template handed to the toolkit ---------------------------------------------
# https://github.com/rancher/rke2/issues/3385 and https://github.com/NVIDIA/gpu-operator/issues/673
# (RKE2 v1.24.8+rke2r1, containerd v1.6.8-k3s1, CONTAINERD_CONFIG naming config.toml.tmpl):
#   nvidia-container-toolkit-ctr time="2022-09-26T15:50:01Z" level=fatal msg="Error: unable
#   to load config: (6, 21): unexpected token type in inline table: keys cannot contain {
#   character"

RKE2_DIR = "/var/lib/rancher/rke2/agent/etc/containerd"
# The template's opening, in k3s/RKE2's template language
# (https://github.com/rancher/rke2/issues/4119 quotes the built-in template it copies).
RKE2_GO_TEMPLATE = (
    "# File generated by {{ .Program }}. DO NOT EDIT. Use config.toml.tmpl instead.\n"
    "version = 2\n\n"
    '[plugins."io.containerd.internal.v1.opt"]\n'
    '  path = "{{ .NodeConfig.Containerd.Opt }}"\n'
    '[plugins."io.containerd.grpc.v1.cri"]\n'
    '  stream_server_address = "127.0.0.1"\n'
)
RKE2_GENERATED = (
    "# File generated by rke2. DO NOT EDIT. Use config.toml.tmpl instead.\nversion = 2\n\n"
    '[plugins."io.containerd.internal.v1.opt"]\n  path = "/var/lib/rancher/rke2/agent/containerd"\n'
    f'[{GRPC}]\n  stream_server_address = "127.0.0.1"\n  stream_server_port = "10010"\n\n'
    f'[{GRPC}.containerd]\n  snapshotter = "overlayfs"\n\n'
    f'[{GRPC}.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
)
# A plain-TOML template that carries the runtime, in containerd's version 1 table names
# (https://github.com/rancher/rke2/issues/822, comment of 2021-08-18).
RKE2_PLAIN_TEMPLATE = (
    '[plugins.opt]\n  path = "/var/lib/rancher/rke2/agent/containerd"\n\n'
    '[plugins.cri]\n  stream_server_address = "127.0.0.1"\n  stream_server_port = "10010"\n\n'
    '[plugins.cri.containerd]\n  default_runtime_name = "nvidia"\n  snapshotter = "overlayfs"\n\n'
    '[plugins.cri.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n\n'
    '[plugins.cri.containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n\n'
    '  [plugins.cri.containerd.runtimes.nvidia.options]\n'
    '     BinaryName = "/usr/bin/nvidia-container-runtime"\n'
)
RKE2_LOADED_NVIDIA = RKE2_GENERATED.replace(
    '  snapshotter = "overlayfs"\n',
    '  default_runtime_name = "nvidia"\n  snapshotter = "overlayfs"\n') + (
    f'\n[{GRPC}.containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n\n'
    f'[{GRPC}.containerd.runtimes.nvidia.options]\n'
    '  BinaryName = "/usr/bin/nvidia-container-runtime"\n')
TOOLKIT_FATAL = ('time="2022-09-26T15:50:01Z" level=fatal msg="Error: unable to load config: '
                 '(6, 21): unexpected token type in inline table: keys cannot contain { '
                 'character"\n')


def rke2_files(template: str, loaded: str, dump: Dumper) -> dict[str, str]:
    return {"runtime.json": detected("rke2", f"{RKE2_DIR}/config.toml", K3S_SOCKET,
                                     binary="/var/lib/rancher/rke2/bin/containerd"),
            "containerd/config-dump.toml": dump(loaded),
            f"containerd/files{RKE2_DIR}/config.toml": loaded,
            f"containerd/files{RKE2_DIR}/config.toml.tmpl": template,
            "systemd/containerd.txt": NOT_FOUND_UNIT}


def test_rke2_go_template_stops_the_toolkit(tmp_path: Path, dumper: Dumper) -> None:
    nodes = [gpu_node(n, "v1.24.8+rke2r1", "containerd://1.6.8-k3s1")
             for n in ("flatcar-gpu-a", "flatcar-gpu-b")]
    report = analyze_bundle(
        tmp_path, nodes,
        {"flatcar-gpu-a": rke2_files(RKE2_GO_TEMPLATE, RKE2_GENERATED, dumper),
         "flatcar-gpu-b": rke2_files(RKE2_PLAIN_TEMPLATE, RKE2_LOADED_NVIDIA, dumper)},
        the_policy=policy(CONTAINERD_CONFIG=f"{RKE2_DIR}/config.toml.tmpl",
                          CONTAINERD_SOCKET=K3S_SOCKET),
        pods=[toolkit_pod("flatcar-gpu-a", "a"), toolkit_pod("flatcar-gpu-b", "b")],
        logs={f"gpu-operator/{TOOLKIT_POD}-a/{TOOLKIT_CTR}": TOOLKIT_FATAL,
              f"gpu-operator/{TOOLKIT_POD}-b/{TOOLKIT_CTR}":
                  'time="2022-09-26T15:50:01Z" level=info msg="Starting nvidia-toolkit"\n'})
    found = gate(report)
    assert sorted(found) == ["RT001:flatcar-gpu-a", "RT009:flatcar-gpu-a"]
    rt009 = found["RT009:flatcar-gpu-a"]
    assert f"the toolkit is told to edit {RKE2_DIR}/config.toml.tmpl, a Go template" \
        in rt009.summary
    assert "keys cannot contain { character" in rt009.summary
    assert found["RT001:flatcar-gpu-a"].caused_by == ["RT009:flatcar-gpu-a"]


# -- k0s: the documented drop-in, without a default runtime --------------------------------
# k0s' runtime documentation (https://docs.k0sproject.io/stable/runtime/, docs/runtime.md
# in k0sproject/k0s) has /etc/k0s/containerd.d/nvidia.toml define the runtime:
#   [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
#       runtime_type = "io.containerd.runc.v1"
#       [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
#       BinaryName = "/usr/bin/nvidia-container-runtime"
# and a pod that names no runtimeClassName then gets no driver:
# https://github.com/k0sproject/k0s/issues/1769 ("nvidia-smi: not found").

K0S_RUNTIME = (f"[{GRPC}.containerd.runtimes.nvidia]\n"
               '  privileged_without_host_devices = false\n'
               '  runtime_type = "io.containerd.runc.v1"\n'
               f"  [{GRPC}.containerd.runtimes.nvidia.options]\n"
               '  BinaryName = "/usr/bin/nvidia-container-runtime"\n')
K0S_DEFAULT = f'[{GRPC}.containerd]\n  default_runtime_name = "nvidia"\n\n'


def k0s_loaded(default: str) -> str:
    return ('imports = ["/run/k0s/containerd-cri.toml"]\nversion = 2\n'
            'root = "/var/lib/k0s/containerd"\nstate = "/run/k0s/containerd"\n\n'
            '[grpc]\n  address = "/run/k0s/containerd.sock"\n\n'
            f'[{GRPC}]\n  sandbox_image = "registry.k8s.io/pause:3.9"\n\n'
            f'[{GRPC}.containerd]\n  default_runtime_name = "{default}"\n\n'
            f'[{GRPC}.containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v1"\n\n'
            f'[{GRPC}.containerd.runtimes.nvidia.options]\n'
            '  BinaryName = "/usr/bin/nvidia-container-runtime"\n\n'
            f'[{GRPC}.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n')


def k0s_files(dropin: str, default: str, dump: Dumper) -> dict[str, str]:
    return {"runtime.json": detected("k0s", "/etc/k0s/containerd.toml",
                                     "/run/k0s/containerd.sock",
                                     binary="/var/lib/k0s/bin/containerd"),
            "containerd/config-dump.toml": dump(k0s_loaded(default)),
            "containerd/files/etc/k0s/containerd.d/nvidia.toml": dropin,
            "systemd/containerd.txt": NOT_FOUND_UNIT}


def test_k0s_documented_dropin_leaves_runc_the_default(tmp_path: Path, dumper: Dumper) -> None:
    nodes = [gpu_node(n, "v1.27.2+k0s", "containerd://1.7.1") for n in ("k0s-gtx-0", "k0s-gtx-1")]
    # a standalone device plugin (no GPU Operator) and one CUDA pod on each node
    pods = [pod(f"nvidia-device-plugin-daemonset-{n[-1]}", n, namespace="kube-system",
                app="nvidia-device-plugin-ds", runtime_class="nvidia")
            for n in ("k0s-gtx-0", "k0s-gtx-1")]
    pods += [pod(f"cuda-check-{n[-1]}", n, namespace="default", gpus=1)
             for n in ("k0s-gtx-0", "k0s-gtx-1")]
    report = analyze_bundle(
        tmp_path, nodes,
        {"k0s-gtx-0": k0s_files(K0S_RUNTIME, "runc", dumper),
         "k0s-gtx-1": k0s_files(K0S_DEFAULT + K0S_RUNTIME, "nvidia", dumper)},
        the_policy=None, pods=pods,
        logs={"default/cuda-check-0/main": "/bin/sh: 1: nvidia-smi: not found\n",
              "default/cuda-check-1/main":
                  "| NVIDIA-SMI 470.129.06   Driver Version: 470.129.06   CUDA Version: "
                  "11.4     |\n"})
    found = gate(report)
    assert sorted(found) == ["RT012:k0s-gtx-0"]
    rt012 = found["RT012:k0s-gtx-0"]
    assert "containerd's default runtime is runc, not nvidia" in rt012.summary
    assert "GPU pod(s) cuda-check-0 start without the driver" in rt012.summary
    assert "It has an nvidia runtime, but these pods name no runtimeClassName" in rt012.summary


# -- MicroK8s: the snap's template names its runtime nvidia-container-runtime ----------------
# MicroK8s' own containerd template (https://github.com/canonical/microk8s/blob/master/
# microk8s-resources/default-args/containerd-template.toml; older releases have
# runtime_type = "io.containerd.runtime.v1.linux" where newer ones have ${RUNTIME_TYPE}):
#   [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-container-runtime]
#     runtime_type = "${RUNTIME_TYPE}"
#     [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-container-runtime.options]
#       BinaryName = "nvidia-container-runtime"
# so a RuntimeClass with handler nvidia finds no runtime:
# https://github.com/canonical/microk8s/issues/2474 (MicroK8s v1.21: 'no runtime for
# "nvidia" is configured'). The GPU Operator's documented values for MicroK8s name the
# template: CONTAINERD_CONFIG=/var/snap/microk8s/current/args/containerd-template.toml,
# CONTAINERD_SOCKET=/var/snap/microk8s/common/run/containerd.sock.

MK8S_ARGS = "/var/snap/microk8s/current/args"
MK8S_SOCKET = "/var/snap/microk8s/common/run/containerd.sock"
MK8S_TEMPLATE = (
    "# Use config version 2 to enable new configuration fields.\nversion = 2\noom_score = 0\n\n"
    f'[{GRPC}]\n  sandbox_image = "registry.k8s.io/pause:3.7"\n\n'
    f'[{GRPC}.containerd]\n  snapshotter = "${{SNAPSHOTTER}}"\n  no_pivot = false\n'
    '  default_runtime_name = "${RUNTIME}"\n\n'
    f'  [{GRPC}.containerd.runtimes.runc]\n    runtime_type = "${{RUNTIME_TYPE}}"\n\n'
    f'  [{GRPC}.containerd.runtimes.nvidia-container-runtime]\n'
    '    runtime_type = "${RUNTIME_TYPE}"\n'
    f'    [{GRPC}.containerd.runtimes.nvidia-container-runtime.options]\n'
    '      BinaryName = "nvidia-container-runtime"\n'
)
# containerd.toml as the snap renders it (the variables filled in)
MK8S_RENDERED = (MK8S_TEMPLATE.replace("${SNAPSHOTTER}", "overlayfs")
                 .replace("${RUNTIME}", "runc").replace("${RUNTIME_TYPE}",
                                                        "io.containerd.runc.v2"))
MK8S_NVIDIA = (f'\n  [{GRPC}.containerd.runtimes.nvidia]\n'
               '    runtime_type = "io.containerd.runc.v2"\n'
               f'    [{GRPC}.containerd.runtimes.nvidia.options]\n'
               '      BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"\n')


def microk8s_files(template: str, loaded: str, dump: Dumper) -> dict[str, str]:
    return {"runtime.json": detected("microk8s", f"{MK8S_ARGS}/containerd.toml", MK8S_SOCKET,
                                     binary="/snap/microk8s/current/bin/containerd"),
            "containerd/config-dump.toml": dump(loaded),
            f"containerd/files{MK8S_ARGS}/containerd.toml": loaded,
            f"containerd/files{MK8S_ARGS}/containerd-template.toml": template,
            "systemd/containerd.txt": NOT_FOUND_UNIT,
            "systemd/snap.microk8s.daemon-containerd.txt": NOT_FOUND_UNIT}


def test_microk8s_template_runtime_is_not_named_nvidia(tmp_path: Path, dumper: Dumper) -> None:
    labels = {"microk8s.io/cluster": "true"}
    nodes = [gpu_node(n, "v1.21.4-3+e5758f73ed2a04", "containerd://1.4.4", **labels)
             for n in ("mk8s-g4dn-1", "mk8s-g4dn-2")]
    cuda = pod("cuda-vector-add", "mk8s-g4dn-1", namespace="default", runtime_class="nvidia",
               phase="Pending", gpus=1)
    report = analyze_bundle(
        tmp_path, nodes,
        {"mk8s-g4dn-1": microk8s_files(MK8S_TEMPLATE, MK8S_RENDERED, dumper),
         "mk8s-g4dn-2": microk8s_files(MK8S_TEMPLATE + MK8S_NVIDIA,
                                       MK8S_RENDERED + MK8S_NVIDIA, dumper)},
        the_policy=policy(CONTAINERD_CONFIG=f"{MK8S_ARGS}/containerd-template.toml",
                          CONTAINERD_SOCKET=MK8S_SOCKET),
        # the toolkit pod of mk8s-g4dn-1 is gone (the node was added after it failed)
        pods=[cuda, toolkit_pod("mk8s-g4dn-2", "b")],
        events=[event("cuda-vector-add", "FailedCreatePodSandBox", NO_RUNTIME,
                      namespace="default")])
    found = gate(report)
    assert sorted(found) == ["RT001:mk8s-g4dn-1"]
    rt001 = found["RT001:mk8s-g4dn-1"]
    assert rt001.caused_by == []


# -- CRI-O (on RKE2): nvidia-ctk's drop-in is not in CRI-O's loaded configuration -----------
# https://github.com/NVIDIA/gpu-operator/issues/2236: an RKE2 worker with CRI-O, toolkit
# 1.19.0 installed by hand (`nvidia-ctk runtime configure --runtime=crio`), the operator
# installed with driver and toolkit disabled; /etc/crio/conf.d/99-nvidia.toml holds
#   [crio.runtime.runtimes.nvidia]
#     runtime_path = "/usr/bin/nvidia-container-runtime"
# and pods are refused:
#   Failed to create pod sandbox: rpc error: code = Unknown desc = failed to find runtime
#   handler nvidia from runtime list map[crun:0xc000305680 runc:0xc000305980]

CRIO_LOADED = ('[crio.runtime]\n  default_runtime = "crun"\n\n'
               '[crio.runtime.runtimes.crun]\n  runtime_path = "/usr/libexec/crio/crun"\n'
               '  runtime_type = "oci"\n\n'
               '[crio.runtime.runtimes.runc]\n  runtime_path = "/usr/libexec/crio/runc"\n'
               '  runtime_type = "oci"\n')
CRIO_NVIDIA = CRIO_LOADED + ('\n[crio.runtime.runtimes.nvidia]\n'
                             '  runtime_path = "/usr/bin/nvidia-container-runtime"\n'
                             '  runtime_type = "oci"\n')
CRIO_REFUSED = ("Failed to create pod sandbox: rpc error: code = Unknown desc = failed to find "
                "runtime handler nvidia from runtime list map[crun:0xc000305680 "
                "runc:0xc000305980]")


def crio_files(loaded: str) -> dict[str, str]:
    return {"runtime.json": detected("rke2", "/etc/crio/crio.conf", "/var/run/crio/crio.sock",
                                     runtime="cri-o"),
            "crio/config-dump.toml": loaded,
            "systemd/containerd.txt": NOT_FOUND_UNIT}


def test_crio_on_rke2_without_the_nvidia_handler(tmp_path: Path) -> None:
    nodes = [gpu_node(n, "v1.32.4+rke2r1", "cri-o://1.32.3")
             for n in ("k8s-worker-gpu-01", "k8s-worker-gpu-02")]
    plugins = [pod(f"nvidia-device-plugin-daemonset-{i}", n,
                   app="nvidia-device-plugin-daemonset", runtime_class="nvidia",
                   phase="Pending" if i == "a" else "Running", init=1 if i == "a" else 0)
               for i, n in (("a", "k8s-worker-gpu-01"), ("b", "k8s-worker-gpu-02"))]
    report = analyze_bundle(
        tmp_path, nodes,
        {"k8s-worker-gpu-01": crio_files(CRIO_LOADED),
         "k8s-worker-gpu-02": crio_files(CRIO_NVIDIA)},
        the_policy=policy(toolkit=False), pods=plugins,
        events=[event("nvidia-device-plugin-daemonset-a", "FailedCreatePodSandBox",
                      CRIO_REFUSED)])
    found = gate(report)
    assert sorted(found) == ["RT010:k8s-worker-gpu-01"]
    rt010 = found["RT010:k8s-worker-gpu-01"]
    assert ("CRI-O's loaded configuration has no 'nvidia' handler (handlers: crun, runc)"
            in rt010.summary)
    assert "1 sandbox failure event(s) confirm it" in rt010.summary


# -- RKE2 with containerd 2.0: the toolkit told to edit the generated config.toml ----------
# https://github.com/rancher/rke2/issues/8752 (2025-08-08): values with
#   - name: CONTAINERD_CONFIG
#     value: /var/lib/rancher/rke2/agent/etc/containerd/config.toml
# no longer give the nvidia default "with the latest version of RKE"; RKE2 includes
# containerd 2.0 as of v1.31.6+rke2r1 and v1.32.2+rke2r1 and renders a version 3
# configuration from config-v3.toml.tmpl (RKE2's documentation, quoted in
# https://github.com/cedana/cedana/pull/796).

RKE2_V3 = K3S_V3.replace("k3s", "rke2").replace(K3S_SOCKET, K3S_SOCKET)
RKE2_V3_NVIDIA = K3S_V3_NVIDIA.replace("k3s", "rke2")


def rke2_v3_files(loaded: str) -> dict[str, str]:
    return {"runtime.json": detected("rke2", f"{RKE2_DIR}/config.toml", K3S_SOCKET,
                                     binary="/var/lib/rancher/rke2/bin/containerd"),
            "containerd/config-dump.toml": loaded,
            f"containerd/files{RKE2_DIR}/config.toml": loaded,
            "systemd/containerd.txt": NOT_FOUND_UNIT}


def test_rke2_containerd2_toolkit_edits_the_generated_file(tmp_path: Path) -> None:
    nodes = [gpu_node(n, "v1.32.7+rke2r1", "containerd://2.0.5-k3s2")
             for n in ("inzanez-gpu-1", "inzanez-gpu-2")]
    report = analyze_bundle(
        tmp_path, nodes,
        {"inzanez-gpu-1": rke2_v3_files(RKE2_V3),
         # RKE2 found nvidia-container-runtime at its last start and rendered the runtime
         "inzanez-gpu-2": rke2_v3_files(RKE2_V3_NVIDIA)},
        the_policy=policy(CONTAINERD_SOCKET=K3S_SOCKET, CONTAINERD_RUNTIME_CLASS="nvidia",
                          CONTAINERD_SET_AS_DEFAULT="true",
                          CONTAINERD_CONFIG=f"{RKE2_DIR}/config.toml"),
        pods=[toolkit_pod("inzanez-gpu-1", "a"), toolkit_pod("inzanez-gpu-2", "b")])
    found = gate(report)
    assert sorted(found) == ["RT001:inzanez-gpu-1", "RT009:inzanez-gpu-1"]
    rt009 = found["RT009:inzanez-gpu-1"]
    assert (f"the toolkit is told to edit {RKE2_DIR}/config.toml, which rke2 rebuilds from "
            f"{RKE2_DIR}/config-v3.toml.tmpl") in rt009.summary
    # containerd 2.x: the template to hand the toolkit is the version 3 one
    assert f"#   CONTAINERD_CONFIG={RKE2_DIR}/config-v3.toml.tmpl" in rt009.remediation
    assert found["RT001:inzanez-gpu-1"].caused_by == ["RT009:inzanez-gpu-1"]


# -- k3s on containerd 2.0: which template is in effect ------------------------------------
# k3s/RKE2 on containerd 2.0 render config-v3.toml.tmpl and read config.toml.tmpl only
# when it is missing (RKE2's documentation quoted in https://github.com/cedana/cedana/pull/796;
# https://docs.k3s.io/advanced#configuring-containerd). A node upgraded with an old
# config.toml.tmpl that has the runtime and a new config-v3.toml.tmpl without it loses
# the runtime at the next start.

K3S_V3_TEMPLATE = K3S_V3.replace(
    "# File generated by k3s. DO NOT EDIT. Use config-v3.toml.tmpl instead.\n", "")
K3S_V3_TEMPLATE_NVIDIA = K3S_V3_NVIDIA.replace(
    "# File generated by k3s. DO NOT EDIT. Use config-v3.toml.tmpl instead.\n", "")
K3S_V2_TEMPLATE = TOOLKIT_DROPIN  # a version 2 file carrying the nvidia runtime


def test_k3s_containerd2_judges_the_v3_template(tmp_path: Path) -> None:
    def files(v3_template: str) -> dict[str, str]:
        found = k3s_files(K3S_V3_NVIDIA, toolkit_wrote=False)
        found[f"containerd/files{K3S_DIR}/config.toml.tmpl"] = K3S_V2_TEMPLATE
        found[f"containerd/files{K3S_DIR}/config-v3.toml.tmpl"] = v3_template
        return found

    nodes = [gpu_node("k3s-a100-1", "v1.32.5+k3s1", "containerd://2.0.5-k3s1.32"),
             gpu_node("k3s-a100-2", "v1.32.5+k3s1", "containerd://2.0.5-k3s1.32"),
             # containerd 1.7: k3s knows no v3 template, config.toml.tmpl is in effect
             gpu_node("k3s-a100-3", "v1.30.4+k3s1", "containerd://1.7.20-k3s1")]
    report = analyze_bundle(
        tmp_path, nodes,
        {"k3s-a100-1": files(K3S_V3_TEMPLATE),
         "k3s-a100-2": files(K3S_V3_TEMPLATE_NVIDIA),
         "k3s-a100-3": files(K3S_V3_TEMPLATE)},
        the_policy=policy(CONTAINERD_CONFIG=f"{K3S_DIR}/config-v3.toml.tmpl",
                          CONTAINERD_SOCKET=K3S_SOCKET),
        pods=[])
    found = gate(report)
    assert sorted(found) == ["RT009:k3s-a100-1"]
    rt009 = found["RT009:k3s-a100-1"]
    assert (f"{K3S_DIR}/config.toml defines the nvidia runtime but "
            f"{K3S_DIR}/config-v3.toml.tmpl") in rt009.summary
