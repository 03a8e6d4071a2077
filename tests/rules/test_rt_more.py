"""RT002–RT007: drop-in clobber and import, containerd restarts, CRI plugin, CDI, references."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from kit import analyse
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

MAIN = 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
REGISTRY = ('# registry mirrors\n[plugins."io.containerd.grpc.v1.cri".registry]\n'
            '  config_path = "/etc/containerd/certs.d"\n')
FILES = "containerd/files/etc/containerd"


def _base(**extra_nodes: dict[str, str]) -> dict[str, Any]:
    files: dict[str, Any] = lists(nodes=[node("gpu-a"), node("gpu-b")],
                                  runtimeclasses=[runtime_class("nvidia")],
                                  clusterpolicies=[cluster_policy(True)], pods=[])
    for name, node_files in extra_nodes.items():
        for rel, text in node_files.items():
            files[f"nodes/{name}/{rel}"] = text
    return files


def _clobbered(name: str) -> dict[str, str]:
    return {f"{FILES}/config.toml": MAIN, f"{FILES}/conf.d/99-nvidia.toml": NVIDIA_DROPIN,
            f"{FILES}/conf.d/{name}": REGISTRY,
            "containerd/version.txt": "containerd containerd.io 1.7.27 05044ec0a9a7\n",
            "containerd/config-dump.toml": DUMP_WITHOUT_NVIDIA}


def test_rt002_names_the_clobbering_and_the_overridden_file(tmp_path: Path) -> None:
    healthy = {**_clobbered("00-registry.toml"),
               "containerd/config-dump.toml": DUMP_WITH_NVIDIA}
    found = analyse(_base(**{"gpu-a": _clobbered("zz-registry.toml"),
                                             "gpu-b": healthy}), tmp=tmp_path).by_id()
    assert "RT002:gpu-b" not in found and "RT001:gpu-b" not in found
    rt002 = found["RT002:gpu-a"]
    assert "/etc/containerd/conf.d/zz-registry.toml loads after " \
           "/etc/containerd/conf.d/99-nvidia.toml" in rt002.summary
    assert rt002.evidence[0].path == f"nodes/gpu-a/{FILES}/conf.d/zz-registry.toml"
    assert rt002.evidence[0].line == 2
    assert rt002.evidence[1].path == f"nodes/gpu-a/{FILES}/conf.d/99-nvidia.toml"
    assert 'config_path = "/etc/containerd/certs.d"' in rt002.remediation
    assert "runtimes.nvidia" in rt002.remediation
    assert rt002.causes == ["RT001:gpu-a"]
    assert found["RT001:gpu-a"].caused_by == ["RT002:gpu-a"]


def test_rt003_dropin_without_imports(tmp_path: Path) -> None:
    gpu_a = {f"{FILES}/config.toml": "version = 2\n",
             f"{FILES}/conf.d/99-nvidia.toml": NVIDIA_DROPIN,
             "containerd/config-dump.toml": DUMP_WITHOUT_NVIDIA}
    gpu_b = {**gpu_a, f"{FILES}/config.toml": MAIN,
             "containerd/config-dump.toml": DUMP_WITH_NVIDIA}
    found = analyse(_base(**{"gpu-a": gpu_a, "gpu-b": gpu_b}), tmp=tmp_path).by_id()
    rt003 = found["RT003:gpu-a"]
    assert rt003.evidence[0].path == f"nodes/gpu-a/{FILES}/conf.d/99-nvidia.toml"
    assert "RT003:gpu-b" not in found and "RT002:gpu-a" not in found
    assert found["RT001:gpu-a"].caused_by == ["RT003:gpu-a"]


def test_rt003_names_a_relative_import_glob(tmp_path: Path) -> None:
    gpu_a = {f"{FILES}/config.toml": 'version = 2\nimports = ["conf.d/*.toml"]\n',
             f"{FILES}/conf.d/99-nvidia.toml": NVIDIA_DROPIN,
             "containerd/version.txt": "containerd github.com/containerd/containerd 1.6.20~ds1\n",
             "containerd/config-dump.toml": DUMP_WITHOUT_NVIDIA}
    found = analyse(_base(**{"gpu-a": gpu_a}), tmp=tmp_path).by_id()
    assert "imports conf.d/*.toml by a relative path" in found["RT003:gpu-a"].summary


def _journal(*messages: tuple[int, str, str, int]) -> str:
    lines = []
    for seconds, ident, message, pid in messages:
        lines.append(orjson.dumps({"__REALTIME_TIMESTAMP": str((1_764_400_000 + seconds) * 10**6),
                                   "SYSLOG_IDENTIFIER": ident, "MESSAGE": message,
                                   "_PID": str(pid)}).decode())
    return "\n".join(lines) + "\n"


HUP_RESTART = _journal(
    (0, "containerd", "containerd successfully booted in 0.05s", 1234),
    (60, "systemd", "containerd.service: Main process exited, code=killed, status=1/HUP", 1),
    (65, "systemd", "containerd.service: Scheduled restart job, restart counter is at 1.", 1),
    (65, "systemd", "Started containerd.service - containerd container runtime.", 1),
    (66, "containerd", "containerd successfully booted in 0.04s", 5678),
)
UNIT_ALWAYS = "Restart=always\nRestartUSec=5s\nNRestarts=1\nActiveState=active\nSubState=running\n"


def test_rt004_sighup_restart_is_reported_with_pids(tmp_path: Path) -> None:
    files = _base(**{"gpu-a": {"journal/containerd.jsonl": HUP_RESTART,
                               "systemd/containerd.txt": UNIT_ALWAYS},
                     "gpu-b": {"journal/containerd.jsonl": _journal(
                         (0, "containerd", "containerd successfully booted", 99)),
                         "systemd/containerd.txt": UNIT_ALWAYS}})
    found = analyse(files, tmp=tmp_path).by_id()
    rt004 = found["RT004:gpu-a"]
    assert rt004.severity.value == "low"
    assert "1 after a SIGHUP kill" in rt004.summary and "1234 → 5678" in rt004.summary
    assert rt004.evidence[0].path == "nodes/gpu-a/journal/containerd.jsonl"
    assert [e.line for e in rt004.evidence[:2]] == [2, 4]
    assert "RT004:gpu-b" not in found


def test_rt004_restart_policy_and_loops(tmp_path: Path) -> None:
    loop = _journal(*[(i * 60, "systemd", "Started containerd.service - containerd container "
                       "runtime.", 1) for i in range(4)])
    files = _base(**{"gpu-a": {"journal/containerd.jsonl": HUP_RESTART,
                               "systemd/containerd.txt": UNIT_ALWAYS.replace(
                                   "Restart=always", "Restart=on-failure")},
                     "gpu-b": {"journal/containerd.jsonl": loop,
                               "systemd/containerd.txt": UNIT_ALWAYS}})
    found = analyse(files, tmp=tmp_path).by_id()
    assert found["RT004:gpu-a"].severity.value == "high"
    assert "Restart=on-failure" in found["RT004:gpu-a"].summary
    assert found["RT004:gpu-b"].severity.value == "high"
    assert "restart loop" in found["RT004:gpu-b"].summary


def test_rt005_cri_disabled(tmp_path: Path) -> None:
    dump = 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
    files = _base(**{"gpu-a": {"containerd/config-dump.toml": dump},
                     "gpu-b": {"containerd/config-dump.toml": DUMP_WITH_NVIDIA}})
    found = analyse(files, tmp=tmp_path).by_id()
    assert found["RT005:gpu-a"].evidence[0].line == 2
    assert "RT005:gpu-b" not in found


def test_rt006_cdi_spec_missing_or_stale(tmp_path: Path) -> None:
    policy = cluster_policy(True)
    policy["spec"]["cdi"] = {"enabled": True}
    smi = ('<?xml version="1.0" ?><nvidia_smi_log><driver_version>570.195.03</driver_version>'
           '<gpu id="00000000:01:00.0"><product_name>NVIDIA A100</product_name></gpu>'
           '</nvidia_smi_log>')
    stale = ("containerEdits:\n  mounts:\n"
             "  - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\n")
    fresh = stale.replace("550.54.15", "570.195.03")
    files = _base(**{"gpu-a": {"nvidia-smi.xml": smi, "cdi/var/run/cdi/nvidia.yaml": stale},
                     "gpu-b": {"nvidia-smi.xml": smi, "cdi/var/run/cdi/nvidia.yaml": fresh}})
    files.update(lists(clusterpolicies=[policy]))
    files["nodes/gpu-c/nvidia-smi.xml"] = smi
    found = analyse(files, tmp=tmp_path,
                    failed=[{"path": "nodes/gpu-c/cdi/", "error": "no such file"}]).by_id()
    assert "generated for driver 550.54.15" in found["RT006:gpu-a"].summary
    assert "RT006:gpu-b" not in found
    assert "no NVIDIA CDI spec" in found["RT006:gpu-c"].summary


def test_rt007_unknown_class_and_missing_handler(tmp_path: Path) -> None:
    files = _base(**{"gpu-a": {"containerd/config-dump.toml": DUMP_WITH_NVIDIA},
                     "gpu-b": {"containerd/config-dump.toml": DUMP_WITH_NVIDIA}})
    files.update(lists(
        runtimeclasses=[runtime_class("nvidia"), runtime_class("kata-qemu", "kata")],
        pods=[pod("train-0", None, namespace="ml", runtime_class="nvidia-legacy",
                  phase="Pending"),
              pod("ok-0", "gpu-a", namespace="ml", runtime_class="nvidia")],
        events=[event("train-0", "FailedCreate",
                      'pods "train-0" is forbidden: RuntimeClass "nvidia-legacy" not found',
                      namespace="ml")]))
    found = analyse(files, tmp=tmp_path).by_id()
    assert "ml/train-0" in found["RT007:class/nvidia-legacy"].summary
    assert found["RT007:handler/kata"].nodes == ["gpu-a", "gpu-b"]
    assert "RT007:class/nvidia" not in found and "RT007:handler/nvidia" not in found
