"""OP001 on a stage no rule explains: the root never ends on "no rule identified"; it
quotes the first error of the stage's logs, or names the command to ask for next, shaped
by what the bundle could not have (a disabled component, refused node data, no node
files)."""

from __future__ import annotations

from pathlib import Path

from kit import analyse
from kit import findings as of_rule
from kit.cluster import Cluster, cluster_policy, operand_pod, pod_name

VALIDATOR = "nvidia-operator-validator"


EXPORTER = "nvidia-dcgm-exporter"
# dcgm-exporter 3.1.3 panicking while it maps metrics to pods, a wording no rule knows
# (https://github.com/NVIDIA/dcgm-exporter/issues/133).
EXPORTER_LOG = [
    'time="2023-01-23T22:28:13Z" level=info msg="Kubernetes metrics collection enabled!"',
    'time="2023-01-23T22:28:13Z" level=info msg="Pipeline starting"',
    'time="2023-01-23T22:28:13Z" level=info msg="Starting webserver"',
    "panic: assignment to entry in nil map",
    "",
    "goroutine 148 [running]:",
]


def test_the_first_error_of_the_stuck_container_is_quoted(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.put(operand_pod(EXPORTER, "gpu-a", mains={EXPORTER: "waiting:CrashLoopBackOff"},
                            restarts=12))
    cluster.log(EXPORTER, "gpu-a", EXPORTER, ["level=info msg=starting"])
    cluster.log(EXPORTER, "gpu-a", EXPORTER, EXPORTER_LOG, previous=True)
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-a"]
    assert "stops at the other operands stage" in op.summary
    # the crash loop's own record (CMP007) is linked; the sentence quotes the first error
    assert op.caused_by == ["CMP007:gpu-operator/nvidia-dcgm-exporter"]
    path = f"logs/gpu-operator/{pod_name(EXPORTER, 'gpu-a')}/{EXPORTER}.previous.log"
    # the kit writes `kubectl logs --timestamps` lines: quoted without the timestamp
    assert ("No known cause explains why the other operands stage fails; the first error "
            f"its logs show is 'panic: assignment to entry in nil map' ({path} line 4).") \
        in op.summary
    assert "Ask next" not in op.summary


def test_a_disabled_toolkit_has_no_pod_to_read_the_host_runtime_is_asked_for(
        tmp_path: Path) -> None:
    cluster = Cluster(policies=[cluster_policy()])
    assert cluster.policies is not None
    cluster.policies[0]["spec"]["toolkit"] = {"enabled": False}
    del cluster.pods[pod_name("nvidia-container-toolkit-daemonset", "gpu-a")]
    del cluster.pods[pod_name("nvidia-container-toolkit-daemonset", "gpu-b")]
    cluster.put(operand_pod(VALIDATOR, "gpu-a", inits={"driver-validation": "done",
                                                       "toolkit-validation": "running"}))
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-a"]
    assert "stops at the toolkit stage" in op.summary
    assert ("the ClusterPolicy disables the operator's toolkit (spec.toolkit.enabled=false), "
            "so no pod of it exists whose log could say; the host's own container runtime "
            "configuration is what to read") in op.summary
    assert op.summary.count("Ask next for the output of: kubectl debug node/gpu-a -it "
                            "--image=ubuntu -- chroot /host sh -c 'containerd config dump | "
                            "grep -n -A4 nvidia'") == 1
    assert "No rule identified" not in op.summary


def test_refused_node_data_asks_for_the_command_over_ssh(tmp_path: Path) -> None:
    cluster = Cluster()
    for path in [p for p in cluster.files if p.startswith("nodes/gpu-a/")]:
        del cluster.files[path]
    cluster.failed.append({
        "path": "nodes/gpu-a/host/dmesg.txt", "node": "gpu-a",
        "error": 'pods "node-debugger-gpu-a" is forbidden: User "system:serviceaccount:ops:'
                 'triage" cannot create resource "pods" in API group "" in the namespace '
                 '"default"'})
    cluster.put(operand_pod(VALIDATOR, "gpu-a", inits={"driver-validation": "running"}))
    cluster.log(VALIDATOR, "gpu-a", "driver-validation",
                ["running command chroot with args [/run/nvidia/driver nvidia-smi]"])
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-a"]
    assert "stops at the driver stage" in op.summary
    assert ("the collector could not read the node's files (refused by RBAC (the collecting "
            "identity lacks permission)), and the kernel says whether and why the nvidia module "
            "did not load; debug pods were refused, so run it over SSH. Ask next for the output "
            "of: ssh gpu-a -- \"dmesg | grep -iE 'NVRM|nvidia' | tail -50; lsmod | grep -E "
            "'^nvidia'\"") in op.summary


def test_without_node_files_and_without_errors_the_node_command_runs_in_a_debug_pod(
        tmp_path: Path) -> None:
    cluster = Cluster()
    for path in [p for p in cluster.files if p.startswith("nodes/gpu-b/")]:
        del cluster.files[path]
    cluster.put(operand_pod(VALIDATOR, "gpu-b", inits={"driver-validation": "running"}))
    cluster.log(VALIDATOR, "gpu-b", "driver-validation",
                ["running command chroot with args [/run/nvidia/driver nvidia-smi]"])
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-b"]
    assert ("The bundle does not say why the driver stage fails: the bundle holds no files of "
            "the node itself, and the kernel says whether and why the nvidia module did not "
            "load. Ask next for the output of: kubectl debug node/gpu-b -it --image=ubuntu -- "
            "chroot /host sh -c \"dmesg | grep -iE 'NVRM|nvidia' | tail -50; lsmod | grep -E "
            "'^nvidia'\"") in op.summary


def test_a_hostile_pod_name_gives_no_command(tmp_path: Path) -> None:
    cluster = Cluster()
    pod = operand_pod(VALIDATOR, "gpu-a", inits={"driver-validation": "running"})
    pod["metadata"]["name"] = "validator;rm -rf /"
    cluster.put(pod)
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-a"]
    # the name is not safe in a command line: the sentence says why and offers none
    assert op.summary.split(" Operands:")[0].endswith(
        "validator;rm -rf /: the bundle holds no log of its driver-validation container; its "
        "log is where the driver stage says what fails.")
    assert "Ask next" not in op.summary


def test_an_oom_killed_container_without_the_kernel_record_asks_for_it(tmp_path: Path) -> None:
    cluster = Cluster()
    pod = operand_pod(EXPORTER, "gpu-b", mains={EXPORTER: "waiting:CrashLoopBackOff"},
                      restarts=3)
    status = pod["status"]["containerStatuses"][0]
    status["lastState"] = {"terminated": {"reason": "OOMKilled", "exitCode": 137}}
    pod["spec"]["containers"][0]["resources"] = {"limits": {"memory": "512Mi"}}
    cluster.put(pod)
    cluster.log(EXPORTER, "gpu-b", EXPORTER, EXPORTER_LOG[:3], previous=True)
    op = of_rule(analyse(cluster, tmp=tmp_path), "OP001")["OP001:gpu-b"]
    assert op.caused_by == ["CMP008:gpu-operator/nvidia-dcgm-exporter"]
    assert (f"{pod_name(EXPORTER, 'gpu-b')}: its container nvidia-dcgm-exporter was killed for "
            "memory (OOMKilled, exit code 137) at its memory limit 512Mi, so its log stops "
            "without an error. The kernel's OOM record says how much memory it held when "
            "killed; the bundle holds no kernel log of the node. Ask next for the output of: "
            "kubectl debug node/gpu-b -it --image=ubuntu -- chroot /host sh -c \"journalctl -k "
            "--no-pager | grep -iE 'out of memory|oom-kill|Killed process' | tail -20\"") \
        in op.summary
    assert "No known cause" not in op.summary
