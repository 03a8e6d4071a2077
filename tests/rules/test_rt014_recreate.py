"""RT014's last step: recreate the pods that lost their GPUs, read first, one at a time.

The project's remediation policy (docs/writing-rules.md: "concrete, read-first commands;
change one node at a time") applied to the one state change RT014 offers: after the
read-only check and the links, ``kubectl delete pod`` is offered only for a pod whose
owner starts it again; a pod without an owner (or a node's static pod, owned by the
Node) is named with the way to bring it back, never deleted; past three pods the rest
are counted. Setup and log line as in test_rt014.py (NVIDIA/nvidia-container-toolkit#1227).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse
from kit import findings as of
from kit.runtime import files, gpu_pod
from test_rt014 import LOST, node_files

from reports.view import first_command


def _owned(name: str, kind: str) -> dict[str, Any]:
    pod = gpu_pod(name, "gpu-a")
    pod["metadata"]["ownerReferences"] = [{"kind": kind, "name": name.rsplit("-", 1)[0]}]
    return pod


def test_only_owned_pods_are_deleted_and_the_rest_counted(tmp_path: Path) -> None:
    pods = [_owned("train-0", "Job"), gpu_pod("bare-0", "gpu-a"),
            _owned("static-0", "Node"), _owned("web-1", "ReplicaSet"),
            _owned("web-2", "ReplicaSet")]
    report = analyse(files({"gpu-a": node_files()}, pods,
                                 logs={f"ml/{p['metadata']['name']}/main": LOST for p in pods}),
                     tmp=tmp_path)
    finding = of(report, "RT014")["RT014:gpu-a"]
    assert finding.remediation.splitlines() == [
        "# on gpu-a (kubectl debug node/gpu-a -it --image=busybox -- chroot /host sh):",
        "ls -l /dev/char | grep -c nvidia            # 0 confirms",
        "nvidia-ctk system create-dev-char-symlinks --create-all",
        "# keep them across reboots (the toolkit's udev rule, or the GPU Operator's "
        "validator), or inject GPUs through CDI;",
        "# then, from your workstation and once the links exist, recreate the affected pods "
        "one at a time (their running work is lost):",
        "kubectl -n ml delete pod train-0   # its owner starts it again",
        "# bare-0 has no owner that would start it again: re-create it from its manifest",
        "# static-0 has no owner that would start it again: re-create it from its manifest",
        "# and 2 more affected pod(s) on this node",
    ]
    # the first step offered to copy is the read-only check, never the deletion
    assert first_command(finding.remediation) == \
        "ls -l /dev/char | grep -c nvidia            # 0 confirms"
    assert sorted(o.name for o in finding.objects if o.kind == "Pod") == [
        "bare-0", "static-0", "train-0", "web-1", "web-2"]
