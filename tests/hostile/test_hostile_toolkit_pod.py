"""The toolkit pod's volumes, mounts and env on a hostile bundle: read in linear time.

Two readers compared every entry of one list with every entry of another:
``facts.toolkit_env.pod_settings`` rebuilt the pod's hostPath volumes and walked the
container's mounts for every path variable it met (3,000 of each, a 1 MB pods.json: 7 s;
20,000: minutes), and RT011's driver root walked every volume for every mount at
``/driver-root``. And RT011 listed every untyped ``nvidia*`` runtime and every missing
binary in its summary, however many there were. No timing is asserted: before the
change the large cases did not end in a test run.

Setups follow tests/test_toolkit_env_hostpath.py (the operator's toolkit DaemonSet
volumes) and tests/rules/test_rt011.py (NVIDIA/gpu-operator#511 wording).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kit import analyse
from kit import findings as of
from kit.bundles import write_dir
from kit.runtime import dump, event, files, pod

from analyzers.facts import Facts
from bundle import open_bundle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rules"))

from test_rt011 import NAME_UNSET, NVML_LOAD, plugin  # noqa: E402

MANY = 20_000


def _flooded_toolkit(node_name: str) -> dict[str, Any]:
    found = pod("nvidia-container-toolkit-daemonset-t1", node_name,
                app="nvidia-container-toolkit-daemonset")
    container = found["spec"]["containers"][0]
    container["env"] = [{"name": "CONTAINERD_CONFIG", "value": f"/nowhere/{i}"}
                        for i in range(MANY)]
    container["env"].append({"name": "CONTAINERD_SOCKET",
                             "value": "/runtime/sock-dir/containerd.sock"})
    container["volumeMounts"] = [{"name": f"v{i}", "mountPath": "/driver-root"}
                                 for i in range(MANY)]
    container["volumeMounts"].append({"name": "containerd-socket",
                                      "mountPath": "/runtime/sock-dir/"})
    container["volumeMounts"].append({"name": "driver-install-dir", "mountPath": "/driver-root"})
    found["spec"]["volumes"] = [{"name": f"w{i}", "hostPath": {"path": f"/h{i}"}}
                                for i in range(MANY)]
    found["spec"]["volumes"] += [
        {"name": "containerd-socket", "hostPath": {"path": "/run/k3s/containerd"}},
        {"name": "driver-install-dir", "hostPath": {"path": "/run/nvidia/driver"}}]
    return found


def test_toolkit_settings_of_a_flooded_pod(tmp_path: Path) -> None:
    bundle = files({"gpu-a": {"containerd/config-dump.toml": dump()}},
                   [_flooded_toolkit("gpu-a")])
    with open_bundle(write_dir(tmp_path / "b", bundle)) as opened:
        found = Facts(opened).toolkit_settings
    # the first CONTAINERD_CONFIG lies under no mount: that variable is not a host path
    assert {k: s.value for k, s in found.items()} == {
        "CONTAINERD_SOCKET": "/run/k3s/containerd/containerd.sock"}


def test_rt011_driver_root_of_a_flooded_pod(tmp_path: Path) -> None:
    validator = pod("nvidia-operator-validator-v1", "gpu-a", app="nvidia-operator-validator",
                    runtime_class="nvidia", phase="Pending", init=1)
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump()}},
        [validator, _flooded_toolkit("gpu-a")],
        [event("nvidia-operator-validator-v1", "Failed", NVML_LOAD)]), tmp=tmp_path)
    finding = of(report, "RT011")["RT011:gpu-a"]
    assert ("cannot load libnvidia-ml.so.1 from the driver root /run/nvidia/driver (hostPath "
            "of the toolkit pod nvidia-container-toolkit-daemonset-t1)") in finding.summary
    assert finding.evidence[0].pointer == f"/items/1/spec/volumes/{MANY + 1}/hostPath/path"


def test_rt011_names_four_untyped_runtimes_and_counts_the_rest(tmp_path: Path) -> None:
    untyped = "".join(f'\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.'
                      f'nvidia-{i:05d}]\n  runtime_type = ""\n' for i in range(2_000))
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(nvidia='runtime_type = ""') + untyped}},
        [plugin("gpu-a")], [event(plugin("gpu-a")["metadata"]["name"],
                                  "FailedCreatePodSandBox", NAME_UNSET)]), tmp=tmp_path)
    summary = of(report, "RT011")["RT011:gpu-a"].summary
    assert ("the runtime table(s) nvidia, nvidia-00000, nvidia-00001, nvidia-00002 and 1997 "
            "more have no runtime_type") in summary
    assert "nvidia-00003" not in summary


def test_rt011_many_failing_pods_are_found_once_each(tmp_path: Path) -> None:
    """Each pod was looked up by scanning the node's matching events, compared by value:
    pods x events comparisons of whole objects."""
    many = 3_000
    plugins = [plugin("gpu-a", f"nvidia-device-plugin-daemonset-{i:05d}") for i in range(many)]
    events = [event(p["metadata"]["name"], "FailedCreatePodSandBox", NAME_UNSET)
              for p in plugins]
    report = analyse(files(
        {"gpu-a": {"containerd/config-dump.toml": dump(nvidia='runtime_type = ""')}},
        plugins, events), tmp=tmp_path)
    finding = of(report, "RT011")["RT011:gpu-a"]
    assert finding.summary.endswith(
        " Affected pods: nvidia-device-plugin-daemonset-00000, "
        "nvidia-device-plugin-daemonset-00001, nvidia-device-plugin-daemonset-00002, "
        "nvidia-device-plugin-daemonset-00003 and 2996 more.")
    assert len([o for o in finding.objects if o.kind == "Pod"]) == 10
