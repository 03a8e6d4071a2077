"""OP017 (a GPU-stack DaemonSet cannot create its pods) and OP011 naming that refusal
instead of NFD's configuration (issue 25, case 4).

Refusal wordings, from public threads (see ``analyzers/facts/refusals.py``):
- Pod Security admission on NFD's worker: the volumes and check names of
  https://github.com/kubernetes-sigs/node-feature-discovery-operator/pull/156 and
  https://github.com/kubernetes-sigs/node-feature-discovery/pull/1002
  (``violates PodSecurity "...": hostPath volumes (volumes "host-boot", ...)``), as the
  DaemonSet controller's ``Error creating:`` event carries it
  (https://github.com/redhat-best-practices-for-k8s/certsuite/issues/547)
- PodSecurityPolicy: https://github.com/kubeshark/kubeshark/issues/1364 (the GPU
  Operator's NFD worker under a PSP: https://github.com/NVIDIA/gpu-operator/issues/314)
- admission webhook: https://github.com/IBM/trusted-service-identity/issues/38
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit import analyse
from kit import lookalikes as kit

WORKER = "gpu-operator-node-feature-discovery-worker"
PSA = ('Error creating: pods "gpu-operator-node-feature-discovery-worker-x7k2p" is forbidden: '
       'violates PodSecurity "baseline:latest": hostPath volumes (volumes "host-boot", '
       '"host-os-release", "host-sys", "host-usr-lib", "host-usr-src")')
PSP = ('Error creating: pods "nvidia-device-plugin-daemonset-" is forbidden: '
       'PodSecurityPolicy: unable to admit pod: [spec.volumes[0]: Invalid value: "hostPath": '
       'hostPath volumes are not allowed to be used]')
WEBHOOK = ('Error creating: admission webhook "validation.gatekeeper.sh" denied the request: '
           'Using hostPath Volume with \'/var/lib/kubelet/device-plugins\' is not allowed')


def _event(namespace: str, name: str, message: str, when: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{name}.1", "namespace": namespace},
            "involvedObject": {"kind": "DaemonSet", "namespace": namespace, "name": name},
            "reason": "FailedCreate", "message": message, "type": "Warning", "count": 16,
            "lastTimestamp": when, "source": {"component": "daemonset-controller"}}


def refuse(bundle: kit.Bundle, namespace: str, name: str, message: str,
           desired: int = 5, current: int = 0) -> None:
    sets = bundle.items("daemonsets")
    for ds in sets:
        if ds["metadata"]["name"] == name and ds["metadata"]["namespace"] == namespace:
            ds["status"].update(desiredNumberScheduled=desired, currentNumberScheduled=current,
                                numberReady=current, numberAvailable=current)
    bundle.set_items("daemonsets", sets)
    if current == 0:
        bundle.set_items("pods", [p for p in bundle.items("pods")
                                  if not p["metadata"]["name"].startswith(name + "-")])
    bundle.set_items("events", [*bundle.items("events"),
                                _event(namespace, name, message, "2026-11-20T11:00:00Z")])



def nfd_refused(tmp_path: Path) -> Path:
    """The operator's NFD worker refused by Pod Security admission: no worker pod, so no
    node carries NFD's PCI label."""
    root = kit.operator_host_driver(tmp_path / "b")
    bundle = kit.Bundle(root)
    refuse(bundle, "gpu-operator", WORKER, PSA)

    def unlabel(node: dict[str, Any]) -> None:
        labels = node["metadata"]["labels"]
        for key in [k for k in labels if k.startswith("feature.node.kubernetes.io/")]:
            del labels[key]
    bundle.edit_nodes(unlabel)
    return bundle.save()


def test_nfd_worker_refused_is_the_cause_not_its_configuration(tmp_path: Path) -> None:
    report = analyse(nfd_refused(tmp_path))
    found = {f.id: f for f in report.findings}
    op017 = found[f"OP017:gpu-operator/{WORKER}"]
    assert op017.severity.value == "high"
    assert op017.summary == (
        f"In the GPU stack, the DaemonSet gpu-operator/{WORKER} cannot create its pods (desired "
        "5, current 0, ready 0): Pod Security admission refuses them (Error creating: pods "
        "\"gpu-operator-node-feature-discovery-worker-x7k2p\" is forbidden: violates "
        "PodSecurity \"baseline:latest\": hostPath volumes (volumes \"host-boot\", "
        "\"host-os-release\", \"host-sys\", \"host-usr-lib\", \"host-usr-src\")). "
        "The refused pods never exist, so no pod status or log shows it and what they "
        "should do does not happen.")
    assert [e.path for e in op017.evidence] == ["cluster/daemonsets.json", "cluster/events.json"]
    op011 = found["OP011:node-feature-discovery"]
    assert "deviceClassWhitelist" not in op011.summary
    assert f"no NFD worker labels the nodes: the DaemonSet gpu-operator/{WORKER} cannot " \
        "create its pods" in op011.summary
    assert op011.caused_by == [f"OP017:gpu-operator/{WORKER}"]
    assert "kubectl label ns gpu-operator pod-security.kubernetes.io/enforce=privileged" in (
        op017.remediation or "")


def test_standalone_plugin_refused_by_psp_and_webhook(tmp_path: Path) -> None:
    root = kit.standalone_plugin(tmp_path / "b")
    bundle = kit.Bundle(root)
    refuse(bundle, "kube-system", "nvidia-device-plugin-daemonset", PSP, desired=4, current=3)
    kit.add_plugin(bundle, namespace="monitoring", ds_name="dcgm-exporter",
                   labels={"app.kubernetes.io/name": "dcgm-exporter"}, container="exporter",
                   image="nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04", log=False)
    refuse(bundle, "monitoring", "dcgm-exporter", WEBHOOK, desired=4, current=0)
    report = analyse(bundle.save())
    op017 = {f.id: f for f in report.findings if f.rule_id == "OP017"}
    assert sorted(op017) == ["OP017:kube-system/nvidia-device-plugin-daemonset",
                             "OP017:monitoring/dcgm-exporter"]
    assert "(desired 4, current 3, ready 3): a PodSecurityPolicy refuses them" in \
        op017["OP017:kube-system/nvidia-device-plugin-daemonset"].summary
    assert "(desired 4, current 0, ready 0): an admission webhook refuses them" in \
        op017["OP017:monitoring/dcgm-exporter"].summary


def test_no_finding_once_the_pods_exist_or_for_other_daemonsets(tmp_path: Path) -> None:
    """A refusal since lifted (current == desired), and a refused DaemonSet that is no
    part of the GPU stack (kube-proxy), are not reported."""
    root = kit.operator_host_driver(tmp_path / "b")
    bundle = kit.Bundle(root)
    refuse(bundle, "gpu-operator", WORKER, PSA, desired=5, current=5)
    refuse(bundle, "kube-system", "kube-proxy", PSA, desired=5, current=0)
    report = analyse(bundle.save())
    assert [f.id for f in report.findings if f.rule_id in ("OP017", "OP011")] == []
    assert next(r for r in report.rules if r.rule_id == "OP017").status.value == "passed"


def test_op008_names_the_refused_plugin_daemonset(tmp_path: Path) -> None:
    """No plugin pod on any node because the standalone plugin's DaemonSet is refused:
    OP008 says so and hangs under OP017, not under OP002's labels and taints."""
    root = kit.standalone_plugin(tmp_path / "b")
    bundle = kit.Bundle(root)
    refuse(bundle, "kube-system", "nvidia-device-plugin-daemonset", PSP, desired=4, current=0)

    def unadvertised(node: dict[str, Any]) -> None:
        for key in ("capacity", "allocatable"):
            node["status"][key].pop("nvidia.com/gpu", None)
    bundle.edit_nodes(unadvertised)
    report = analyse(bundle.save())
    op008 = {f.id: f for f in report.findings if f.rule_id == "OP008"}
    assert sorted(op008) == ["OP008:gpu-a", "OP008:gpu-b", "OP008:gpu-c", "OP008:gpu-d"]
    first = op008["OP008:gpu-a"]
    assert ("no device plugin pod runs on the node: the DaemonSet "
            "kube-system/nvidia-device-plugin-daemonset cannot create its pods (desired 4, "
            "current 0, ready 0): a PodSecurityPolicy refuses them") in first.summary
    assert first.caused_by == ["OP017:kube-system/nvidia-device-plugin-daemonset"]


def toolkit_refused(tmp_path: Path) -> Path:
    """The operator's toolkit DaemonSet refused by Pod Security admission: the device
    plugin on gpu-a waits in its toolkit-validation init container for a toolkit that
    never comes."""
    root = kit.operator_host_driver(tmp_path / "b")
    bundle = kit.Bundle(root)
    refuse(bundle, "gpu-operator", "nvidia-container-toolkit-daemonset",
           PSA.replace("gpu-operator-node-feature-discovery-worker-x7k2p",
                       "nvidia-container-toolkit-daemonset-k2d9f"), desired=4, current=0)
    pods = bundle.items("pods")
    for pod in pods:
        if pod["metadata"]["name"] == "nvidia-device-plugin-daemonset-ghb77":   # gpu-a
            pod["status"]["phase"] = "Pending"
            pod["status"]["initContainerStatuses"] = [{
                "name": "toolkit-validation", "ready": False, "restartCount": 0,
                "image": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v26.3.3",
                "imageID": "", "state": {"running": {"startedAt": "2026-11-20T10:00:00Z"}}}]
            for status in pod["status"]["containerStatuses"]:
                status.update(ready=False, state={"waiting": {"reason": "PodInitializing"}})
    bundle.set_items("pods", pods)
    return bundle.save()


def test_op001_waiting_for_a_refused_operand_names_the_refusal(tmp_path: Path) -> None:
    report = analyse(toolkit_refused(tmp_path))
    found = {f.id: f for f in report.findings}
    op001 = found["OP001:gpu-a"]
    key = "gpu-operator/nvidia-container-toolkit-daemonset"
    assert op001.caused_by == [f"OP017:{key}"]
    assert (f"The toolkit has no pod on the node: the DaemonSet {key} cannot create its pods "
            "(desired 4, current 0, ready 0): Pod Security admission refuses them") \
        in op001.summary
    assert f"OP017:{key}" in found
