"""Generate a synthetic support bundle: ``python -m samples.synth --size L -o /tmp/L.tgz``.

Writes the ``.tgz`` and, beside it, ``<stem>.planted.json`` (see ``plan.Plan.planted``).
Exit codes: 0 written, 2 containerd 1.6.20 missing (its config dumps are real).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from samples.samplekit.containerd import ContainerdUnavailable
from samples.synth import cluster, configs, nodefiles, oplogs
from samples.synth.plan import CREATED, OPERATOR_NS, SIZES, Plan, Role
from samples.synth.spool import Spool

KUBECTL = "kubectl"


def _get(*args: str) -> list[str]:
    return [KUBECTL, "get", *args, "-o", "json"]


class Side:
    """A temporary file that collects one member while another is being written."""

    def __init__(self, directory: str | None) -> None:
        self.file: IO[bytes] = tempfile.TemporaryFile(  # noqa: SIM115
            prefix="synth-side-", dir=directory)

    def write(self, data: bytes) -> None:
        self.file.write(data)

    def chunks(self) -> Iterator[bytes]:
        self.file.seek(0)
        while block := self.file.read(1 << 20):
            yield block
        self.file.close()


def generate(plan: Plan, out: Path, *, level: int = 6, workdir: str | None = None,
             variants: dict[str, configs.Variant] | None = None,
             log: Any = None) -> dict[str, Any]:
    """Write the bundle and its planted manifest; return the manifest (with stats)."""
    started = time.perf_counter()
    variants = variants or configs.load_variants()
    head = {
        "format": "gpu-triage-bundle", "format_version": 1,
        "collector": {"name": "gpu-triage-collect", "version": "0.1.0"},
        "created_at": CREATED.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cluster": {"context": f"synth-{plan.size.name.lower()}", "server_version": "v1.37.1"},
        "operator_namespace": OPERATOR_NS,
        "options": {"since": "168h", "log_tail_lines": 5000, "node_mode": "debug-pod",
                    "redact": True},
        "redaction": {"enabled": True, "counts": {"env-values": 0, "configmap-values": 0,
                                                  "helm-values": 0}},
    }
    spool = Spool(head, CREATED, workdir)
    try:
        stats = _cluster(spool, plan, workdir, log)
        _nodes(spool, plan, variants, stats["pod_refs"], log)
        del stats["pod_refs"]
        top = f"gpu-triage-synth-{plan.size.name.lower()}-{CREATED:%Y%m%dT%H%M%SZ}"
        if log:
            log(f"compressing {len(spool.members)} members (gzip level {level}) ...")
        archive = spool.write_tgz(out, top, int(CREATED.timestamp()), level)
        stats.update(members=len(spool.members) + 1, archive_bytes=archive,
                     uncompressed_bytes=sum(m.size for m in spool.members))
    finally:
        spool.close()
    planted = plan.planted()
    planted["archive"] = out.name
    planted["stats"] = stats
    if log:
        log(f"generated in {time.perf_counter() - started:.1f} s")
    return planted


def _cluster(spool: Spool, plan: Plan, workdir: str | None, log: Any) -> dict[str, Any]:
    builder = cluster.PodBuilder(plan)
    events = Side(workdir)
    logs = Side(workdir)
    log_members: list[tuple[str, int, int, str | None, str]] = []  # path, offset, size, error
    pod_refs: dict[str, list[nodefiles.PodRef]] = defaultdict(list)
    counts = {"pods": 0, "events": 0}
    first_event = [True]

    def add_events(found: list[dict[str, Any]]) -> None:
        for event in found:
            events.write((b"\n" if first_event[0] else b",\n") + cluster.dumps(event))
            first_event[0] = False
            counts["events"] += 1

    def add_logs(pod: dict[str, Any], node: Any) -> None:
        meta = pod["metadata"]
        for name, text, error in oplogs.pod_logs(pod, node, plan.seed):
            path = f"logs/{meta['namespace']}/{meta['name']}/{name}.log"
            offset = logs.file.tell()
            if text is not None:
                logs.write(text.encode())
            log_members.append((path, offset, logs.file.tell() - offset, error, meta["name"]))

    def pods() -> Iterator[dict[str, Any]]:
        for pod, found in cluster.control_plane_pods(plan):
            counts["pods"] += 1
            add_events(found)
            yield pod
        for n in plan.nodes:
            for pod, found in builder.node_pods(n):
                counts["pods"] += 1
                add_events(found)
                meta = pod["metadata"]
                if meta["namespace"] == OPERATOR_NS:
                    add_logs(pod, n)
                if pod["status"].get("phase") != "Failed":
                    containers = tuple(c["name"] for c in pod["spec"]["containers"])
                    pod_refs[n.name].append(nodefiles.PodRef(
                        meta["name"], meta["namespace"], meta["uid"], containers,
                        pod["status"].get("phase") == "Pending"))
                yield pod
            if log and n.index % 250 == 249:
                log(f"  objects: {n.index + 1}/{len(plan.nodes)} nodes")
        for pod, found in builder.pending_pods():
            counts["pods"] += 1
            add_events(found)
            yield pod

    spool.add("cluster/version.json", json.dumps(cluster.version(), indent=2) + "\n",
              [KUBECTL, "version", "-o", "json"])
    spool.add_chunks("cluster/nodes.json", cluster.list_chunks(cluster.nodes(plan)),
                     _get("nodes"))
    spool.add_chunks("cluster/pods.json", cluster.list_chunks(pods()), _get("pods", "-A"))
    events_head = b'{"apiVersion":"v1","items":['
    events_tail = (b"\n" if counts["events"] else b"") + \
        b'],"kind":"List","metadata":{"resourceVersion":""}}\n'
    spool.add_chunks("cluster/events.json", _framed(events_head, events.chunks(), events_tail),
                     _get("events", "-A"))
    small = (
        ("daemonsets.json", iter(cluster.daemonsets(plan)), _get("daemonsets", "-A")),
        ("deployments.json", iter(cluster.deployments()), _get("deployments", "-A")),
        ("namespaces.json", iter(cluster.namespaces()), _get("namespaces")),
        ("runtimeclasses.json", iter(cluster.runtime_classes()), _get("runtimeclasses")),
        ("resourcequotas.json", iter(()), _get("resourcequotas", "-A")),
        ("clusterpolicies.json", iter(cluster.cluster_policies(plan)),
         _get("clusterpolicies.nvidia.com")),
        ("nvidiadrivers.json", iter(()), _get("nvidiadrivers.nvidia.com")),
        ("configmaps.json", iter(()), _get("configmaps", "-n", OPERATOR_NS)),
    )
    for name, items, command in small:
        spool.add_chunks(f"cluster/{name}", cluster.list_chunks(items), command)
    spool.add("cluster/helm/gpu-operator.json",
              json.dumps(cluster.helm_history(), indent=2) + "\n",
              ["helm", "history", "gpu-operator", "-n", OPERATOR_NS])
    logs.file.seek(0)
    for path, offset, size, error, pod in log_members:
        container = path.rsplit("/", 1)[1][: -len(".log")]
        command = [KUBECTL, "logs", "-n", OPERATOR_NS, pod, "-c", container, "--timestamps"]
        if error is not None:
            spool.fail(path, command, error)
            continue
        logs.file.seek(offset)
        spool.add(path, logs.file.read(size), command)
    logs.file.close()
    counts["logs"] = sum(1 for m in log_members if m[3] is None)
    return {**counts, "pod_refs": pod_refs}


def _framed(head: bytes, body: Iterator[bytes], tail: bytes) -> Iterator[bytes]:
    yield head
    yield from body
    yield tail


def _nodes(spool: Spool, plan: Plan, variants: dict[str, configs.Variant],
           pod_refs: dict[str, list[nodefiles.PodRef]], log: Any) -> None:
    budget = plan.size.journal_kib * 1024
    for n in plan.nodes:
        base = f"nodes/{n.name}/"
        name = n.name

        def add(rel: str, content: str, command: list[str], _base: str = base,
                _node: str = name) -> None:
            spool.add(_base + rel, content, command, node=_node)

        variant = variants[{Role.NO_RUNTIME: "no-runtime",
                            Role.CLOBBERED: "clobbered"}.get(n.role, "healthy")]
        add("containerd/config-dump.toml", variant.dump, ["containerd", "config", "dump"])
        add("containerd/version.txt", variant.version, ["containerd", "--version"])
        for path, text in variant.files.items():
            add(f"containerd/files{path}", text, ["cat", path])
        refs = pod_refs.get(n.name, [])
        for unit, journal in (
                ("containerd", nodefiles.containerd_journal(n, plan.seed, refs,
                                                            budget * 55 // 100)),
                ("kubelet", nodefiles.kubelet_journal(n, plan.seed, refs, budget * 45 // 100)),
                ("nvidia-fabricmanager", nodefiles.fabricmanager_journal(n))):
            spool.add_chunks(base + f"journal/{unit}.jsonl",
                             journal.render(nodefiles.boot_time(n)),
                             ["journalctl", "-u", unit, "-o", "json", "--since", "-168h"],
                             node=n.name)
        add("dmesg.txt", nodefiles.dmesg(n, plan.seed), ["dmesg", "--time-format", "iso"])
        add("nvidia-smi.xml", nodefiles.nvidia_smi_xml(n, plan.seed), ["nvidia-smi", "-q", "-x"])
        add("systemd/containerd.txt", nodefiles.systemctl_show(n),
            ["systemctl", "show", "containerd", "-p", "Restart,RestartUSec,NRestarts,"
             "ActiveState,SubState,ExecMainPID,ExecMainStartTimestamp"])
        for rel, content, command in nodefiles.host_files(n):
            add(rel, content, command)
        if log and n.index % 250 == 249:
            log(f"  node files: {n.index + 1}/{len(plan.nodes)} nodes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m samples.synth", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(SIZES), default="S")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the .tgz to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nodes", type=int, help="override the size's node count")
    parser.add_argument("--journal-kib", type=int,
                        help="override the journal size per node (KiB, both units)")
    parser.add_argument("--level", type=int, default=6, choices=range(1, 10),
                        help="gzip level (default 6)")
    parser.add_argument("--workdir", help="where the spool goes (default: $TMPDIR)")
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    size = SIZES[args.size]
    if args.nodes is not None:
        size = replace(size, nodes=max(8, args.nodes))
    if args.journal_kib is not None:
        size = replace(size, journal_kib=max(0, args.journal_kib))
    out: Path = args.output

    def say(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True)
    if args.workdir is None and shutil.disk_usage(out.parent or ".").free < (4 << 30):
        say("warning: less than 4 GiB free where the archive goes")
    try:
        planted = generate(Plan(size, args.seed), out, level=args.level, workdir=args.workdir,
                           log=say)
    except ContainerdUnavailable as exc:
        print(f"synth: {exc}", file=sys.stderr)
        return 2
    planted_path = planted_path_for(out)
    planted_path.write_text(json.dumps(planted, indent=2) + "\n", encoding="utf-8")
    stats = planted["stats"]
    say(f"{out}: {stats['archive_bytes'] / 1e6:.1f} MB ({stats['uncompressed_bytes'] / 1e6:.0f} "
        f"MB unpacked, {stats['members']} members, {stats['pods']} pods, {stats['events']} "
        f"events); planted: {planted_path}")
    return 0


def planted_path_for(archive: Path) -> Path:
    name = archive.name
    for ext in (".tar.gz", ".tgz", ".tar"):
        if name.endswith(ext):
            name = name[: -len(ext)]
            break
    return archive.with_name(name + ".planted.json")


if __name__ == "__main__":
    raise SystemExit(main())
