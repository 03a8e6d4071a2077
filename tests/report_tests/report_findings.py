"""Hand-written findings for the golden tests, so that the goldens change only when the
report code changes, not whenever a rule's wording does. They follow the incident of
``report_bundles.incident_files`` and quote its files; the overview is computed from that bundle
by the real :func:`analyzers.engine.overview.build`.
"""

from __future__ import annotations

from pathlib import Path

from analyzers.engine import grouping, link, overview
from analyzers.facts import Facts
from analyzers.results.models import (
    BundleInfo,
    ClusterRef,
    CollectionGap,
    Evidence,
    Finding,
    NodeRow,
    ObjectRef,
    OperandCell,
    Overview,
    Report,
    RuleDoc,
    RuleResult,
    RuleStatus,
    Severity,
    Summary,
    Timeline,
    TimelinePoint,
    ToolInfo,
)
from bundle import open_bundle

SANDBOX_EVENT = ('2026-11-29T13:59:00Z FailedCreatePodSandBox: Failed to create pod sandbox: '
                 'rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime '
                 'for "nvidia" is configured (x42)')
REMEDY_RT002 = """# on {node}: look first
ls -l /etc/containerd/conf.d/
containerd config dump | grep -c 'runtimes.nvidia'   # 0 confirms
# merge zz-registry.toml into 99-nvidia.toml, then restart on this node only
systemctl restart containerd && containerd config dump | grep -c 'runtimes.nvidia'"""


def _node(name: str) -> ObjectRef:
    return ObjectRef(kind="Node", name=name)


def findings() -> list[Finding]:
    out: list[Finding] = []
    for node in ("gpu-a", "gpu-b"):
        base = f"nodes/{node}/containerd"
        out += [
            Finding(id=f"RT002:{node}", rule_id="RT002", severity=Severity.CRITICAL,
                    title="A later containerd drop-in replaced the CRI plugin table",
                    summary=f"On {node}, zz-registry.toml loads after 99-nvidia.toml and, on "
                            "containerd 1.7, replaces the whole CRI table: the nvidia runtime "
                            "is gone.",
                    nodes=[node], objects=[_node(node)],
                    evidence=[
                        Evidence(path=f"{base}/files/etc/containerd/conf.d/zz-registry.toml",
                                 line=2, excerpt='[plugins."io.containerd.grpc.v1.cri".registry]'),
                        Evidence(path=f"{base}/config-dump.toml",
                                 excerpt="(no runtimes.nvidia table; loaded runtimes: runc)")],
                    remediation=REMEDY_RT002.format(node=node), causes=[f"RT001:{node}"]),
            Finding(id=f"RT001:{node}", rule_id="RT001", severity=Severity.CRITICAL,
                    title="A GPU node's containerd has no nvidia runtime loaded",
                    summary=f"On {node}, containerd's loaded configuration has no 'nvidia' "
                            "runtime; 1 pod needs it.",
                    nodes=[node], objects=[_node(node)],
                    evidence=[Evidence(path="cluster/events.json", pointer="/items/0/message",
                                       excerpt=SANDBOX_EVENT)],
                    remediation="containerd config dump | grep -c 'runtimes.nvidia'",
                    causes=[f"OP008:{node}"]),
            Finding(id=f"OP008:{node}", rule_id="OP008", severity=Severity.HIGH,
                    title="Device plugin not registered on a GPU node",
                    summary=f"On {node}, the device plugin is Init:0/1 and the node "
                            "advertises no GPU.",
                    nodes=[node], remediation=f"kubectl -n gpu-operator get pods -o wide "
                                              f"--field-selector spec.nodeName={node}",
                    causes=["SC001:ml/trainer-0"]),
        ]
    out += [
        Finding(id="DRV002:gpu-d/0000:3b:00.0", rule_id="DRV002", severity=Severity.CRITICAL,
                title="A GPU was lost: fallen off the bus",
                summary="On gpu-d, GPU 0000:3b:00.0 fell off the bus at 13:40:12 (Xid 79).",
                nodes=["gpu-d"], objects=[_node("gpu-d")],
                evidence=[Evidence(path="nodes/gpu-d/dmesg.txt", line=2, excerpt=(
                    "2026-11-29T13:40:12,004411+00:00 NVRM: Xid (PCI:0000:3b:00): 79, "
                    "pid='<unknown>', name=<unknown>, GPU has fallen off the bus."))],
                remediation="kubectl cordon gpu-d\n# then drain and reboot, one node at a time",
                causes=["SC001:ml/trainer-0"]),
        Finding(id="SC001:ml/trainer-0", rule_id="SC001", severity=Severity.HIGH,
                title="GPU pod pending: Insufficient nvidia.com/gpu",
                summary="ml/trainer-0 asks for 1 GPU; gpu-d has 1 unhealthy, gpu-c is full, "
                        "gpu-a and gpu-b advertise none.",
                nodes=["gpu-a", "gpu-b", "gpu-c", "gpu-d"],
                objects=[ObjectRef(kind="Pod", namespace="ml", name="trainer-0")],
                evidence=[Evidence(path="cluster/events.json", pointer="/items/2/message",
                                   excerpt="0/5 nodes are available: 4 Insufficient "
                                           "nvidia.com/gpu.")],
                remediation="kubectl describe pod -n ml trainer-0"),
        Finding(id="RT004:gpu-a", rule_id="RT004", severity=Severity.LOW,
                title="containerd was restarted",
                summary="containerd on gpu-a was killed by SIGHUP and restarted once.",
                nodes=["gpu-a"], evidence=[Evidence(
                    path="nodes/gpu-a/journal/containerd.jsonl", line=2,
                    excerpt="containerd.service: Main process exited, code=killed, "
                            "status=1/HUP\n" + "\n".join(f"line {i}" for i in range(20)))],
                remediation="journalctl -u containerd --since -1d | grep -E 'Started|signal'"),
    ]
    return out


RESULTS = [
    RuleResult(rule_id="DRV002", status=RuleStatus.FAILED, title="A GPU was lost"),
    RuleResult(rule_id="DRV004", status=RuleStatus.SKIPPED, title="Secure Boot",
               reason="no node collected host/secureboot.txt"),
    RuleResult(rule_id="OP008", status=RuleStatus.FAILED, title="Device plugin"),
    RuleResult(rule_id="RT001", status=RuleStatus.FAILED, title="No nvidia runtime"),
    RuleResult(rule_id="RT002", status=RuleStatus.FAILED, title="Drop-in clobber"),
    RuleResult(rule_id="RT003", status=RuleStatus.PASSED, title="Drop-in not imported"),
    RuleResult(rule_id="RT004", status=RuleStatus.FAILED, title="containerd restarts"),
    RuleResult(rule_id="SC001", status=RuleStatus.FAILED, title="Insufficient GPUs"),
    RuleResult(rule_id="SC009", status=RuleStatus.ERROR, title="A broken rule",
               reason="KeyError: 'status' (see --verbose)"),
]
DOCS = [
    RuleDoc(rule_id="RT002", title="A later containerd drop-in replaced the CRI plugin table",
            severity=Severity.CRITICAL,
            why="``cat 99-nvidia.toml`` looks right and ``config dump`` still shows runc.",
            remediation="Merge the two drop-ins into one file; restart one node at a time."),
    RuleDoc(rule_id="DRV002", title="A GPU was lost", severity=Severity.CRITICAL,
            why="A lost GPU is gone until the node reboots.", remediation="Drain and reboot."),
]


def golden_report(path: Path, found: list[Finding] | None = None) -> Report:
    """A Report over the bundle at ``path`` with the hand-written findings."""
    linked = sorted(link(findings() if found is None else found),
                    key=lambda f: (-f.severity.rank, f.rule_id, f.id))
    counts = {s.value: sum(f.severity is s for f in linked) for s in Severity}
    with open_bundle(path) as opened:
        facts = Facts(opened)
        built = overview.build(facts, linked)
        gaps = [CollectionGap(path=i.path, node=i.node, error=i.error or "")
                for i in opened.manifest.failed_items]
        return Report(
            tool=ToolInfo(version="0.0.0-test"),
            bundle=BundleInfo(path="bundle", format_version=1,
                              created_at=opened.manifest.created_at,
                              cluster=ClusterRef(context="prod-east",
                                                 server_version="v1.37.1"),
                              nodes=len(opened.cluster.nodes), gpu_nodes=len(facts.gpu_nodes)),
            summary=Summary(**counts), findings=linked, rules=RESULTS,
            collection_gaps=gaps, rule_docs=DOCS, overview=built,
            groups=grouping.group(linked))


def big_report(nodes: int) -> Report:
    """2,000 GPU nodes, a three-step chain on each, a full overview: no bundle needed."""
    names = [f"gpu-{i:04d}" for i in range(nodes)]
    found: list[Finding] = []
    for name in names:
        evidence = [Evidence(path=f"nodes/{name}/containerd/config-dump.toml", line=i,
                             excerpt="x" * 300) for i in range(1, 12)]
        found += [
            Finding(id=f"RT002:{name}", rule_id="RT002", title="Drop-in clobber",
                    severity=Severity.CRITICAL, summary=f"On {name} the drop-in clobbers. " * 5,
                    nodes=[name], evidence=evidence, remediation="ls -l /etc\n" * 10,
                    causes=[f"RT001:{name}"]),
            Finding(id=f"RT001:{name}", rule_id="RT001", title="No nvidia runtime",
                    severity=Severity.CRITICAL, summary="s" * 300, nodes=[name],
                    evidence=evidence, caused_by=[f"RT002:{name}"], causes=[f"OP008:{name}"]),
            Finding(id=f"OP008:{name}", rule_id="OP008", title="No device plugin",
                    severity=Severity.HIGH, summary="s" * 300, nodes=[name], evidence=evidence,
                    caused_by=[f"RT001:{name}"]),
        ]
        found.append(Finding(id=f"RT004:{name}", rule_id="RT004", title="Restarts",
                                severity=Severity.LOW, summary="r" * 200, nodes=[name]))
    cells = [OperandCell(component=c, status="failing", state="Init:0/1", pod=f"ns/{c}-pod")
             for c in ("driver", "toolkit", "device-plugin", "gfd", "dcgm-exporter",
                       "mig-manager", "validator")]
    rows = [NodeRow(name=n, gpu_model="NVIDIA H100 80GB HBM3", gpu_count=8,
                    gpu_count_source="nvidia-smi", driver="570.172.08", containerd="1.7.27",
                    nvidia_runtime=False, operands=cells, capacity=8, allocatable=6, assigned=5,
                    unhealthy=2, xids=3, xid_source="dmesg") for n in names]
    points = [TimelinePoint(time=f"2026-11-29T{h:02d}:{m:02d}:00Z",
                            until=f"2026-11-29T{h:02d}:{m:02d}:00Z", lane="event",
                            warning=True, text="t" * 300, subject="Pod x", count=5,
                            nodes=names[:5], node_count=nodes)
              for h in range(10, 14) for m in range(0, 60, 1)][:400]
    built = Overview(nodes=rows, timeline=Timeline(
        points=points, total=10_000, start=points[0].time, end=points[-1].time,
        window_start=points[0].time, window_end=points[-1].time, window_reason="many"))
    return Report(tool=ToolInfo(version="t"), bundle=BundleInfo(
        path="b", format_version=1, cluster=ClusterRef(), nodes=nodes, gpu_nodes=nodes),
        summary=Summary(critical=2 * nodes, high=nodes, low=nodes),
        findings=found, rules=[], collection_gaps=[], overview=built,
        groups=grouping.group(found))
