"""Write a format v1 sample out in the layouts other tools produce.

    .venv/bin/python samples/foreign_layouts.py must-gather samples/incident-toolkit-disabled OUT
    .venv/bin/python samples/foreign_layouts.py troubleshoot samples/incident-toolkit-disabled OUT

``must-gather`` writes what the GPU Operator's ``hack/must-gather.sh`` would have written
on that cluster (flat files: YAML from ``kubectl get -o yaml``, ``kubectl describe nodes``
text, ``kubectl logs --all-containers --prefix --timestamps`` of each operand pod, an
``nvidia-bug-report_<node>.log.gz`` for each node running an operator driver pod). What
the script does not collect (events, containerd configuration, journals, ...) is not
written. ``troubleshoot`` writes a Replicated troubleshoot support bundle with the
default cluster collectors plus run-host / journald host collectors for each node.

Used by the tests of ``bundle.layouts`` and by ``docs/beyond-one-bundle.md``. The output
is derived from the sample, not captured from a cluster.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

GPU_LABEL = "nvidia.com/gpu.present"


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _items(root: Path, name: str) -> list[dict[str, Any]] | None:
    data = _read(root / "cluster" / name)
    return None if data is None else list(data.get("items", []))


def _yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=True, default_flow_style=False)


def _kube_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": items, "kind": "List",
            "metadata": {"resourceVersion": ""}}


def _when(text: str | None) -> str:
    if not text:
        return "<unset>"
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    return stamp.strftime("%a, %d %b %Y %H:%M:%S +0000")


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [indent + "".join(cell.ljust(widths[i] + 2) if i < len(row) - 1 else cell
                             for i, cell in enumerate(row)).rstrip() for row in rows]


def _block(key: str, entries: list[str]) -> list[str]:
    label = f"{key}:".ljust(20)
    if not entries:
        return [label + "<none>"]
    return [label + entries[0], *[" " * 20 + e for e in entries[1:]]]


def describe_node(node: dict[str, Any]) -> str:
    """``kubectl describe node`` text for a Node object (the parts kubectl prints)."""
    meta, spec, status = node["metadata"], node.get("spec", {}), node.get("status", {})
    lines = [f"Name:               {meta['name']}", "Roles:              <none>"]
    lines += _block("Labels", [f"{k}={v}" for k, v in sorted(meta.get("labels", {}).items())])
    lines += _block("Annotations",
                    [f"{k}: {v}" for k, v in sorted(meta.get("annotations", {}).items())])
    lines.append(f"CreationTimestamp:  {_when(meta.get('creationTimestamp'))}")
    taints = [f"{t['key']}{'=' + t['value'] if t.get('value') else ''}:{t['effect']}"
              for t in spec.get("taints", [])]
    lines += _block("Taints", taints)
    lines.append(f"Unschedulable:      {str(bool(spec.get('unschedulable'))).lower()}")
    lines.append("Conditions:")
    rows = [["Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason", "Message"],
            ["----", "------", "-----------------", "------------------", "------", "-------"]]
    rows += [[c.get("type", ""), c.get("status", ""), _when(c.get("lastHeartbeatTime")),
              _when(c.get("lastTransitionTime")), c.get("reason", ""), c.get("message", "")]
             for c in status.get("conditions", [])]
    lines += _table(rows)
    lines.append("Addresses:")
    lines += [f"  {a['type']}:  {a['address']}" for a in status.get("addresses", [])]
    for key in ("capacity", "allocatable"):
        lines.append(f"{key.capitalize()}:")
        values = status.get(key, {})
        width = max((len(k) for k in values), default=0) + 2
        lines += [f"  {(k + ':').ljust(width)}{v}" for k, v in values.items()]
    info = status.get("nodeInfo", {})
    names = {"machineID": "Machine ID", "systemUUID": "System UUID", "bootID": "Boot ID",
             "kernelVersion": "Kernel Version", "osImage": "OS Image",
             "operatingSystem": "Operating System", "architecture": "Architecture",
             "containerRuntimeVersion": "Container Runtime Version",
             "kubeletVersion": "Kubelet Version", "kubeProxyVersion": "Kube-Proxy Version"}
    lines.append("System Info:")
    lines += [f"  {(label + ':').ljust(28)}{info.get(key, '')}".rstrip()
              for key, label in names.items()]
    if spec.get("podCIDR"):
        lines.append(f"PodCIDR:                      {spec['podCIDR']}")
        lines.append(f"PodCIDRs:                     {','.join(spec.get('podCIDRs', []))}")
    lines.append("Events:              <none>")
    return "\n".join(lines) + "\n"


def _logs(root: Path, namespace: str, pod: dict[str, Any], previous: bool) -> list[tuple[str,
                                                                                        str]]:
    """(container, text) of a pod's logs in run order."""
    name = pod["metadata"]["name"]
    containers = [c["name"] for c in pod["spec"].get("initContainers", [])]
    containers += [c["name"] for c in pod["spec"].get("containers", [])]
    suffix = ".previous.log" if previous else ".log"
    found = []
    for container in containers:
        path = root / "logs" / namespace / name / f"{container}{suffix}"
        if path.exists():
            found.append((container, path.read_text(encoding="utf-8")))
    return found


def must_gather(root: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "must-gather.log").write_text(f"Using ARTIFACT_DIR={out}\n", encoding="utf-8")
    (out / "must-gather.stderr.log").write_text("", encoding="utf-8")
    pods = _items(root, "pods.json") or []
    operator = next(p for p in pods if p["metadata"].get("labels", {}).get("app") ==
                    "gpu-operator")
    namespace = operator["metadata"]["namespace"]
    policies = _items(root, "clusterpolicies.json") or []
    if policies:
        (out / "cluster_policy.yaml").write_text(_yaml(policies[0]), encoding="utf-8")
    else:
        (out / "cluster_policy.missing").write_text("", encoding="utf-8")
    drivers = _items(root, "nvidiadrivers.json")
    if drivers is not None:
        (out / "nvidiadrivers.yaml").write_text(_yaml(_kube_list(drivers)), encoding="utf-8")
    nodes = [n for n in _items(root, "nodes.json") or []
             if n["metadata"].get("labels", {}).get(GPU_LABEL) == "true"]
    labels = []
    for node in nodes:
        labels.append(node["metadata"]["name"])
        labels += [f"- {k}={v}".replace(":", "=")
                   for k, v in sorted(node["metadata"]["labels"].items())]
        labels.append("")
    (out / "gpu_nodes.labels").write_text("\n".join(labels) + "\n", encoding="utf-8")
    (out / "gpu_nodes.descr").write_text("\n".join(describe_node(n) for n in nodes),
                                         encoding="utf-8")
    (out / "gpu_operator_pod.yaml").write_text(_yaml(operator), encoding="utf-8")
    current = _logs(root, namespace, operator, previous=False)
    (out / "gpu_operator_pod.log").write_text(current[0][1] if current else "",
                                              encoding="utf-8")
    previous = _logs(root, namespace, operator, previous=True)
    (out / "gpu_operator_pod.previous.log").write_text(previous[0][1] if previous else "",
                                                       encoding="utf-8")
    in_namespace = [p for p in pods if p["metadata"].get("namespace") == namespace]
    (out / "gpu_operand_pods.yaml").write_text(_yaml(_kube_list(in_namespace)),
                                               encoding="utf-8")
    for pod in in_namespace:
        labels_json = json.dumps(pod["metadata"].get("labels", {}))
        if pod is operator or not re.search(r"nvidia|gpu", labels_json):
            continue
        name = pod["metadata"]["name"]
        for previous_logs, suffix in ((False, ".log"), (True, ".previous.log")):
            text = "".join(f"[pod/{name}/{container}] {line}\n"
                           for container, body in _logs(root, namespace, pod, previous_logs)
                           for line in body.splitlines())
            (out / f"gpu_operand_pod_{name}{suffix}").write_text(text, encoding="utf-8")
    daemonsets = [d for d in _items(root, "daemonsets.json") or []
                  if d["metadata"].get("namespace") == namespace]
    (out / "gpu_operand_ds.yaml").write_text(_yaml(_kube_list(daemonsets)), encoding="utf-8")
    for pod in in_namespace:
        if pod["metadata"].get("labels", {}).get("app") == "nvidia-driver-daemonset":
            node = pod["spec"]["nodeName"]
            report = bug_report(root / "nodes" / node)
            (out / f"nvidia-bug-report_{node}.log.gz").write_bytes(
                gzip.compress(report.encode(), mtime=0))


def bug_report(node_dir: Path) -> str:
    """An ``nvidia-bug-report.log`` with the sections the adapter maps."""
    separator = "_" * 44

    def section(header: str, body: str) -> str:
        return f"{separator}\n\n{header}\n{body}\n"

    def host(name: str) -> str:
        path = node_dir / "host" / name
        return path.read_text(encoding="utf-8") if path.exists() else ""

    uname = host("uname.txt").strip()
    dmesg = (node_dir / "dmesg.txt").read_text(encoding="utf-8") \
        if (node_dir / "dmesg.txt").exists() else ""
    return (f"{separator}\n\nStart of NVIDIA bug report log file.\n\nuname: {uname}\n\n"
            + section("*** /proc/cmdline\n*** ls: -r--r--r-- 1 root root 0 /proc/cmdline",
                      host("cmdline"))
            + section("dmesg:\n", dmesg)
            + section("*** /proc/modules\n*** ls: -r--r--r-- 1 root root 0 /proc/modules",
                      host("modules.txt"))
            + f"{separator}\n\nEnd of NVIDIA bug report log file.\n")


def troubleshoot(root: Path, out: Path) -> None:
    cr = out / "cluster-resources"
    cr.mkdir(parents=True, exist_ok=True)
    (out / "version.yaml").write_text(
        "apiVersion: troubleshoot.sh/v1beta2\nkind: SupportBundle\nspec:\n"
        "  versionNumber: v0.100.0\n", encoding="utf-8")
    version = _read(root / "cluster" / "version.json") or {}
    if "serverVersion" in version:
        info = version["serverVersion"]
        (out / "cluster-info").mkdir(exist_ok=True)
        (out / "cluster-info" / "cluster_version.json").write_text(
            json.dumps({"info": info, "string": info.get("gitVersion")}, indent=2),
            encoding="utf-8")
    for name, kind in (("nodes.json", "NodeList"), ("namespaces.json", "NamespaceList")):
        items = _items(root, name)
        if items is not None:
            (cr / name).write_text(json.dumps({"kind": kind, "apiVersion": "v1",
                                               "metadata": {}, "items": items}, indent=2),
                                   encoding="utf-8")
    for source, directory in (("pods.json", "pods"), ("events.json", "events"),
                              ("daemonsets.json", "daemonsets"),
                              ("deployments.json", "deployments"),
                              ("configmaps.json", "configmaps"),
                              ("resourcequotas.json", "resource-quota")):
        by_namespace: dict[str, list[dict[str, Any]]] = {}
        for item in _items(root, source) or []:
            by_namespace.setdefault(item["metadata"].get("namespace", ""), []).append(item)
        for namespace, items in by_namespace.items():
            path = cr / directory / f"{namespace}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"kind": "List", "items": items}, indent=2),
                            encoding="utf-8")
    custom = cr / "custom-resources"
    custom.mkdir(exist_ok=True)
    for source, crd in (("clusterpolicies.json", "clusterpolicies.nvidia.com"),
                        ("nvidiadrivers.json", "nvidiadrivers.nvidia.com")):
        items = _items(root, source)
        if items:
            (custom / f"{crd}.json").write_text(json.dumps(items, indent=2), encoding="utf-8")
    logs = root / "logs"
    for path in sorted(logs.rglob("*.log")) if logs.exists() else []:
        relative = path.relative_to(logs)
        name = relative.name.replace(".previous.log", "-previous.log")
        target = cr / "pods" / "logs" / relative.parent / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    helm = root / "cluster" / "helm"
    releases = []
    for path in sorted(helm.glob("*.json")) if helm.exists() else []:
        history = json.loads(path.read_text(encoding="utf-8"))
        chart = history[-1]["chart"] if history else ""
        name, _, version = chart.rpartition("-")
        releases.append({"releaseName": path.stem, "chart": name, "chartVersion": version,
                         "appVersion": history[-1]["app_version"] if history else "",
                         "namespace": "gpu-operator",
                         "releaseHistory": [{"revision": str(r["revision"]), "date": r["updated"],
                                             "status": r["status"], "values": r["values"]}
                                            for r in history]})
    if releases:
        (out / "helm").mkdir(exist_ok=True)
        (out / "helm" / "gpu-operator.json").write_text(json.dumps(releases, indent=2),
                                                        encoding="utf-8")
    commands = (("containerd/config-dump.toml", "containerd-config", "run-host",
                 "/usr/bin/containerd config dump"),
                ("containerd/version.txt", "containerd-version", "run-host",
                 "/usr/bin/containerd --version"),
                ("nvidia-smi.xml", "nvidia-smi", "run-host", "/usr/bin/nvidia-smi -q -x"),
                ("host/uname.txt", "uname", "run-host", "/usr/bin/uname -a"),
                ("host/os-release", "os-release", "run-host", "cat /etc/os-release"),
                ("host/cmdline", "cmdline", "run-host", "/bin/cat /proc/cmdline"),
                ("host/modules.txt", "modules", "run-host", "cat /proc/modules"),
                ("host/lspci.txt", "lspci", "run-host", "/usr/bin/lspci -nnk -d 10de:"),
                ("host/nvidia-driver-version.txt", "nvidia-version", "run-host",
                 "cat /proc/driver/nvidia/version"),
                ("host/secureboot.txt", "secureboot", "run-host", "mokutil --sb-state"),
                ("host/selinux.txt", "selinux", "run-host", "/usr/sbin/getenforce"),
                ("host/unattended-upgrades.txt", "unattended-upgrades", "run-host",
                 "tail -n +1 /etc/apt/apt.conf.d/20auto-upgrades "
                 "/etc/apt/apt.conf.d/50unattended-upgrades"),
                ("dmesg.txt", "dmesg", "run-host", "/usr/bin/dmesg -T"),
                ("systemd/containerd.txt", "containerd-unit", "run-host",
                 "systemctl show containerd"),
                ("journal/containerd.jsonl", "containerd", "journald",
                 "/usr/bin/journalctl -u containerd --output json --no-pager"),
                ("journal/kubelet.jsonl", "kubelet", "journald",
                 "/usr/bin/journalctl -u kubelet --output json --no-pager"),
                ("journal/nvidia-fabricmanager.jsonl", "nvidia-fabricmanager", "journald",
                 "/usr/bin/journalctl -u nvidia-fabricmanager --output json --no-pager"))
    for node_dir in sorted((root / "nodes").iterdir()) if (root / "nodes").exists() else []:
        for source, collector, kind, command in commands:
            path = node_dir / source
            if not path.exists():
                continue
            target = out / "host-collectors" / node_dir.name / kind
            target.mkdir(parents=True, exist_ok=True)
            (target / f"{collector}.txt").write_bytes(path.read_bytes())
            (target / f"{collector}-info.json").write_text(
                json.dumps({"command": command, "exitCode": "0"}), encoding="utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("must-gather", "troubleshoot"):
        print(__doc__, file=sys.stderr)
        return 2
    writer = must_gather if argv[0] == "must-gather" else troubleshoot
    writer(Path(argv[1]), Path(argv[2]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
