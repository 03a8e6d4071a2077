"""RT014: Running GPU containers lose their GPUs after a systemd reload."""

from __future__ import annotations

from collections.abc import Iterable

from analyzers import commands as sh
from analyzers.facts.podlogs import ContainerLog
from analyzers.knowledge.signatures import SignatureMatch
from analyzers.results.models import Confidence, Evidence, Finding, ObjectRef, Severity
from analyzers.rule import Context, Rule, cluster, node
from analyzers.rules.common import LOGS_REQUIRED, names, node_ref
from analyzers.rules.rt._cgroup import _SIGNATURE, _gpu_pod, _recreate
from bundle import specs


class GpuLostOnSystemdReload(Rule):
    """Running GPU containers lose their GPUs after a systemd reload.

    With the systemd cgroup driver, systemd owns each container's device cgroup and
    rebuilds it from its own unit properties at every ``systemctl daemon-reload``.
    runc hands systemd the NVIDIA devices by their ``/dev/char/<major>:<minor>`` links;
    where those links do not exist, systemd's rebuilt list lacks the GPUs and the
    container's next NVML call fails with ``Failed to initialize NVML: Unknown Error``
    while the host's ``nvidia-smi`` works. Fires on a node where a Running GPU pod logs
    that line, ``host/cgroup.txt`` shows the systemd driver (kubelet, containerd's
    ``SystemdCgroup`` or CRI-O's ``cgroup_manager``), and ``host/dev-nvidia.txt`` shows no
    ``/dev/char`` link to an NVIDIA device. Both files are read in the collector's format
    or as the plain output of their commands (``cgroupDriver: systemd``, ``ls -l
    /dev/nvidia* /dev/char``); a file that yields neither leaves the rule ``partial``.

    Why it matters:
    Long-running jobs fail hours into their run, on any node where something reloads
    systemd (package updates do); restarting the pod only helps until the next reload.

    Remediation:
    On the node, ``ls -l /dev/char | grep nvidia`` (nothing confirms), then create the
    links with ``nvidia-ctk system create-dev-char-symlinks --create-all`` (and keep them
    with the udev rule from the toolkit's troubleshooting guide, or let the GPU Operator's
    validator create them), or inject GPUs through CDI. Then recreate the affected
    pods, one at a time: delete those an owner (Job, ReplicaSet, StatefulSet ...) starts
    again, and re-create a pod without one from its manifest.
    """

    id = "RT014"
    slug = "gpu-lost-on-systemd-reload"
    severity = Severity.HIGH
    confidence = Confidence.LIKELY
    inputs = (node(specs.CGROUP), node(specs.DEV_NVIDIA), cluster(specs.PODS),
              LOGS_REQUIRED)
    tags = ("runtime", "cgroup")

    def check(self, ctx: Context) -> Iterable[Finding]:
        facts = ctx.facts
        for node_name in facts.gpu_nodes:
            if node_name not in facts.node_dirs:
                continue
            hits = [(log, hit) for pod in facts.pods_by_node.get(node_name, [])
                    if _gpu_pod(pod) for log in facts.pod_logs.of(pod) if not log.previous
                    for hit in log.matches() if hit.signature.id == _SIGNATURE]
            if not hits:
                continue
            access = ctx.facts.node(node_name).device_access
            if access.cgroup_text is None or access.devices_text is None:
                self.unjudged(f"GPU pods on {node_name} log 'Failed to initialize NVML: "
                              "Unknown Error', but its host/cgroup.txt or host/dev-nvidia.txt "
                              "was not collected")
                continue
            # a file over the parser's budget is a recorded problem: the engine then says
            # partial or skipped, naming it
            cgroup, dev = access.cgroup, access.devices
            if access.refused or cgroup is None or dev is None:
                continue
            unread = [name for name, readable in ((specs.CGROUP, cgroup.readable),
                                                  (specs.DEV_NVIDIA, dev.readable))
                      if not readable]
            if unread:
                self.unjudged(f"GPU pods on {node_name} log 'Failed to initialize NVML: "
                              f"Unknown Error', but its {' and '.join(unread)} held no line "
                              "this rule can read (neither the collector's format nor the "
                              "plain output of its commands)")
                continue
            systemd = cgroup.systemd
            if systemd is not None and not dev.char_listed:
                self.unjudged(f"GPU pods on {node_name} log 'Failed to initialize NVML: "
                              "Unknown Error', but its host/dev-nvidia.txt has no /dev/char "
                              "listing")
                continue
            if systemd is None or dev.char_links:
                continue
            yield self._finding(ctx, node_name, hits, systemd.number, systemd.text,
                                dev.char_header, dev.names[0] if dev.names else None)

    def _finding(self, ctx: Context, node_name: str,
                 hits: list[tuple[ContainerLog, SignatureMatch]], cgroup_line: int,
                 cgroup_text: str, char_line: int | None, device: str | None) -> Finding:
        artifacts = ctx.facts.node(node_name)
        pods = list({(log.pod.namespace, log.pod.name): log.pod for log, _ in hits}.values())
        evidence = []
        for log, hit in hits[:2]:
            where = log.locate(hit)
            evidence.append(Evidence(path=where.path, line=where.line, excerpt=where.excerpt))
        evidence.append(Evidence(path=artifacts.path(specs.CGROUP), line=cgroup_line,
                                 excerpt=cgroup_text))
        evidence.append(Evidence(path=artifacts.path(specs.DEV_NVIDIA), line=char_line,
                                 excerpt="/dev/char (no link to an NVIDIA device)"))
        devices = f" although {device} and the other NVIDIA devices exist" if device else ""
        summary = (f"On {node_name}, Running GPU pod(s) {names(p.name for p in pods)} lost "
                   "their GPUs (Failed to initialize NVML: Unknown Error): systemd manages "
                   f"the containers' cgroups ({cgroup_text}) and /dev/char has no NVIDIA "
                   f"links{devices}, so a systemd reload drops the devices from running "
                   "containers.")
        remediation = sh.lines(
            sh.node_shell(sh.node(node_name), "busybox"),
            "ls -l /dev/char | grep -c nvidia            # 0 confirms",
            "nvidia-ctk system create-dev-char-symlinks --create-all",
            "# keep them across reboots (the toolkit's udev rule, or the GPU Operator's "
            "validator), or inject GPUs through CDI;",
            _recreate(pods),
        )
        objects = [node_ref(node_name)] + [
            ObjectRef(kind="Pod", namespace=p.namespace, name=p.name) for p in pods[:10]]
        return self.finding(node_name, summary, nodes=[node_name], objects=objects,
                            evidence=evidence, remediation=remediation)
